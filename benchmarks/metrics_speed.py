"""Time from a COCO-5K-sized score matrix (5,000 x 25,000, both directions) to every metric.

Compares xmodal's ``retrieval_metrics`` with the reference path (numpy ranking of every query
into id lists, then the ``eccv-caption`` package's metric code) and with one comparison pass
over the score matrix (the floor: every metric derives from the ranks such a pass yields).
Positives: original COCO-5K (5 captions per image) and ECCV Caption. Best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import numpy as np


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from benchmarks._record import record
    from xmodal.eval.metrics import retrieval_metrics
    from xmodal.eval.protocols import get_protocol

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from eccv_caption._metrics import compute_eccv_metrics, compute_r_at_k

    rng = np.random.default_rng(args.seed)
    scores = rng.random((5000, 25000), dtype=np.float32)
    results = {"shape": list(scores.shape), "dtype": "float32", "seed": args.seed,
               "repeat": args.repeat, "protocols": {}}
    for name in ("coco5k", "eccv"):
        p = get_protocol(name)
        dirs = p.directions

        def ours():
            return {n: retrieval_metrics(d.query_scores(scores), d.query_relevance)
                    for n, d in dirs.items()}

        def one_pass():
            for n, d in dirs.items():
                s = d.query_scores(scores)
                np.count_nonzero(s >= s[:, :1], axis=1)

        image_ids = np.array([int(i) for i in dirs["i2t"].image_ids])
        caption_ids = np.array([int(c) for c in dirs["i2t"].text_ids])
        gts = {"i2t": {int(k): [int(v) for v in vs] for k, vs in p.dataset.image_to_captions.items()},
               "t2i": {int(k): [int(v) for v in vs] for k, vs in p.dataset.caption_to_images.items()}}

        def reference():
            out = {}
            for n, d in dirs.items():
                s = d.query_scores(scores)
                q_ids = image_ids if n == "i2t" else caption_ids
                g_ids = caption_ids if n == "i2t" else image_ids
                pos = {int(q): i for i, q in enumerate(q_ids)}
                rows = [pos[q] for q in gts[n]]
                order = np.argsort(-s[rows], axis=1, kind="stable")
                ranked = {q: g_ids[order[i]] for i, q in enumerate(gts[n])}
                r = {f"R@{k}": compute_r_at_k(ranked, gts[n], K=k) for k in (1, 5, 10)}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r.update(compute_eccv_metrics(ranked, gts[n]))
                out[n] = r
            return out

        t_ours = best_of(ours, args.repeat)
        t_pass = best_of(one_pass, args.repeat)
        t_ref = best_of(reference, 1)
        tracemalloc.start()
        ours()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        ours_vals, ref_vals = ours(), reference()
        agree = all(
            abs(ours_vals[n]["R@1"] - ref_vals[n]["R@1"]) < 1e-9
            and abs(ours_vals[n]["mAP@R"] - ref_vals[n]["eccv_map_at_r"]) < 1e-9
            for n in dirs
        )
        results["protocols"][name] = {
            "xmodal_s": round(t_ours, 4),
            "reference_s": round(t_ref, 4),
            "one_pass_s": round(t_pass, 4),
            "speedup_vs_reference": round(t_ref / t_ours, 2),
            "ratio_to_one_pass": round(t_ours / t_pass, 2),
            "xmodal_peak_extra_mb": round(peak / 1e6, 1),
            "metrics_agree": agree,
        }
        print(name, results["protocols"][name], flush=True)
    path = record("metrics_speed", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
