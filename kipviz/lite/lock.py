"""Pyodide's package lock for a site that needs no CDN: every entry names a wheel that sits next to it.

npm's `pyodide` package is Pyodide's core only; its pyodide-lock.json names Pyodide's own builds of
~350 packages that live on Pyodide's CDN. A kernel boots with a few of them (micropip, IPython and
its dependencies, jedi), all pure Python, so their wheels come from PyPI at the lock's versions; the
entry then names the PyPI file and its sha256 (Pyodide repacks its own, with other hashes). Every
entry without a wheel here is dropped, or micropip would choose a build it cannot fetch over the
kit's own index (crc32c, which kipviz replaces with records/crc.py). The kit's wheels are added as
entries too, so `loadPyodide({packages: ["kipviz"]})` installs the kit and its dependencies at boot.

    entry(wheel_path, depends) -> one lock entry
    requirements(wheel_path)   -> the names a wheel's metadata requires in Pyodide (markers evaluated)
    closure(lock, names)       -> names and everything the lock says they depend on"""
from __future__ import annotations

import email.parser
import hashlib
import zipfile
from pathlib import Path

from .fetch import canonical

__all__ = ["entry", "requirements", "closure", "wheel_metadata"]

# markers as Pyodide 314 evaluates them (packaging.markers.default_environment() inside Pyodide)
PYODIDE_MARKERS = {"python_version": "3.14", "python_full_version": "3.14.2", "sys_platform": "emscripten",
                   "platform_system": "Emscripten", "os_name": "posix", "platform_machine": "wasm32",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def wheel_metadata(path: Path):
    """The METADATA of a wheel (an email.message.Message: Name, Version, Requires-Dist...)."""
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        return email.parser.Parser().parsestr(z.read(name).decode("utf-8"))


def _imports(path: Path) -> list[str]:
    """The top-level packages and modules a wheel installs."""
    tops = set()
    with zipfile.ZipFile(path) as z:
        for n in z.namelist():
            first = n.split("/", 1)[0]
            if first.endswith((".dist-info", ".data")):
                continue
            if "/" in n:
                tops.add(first)
            elif n.endswith(".py"):
                tops.add(n[:-3])
    return sorted(t for t in tops if t.isidentifier())


def requirements(path: Path) -> list[str]:
    """The canonical names the wheel requires where Pyodide runs it (no extras)."""
    from packaging.requirements import Requirement
    out = []
    for line in wheel_metadata(path).get_all("Requires-Dist") or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(PYODIDE_MARKERS):
            out.append(canonical(req.name))
    return out


def entry(path: Path, depends: list[str]) -> dict:
    """A wheel's entry in the site's Pyodide lock file."""
    meta = wheel_metadata(path)
    return {"name": meta["Name"], "version": meta["Version"], "file_name": path.name, "install_dir": "site",
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "package_type": "package",
            "imports": _imports(path), "depends": sorted(canonical(d) for d in depends),
            "unvendored_tests": False}


def closure(lock: dict, names) -> set[str]:
    """names (canonical) and, transitively, what each one's lock entry depends on."""
    packages = lock["packages"]
    out: set[str] = set()
    todo = [canonical(n) for n in names]
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(canonical(d) for d in packages[n]["depends"])
    return out
