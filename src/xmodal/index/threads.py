"""How many threads indexing and searching use: numpy's BLAS, torch, one thread per query."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xmodal.errors import XmodalError


@contextmanager
def blas_single_thread() -> Iterator[None]:
    """numpy's BLAS on one thread inside the block: the heads' small products gain nothing from
    a second thread, whose pool spins after each product and takes the core ONNX Runtime and
    the loaders need (measured in benchmarks/results/index_profile.json: 1.7 s of spinning CPU
    per 400 photos; 84 -> 104 images/s with OPENBLAS_NUM_THREADS=1)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


@contextmanager
def torch_threads(n: int | None, model: Any = None) -> Iterator[None]:
    """Run torch on ``n`` threads inside the block (None: leave it), then restore its setting.

    Torch is imported for this only when it is loaded already or ``model`` is one of xmodal's
    own models running on the torch engine, so that the ONNX path never pays for the import."""
    from xmodal.features.onnx_engine import engine

    ours = (model is not None and type(model).__module__.startswith("xmodal.")
            and engine() == "torch")
    if n is None or ("torch" not in sys.modules and not ours):
        yield
        return
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def one_thread(model: Any = None):
    """One thread for a single query: one sentence or one image is too little work to split;
    on a busy 2-core machine the threads mostly wait on each other (measured: one sentence took
    80-130 ms on one thread and 0.5-17 s on two, at load average 12-15)."""
    return torch_threads(1, model)


def indexing_threads() -> int | None:
    """Torch threads for indexing: ``$XMODAL_THREADS``, else 1 on a machine already busier than
    its core count (measured at load average 12-15 on 2 cores: 7.3 images/s on one thread,
    3-4 on two), else torch's default (all cores)."""
    env = os.environ.get("XMODAL_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise XmodalError(f"XMODAL_THREADS must be a number, not {env!r}") from None
    try:
        busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    except OSError:
        busy = False
    return 1 if busy else None
