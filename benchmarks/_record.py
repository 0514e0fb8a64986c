"""Write a benchmark result with the command, commit, machine and date beside the numbers.

The same writer as ``xmodal reproduce`` (:func:`xmodal.reproduce.output.record`); the command
recorded is the one that ran this process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from xmodal.reproduce.output import machine
from xmodal.reproduce.output import record as record_result

RESULTS = Path(__file__).resolve().parent / "results"

__all__ = ["RESULTS", "machine", "record"]


def record(name: str, results: dict) -> Path:
    """Save ``results`` to ``benchmarks/results/<name>.json`` with provenance."""
    command = "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    return record_result(name, results, command, RESULTS)
