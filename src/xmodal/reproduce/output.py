"""Where reproductions write, and the provenance stamped on every result file.

Results go to ``--out``, else ``$XMODAL_RESULTS``, else ``benchmarks/results/`` under the current
directory; reports to ``--report``, else ``$XMODAL_REPORTS``, else ``reports/`` (see
:mod:`xmodal.paths`): run from the repository root to update the checked-in files. Every result
records the command, the git commit (:func:`xmodal.provenance.git_commit`), the machine and the
date.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from xmodal.paths import figures_dir, reports_dir, results_dir
from xmodal.provenance import git_commit

# The settings as they stand when the process starts; relative defaults resolve at use.
RESULTS = results_dir()
REPORTS = reports_dir()
FIGURES = figures_dir()


def log(msg: str) -> None:
    """A time-stamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    """What the numbers were measured on (with the load: the machine is shared)."""
    info: dict[str, Any] = {"platform": platform.platform(), "python": platform.python_version(),
                            "cpu_count": os.cpu_count(),
                            "load_avg_1min": round(os.getloadavg()[0], 2)}
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


def machine_text(m: Any) -> str:
    """A one-line description of a ``machine`` field (older result files hold a string)."""
    if isinstance(m, dict):
        return f"{m.get('cpu') or m.get('platform', '?')}, {m.get('cpu_count', '?')} cores"
    return str(m)


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def stamp(command: str, short_commit: bool = True) -> dict[str, Any]:
    """``{"command", "git_commit", "date", "machine"}`` for a result file."""
    return {"command": command, "git_commit": git_commit(short=short_commit), "date": utc_now(),
            "machine": machine()}


def write_json(path: str | os.PathLike, payload: Any, indent: int = 1) -> Path:
    """Write ``payload`` as JSON (folders created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(payload, indent=indent, default=float) + "\n")
    return p


def read_json(path: str | os.PathLike) -> dict:
    p = Path(path)
    return json.loads(p.read_text()) if p.is_file() else {}


def record(name: str, results: dict, command: str, out: str | os.PathLike = RESULTS) -> Path:
    """``<out>/<name>.json`` in the benchmark layout: ``{"benchmark", "command", "commit", "date",
    "machine", "results"}``."""
    payload = {"benchmark": name, "command": command, "commit": git_commit(),
               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "machine": machine(), "results": results}
    return write_json(Path(out) / f"{name}.json", payload, indent=2)
