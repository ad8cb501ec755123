"""`make audit`: pip-audit over the installed environment, read as a verdict.

Exit 0: every dependency checked, no known vulnerability. Exit 1: vulnerabilities (listed, one
line each). Exit 2: the audit could not be done (pip-audit missing, the vulnerability service
unreachable, or no dependency could be looked up): one line saying so. `make test` never runs
this: it needs the network."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys


def main(argv: list[str]) -> int:
    exe = shutil.which("pip-audit")
    if exe is None:
        print("make audit: pip-audit is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    cmd = [exe, "--format", "json", "--progress-spinner", "off", "--skip-editable", *argv]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        print("make audit: the vulnerability service did not answer within 600 s", file=sys.stderr)
        return 2
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"make audit: the vulnerability service is unreachable or pip-audit failed: {last}", file=sys.stderr)
        return 2
    deps = report.get("dependencies", [])
    checked = [d for d in deps if "skip_reason" not in d]
    if not checked:
        print(f"make audit: no dependency could be checked ({len(deps)} skipped: the vulnerability "
              "service is unreachable or does not know them)", file=sys.stderr)
        return 2
    found = [(d["name"], d["version"], v) for d in checked for v in d.get("vulns", [])]
    for name, version, v in found:
        fix = ", ".join(v.get("fix_versions") or []) or "no fix yet"
        print(f"{name} {version}: {v.get('id')} {' '.join(v.get('aliases') or [])} (fixed in: {fix})")
    skipped = len(deps) - len(checked)
    tail = f"; {skipped} not checked (not on the index)" if skipped else ""
    print(f"make audit: {len(checked)} packages checked, {len(found)} known vulnerabilities{tail}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
