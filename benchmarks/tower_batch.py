"""Image-tower throughput by the number of images per ONNX Runtime run.

    python -m benchmarks.tower_batch                    # ~2 minutes

The towers of the shipped models (``dual``: EfficientNet-Lite2 fp32 at 260 px with the outputs
its heads read; ``fast``: Lite0 int8 at 224 px) run on random images in runs of 1 to 32 images,
4 s each, on the default threads (two on this machine), two rounds; the outputs per image are
compared with those of one run of 16. Chooses ``towers.TOWER_CHUNK``: a tower's
activations for a few images stay in the CPU's caches, those of 16 or more do not.

Writes ``benchmarks/results/tower_batch.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._record import record

SIZES = (1, 2, 4, 8, 16, 32)


def rate(run, x: np.ndarray, size: int, seconds: float) -> float:
    t, n = time.perf_counter(), 0
    while time.perf_counter() - t < seconds:
        run(x[:size])
        n += size
    return n / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    from xmodal.factory import load_embedding_model
    from xmodal.features import towers
    from xmodal.features.towers import image_precision, image_tower

    out = {}
    for name in ("dual", "fast"):
        model = load_embedding_model(name)
        bb, side = model.image_backbone, model.image_input_size
        precision = image_precision(bb) if model.image_int8 else "fp32"
        outputs = ["pooled", "logits"] + ["prehead"] * (model.image_top_ is not None)
        x = np.random.default_rng(0).uniform(-1, 1, (max(SIZES), 3, side, side))
        x = x.astype(np.float32)
        chunk = towers.TOWER_CHUNK
        towers.TOWER_CHUNK = max(SIZES)  # one run per call, whatever its size

        def run(batch):
            return image_tower(bb).forward(batch, outputs, precision)

        whole = run(x[:16])
        rates: dict[int, list[float]] = {s: [] for s in SIZES}
        for _ in range(2):
            for size in SIZES:
                rates[size].append(round(rate(run, x, size, args.seconds), 1))
        towers.TOWER_CHUNK = chunk
        chunked = run(x[:16])
        diff = max(float(np.abs(whole[k].astype(np.float32) - chunked[k].astype(np.float32))
                         .max()) for k in outputs)
        out[name] = {"backbone": bb, "input_px": side, "precision": precision,
                     "images_per_s_by_run_size": {str(s): r for s, r in rates.items()},
                     "chunk": chunk, "max_abs_diff_chunked_vs_one_run_of_16": diff}
        print(name, out[name], flush=True)
    record("tower_batch", {"seconds_per_measure": args.seconds, "rounds": 2, "towers": out})


if __name__ == "__main__":
    main()
