"""kipviz-site-data: the one wheel of the browser site that is made at build time, with what the
kit needs in the browser beside its own code.

    kipviz_site_data/viz.js               @viz-js/viz's browser script (Graphviz compiled to WebAssembly),
                                          run in the kernel's worker by kipviz.draw.render
    kipviz_site_data/saved.json           the desktop kit's outputs of the cells that need Spark or a
                                          socket, keyed by the cell's code (kipviz.lite.runtime shows them)
    kipviz_site_data/ipython/profile_default/ipython_config.py
                                          the kernel's IPython profile (IPYTHONDIR points here): it
                                          loads kipviz.lite.runtime, which gives the %%needs cell magic"""
from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

__all__ = ["NAME", "PACKAGE", "wheel"]

NAME = "kipviz-site-data"
PACKAGE = "kipviz_site_data"
VERSION = "1"
IPYTHON_CONFIG = ("# the browser kit's kernel (kipviz lite): %%needs shows the desktop kit's saved output\n"
                  "c.InteractiveShellApp.extensions = ['kipviz.lite.runtime']\n")


def _notice(viz: Path) -> str:
    meta = json.loads((viz / "package.json").read_text())
    return (f"viz.js is {meta['name']} {meta['version']} from npm ({meta.get('license', '?')} license, "
            f"{meta.get('repository', {}).get('url', '')}): Graphviz (EPL-1.0) and Expat (MIT) compiled to "
            "WebAssembly. The copyright lines are at the top of viz.js.\n")


def wheel(folder: Path, *, viz: Path, saved: dict) -> Path:
    """Write the wheel into `folder`; `viz` is the unpacked @viz-js/viz package, `saved` maps a cell's
    code hash to its outputs."""
    files = {
        f"{PACKAGE}/__init__.py": b'"""Data for the kipviz browser site (made by kipviz.lite.site_data)."""\n',
        f"{PACKAGE}/viz.js": (viz / "dist" / "viz-global.js").read_bytes(),
        f"{PACKAGE}/NOTICE": _notice(viz).encode(),
        f"{PACKAGE}/saved.json": json.dumps(saved, sort_keys=True).encode(),
        f"{PACKAGE}/ipython/profile_default/ipython_config.py": IPYTHON_CONFIG.encode(),
    }
    info = f"{PACKAGE}-{VERSION}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: kipviz.lite\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{PACKAGE}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return path
