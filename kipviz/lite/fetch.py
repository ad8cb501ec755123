"""Downloads for the browser site, kept in one cache between builds: wheels from PyPI (pip) and
packages from npm (npm pack). A build whose files are all cached asks no registry.

    cache_dir()                         KIPVIZ_LITE_CACHE, else $XDG_CACHE_HOME/kipviz-lite (~/.cache/kipviz-lite)
    wheels(["ipython==9.12.0", ...])    {name: Path of its wheel}, downloading only what is missing
    npm_package("pyodide", "314.0.6")   Path of the unpacked package folder

A registry that cannot be reached, or a package or version it does not have, is one LiteBuildError
line naming it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from ..errors import KipvizError

__all__ = ["LiteBuildError", "cache_dir", "wheels", "npm_package", "canonical", "last_error", "PYEMSCRIPTEN"]

# the wheel tags Pyodide 314 installs (PEP 783): pure wheels, or built for this Emscripten ABI
PYEMSCRIPTEN = "pyemscripten_2026_0_wasm32"
PYTHON = "3.14"


class LiteBuildError(KipvizError):
    """The browser site cannot be built: one line saying what is missing."""


def cache_dir() -> Path:
    """The folder downloaded wheels are kept in (KIPVIZ_LITE_CACHE, else ~/.cache/kipviz-lite)."""
    root = os.environ.get("KIPVIZ_LITE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "kipviz-lite"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def canonical(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_key(path: Path) -> tuple[str, str]:
    """(canonical name, version) from a wheel's file name."""
    name, version = path.name.split("-")[:2]
    return canonical(name), version


def last_error(text: str) -> str:
    """The line of a tool's output that says what went wrong (its last ERROR line, else its last line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1]


def wheels(specs: list[str], *, platform: str = PYEMSCRIPTEN) -> dict[str, Path]:
    """The wheel of each "name==version" in specs, for Pyodide: pure Python (py3-none-any) or built
    for `platform`; those not yet in the cache come from PyPI in one pip call."""
    folder = cache_dir() / "wheels"
    folder.mkdir(exist_ok=True)

    def cached() -> dict[tuple[str, str], Path]:
        return {_wheel_key(p): p for p in folder.glob("*.whl")}

    wanted = {}
    for spec in specs:
        name, _, version = spec.partition("==")
        wanted[canonical(name), version] = spec
    missing = [spec for key, spec in wanted.items() if key not in cached()]
    if missing:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--python-version", PYTHON, "--implementation", "cp", "--abi", "cp314", "--abi", "none",
               "--platform", platform, "--platform", "any", "-d", str(folder), *missing]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise LiteBuildError("downloading wheels from PyPI took more than 15 minutes (is PyPI reachable?)") from None
        if done.returncode != 0:
            raise LiteBuildError(f"cannot download {', '.join(missing)} from PyPI for Pyodide "
                                 f"({last_error(done.stderr)})")
    have = cached()
    out = {}
    for key, spec in wanted.items():
        if key not in have:
            raise LiteBuildError(f"pip downloaded no wheel for {spec}")
        out[key[0]] = have[key]
    return out


def npm_package(name: str, version: str) -> Path:
    """The npm package name@version unpacked (its package/ folder), from the cache or `npm pack`."""
    folder = cache_dir() / "npm" / f"{name.replace('/', '+')}-{version}"
    done = folder / ".complete"
    if done.exists():
        return folder / "package"
    npm = shutil.which("npm")
    if npm is None:
        raise LiteBuildError(f"npm (Node.js) is needed to fetch {name}@{version} for the browser site; "
                             "install Node.js, e.g. `sudo apt-get install npm`")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    try:
        packed = subprocess.run([npm, "pack", f"{name}@{version}", "--silent", "--pack-destination", str(folder)],
                                capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise LiteBuildError(f"npm pack {name}@{version} took more than 10 minutes (is the npm registry reachable?)") \
            from None
    tgz = sorted(folder.glob("*.tgz"))
    if packed.returncode != 0 or not tgz:
        raise LiteBuildError(f"cannot fetch {name}@{version} from npm ({last_error(packed.stderr)})")
    with tarfile.open(tgz[0]) as tar:
        tar.extractall(folder, filter="data")
    tgz[0].unlink()
    done.touch()
    return folder / "package"
