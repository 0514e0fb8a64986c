"""Shared fixtures: data roots that skip (with the reason) when the machine lacks the data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Unpacked weights and their ONNX exports (hundreds of MB) are shared by every test, also by
# those that point XMODAL_CACHE at an empty folder of their own.
os.environ.setdefault("XMODAL_MODELS", str(Path(__file__).resolve().parents[1] / ".cache"
                                           / "test-models"))

# XMODAL_TEST_BLAS_THREADS=N runs the session with BLAS/LAPACK limited to N threads, which
# changes summation order the way another CPU does (docs/architecture.md, "Numbers across CPUs").
if os.environ.get("XMODAL_TEST_BLAS_THREADS"):
    from threadpoolctl import threadpool_limits

    _BLAS_LIMIT = threadpool_limits(int(os.environ["XMODAL_TEST_BLAS_THREADS"]), user_api="blas")

DATA_ROOT = Path(
    os.environ.get("XMODAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def _dataset(name: str, probe: str) -> Path:
    path = DATA_ROOT / name
    if not (path / probe).exists():
        pytest.skip(f"{name} data not found at {path} (set XMODAL_DATA)")
    return path


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not DATA_ROOT.is_dir():
        pytest.skip(f"data root not found at {DATA_ROOT} (set XMODAL_DATA)")
    return DATA_ROOT


@pytest.fixture(scope="session")
def flickr8k_root() -> Path:
    return _dataset("flickr8k", "Flickr8k_text/Flickr8k.token.txt")


@pytest.fixture(scope="session")
def wikipedia_root() -> Path:
    return _dataset("wikipedia", "raw_features.mat")


@pytest.fixture(scope="session")
def corel5k_root() -> Path:
    return _dataset("corel5k", "Corel5k-train-sparse.arff")


@pytest.fixture(scope="session")
def flickr8k(flickr8k_root):
    import warnings

    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_flickr8k(flickr8k_root)
