"""What the default model's querybank costs: loading the model, and describing against a pool.

    python -m benchmarks.querybank_cost           # pools of 100, 1,000 and 5,000 captions

The shipped model carries a compressed bank of its training images (``xmodal.recipes.querybank``)
and subtracts each caption's offset from its scores (``DualEncoder.caption_offsets``). This times,
in process, the model load (from ``src/xmodal/assets/dual``, with and without the bank) and the
offsets of caption pools of a few sizes (random unit vectors: the cost does not depend on the
text), against the dot products that describe computes anyway. Medians of 5 runs, written to
``benchmarks/results/querybank_cost.json``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from benchmarks._record import record

POOLS = (100, 1000, 5000)


def median_ms(fn, n: int = 5) -> float:
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(1000 * (time.perf_counter() - t))
    return round(statistics.median(ts), 2)


def main() -> None:
    from xmodal.models.dual import DEFAULT_MODEL_DIR, DualEncoder

    model = DualEncoder.load(DEFAULT_MODEL_DIR)
    if model.querybank_ is None:
        raise SystemExit("the shipped model has no querybank")
    bank = model.querybank_
    out = {"bank_images": int(len(bank["codes"])), "bank_dim": int(bank["basis"].shape[1]),
           "load_ms": median_ms(lambda: DualEncoder.load(DEFAULT_MODEL_DIR)), "pools": {}}
    rng = np.random.default_rng(0)
    image = rng.normal(size=model.dim).astype(np.float32)
    for n in POOLS:
        texts = rng.normal(size=(n, model.dim)).astype(np.float32)
        texts /= np.linalg.norm(texts, axis=1, keepdims=True)
        out["pools"][str(n)] = {"offsets_ms": median_ms(lambda t=texts: model.caption_offsets(t)),
                                "dot_products_ms": median_ms(lambda t=texts: t @ image)}
    print(out)
    record("querybank_cost", out)


if __name__ == "__main__":
    main()
