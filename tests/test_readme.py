"""The README's snippets run as written: every ```python block (the Spark one in a Spark session),
and the `kipviz decode ... --hex` line of the command-line block with its real hex."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON = re.findall(r"^```python\n(.*?)^```", README, re.M | re.S)
SHELL = "\n".join(re.findall(r"^```bash\n(.*?)^```", README, re.M | re.S))


def test_the_readme_has_its_snippets():
    assert len(PYTHON) >= 3 and "kipviz decode" in SHELL


@pytest.mark.parametrize("n", [i for i, s in enumerate(PYTHON) if "spark" not in s])
def test_python_snippet_runs(n):
    ns: dict = {}
    exec(compile(PYTHON[n], f"README.md python block {n}", "exec"), ns)      # undefined names raise here


@pytest.mark.spark
@pytest.mark.parametrize("n", [i for i, s in enumerate(PYTHON) if "spark" in s])
def test_spark_snippet_runs(n, spark, monkeypatch):  # noqa: F811
    monkeypatch.chdir(ROOT)                                                  # it reads sample_data/
    exec(compile(PYTHON[n], f"README.md python block {n}", "exec"), {})


def test_decode_line_runs_with_real_hex():
    line = next(ln for ln in SHELL.splitlines() if ln.startswith("kipviz decode"))
    args = shlex.split(line.split("#", 1)[0])
    hex_arg = args[args.index("--hex") + 1]
    assert "..." not in hex_arg and re.fullmatch(r"[0-9a-fA-F ]+", hex_arg)
    run = "import sys; from kipviz.cli import main; sys.exit(main(sys.argv[1:]))"     # what `kipviz` runs
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", run, *args[1:]], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert "'tx-orders-001'" in out.stdout and "ProducerEpoch" in out.stdout


from tests.spark_session import spark  # noqa: E402,F401
