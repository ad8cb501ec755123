"""The layering is a checked contract (pyproject.toml [tool.importlinter], docs/architecture.md):
lint-imports must keep it, and it must break when a lower layer imports a higher one."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _lint(cwd: Path, config: Path | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is not installed (pip install -e '.[dev]')"
    args = [exe, "--no-cache"] + (["--config", str(config)] if config else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_layers_contract_is_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 kept, 0 broken" in r.stdout


def test_contract_breaks_on_an_upward_import(tmp_path):
    # the same contract read by the linter, with schema told to sit above codec: codec imports
    # schema, so the contract must break (the check is live, not a test that cannot fail)
    text = (ROOT / "pyproject.toml").read_text()
    swapped = text.replace('    "kipviz.codec",\n    "kipviz.schema",\n', '    "kipviz.schema",\n    "kipviz.codec",\n')
    assert swapped != text
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(swapped)
    r = _lint(ROOT, cfg)
    assert r.returncode != 0 and "BROKEN" in r.stdout.upper(), r.stdout[-2000:]
