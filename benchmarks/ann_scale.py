"""Search at scale on one machine: 10k / 100k / 1M photos, flat vs HNSW, latency and recall.

    python -m benchmarks.ann_scale                       # 10k, 100k, 1M: ~30 minutes on 2 cores
    python -m benchmarks.ann_scale --sizes 100000 --queries 200

The vectors have the structure of real ones: the default model's embeddings of the 8,091
Flickr8K photos, and beyond those, points drawn around them — a random real embedding plus
Gaussian noise scaled so that a drawn point's cosine to its source equals the median cosine
between a real embedding and its nearest real neighbour (uniform random unit vectors have no
neighbourhoods and would make any ANN look bad). Queries are the model's embeddings of distinct
Flickr8K captions. For each size: the photo index (``PhotoIndex``) over a SQLite store of the
vectors, the first search (which builds the FAISS index: flat up to 50,000, HNSW above), the
process's resident memory, end-to-end text-query latency (embed the sentence, search, read the
paths) p50/p99, and recall@10 against exact search.

Writes ``benchmarks/results/ann_scale.json``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._record import record
from benchmarks.photo_search import flickr_images_and_captions, synthetic_db
from xmodal.features.text_encoder import encode_texts
from xmodal.index import PhotoIndex
from xmodal.index.photo_index import model_id


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def real_embeddings(model) -> np.ndarray:
    from xmodal.features import flickr8k_image_features

    _, f = flickr8k_image_features()
    return model.embed_image_features(f.pooled, f.logits).astype(np.float32)


def structured(real: np.ndarray, n: int, seed: int = 0) -> tuple[np.ndarray, float]:
    """``n`` unit vectors: the real ones first, then noisy copies of random real ones."""
    rng = np.random.default_rng(seed)
    sims = real @ real.T
    np.fill_diagonal(sims, -1)
    nn_cos = float(np.median(sims.max(1)))
    sigma = np.sqrt(1 / nn_cos**2 - 1)  # cos(e, e + sigma * g) ~ 1 / sqrt(1 + sigma^2)
    out = np.empty((n, real.shape[1]), np.float32)
    m = min(n, len(real))
    out[:m] = real[:m]
    for start in range(m, n, 100_000):
        k = min(100_000, n - start)
        src = real[rng.integers(0, len(real), k)]
        noise = rng.standard_normal(src.shape).astype(np.float32) / np.sqrt(real.shape[1])
        v = src + sigma * noise
        out[start:start + k] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out, nn_cos


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    best_s = np.full((len(queries), k), -np.inf, np.float32)
    best_i = np.zeros((len(queries), k), np.int64)
    for start in range(0, len(vectors), 200_000):
        s = queries @ vectors[start:start + 200_000].T
        idx = np.argpartition(-s, k - 1, axis=1)[:, :k]
        cand_s = np.concatenate([best_s, np.take_along_axis(s, idx, 1)], 1)
        cand_i = np.concatenate([best_i, idx + start], 1)
        top = np.argsort(-cand_s, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, top, 1), np.take_along_axis(cand_i, top, 1)
    return best_i


def bench(model, vectors: np.ndarray, queries: list[str], work: Path, k: int = 10) -> dict:
    n = len(vectors)
    mid = model_id(model, None)
    db = work / f"scale_{n}.db"
    t0 = time.perf_counter()
    synthetic_db(db, n, vectors.shape[1], mid, vectors=vectors)
    write_s = time.perf_counter() - t0
    before = rss_mb()
    index = PhotoIndex(db, model=model)
    t0 = time.perf_counter()
    index.search("warm up", k=k)  # builds the FAISS index from SQLite and saves it
    build_s = time.perf_counter() - t0
    after = rss_mb()
    reopened = PhotoIndex(db, model=model)
    t0 = time.perf_counter()
    reopened.ann.ensure()
    load_s = time.perf_counter() - t0
    lat = []
    found = []
    for q in queries:
        t0 = time.perf_counter()
        hits = reopened.search(q, k=k)
        lat.append(time.perf_counter() - t0)
        found.append([int(Path(h.path).stem[3:]) for h in hits])
    # not model.embed_texts: it would cache these sentences and make the next size's queries
    # skip the text encoder
    qv = model.embed_text_features(encode_texts(queries, cache=False, progress=False))
    truth = exact_top(vectors, qv, k)
    recall = float(np.mean([len(set(f) & set(t.tolist())) / k for f, t in zip(found, truth)]))
    ms = np.asarray(lat) * 1000
    kind = reopened.ann.kind
    ef = reopened.ann.ef_search
    index.close()
    reopened.close()
    cold = []
    for q in queries[:3]:  # a fresh `xmodal search` process each time: the cold CLI path
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "xmodal", "search", q + " again", "--db", str(db),
                        "-k", str(k), "--json"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        cold.append(time.perf_counter() - t0)
    for p in work.glob(f"scale_{n}.db*"):
        p.unlink()
    return {"vectors": n, "index": kind, "ef_search": ef, "recall_at_10": round(recall, 4),
            "query_p50_ms": round(float(np.percentile(ms, 50)), 2),
            "query_p99_ms": round(float(np.percentile(ms, 99)), 2),
            "first_search_builds_index_s": round(build_s, 1),
            "load_saved_index_s": round(load_s, 3), "rss_growth_building_mb": round(after - before),
            "sqlite_write_s": round(write_s, 1), "queries": len(queries),
            "cold_cli_search_s": [round(c, 2) for c in cold]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    from xmodal.models.dual import default_model

    model = default_model()
    real = real_embeddings(model)
    _, captions = flickr_images_and_captions(0, args.queries + 1)
    queries = captions[1:args.queries + 1]
    model.embed_texts(captions[:1], progress=False)  # load the text tower
    work = Path(tempfile.mkdtemp(prefix="xmodal-ann-scale-"))
    results = {"model": model_id(model, None), "real_embeddings": len(real),
               "ef_search": os.environ.get("XMODAL_EF_SEARCH", "by size (xmodal.index.ann.ef_search)"),
               "sizes": []}
    for n in args.sizes:
        vectors, nn_cos = structured(real, n)
        results["median_nearest_neighbour_cosine"] = round(nn_cos, 4)
        row = bench(model, vectors, queries, work)
        print(row, flush=True)
        results["sizes"].append(row)
    record("ann_scale", results)


if __name__ == "__main__":
    main()
