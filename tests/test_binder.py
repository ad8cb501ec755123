"""Binder: the Dockerfile repo2docker writes for binder/ installs what the kit needs; binder/start
gives Spark quiet, small defaults; and the build steps, replayed into a fresh virtualenv, give a
kernel that runs the welcome notebook. No Docker needed: repo2docker is asked for its Dockerfile."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
BIN = Path(sys.executable).parent


def _apt_packages() -> list[str]:
    return [w for line in (BINDER / "apt.txt").read_text().splitlines()
            for w in line.split("#", 1)[0].split()]


@pytest.fixture(scope="module")
def dockerfile() -> str:
    exe = BIN / "repo2docker"
    if not exe.exists():      # a dev dependency; install it here if this venv predates that
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "jupyter-repo2docker"], check=True,
                       capture_output=True, timeout=300)
    r = subprocess.run([str(exe), "--no-build", "--no-run", "--debug", "--user-id", "1000", "--user-name",
                        "jovyan", str(ROOT)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "FROM " in r.stdout, r.stderr[-2000:]
    return r.stdout + "\n#--- stderr ---\n" + r.stderr


def test_binder_image_is_ubuntu_24_04_with_python_3_11(dockerfile):
    assert re.search(r"^FROM \S*buildpack-deps:24\.04\s*$", dockerfile, re.M)
    assert "conda environment for python=3.11" in dockerfile      # runtime.txt, not repo2docker's 3.10
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"


def test_dockerfile_installs_apt_packages_then_requirements_then_runs_post_build_and_start(dockerfile):
    apt = re.search(r"apt-get install --yes --no-install-recommends ([^&]*)&&", dockerfile)
    assert apt, "no apt-get install of apt.txt"
    assert set(_apt_packages()) == set(apt.group(1).split())
    assert {"graphviz", "openjdk-17-jre-headless"} <= set(_apt_packages())
    pip = re.search(r'^RUN \$\{KERNEL_PYTHON_PREFIX\}/bin/pip install --no-cache-dir -r "binder/requirements.txt"',
                    dockerfile, re.M)
    post = re.search(r"^RUN \./binder/postBuild\s*$", dockerfile, re.M)
    start = re.search(r'^ENV R2D_ENTRYPOINT="\$\{REPO_DIR\}/binder/start"', dockerfile, re.M)
    assert pip and post and start
    assert apt.start() < pip.start() < post.start() < start.start()
    # the repository is copied (owned by the notebook user, so postBuild's `pip install -e .` can write)
    assert re.search(r"^COPY --chown=1000:1000 src/ \$\{REPO_DIR\}/", dockerfile, re.M)


def test_requirements_pin_pyspark_4_and_pandas_below_3():
    lines = [ln.split("#")[0].strip() for ln in (BINDER / "requirements.txt").read_text().splitlines()]
    reqs = {re.match(r"[A-Za-z0-9_.-]+", ln).group(0).lower(): ln for ln in lines if ln}
    assert re.fullmatch(r"pyspark\s*>=\s*4\.\d+\s*,\s*<\s*5", reqs["pyspark"])
    assert re.fullmatch(r"pandas\s*>=\s*2\.\d+\s*,\s*<\s*3", reqs["pandas"])
    assert {"jupyterlab", "ipywidgets", "anywidget", "graphviz", "pyarrow"} <= set(reqs)


def test_post_build_and_start_are_executable_scripts():
    for name in ("postBuild", "start"):
        f = BINDER / name
        assert f.stat().st_mode & 0o111, f"{name} must be executable"
        assert f.read_text().startswith("#!/usr/bin/env bash")
        assert subprocess.run(["bash", "-n", str(f)]).returncode == 0
    assert re.search(r'^exec "\$@"\s*$', (BINDER / "start").read_text(), re.M)


def test_start_passes_the_command_and_its_exit_status_through():
    r = subprocess.run([str(BINDER / "start"), sys.executable, "-c",
                        "import os, sys; print(os.environ['SPARK_CONF_DIR']); sys.exit(7)"],
                       capture_output=True, text=True, env=dict(os.environ, SPARK_CONF_DIR=""))
    assert r.returncode == 7
    assert Path(r.stdout.strip()) == BINDER / "spark"


SPARK_PROBE = r"""
import json, psutil
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("probe").getOrCreate()
n = spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().count()
java = [p for p in psutil.Process().children(recursive=True) if p.name() == "java"]
print(json.dumps({"rows": n, "ui": spark.sparkContext.uiWebUrl,
                  "xmx": [a for a in java[0].cmdline() if a.startswith("-Xmx")],
                  "partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                  "rss_mb": java[0].memory_info().rss / 2**20}))
spark.stop()
"""


def _spark_defaults() -> dict[str, str]:
    out = {}
    for line in (BINDER / "spark" / "spark-defaults.conf").read_text().splitlines():
        parts = line.split(None, 1)
        if parts and not parts[0].startswith("#"):
            out[parts[0]] = parts[1].strip()
    return out


def test_binder_jvm_flags_are_the_sessions():
    """binder/spark sets the driver's Java options, so kipviz.spark.session adds none of its own there:
    Binder's must hold the session's small-footprint flags."""
    from kipviz.spark.session import JAVA_OPTIONS
    assert set(JAVA_OPTIONS.split()) <= set(_spark_defaults()["spark.driver.extraJavaOptions"].split())


def test_start_gives_spark_quiet_small_defaults():
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_CONF_DIR", None)
    r = subprocess.run([str(BINDER / "start"), sys.executable, "-c", SPARK_PROBE], capture_output=True, text=True,
                       env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rows"] == 7
    assert out["xmx"] == ["-Xmx512m"] and out["ui"] is None and out["partitions"] == "4"
    assert out["rss_mb"] < 700
    # quiet: no log lines and no "Setting default log level"; the JVM's own notice about the
    # incubator module Spark 4 loads is the only line (log4j cannot silence the JVM)
    noise = [ln for ln in r.stderr.splitlines() if ln.strip() and "Using incubator modules" not in ln]
    assert noise == []


def _copy_repo(dest: Path) -> Path:
    """What repo2docker copies: the repository's files (no virtualenv, caches or build output)."""
    junk = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.pyc", ".pytest_cache", ".hypothesis",
                                  ".ruff_cache", "*.egg-info", "build", "dist", "site", "test-artifacts", "artifacts",
                                  ".ipynb_checkpoints")
    shutil.copytree(ROOT, dest, ignore=junk)
    return dest


RUN_WELCOME = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.read("notebooks/00_welcome.ipynb", as_version=4)
nb.cells.append(nbformat.v4.new_code_cell("import sys, kipviz; print(sys.prefix); print(kipviz.__file__)"))
NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": "notebooks"}}).execute(
    cwd="notebooks")
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
print(json.dumps({"errors": len(errors), "last": nb.cells[-1].outputs[0]["text"]}))
"""


@pytest.mark.slow
def test_binder_build_replayed_in_a_fresh_virtualenv_runs_the_welcome_notebook(tmp_path):
    repo = _copy_repo(tmp_path / "repo")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    vbin = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "SPARK_CONF_DIR",
                                                             "PYSPARK_PYTHON", "JUPYTER_PATH")}
    env.update(PATH=f"{vbin}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1")

    def run(cmd, timeout):
        r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"{cmd[0]}: {r.stderr[-3000:]}"
        return r

    # what the Dockerfile does: requirements, then postBuild from the repository's root, then start
    run([str(vbin / "python"), "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], 400)
    post = run(["./binder/postBuild"], 300)
    assert "kipviz definitions" in post.stdout and "runs" in post.stdout
    overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"   # the kit's lab settings
    assert json.loads(overrides.read_text()) == json.loads((ROOT / "tools" / "jupyterlab_overrides.json").read_text())
    out = run(["./binder/start", str(vbin / "python"), "-c", RUN_WELCOME], 300)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    prefix, module = result["last"].split()
    assert result["errors"] == 0
    assert Path(prefix) == venv                      # the fresh venv's kernel, not this one's
    assert Path(module).is_relative_to(repo)          # kipviz as postBuild installed it


def test_readme_has_a_binder_badge_opening_the_welcome_notebook():
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]\((https://mybinder\.org/v2/[^)]+)\)",
                  readme)
    assert m, "no Binder badge"
    path = re.search(r"urlpath=lab/tree/([^&)\s]+)", m.group(1))
    assert path and (ROOT / path.group(1)).exists()
