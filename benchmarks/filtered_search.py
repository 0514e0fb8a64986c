"""Filtered photo search on a large index: a filter that keeps 1% of 100,000 photos.

    python -m benchmarks.filtered_search                 # 100,000 photos, ~3 minutes
    python -m benchmarks.filtered_search --photos 20000 --queries 50

Builds a photo database the way ``xmodal index`` stores one (files, 256-d unit vectors, photo
metadata: dates spread over 10 years, 100 places, 100 cameras, so that one place, one camera,
one 36-day window or a 16-km circle each keep about 1%), without images: the embedding model is
a stand-in whose text vector costs nothing, so the timings are the search itself (SQL filter,
ID selection, exact ranking of the selected vectors since the index is an HNSW graph at this
size, results with their metadata). The default model's sentence embedding is timed apart
(``text_ms``) and added for the end-to-end figure. Median (p50) and p90 over the queries.

Writes ``benchmarks/results/filtered_search.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._record import record

DIM = 256


class StubModel:
    """A text 'encoder' that returns one of a few fixed unit vectors: no model cost."""

    dim = DIM
    model_id = "bench-stub-256"

    def __init__(self, seed: int = 1):
        rng = np.random.default_rng(seed)
        v = rng.standard_normal((64, DIM)).astype(np.float32)
        self.vectors = v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed_texts(self, texts, *, progress=False):
        return np.stack([self.vectors[hash(t) % 64] for t in texts])

    def embed_images(self, images, *, progress=False, cache=True):
        raise NotImplementedError


def build(db: Path, n: int, seed: int = 0) -> None:
    """A photo database of ``n`` synthetic photos (no files behind them)."""
    from xmodal.index import PhotoIndex
    from xmodal.index.metadata import PhotoMeta

    rng = np.random.default_rng(seed)
    index = PhotoIndex(db, model=StubModel())
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    days = rng.integers(0, 3650, n)
    place = rng.integers(0, 100, n)
    camera = rng.integers(0, 100, n)
    lat0, lon0 = 38.0, -9.0  # 100 cities on a 10 x 10 grid, one degree apart
    store = index.store
    with store.transaction() as conn:
        for i in range(n):
            path = f"/bench/{i % 100:03d}/{i:07d}.jpg"
            fid = store.upsert_file(conn, path, 1000, 0, f"{i:040x}", 4000, 3000, "ok", None)
            store.put_vector(conn, fid, index.model_id, vecs[i])
            d = np.datetime64("2015-01-01") + int(days[i])
            p = int(place[i])
            store.put_metadata(conn, fid, PhotoMeta(
                taken_at=f"{d}T12:00:00", date_source="exif", camera_make="Make",
                camera_model=f"Model {int(camera[i]):03d}",
                lat=lat0 + p // 10 + float(rng.normal(0, 0.02)),
                lon=lon0 + p % 10 + float(rng.normal(0, 0.02)),
                city=f"City {p:02d}", region="Region", country="Country"))
        index._record_model(conn, index.model_id)
    index.ann.rebuild()
    index.close()


def timed(fn, n: int) -> dict:
    fn(0)
    ts = []
    for i in range(n):
        t = time.perf_counter()
        fn(i + 1)
        ts.append(1000 * (time.perf_counter() - t))
    ts.sort()
    return {"p50_ms": round(statistics.median(ts), 2), "p90_ms": round(ts[int(0.9 * (n - 1))], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--no-text-model", action="store_true",
                    help="skip timing the default model's sentence embedding")
    args = ap.parse_args()
    from xmodal.index import PhotoIndex
    from xmodal.index.filters import PhotoFilter

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "photos.db"
        t0 = time.perf_counter()
        build(db, args.photos)
        build_s = time.perf_counter() - t0
        index = PhotoIndex(db, model=StubModel(), create=False)
        filters = {
            "none": PhotoFilter(),
            "place (1 of 100 cities)": PhotoFilter(place="City 42"),
            "camera (1 of 100)": PhotoFilter(camera="Model 042"),
            "dates (36 of 3,650 days)": PhotoFilter(after="2019-03-01", before="2019-04-05"),
            "near (16 km)": PhotoFilter(near=(42.0, -5.0), km=16),
            "under (1 of 100 folders)": PhotoFilter(under="/bench/042"),
        }
        out = {"photos": args.photos, "dim": DIM, "k": 10, "queries": args.queries,
               "index_kind": index.ann.kind, "ef_search": index.ann.ef_search,
               "build_s": round(build_s, 1), "filters": {}}
        for name, f in filters.items():
            kept = f.ids(index.store)
            row = timed(lambda i, f=f: index.find(f"query {i}", 10, filters=f, min_relevance=0),
                        args.queries)
            row["kept"] = args.photos if kept is None else int(len(kept))
            row["kept_pct"] = round(100 * row["kept"] / args.photos, 2)
            out["filters"][name] = row
            print(name, row, flush=True)
        if not args.no_text_model:
            from xmodal.models.dual import default_model

            model = default_model()
            out["text_ms"] = timed(lambda i: model.embed_texts([f"a dog on a beach {i}"],
                                                              progress=False), 20)
            print("default model, one sentence:", out["text_ms"])
        out["load_average"] = os.getloadavg()[0]
    record("filtered_search", out)


if __name__ == "__main__":
    main()
