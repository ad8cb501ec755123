"""Build the browser site: JupyterLite with the Pyodide kernel, the kit and its notebooks, and nothing
fetched from the internet once built.

    site = build_site("site")          # what `make lite` and `kipviz lite -o site` run
    site.size, site.notebooks

The pieces, all from PyPI and npm (cached: fetch.py) at build time:
  static/pyodide/    npm's pyodide core, its lock rewritten (lock.py) to name only the wheels beside
                     it: the kernel's own (micropip, IPython, jedi...) from PyPI, the kit's wheel and
                     its dependencies, and kipviz-site-data (site_data.py: the WebAssembly Graphviz,
                     the desktop kit's saved outputs, the kernel's IPython profile)
  extensions/        the Pyodide kernel, ipywidgets' and anywidget's JavaScript (the versions installed
                     here, so they match the Python side)
  files/             the notebooks that run without Spark or a socket (notebooks.py)"""
from __future__ import annotations

import importlib.metadata as md
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import fetch, lock, notebooks, site_data
from .fetch import LiteBuildError, canonical

__all__ = ["build_site", "Site", "PYODIDE_VERSION", "VIZ_VERSION", "BROWSER_PACKAGES"]

ROOT = Path(__file__).resolve().parents[2]            # the repository (kipviz installed editable)
VIZ_VERSION = "3.31.0"                                # @viz-js/viz: Graphviz compiled to WebAssembly
# what a kernel loads at boot (the Pyodide kernel's initKernel: ipykernel's shim needs comm and
# IPython; jedi completes)
BOOT = ("micropip", "ipython", "jedi")
# kipviz's dependencies that run in the browser; the others (Spark, pandas, pyarrow, JupyterLab and
# the Kafka clients) have no Pyodide wheel on PyPI, and the notebooks in the site do without them
BROWSER_PACKAGES = ("graphviz", "cramjam", "dpkt", "ipywidgets", "anywidget", "comm")
# packages some dependency requires that only carry JavaScript the site ships as extensions instead
JS_ONLY = {"widgetsnbextension", "jupyterlab-widgets"}
EXTENSIONS = ("@jupyterlite/pyodide-kernel-extension", "@jupyter-widgets/jupyterlab-manager", "anywidget")
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
PYODIDE_VERSION = "314.0.6"      # the one jupyterlite_pyodide_kernel 0.8.6 names (checked at build time)


@dataclass
class Site:
    """A built browser site: where it is, its notebooks, its size, build time and kernel packages."""
    path: Path
    notebooks: list[str]
    size: int = 0                                   # bytes, every file of the site
    seconds: float = 0.0
    packages: dict[str, str] = field(default_factory=dict)     # name -> version, in the kernel


def _need_build_tools() -> None:
    try:
        import jupyter_server  # noqa: F401
        import jupyterlite_core  # noqa: F401
        import jupyterlite_pyodide_kernel  # noqa: F401
    except ImportError as e:
        raise LiteBuildError(f"the browser site needs {e.name}: pip install -e '.[lite]' (make lite installs it)") \
            from None
    from jupyterlite_pyodide_kernel.constants import PYODIDE_VERSION as wanted
    if wanted != PYODIDE_VERSION:
        raise LiteBuildError(f"jupyterlite-pyodide-kernel wants Pyodide {wanted}, the kit ships "
                             f"{PYODIDE_VERSION}: install jupyterlite-pyodide-kernel==0.8.6 (pyproject.toml's lite extra)")


def _kit_wheel(folder: Path) -> Path:
    """kipviz's own wheel, built from a clean copy of the source (no stale build/ folder)."""
    if not (ROOT / "pyproject.toml").exists():
        raise LiteBuildError(f"no kipviz source tree at {ROOT} (the site is built from a clone of the kit)")
    src = folder / "src"
    shutil.copytree(ROOT / "kipviz", src / "kipviz", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(src)],
                          capture_output=True, text=True, timeout=600)
    wheels = sorted(folder.glob("kipviz-*.whl"))
    if done.returncode != 0 or not wheels:
        raise LiteBuildError(f"cannot build kipviz's wheel ({fetch.last_error(done.stderr)})")
    return wheels[0]


