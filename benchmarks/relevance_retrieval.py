"""Time keyword retrieval with CMRM and CRM on Corel5K over every 1- to 4-word query.

The query set is that of Jeon et al. / Lavrenko et al.: every combination of 1-4 words present
in at least two test annotations. ``query_scores`` scores all queries against all 500 test images
at once: one (test x train) log-posterior, one sparse (queries x train) query log-likelihood and
one log-matmul-exp. For comparison, the per-query loop (the formula applied query by query,
image by image over the training set in log space, given the posterior) is timed on the first
``--loop-queries`` queries only, and per-query times are reported. Best of ``--repeat`` runs.

    python -m benchmarks.relevance_retrieval
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.special import logsumexp


def best_of(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def loop_scores(model, logpost, queries) -> np.ndarray:
    """Reference: log P(q | image) one query and one image at a time (posterior given)."""
    out = np.empty((len(queries), len(logpost)))
    for qi, q in enumerate(queries):
        q_ll = model.log_pw_[:, list(q)].sum(1)
        for i in range(len(logpost)):
            out[qi, i] = logsumexp(logpost[i] + q_ll)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loop-queries", type=int, default=20)
    args = ap.parse_args()

    from benchmarks._record import record
    from xmodal.data import load_corel5k
    from xmodal.eval.keyword_queries import query_relevance, word_combination_queries
    from xmodal.eval.metrics import retrieval_metrics
    from xmodal.models.relevance import blob_regions
    from xmodal.recipes.corel5k import fit_corel_cmrm, fit_corel_crm

    d = load_corel5k()
    t0 = time.perf_counter()
    queries = word_combination_queries(d.labels_test, max_len=4, min_count=2)
    t_queries = time.perf_counter() - t0
    rel = query_relevance(queries, d.labels_test)
    lengths = np.array([len(q) for q in queries])
    results = {
        "n_queries": len(queries),
        "n_queries_by_length": {str(k): int((lengths == k).sum()) for k in range(1, 5)},
        "n_test_images": len(d.blobs_test),
        "seconds_build_query_set": t_queries,
        "repeat": args.repeat,
        "models": {},
    }
    cmrm = fit_corel_cmrm(d)
    crm, emb = fit_corel_crm(d)
    models = {
        "cmrm": (cmrm, d.blobs_test),
        "crm_blob_embedding": (crm, blob_regions(d.blobs_test, emb)),
    }
    qlists = [list(q) for q in queries]
    for name, (model, images) in models.items():
        t_all, s = best_of(lambda m=model, im=images: m.query_scores(qlists, im), args.repeat)
        t_eval, m = best_of(lambda s=s: retrieval_metrics(s, rel, ks=(5,)), args.repeat)
        t_post, logpost = best_of(lambda m=model, im=images: m.log_posterior(im), args.repeat)
        k = min(args.loop_queries, len(queries))
        t_loop, s_loop = best_of(lambda m=model, lp=logpost, k=k: loop_scores(m, lp, queries[:k]), 1)
        results["models"][name] = {
            "seconds_all_queries": t_all,
            "seconds_posterior_only": t_post,
            "seconds_metrics": t_eval,
            "ms_per_query_vectorized": 1000 * t_all / len(queries),
            "loop_queries_timed": k,
            "ms_per_query_loop_excluding_posterior": 1000 * t_loop / k,
            "max_abs_diff_vs_loop": float(np.abs(s_loop - s[:k]).max()),
            "MAP": m["MAP"],
            "P@5": m["P@5"],
        }
        print(f"{name}: {len(queries)} queries in {t_all:.2f} s "
              f"(posterior {t_post:.2f} s; loop {1000 * t_loop / k:.1f} ms/query after the "
              f"posterior), MAP {m['MAP']:.4f}", flush=True)
    path = record("relevance_retrieval", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
