"""Photo search speed: indexing throughput with the default model, search latency at 10k / 100k.

    python -m benchmarks.photo_search                    # ~5 minutes on 2 cores
    python -m benchmarks.photo_search --images 64 --sizes 10000   # quick look

1. **Indexing** (``PhotoIndex.update``): Flickr8K test images (224 x 224 JPEGs, read in place) and
   scikit-image's sample photographs (up to 1411 x 1411) into a fresh database, with an empty
   feature cache (``XMODAL_CACHE`` points to a temporary folder), the model already loaded.
   Then a second ``update`` with nothing changed (the incremental check alone).
2. **Search latency** for a text query (``PhotoIndex.search(sentence, k=10)``: embed the sentence,
   exact inner-product FAISS search, paths from SQLite) over 10,000 and 100,000 synthetic unit
   vectors of the model's dimension stored in SQLite. Each query is a distinct Flickr8K caption
   never seen before (no text-cache hits). The FAISS search alone and the cold start (building
   the FAISS index from SQLite) are timed too.

Writes ``benchmarks/results/photo_search.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
_TMP = tempfile.mkdtemp(prefix="xmodal-bench-photos-")
os.environ["XMODAL_CACHE"] = os.path.join(_TMP, "cache")  # cold feature caches, before imports

from benchmarks._record import record  # noqa: E402
from benchmarks.synthetic_index import insert_vectors  # noqa: E402
from xmodal.index import PhotoIndex  # noqa: E402
from xmodal.index.photo_index import model_id, one_thread  # noqa: E402
from xmodal.paths import data_root  # noqa: E402


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = np.asarray(samples_s) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "mean_ms": round(float(ms.mean()), 2),
        "n": len(ms),
    }


def flickr_images_and_captions(n_images: int, n_captions: int) -> tuple[list[Path], list[str]]:
    root = data_root() / "flickr8k"
    images = root / "Flicker8k_Dataset"
    test_ids = (root / "Flickr8k_text" / "Flickr_8k.testImages.txt").read_text().split()
    paths = [images / i for i in test_ids if (images / i).is_file()][:n_images]
    captions: list[str] = []
    seen = set()
    for line in (root / "Flickr8k_text" / "Flickr8k.token.txt").read_text().splitlines():
        text = line.split("\t", 1)[-1].strip()
        if text and text not in seen:
            seen.add(text)
            captions.append(text)
        if len(captions) >= n_captions:
            break
    return paths, captions


def link_folder(files: list[Path], dest: Path) -> Path:
    """A folder of symbolic links to ``files`` (no image is copied)."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        (dest / f.name).symlink_to(f)
    return dest


def bench_indexing(model, files: list[Path], name: str) -> dict:
    folder = link_folder(files, Path(_TMP) / name)
    index = PhotoIndex(Path(_TMP) / f"{name}.db", model=model)
    t0, c0 = time.perf_counter(), time.process_time()
    stats = index.update(folder, progress=False)
    first, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    again = index.update(folder, progress=False)
    second = time.perf_counter() - t0
    index.close()
    n = stats.added
    return {
        "images": n,
        "skipped": stats.skipped,
        "seconds": round(first, 2),
        "images_per_s": round(n / first, 2),
        # CPU time of this process (all threads): what the work costs, whatever else runs
        "cpu_seconds": round(cpu, 2),
        "images_per_cpu_second": round(n / cpu, 2),
        "unchanged_rerun_seconds": round(second, 3),
        "unchanged_rerun_files_per_s": round(again.unchanged / second, 1),
    }


