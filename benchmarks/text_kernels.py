"""Benchmark: Hodosh et al. text kernels on Flickr8K: time, peak memory, text-only sanity.

For each kernel: ``fit`` on the 6,000 training items (5 captions each), the 6,000 x 6,000 training
Gram matrix, and the 1,000 x 6,000 test-vs-train matrix (one caption per test image, ``#2``).
``--sentence-level`` also times the 30,000 x 1,000 caption-level kernel (every training caption
as its own item), for the kernels that take single captions (BoW1, Tri1).

Sanity score (text only, no images): each test image's caption ``#2`` ranks the 1,000 test images
represented by their four other captions; we report R@1/R@5/R@10 and the median rank of the
caption's own image. Better lexical matching should raise it.

    python -m benchmarks.text_kernels                 # -> benchmarks/results/text_kernels.json
    python -m benchmarks.text_kernels --kernels bow5 tri5 tri5sem
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings

import numpy as np

DEFAULT = [
    "bow1",
    "bow5",
    "bow5-idf",
    "bow5-sqrtidf",
    "tagrank",
    "tri5",
    "tri5-sqrtidf",
    "tri5-align",
    "tri5-dist",
    "tri5-align-dist",
    "tri5sem",
    "tri5-lin",
]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def ranks_of_diagonal(S: np.ndarray) -> np.ndarray:
    """1-based rank of S[i, i] in row i (ties counted pessimistically)."""
    d = np.diag(S)
    return (S > d[:, None]).sum(1) + (S == d[:, None]).sum(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", nargs="+", default=DEFAULT)
    ap.add_argument("--no-gram", action="store_true", help="skip the 6,000 x 6,000 Gram matrix")
    ap.add_argument("--sentence-level", action="store_true")
    ap.add_argument("--name", default="text_kernels")
    args = ap.parse_args()

    from benchmarks._record import record
    from xmodal.data import load_flickr8k
    from xmodal.features.captions import flickr8k_tokens
    from xmodal.features.text_kernels import make_text_kernel

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    data = load_flickr8k(judgments=False)
    tok = flickr8k_tokens(data, tagged=True)
    prep_s = time.perf_counter() - t0
    train_ids, test_ids = data.split("train"), data.split("test")
    train = [[tok[c.id] for c in data.captions_of(i)] for i in train_ids]
    test_q = [[tok[f"{i}#2"]] for i in test_ids]
    test_g = [[tok[c.id] for c in data.captions_of(i) if c.index != 2] for i in test_ids]
    print(f"preprocessing (cached) {prep_s:.1f}s; train {len(train)} items", file=sys.stderr)

    results: dict = {
        "preprocess_s": round(prep_s, 1),
        "n_train": len(train),
        "n_test": len(test_q),
        "kernels": {},
    }
    for name in args.kernels:
        row: dict = {}
        k = make_text_kernel(name)
        t = time.perf_counter()
        k.fit(train)
        row["fit_s"] = round(time.perf_counter() - t, 2)
        if not args.no_gram:
            t = time.perf_counter()
            G = k.kernel(train)
            row["gram_6000_s"] = round(time.perf_counter() - t, 2)
            row["gram_symmetric_maxdiff"] = float(np.abs(G - G.T).max())
            row["gram_min_eig"] = float(np.linalg.eigvalsh(G[:500, :500]).min())
            del G
        t = time.perf_counter()
        T = k.kernel(test_q, train)
        row["test_1000x6000_s"] = round(time.perf_counter() - t, 2)
        del T
        S = k.kernel(test_q, test_g)
        r = ranks_of_diagonal(S)
        row["text_sanity"] = {
            "R@1": float((r <= 1).mean() * 100),
            "R@5": float((r <= 5).mean() * 100),
            "R@10": float((r <= 10).mean() * 100),
            "medR": float(np.median(r)),
        }
        if args.sentence_level and name in ("bow1", "tri1", "bow1-sqrtidf"):
            sents = [[c] for d in train for c in d]
            t = time.perf_counter()
            k.kernel(sents, test_q)
            row["sentences_30000x1000_s"] = round(time.perf_counter() - t, 2)
        row["peak_rss_mb"] = round(peak_rss_mb())
        results["kernels"][name] = row
        print(name, row, file=sys.stderr, flush=True)
    path = record(args.name, results)
    print(path)


if __name__ == "__main__":
    main()
