"""Write a benchmark result with the command, commit, machine and date beside the numbers."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "load_avg_1min": round(os.getloadavg()[0], 2)}  # other work running at the time
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
        info["mem_gb"] = round(int(mem) / 1e6, 1)
    except OSError:
        pass
    return info


def commit() -> str:
    from xmodal.provenance import git_commit

    return git_commit()


def record(name: str, results: dict) -> Path:
    """Save ``results`` to ``benchmarks/results/<name>.json`` with provenance."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "commit": commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "results": results,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
