"""Scale benchmark of ``xmodal embed`` + ``xmodal ann build``: 1M and 10M vectors with the
structure of real embeddings, in resumable stages (each its own command, none long):

    python -m benchmarks.scale_ann real                       # embed every photo we have (Ray)
    python -m benchmarks.scale_ann generate --n 1000000       # real + generated, float16 shards
    python -m benchmarks.scale_ann queries                    # 1,000 caption queries
    python -m benchmarks.scale_ann truth --n 1000000          # exact top-10, in chunks
    python -m benchmarks.scale_ann build --n 1000000 [--factory F] [--memory-budget 8GB]
    python -m benchmarks.scale_ann search --n 1000000 [--factory F]   # records the result

Real embeddings: the default model's embeddings of every photo on this machine (Flickr8K
8,091, the 1,000 Flickr8K originals, Conceptual Captions 18,643), written by ``xmodal embed``
on a local Ray instance (its throughput is recorded in ``scale_embed.json``). Generated vectors:
a random real embedding plus Gaussian noise scaled so that a generated point's cosine to its
source equals the median cosine between a real embedding and its nearest real neighbour (the
recipe of ``benchmarks.ann_scale``; uniform random vectors have no neighbourhoods). Queries: the
model's embeddings of 1,000 distinct Flickr8K captions (text -> image search, the real use;
the model of the real embeddings: if the default model changed since, its saved directory in
``<work>/query-model``).
Large files live under ``$XMODAL_SCALE_DIR`` (default /work/data/scale-bench), never in the repo.

``search`` opens the built index in a fresh process (memory-mapped), searches one query at a
time on one thread at several nprobe values and records p50/p99 latency, recall@10 against the
exact top-10, resident memory, build times and on-disk size to
``benchmarks/results/scale_ann_<n>.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._record import record
from xmodal.scale import shards as sh

SHARD_ROWS = 500_000


def work() -> Path:
    return Path(os.environ.get("XMODAL_SCALE_DIR", "/work/data/scale-bench"))


def label(n: int) -> str:
    return f"{n // 1_000_000}m" if n % 1_000_000 == 0 else str(n)


def real_sources() -> dict[str, Path]:
    from xmodal.paths import data_root

    return {"flickr8k": data_root() / "flickr8k" / "Flicker8k_Dataset",
            "flickr8k-originals": Path("/work/data/flickr8k-originals/data/Images"),
            "cc18k": Path("/work/data/cc18k/data")}


def stage_real(args) -> None:
    """Embed every photo we have with the Ray engine (a local Ray instance, 2 workers)."""
    from xmodal.scale.embed import run_embed

    runs = {}
    for name, src in real_sources().items():
        if not src.is_dir():
            print(f"skip {name}: {src} missing")
            continue
        out = work() / "real" / name
        s = run_embed(src, out, engine="ray", workers=args.workers, cpus_per_worker=1.0,
                      shard_size=1000)
        print(s, flush=True)
        if s["rows_written"]:
            runs[name] = s
    if runs:
        total = sum(r["rows_written"] for r in runs.values())
        secs = sum(r["elapsed_s"] for r in runs.values())
        record("scale_embed", {
            "engine": "ray (local instance started by ray.init on this machine)",
            "workers": args.workers, "cpus": os.cpu_count(), "runs": runs,
            "images": total, "seconds": round(secs, 1),
            "images_per_s": round(total / secs, 1),
            "images_per_s_per_worker": round(total / secs / args.workers, 1)})


def real_vectors() -> tuple[np.ndarray, list[str], str]:
    folders = [p for p in sorted((work() / "real").iterdir()) if (p / sh.MANIFEST).is_file()]
    shards = sh.open_shards(folders)
    import pyarrow.compute as pc

    vecs, paths = [], []
    for f in shards.files():
        t = sh.read_shard(f, shards.model_id)
        t = t.filter(pc.field("ok"))
        vecs.append(sh.embeddings(t))
        paths += t["path"].to_pylist()
    return np.concatenate(vecs), paths, shards.model_id


def nn_cosine(real: np.ndarray) -> float:
    """Median cosine between a real embedding and its nearest other real embedding."""
    best = np.empty(len(real), np.float32)
    for lo in range(0, len(real), 2000):
        s = real[lo:lo + 2000] @ real.T
        s[np.arange(len(s)), np.arange(lo, lo + len(s))] = -1
        best[lo:lo + 2000] = s.max(1)
    return float(np.median(best))


def gen_dir(n: int) -> Path:
    return work() / f"gen-{label(n)}"


def stage_generate(args) -> None:
    real, paths, mid = real_vectors()
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    nn = nn_cosine(real)
    sigma = np.sqrt(1 / nn**2 - 1)  # cos(e, e + sigma * g) ~ 1 / sqrt(1 + sigma^2)
    out = gen_dir(args.n)
    out.mkdir(parents=True, exist_ok=True)
    n_shards = -(-args.n // SHARD_ROWS)
    m = sh.Manifest(mid, "", real.shape[1], "float16",
                    f"synthetic: {len(real)} real embeddings + noise (median NN cosine "
                    f"{nn:.4f}, sigma {sigma:.4f})", SHARD_ROWS, args.n, n_shards)
    sh.write_json_atomic(out / sh.MANIFEST, m.to_dict())
    for s in range(n_shards):
        lo, hi = s * SHARD_ROWS, min(args.n, (s + 1) * SHARD_ROWS)
        if sh.shard_done(out / sh.shard_name(s), hi - lo, mid):
            continue
        t0 = time.perf_counter()
        rng = np.random.default_rng(1000 + s)
        idx = np.arange(lo, hi)
        src = np.where(idx < len(real), idx, rng.integers(0, len(real), hi - lo))
        vec = real[src]
        fresh = idx >= len(real)
        noise = rng.standard_normal((int(fresh.sum()), real.shape[1]), np.float32)
        v = vec[fresh] + sigma * noise / np.sqrt(real.shape[1])
        vec[fresh] = v / np.linalg.norm(v, axis=1, keepdims=True)
        names = [paths[j] if i < len(real) else f"synthetic/{i:09d}~{Path(paths[j]).name}"
                 for i, j in zip(idx, src)]
        table = sh.array_table(names, [None] * len(idx), [None] * len(idx),
                               vec.astype(np.float16), np.ones(len(idx), bool), mid)
        sh.write_shard(out, s, table)
        print(f"shard {s + 1}/{n_shards} in {time.perf_counter() - t0:.1f} s", flush=True)
    (out / "generation.json").write_text(
        f'{{"real": {len(real)}, "median_nn_cosine": {nn:.4f}, "sigma": {sigma:.4f}}}')


def query_model():
    """The model of the real embeddings: the default one, else the model directory saved in
    ``<work>/query-model`` (when the default model changed after the real stage ran)."""
    from xmodal.index.photo_index import model_id
    from xmodal.models.dual import DualEncoder, default_model

    real = sorted(p for p in (work() / "real").iterdir() if (p / sh.MANIFEST).is_file())
    wanted = sh.read_manifest(real[0]).model_id
    model = default_model()
    if model_id(model, None) != wanted and (work() / "query-model").is_dir():
        model = DualEncoder.load(work() / "query-model")
    if model_id(model, None) != wanted:
        raise SystemExit(f"no model with id {wanted}: save it to {work() / 'query-model'}")
    return model


def stage_queries(args) -> None:
    from benchmarks.photo_search import flickr_images_and_captions

    _, captions = flickr_images_and_captions(0, args.queries)
    q = query_model().embed_texts(captions, progress=False)
    np.save(work() / "queries.npy", q.astype(np.float32))
    print(q.shape)


def stage_truth(args) -> None:
    from xmodal.scale.ann_build import exact_top

    q = np.load(work() / "queries.npy")
    t0 = time.perf_counter()
    truth = exact_top(sh.open_shards([gen_dir(args.n)]), q, 10)
    np.save(gen_dir(args.n) / "truth.npy", truth)
    print(f"exact top-10 of {len(q)} queries over {args.n:,} in {time.perf_counter() - t0:.0f} s")


def ann_dir(args) -> Path:
    tag = (args.factory or f"auto-{args.memory_budget}").replace(",", "-")
    return work() / f"ann-{label(args.n)}-{tag}"


def stage_build(args) -> None:
    from xmodal.scale.ann_build import build_index

    t0 = time.perf_counter()
    meta = build_index([gen_dir(args.n)], ann_dir(args), memory_budget=args.memory_budget,
                       factory=args.factory, stages=("train", "add", "merge"),
                       time_limit=args.time_limit)
    print({k: v for k, v in meta.items() if k not in ("shards", "offsets")},
          f"{time.perf_counter() - t0:.0f} s", flush=True)


def rss_mb(key: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stage_search(args) -> None:
    import faiss

    from xmodal.scale.ann_build import recall_at
    from xmodal.scale.shards import read_ann_meta
    from xmodal.scale.ann_search import ShardIndex

    faiss.omp_set_num_threads(1)  # one query at a time on one thread: the server's setting
    q = np.load(work() / "queries.npy")
    truth = np.load(gen_dir(args.n) / "truth.npy")
    before = rss_mb()
    t0 = time.perf_counter()
    index = ShardIndex(ann_dir(args))
    open_s = time.perf_counter() - t0
    rows = []
    for nprobe in args.nprobe:
        if index.is_ivf and nprobe > index.nlist:
            break
        lat, found = [], []
        for i in range(len(q)):
            t0 = time.perf_counter()
            _, ids = index.search_ids(q[i:i + 1], 10, nprobe=nprobe)
            lat.append(time.perf_counter() - t0)
            found.append(ids[0])
        ms = np.asarray(lat) * 1000
        row = {"nprobe": nprobe, "recall_at_10": round(recall_at(np.array(found), truth, 10), 4),
               "p50_ms": round(float(np.percentile(ms, 50)), 2),
               "p99_ms": round(float(np.percentile(ms, 99)), 2),
               "rss_mb": round(rss_mb())}
        print(row, flush=True)
        rows.append(row)
        if not index.is_ivf:
            break
    t0 = time.perf_counter()
    paths = index.paths(np.array(found[:100]).ravel())
    path_ms = (time.perf_counter() - t0) / 100 * 1000
    meta = read_ann_meta(ann_dir(args))
    good = [r for r in rows if r["recall_at_10"] >= 0.9]
    chosen = min(good, key=lambda r: r["p50_ms"]) if good else max(rows,
                                                                   key=lambda r: r["recall_at_10"])
    gen = (gen_dir(args.n) / "generation.json").read_text()
    record(f"scale_ann_{label(args.n)}" + (f"_{args.tag}" if args.tag else ""), {
        "vectors": int(meta["vectors"]), "dim": int(meta["dim"]), "model": meta["model"],
        "data": f"real embeddings + generated: {gen}",
        "queries": f"{len(q)} distinct Flickr8K captions (text embeddings)",
        "factory": meta["factory"], "why": meta["why"], "nlist": meta["nlist"],
        "memory_budget": args.memory_budget, "train_vectors": meta["train_vectors"],
        "build_s": meta["stages"], "index_bytes_on_disk": meta["index_bytes"],
        "open_s": round(open_s, 3), "rss_before_open_mb": round(before),
        "rss_peak_mb": round(rss_mb("VmHWM")),
        "path_lookup_ms_per_result": round(path_ms, 3), "example_paths": paths[:3],
        "search": "one query at a time, one FAISS thread, k=10; recall@10 vs exact search",
        "rows": rows, "chosen": chosen, "target": "recall@10 >= 0.90 with p50 <= 10 ms"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=["real", "generate", "queries", "truth", "build", "search"])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--factory", default=None)
    ap.add_argument("--memory-budget", default="4GB")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--nprobe", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256])
    ap.add_argument("--tag", default="", help="suffix of the results file")
    args = ap.parse_args()
    work().mkdir(parents=True, exist_ok=True)
    globals()[f"stage_{args.stage}"](args)


if __name__ == "__main__":
    main()