def _installed(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        raise LiteBuildError(f"{name} is not installed here: the site ships the versions this environment has "
                             "(make setup installs them)") from None


def _packages(pyodide_lock: dict, kit: Path, data: Path) -> dict[str, tuple[Path, list[str]]]:
    """name -> (wheel, depends) for every package the kernel gets: the boot set at the lock's
    versions, the kit's browser dependencies (and theirs) at the versions installed here."""
    boot = lock.closure(pyodide_lock, BOOT)
    version = {n: pyodide_lock["packages"][n]["version"] for n in boot}
    got: dict[str, Path] = fetch.wheels([f"{n}=={v}" for n, v in sorted(version.items())])
    out = {n: (got[n], [canonical(d) for d in pyodide_lock["packages"][n]["depends"]]) for n in boot}
    todo = [canonical(n) for n in BROWSER_PACKAGES]
    while todo:
        specs = [f"{n}=={version.get(n) or _installed(n)}" for n in todo if n not in out]
        got = fetch.wheels(specs) if specs else {}
        todo = []
        for n, path in got.items():
            deps = [d for d in lock.requirements(path) if d not in JS_ONLY]
            out[n] = (path, deps)
            todo += [d for d in deps if d not in out and d not in todo]
    out["kipviz"] = (kit, [canonical(n) for n in BROWSER_PACKAGES] + [site_data.NAME])
    out[site_data.NAME] = (data, [])
    return out


def _extension_dirs() -> list[Path]:
    from jupyter_core.paths import jupyter_path
    found = {}
    for root in jupyter_path("labextensions"):
        for name in EXTENSIONS:
            pkg = Path(root) / name / "package.json"
            if name not in found and pkg.exists():
                found[name] = pkg.parent
    missing = [n for n in EXTENSIONS if n not in found]
    if missing:
        raise LiteBuildError(f"JupyterLab extension(s) {', '.join(missing)} not installed here (make setup installs them)")
    return [found[n] for n in EXTENSIONS]


def _config(python: str) -> dict:
    site_packages = f"/lib/python{python}/site-packages/{site_data.PACKAGE}"
    return {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
        "appName": "kipviz",
        "exposeAppInBrowser": True,            # window.jupyterapp, for scripts (the browser test drives it)
        "litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": {
            "pyodideUrl": "./static/pyodide/pyodide.mjs",
            "disablePyPIFallback": True,
            "loadPyodideOptions": {
                "packages": ["kipviz"],
                # the kernel's IPython profile (its extension gives %%needs) and the Graphviz script
                "env": {"IPYTHONDIR": f"{site_packages}/ipython", "KIPVIZ_GRAPHVIZ_JS": f"{site_packages}/viz.js"},
            },
        }},
    }}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_site(output, *, sources: Path | None = None, progress=None) -> Site:
    """Build the site into `output` (replaced if it holds a previous site)."""
    say = progress or (lambda line: print(line, file=sys.stderr))
    t0 = time.monotonic()
    _need_build_tools()
    out = Path(output).resolve()
    if out.exists() and not out.is_dir():
        raise LiteBuildError(f"-o {output}: exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not (out / "jupyter-lite.json").exists():
        raise LiteBuildError(f"-o {output}: a folder with other files in it (not a kipviz site); name a new one")
    try:                 # before minutes of downloads and builds: a folder that cannot be made fails now
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LiteBuildError(f"-o {output}: cannot make the folder ({e.strerror or e})") from None
    pyodide = fetch.npm_package("pyodide", PYODIDE_VERSION)
    viz = fetch.npm_package("@viz-js/viz", VIZ_VERSION)
    pyodide_lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    chosen = notebooks.site_notebooks(sources)
    with tempfile.TemporaryDirectory(prefix="kipviz-lite-") as tmp:
        stage = Path(tmp)
        say("lite: the desktop kit's outputs of the cells that need Spark or a socket")
        saved = notebooks.saved_outputs(chosen)
        files = stage / "files"
        notebooks.write_site_notebooks(chosen, files)
        (stage / "wheels").mkdir()
        kit = _kit_wheel(stage / "wheels")
        data = site_data.wheel(stage / "wheels", viz=viz, saved=saved)
        say("lite: the kernel's packages (PyPI, cached)")
        packages = _packages(pyodide_lock, kit, data)
        static = stage / "lite" / "static" / "pyodide"
        static.mkdir(parents=True)
        for name in PYODIDE_FILES:
            shutil.copy2(pyodide / name, static / name)
        entries = {}
        for name, (path, depends) in sorted(packages.items()):
            shutil.copy2(path, static / path.name)
            entries[name] = lock.entry(path, [d for d in depends if d in packages])
        (static / "pyodide-lock.json").write_text(json.dumps({"info": pyodide_lock["info"], "packages": entries},
                                                             indent=1, sort_keys=True))
        python = ".".join(pyodide_lock["info"]["python"].split(".")[:2])
        (stage / "lite" / "jupyter-lite.json").write_text(json.dumps(_config(python), indent=2))
        say("lite: jupyter lite build")
        build_config = {"LiteBuildConfig": {
            "contents": [str(files)], "output_dir": str(stage / "site"), "no_sourcemaps": True,
            "ignore_sys_prefix": True, "cache_dir": str(fetch.cache_dir() / "jupyterlite"),
            "federated_extensions": [str(d) for d in _extension_dirs()]}}
        (stage / "lite" / "jupyter_lite_config.json").write_text(json.dumps(build_config, indent=2))
        cmd = [sys.executable, "-m", "jupyter", "lite", "build", "--lite-dir", str(stage / "lite")]
        done = subprocess.run(cmd, cwd=stage, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise LiteBuildError(f"jupyter lite build failed ({fetch.last_error(done.stdout + done.stderr)})")
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(stage / "site"), out)
    site = Site(out, [p.stem for p in chosen], size=_size(out), seconds=time.monotonic() - t0,
                packages={e["name"]: e["version"] for e in entries.values()})
    say(f"lite: wrote {out} ({len(site.notebooks)} notebooks, {site.size / 1e6:.1f} MB) in {site.seconds:.0f} s")
    return site
