"""Latency of one text query: the sentence encoders alone and the default model's embed_texts.

    python -m benchmarks.query_latency            # 20 queries each, in process, after a warm-up

MiniLM (the previous default's encoder) and MPNet (the default model's, issue 17) on the configured
engine (ONNX Runtime by default), one sentence per call, no cache; then ``embed_texts`` of the
shipped model (MPNet plus heads). Median and p90 in milliseconds, written to
``benchmarks/results/query_latency.json``.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._record import record  # noqa: E402


def timed(fn, n: int = 20) -> dict:
    fn("warm-up query")
    ts = []
    for i in range(n):
        t = time.perf_counter()
        fn(f"a dog runs along the beach number {i}")
        ts.append(1000 * (time.perf_counter() - t))
    ts.sort()
    return {"median_ms": statistics.median(ts), "p90_ms": ts[int(0.9 * (n - 1))], "n": n}


def main() -> None:
    from xmodal.features.text_encoder import encode_texts
    from xmodal.models.dual import default_model

    out = {}
    for enc in ("minilm", "mpnet"):
        out[enc] = timed(lambda q: encode_texts([q], cache=False, progress=False, encoder=enc))
    model = default_model()
    out["dual_embed_texts"] = timed(lambda q: model.embed_texts([q], progress=False))
    print(out)
    record("query_latency", out)


if __name__ == "__main__":
    main()
