"""How deep must an HNSW search go at 1,000,000 vectors? Recall@10 and time per efSearch.

    python -m benchmarks.hnsw_depth                    # ~12 minutes on 2 cores
    python -m benchmarks.hnsw_depth --n 300000 --ef-construction 40

The vectors and queries of ``benchmarks.ann_scale`` (the default model's embeddings of the
Flickr8K photos and noisy copies of them; 300 caption queries); FAISS ``IndexHNSWFlat`` (M = 32)
built with each efConstruction, searched at efSearch 128 / 256 / 512 / 1,024, recall@10 against
exact search and FAISS time per query. The depths chosen by ``xmodal.index.ann.ef_search`` come
from this measurement.

Writes ``benchmarks/results/hnsw_depth.json``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._record import record
from benchmarks.ann_scale import exact_top, real_embeddings, structured
from benchmarks.photo_search import flickr_images_and_captions


def main() -> None:
    import faiss

    from xmodal.features.text_encoder import encode_texts
    from xmodal.models.dual import default_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--ef-construction", type=int, nargs="+", default=[40, 80])
    ap.add_argument("--ef-search", type=int, nargs="+", default=[128, 256, 512, 1024])
    args = ap.parse_args()
    model = default_model()
    real = real_embeddings(model)
    _, captions = flickr_images_and_captions(0, 301)
    queries = model.embed_text_features(
        encode_texts(captions[1:301], cache=False, progress=False)).astype(np.float32)
    vectors, nn_cos = structured(real, args.n)
    truth = exact_top(vectors, queries, 10)
    rows = []
    for efc in args.ef_construction:
        index = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = efc
        t0 = time.perf_counter()
        index.add(vectors)
        build = time.perf_counter() - t0
        for efs in args.ef_search:
            index.hnsw.efSearch = efs
            t0 = time.perf_counter()
            _, found = index.search(queries, 10)
            ms = (time.perf_counter() - t0) / len(queries) * 1000
            recall = float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth)]))
            row = {"ef_construction": efc, "build_s": round(build, 1), "ef_search": efs,
                   "recall_at_10": round(recall, 4), "faiss_ms_per_query": round(ms, 2)}
            print(row, flush=True)
            rows.append(row)
    record("hnsw_depth", {"vectors": args.n, "dim": int(vectors.shape[1]), "M": 32,
                          "median_nearest_neighbour_cosine": round(nn_cos, 4),
                          "queries": len(queries), "rows": rows})


if __name__ == "__main__":
    main()
