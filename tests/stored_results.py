"""The repository's stored results and reports, for tests that compare against them."""

import json
import math
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


# Numbers across CPUs (docs/architecture.md): a float that passed through BLAS/LAPACK is compared
# at this relative tolerance. The reports print three decimals, so a change that moves a printed
# digit is caught, while another CPU's summation order (2e-5 relative at most, measured between
# AMD EPYC and Intel Xeon on the Wikipedia CCA MAPs) is not a failure. Counts, ids and ranks of
# well-separated scores are compared exactly.
BLAS_REL = 1e-4
BLAS_ABS = 1e-6


def same(a, b, rel: float = BLAS_REL, abs_: float = BLAS_ABS) -> None:
    """Recursive equality of JSON-like values: floats within ``rel``/``abs_`` (NaN equals NaN),
    everything else exact."""
    if isinstance(a, dict):
        assert set(a) == set(b), (set(a) ^ set(b))
        for k in a:
            same(a[k], b[k], rel, abs_)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, rel, abs_)
    elif isinstance(a, float) or isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=rel, abs=abs_)
    else:
        assert a == b
