"""Run every benchmark script in this folder (``make bench``); each records its own result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith(("_", "run_all")))
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.{script.stem}"], cwd=HERE.parent)
        if rc:
            failed.append(script.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
