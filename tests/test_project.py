"""The project frame keeps its promises: Binder files agree with pyproject, CI calls make test."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(\[[^\]]*\])?\s*(.*)$", req)
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    spec = ",".join(sorted(s.strip() for s in m.group(3).split(",") if s.strip()))
    return name, spec


def _requirements(path: Path) -> dict[str, str]:
    lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
    return dict(_norm(ln) for ln in lines if ln)


def test_binder_requirements_match_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_norm(r) for r in project["dependencies"])
    assert _requirements(ROOT / "binder" / "requirements.txt") == wanted


def test_pyproject_names_the_stack():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {_norm(d)[0] for d in deps}
    assert {"jupyterlab", "ipywidgets", "graphviz", "pyspark", "pandas", "pyarrow"} <= names
    assert dict(_norm(d) for d in deps)["pandas"] == "<3,>=2.2"


def test_binder_apt_and_postbuild():
    apt = (ROOT / "binder" / "apt.txt").read_text().split()
    assert "graphviz" in apt
    assert any(re.match(r"openjdk-17-jre(-headless)?$", p) for p in apt)
    post = ROOT / "binder" / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    assert re.search(r"pip install .*-e \.", post.read_text())


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme
    assert re.search(r"^\s*make test\s*$", (ROOT / ".ci" / "run").read_text(), re.M)


def test_notebooks_are_stored_without_outputs():
    import json
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for c in cells:
            if c["cell_type"] == "code":
                assert not c.get("outputs") and not c.get("execution_count"), nb.name


def _lab_command(*args: str) -> str:
    """The `jupyter lab` line `make lab ARGS` would run (make -n: nothing is run)."""
    import subprocess
    out = subprocess.run(["make", "-n", "-s", "-C", str(ROOT), "lab", *args], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return next(line for line in out.splitlines() if "jupyter lab" in line)


def test_make_lab_takes_port_and_host_and_keeps_allow_root_with_other_flags():
    import os
    cmd = _lab_command("PORT=8899", "HOST=0.0.0.0", "LAB_FLAGS=--no-browser").split()
    assert {"--port=8899", "--ip=0.0.0.0", "--no-browser"} <= set(cmd)
    assert ("--allow-root" in cmd) == (os.getuid() == 0)         # added as root, whatever LAB_FLAGS says
    plain = _lab_command().split()
    assert not [a for a in plain if a.startswith(("--port", "--ip"))]
    readme = (ROOT / "README.md").read_text()
    assert "make lab PORT=" in readme and "HOST=0.0.0.0" in readme