def synthetic_db(path: Path, n: int, dim: int, mid: str, seed: int = 0,
                 vectors: np.ndarray | None = None) -> None:
    """A photo index with ``n`` unit vectors under model id ``mid``: ``vectors`` if given,
    else random ones (row i is stored as ``.../img{i:07d}.jpg``)."""
    from xmodal.index.store import Store

    rng = np.random.default_rng(seed)
    store = Store(path)
    with store.transaction() as conn:
        for start in range(0, n, 10000):
            m = min(10000, n - start)
            if vectors is not None:
                vecs = np.asarray(vectors[start:start + m], np.float32)
            else:
                vecs = rng.standard_normal((m, dim)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            insert_vectors(conn, start + 1, start, vecs, mid)
        store.set_meta(conn, "model", mid)
        store.set_meta(conn, "model_spec", "")
        store.set_meta(conn, "dim", str(dim))
    store.close()


def bench_search(model, n: int, queries: list[str], fresh: list[str], k: int = 10) -> dict:
    mid = model_id(model, None)
    db = Path(_TMP) / f"synthetic_{n}.db"
    t0 = time.perf_counter()
    synthetic_db(db, n, int(model.dim), mid)
    build_db = time.perf_counter() - t0

    index = PhotoIndex(db, model=model)
    t0 = time.perf_counter()
    index.search("warm up the faiss index", k=k)  # builds the FAISS index from SQLite
    cold = time.perf_counter() - t0
    reopened = PhotoIndex(db, model=model)
    t0 = time.perf_counter()
    reopened.ann.ensure()  # a new process: loads the saved .faiss file
    load_saved = time.perf_counter() - t0

    # interleaved, so that both see the same load on a shared machine
    total, total_cpu, ann_only, text_only = [], [], [], []
    for i, q in enumerate(queries):
        t0, c0 = time.perf_counter(), time.process_time()
        hits = index.search(q, k=k)
        total.append(time.perf_counter() - t0)
        total_cpu.append(time.process_time() - c0)
        assert len(hits) == k
        if i < len(fresh):  # a sentence not seen before, embedded alone
            t0 = time.perf_counter()
            with one_thread(model):  # as search() does
                model.embed_texts([fresh[i]], progress=False)
            text_only.append(time.perf_counter() - t0)
    qv = model.embed_texts(queries[:100], progress=False)
    for row in qv:
        t0 = time.perf_counter()
        index.ann.search(row[None, :], k)
        ann_only.append(time.perf_counter() - t0)
    index.close()
    reopened.close()
    return {
        "vectors": n,
        "dim": int(model.dim),
        "k": k,
        "text_query_end_to_end": percentiles(total),
        "text_query_end_to_end_cpu_time": percentiles(total_cpu),
        "faiss_search_only": percentiles(ann_only),
        "text_embedding_only": percentiles(text_only),
        "first_search_builds_faiss_from_sqlite_s": round(cold, 2),
        "load_saved_faiss_s": round(load_saved, 3),
        "sqlite_db_mb": round(db.stat().st_size / 1e6, 1),
        "synthetic_db_write_s": round(build_db, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=200, help="Flickr8K test images to index")
    ap.add_argument("--queries", type=int, default=200, help="text queries per collection size")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--model", default=None, help="embedding model spec (default: built in)")
    args = ap.parse_args(argv)

    import torch

    from xmodal.cli.demo_cmd import SAMPLE_PHOTOS, sample_photo_dir
    from xmodal.factory import load_embedding_model

    t0 = time.perf_counter()
    model = load_embedding_model(args.model)
    model.embed_texts(["warm up"], progress=False)
    load_s = time.perf_counter() - t0
    n_fresh = 50 * len(args.sizes)
    flickr, captions = flickr_images_and_captions(
        args.images + 1, args.queries * len(args.sizes) + n_fresh
    )
    # warm the network up on an image outside the measured sets
    model.embed_images([str(flickr[-1])], progress=False)
    flickr = flickr[:-1] if len(flickr) > 1 else flickr

    from xmodal.index.photo_index import indexing_threads

    results: dict = {
        "model": model_id(model, args.model),
        "indexing_torch_threads": indexing_threads() or torch.get_num_threads(),
        "query_torch_threads": 1,
        "model_dim": int(model.dim),
        "model_load_s": round(load_s, 2),
    }
    print(
        f"model loaded in {load_s:.1f} s; indexing {len(flickr)} Flickr8K images", file=sys.stderr
    )
    results["indexing_flickr8k_224px"] = bench_indexing(model, flickr, "flickr8k")
    print(results["indexing_flickr8k_224px"], file=sys.stderr)
    src = sample_photo_dir()
    samples = [src / n for n in SAMPLE_PHOTOS if (src / n).is_file()]
    results["indexing_skimage_photos"] = bench_indexing(model, samples, "skimage")
    print(results["indexing_skimage_photos"], file=sys.stderr)
    results["search"] = {}
    for j, n in enumerate(args.sizes):
        queries = captions[j * args.queries : (j + 1) * args.queries]
        fresh = captions[-(j + 1) * 50 :][:50]
        res = bench_search(model, n, queries, fresh)
        results["search"][str(n)] = res
        print(n, res, file=sys.stderr)
    path = record("photo_search", results)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        shutil.rmtree(_TMP, ignore_errors=True)  # ~0.7 GB of databases and caches
    sys.exit(code)
