"""The repository's stored results and reports, for tests that compare against them."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
REPORTS = ROOT / "reports"


def stored(name: str) -> dict:
    """``benchmarks/results/<name>`` (``.json`` added when missing); skips when absent."""
    path = RESULTS / (name if name.endswith(".json") else f"{name}.json")
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout")
    return json.loads(path.read_text())
