"""Build a FAISS index over embedding shards, its inverted lists merged on disk.

    build_index(shard_folders, out, memory_budget="4GB", factory=None) -> dict (ann.json)

Stages, each resumable (a finished stage's files are kept and skipped on a re-run):

1. ``train``  - choose the index (:func:`choose_factory`), read a random training sample and a
   held-out query sample from the shards, train, write ``trained.index`` and ``queries.npy``;
2. ``add``    - per shard, add its vectors (ids = row numbers over all shards) to a copy of the
   trained index, write ``blocks/block-NNNNN.index``; ``jobs`` processes add shards in parallel;
3. ``merge``  - merge the blocks' inverted lists into one on-disk file (``index.ivfdata``, FAISS
   ``OnDiskInvertedLists``) and write ``index.faiss``, which is memory-mapped when opened, so
   the index may be larger than RAM;
4. ``eval``   - exact top-k of the held-out queries over all shards (in chunks), then recall@k of
   the index at each nprobe; the smallest nprobe reaching ``target_recall`` becomes the default;
5. ``catalog`` - ``catalog.db``: each vector's path, SHA-1 and photo metadata (date, camera,
   place), so that a search of the folder filters, sorts and answers as a photo database does
   (:mod:`xmodal.scale.ann_catalog`).

Below ``FLAT_BELOW`` vectors (or when exact vectors fit the budget and the collection is small)
the index is exact (``Flat``) and ``add`` writes it directly. ``ann.json`` records the choice,
the shards (for paths), the timings and the recall table.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

from xmodal.errors import XmodalError
from xmodal.scale import shards as sh
from xmodal.scale.ann_catalog import build_catalog, catalog_path

FLAT_BELOW = 100_000
DATA_FILE = "index.ivfdata"
STAGES = ("train", "add", "merge", "eval", "catalog")
NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CODE_SIZES = {"SQ8": 1.0, "SQ6": 0.75, "SQ4": 0.5}  # bytes per dimension


def parse_size(text: str | int) -> int:
    """Bytes from '4GB', '512MB', '1.5G', or a number of bytes."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*([\d.]+)\s*([kmgt]?)i?b?\s*", str(text).lower())
    if not m:
        raise XmodalError(f"--memory-budget: expected a size such as 4GB or 512MB, not {text!r}")
    return int(float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " "))


def n_lists(n: int) -> int:
    """Inverted lists for ``n`` vectors: the power of two nearest 2 * sqrt(n), 256..65,536
    (about 1,000 vectors a list at 1M, 1,200 at 10M: k-means on 2 cores stays minutes)."""
    return int(min(65536, max(256, 2 ** round(math.log2(2 * math.sqrt(max(n, 1)))))))


def choose_factory(n: int, d: int, budget: int) -> tuple[str, str]:
    """(FAISS factory string, why), from the collection size and the memory budget.

    Exact below FLAT_BELOW vectors when the float32 vectors fit the budget. Otherwise IVF with an
    HNSW coarse quantizer (fast assignment of millions of vectors) and the finest code the budget
    holds: SQ8 (d bytes: recall close to exact), SQ4 (d/2 bytes), else OPQ+PQ with m bytes
    (compressed distances lose recall: see docs/scale.md for the measured trade-off)."""
    if n < FLAT_BELOW and n * d * 4 <= budget:
        return "Flat", f"{n:,} vectors < {FLAT_BELOW:,}: exact search, no training"
    nlist = n_lists(n)
    quant = f"IVF{nlist}_HNSW32" if nlist >= 1024 else f"IVF{nlist}"
    fixed = nlist * d * 4 * 2  # centroids and their HNSW graph, roughly
    per_vector = (budget - fixed) / max(n, 1) - 8  # minus the 8-byte id
    for code, bpd in CODE_SIZES.items():
        if per_vector >= d * bpd:
            return f"{quant},{code}", (f"{per_vector:.0f} bytes a vector in the budget: "
                                       f"{code} ({d * bpd:.0f} bytes)")
    m = max((x for x in range(4, d + 1) if d % x == 0 and x <= per_vector and x % 4 == 0),
            default=0)
    if m == 0:
        raise XmodalError(f"--memory-budget {budget / 2**30:.2f} GB is too small for {n:,} "
                          "vectors: even 4 bytes a vector do not fit")
    return f"OPQ{m},{quant},PQ{m}", f"{per_vector:.0f} bytes a vector in the budget: PQ{m}"


def _write_index(index, path: Path) -> None:
    import faiss

    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)


def _layout(shards: sh.ShardSet) -> tuple[list[str], np.ndarray]:
    """(shard files, first id of each shard + total): ids count the ok rows in shard order."""
    files, counts = [], []
    for path in shards.files():
        ok = sh.read_shard(path, shards.model_id, ["ok"])["ok"].to_numpy(zero_copy_only=False)
        files.append(str(path.resolve()))
        counts.append(int(ok.sum()))
    return files, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _sample(shards: sh.ShardSet, offsets: np.ndarray, n_train: int, n_query: int, seed: int):
    """(training vectors, held-out query vectors, their ids): one pass over the shards."""
    rng = np.random.default_rng(seed)
    n = int(offsets[-1])
    n_query = min(n_query, max(n // 10, 1))
    picks = rng.permutation(n)[: min(n, n_train + n_query)]
    q_ids = np.sort(picks[:n_query])
    t_ids = np.sort(picks[n_query:])
    train, query = [], []
    for s, (_, vecs) in enumerate(shards.iter_vectors()):
        lo, hi = offsets[s], offsets[s + 1]
        train.append(vecs[t_ids[(t_ids >= lo) & (t_ids < hi)] - lo])
        query.append(vecs[q_ids[(q_ids >= lo) & (q_ids < hi)] - lo])
    return np.concatenate(train), np.concatenate(query), q_ids


def _save_meta(out: Path, meta: dict[str, Any]) -> None:
    sh.write_json_atomic(sh.ann_meta_path(out), meta)


def stage_train(shards: sh.ShardSet, out: Path, budget: int, factory: str | None,
                queries: int, seed: int) -> dict[str, Any]:
    import faiss

    t0 = time.perf_counter()
    files, offsets = _layout(shards)  # a corrupt shard fails here, before OUT is created
    n, d = int(offsets[-1]), shards.dim
    if n == 0:
        raise XmodalError("the shards hold no embedded image (every row failed): nothing to index")
    chosen, why = (factory, "given with --factory") if factory else choose_factory(n, d, budget)
    try:
        index = faiss.index_factory(d, chosen, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise XmodalError(f"--factory {chosen!r} is not a FAISS index factory string: "
                          f"{str(exc).splitlines()[0]}") from None
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is None and not isinstance(index, faiss.IndexFlatCodes):
        raise XmodalError(f"--factory {chosen!r}: use an IVF index (its lists merge on disk) or "
                          "a flat one (Flat, SQ8, PQ32 ...)")
    nlist = int(ivf.nlist) if ivf is not None else 0
    n_train = min(n, max(40 * nlist, 20_000)) if not index.is_trained or ivf else 0
    train, query, q_ids = _sample(shards, offsets, n_train, queries, seed)
    if ivf is not None:
        ivf.cp.niter = 10  # 10 k-means iterations: the centroids barely move after that
    if not index.is_trained:
        index.train(train)
    out.mkdir(parents=True, exist_ok=True)
    _write_index(index, out / "trained.index")
    np.save(out / "queries.npy", query)  # the held-out sample, for the eval stage
    np.save(out / "query_ids.npy", q_ids)
    meta = {"format": sh.ANN_FORMAT, "version": sh.ANN_VERSION, "model": shards.model_id,
            "model_spec": shards.manifests[0].model_spec, "dim": d, "vectors": n,
            "factory": chosen, "why": why, "nlist": nlist, "memory_budget_bytes": budget,
            "shards": files, "offsets": offsets.tolist(), "train_vectors": len(train),
            "held_out_queries": len(query), "stages": {"train_s": round(time.perf_counter() - t0,
                                                                         1)}}
    _save_meta(out, meta)
    return meta


def _block(out: Path, s: int) -> Path:
    return out / "blocks" / f"block-{s:05d}.index"


def _add_one(out: str, shard: str, s: int, first_id: int, model: str, threads: int) -> float:
    import faiss

    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    index = faiss.read_index(str(Path(out) / "trained.index"))
    vecs = sh.embeddings(sh.read_shard(Path(shard), model, ["ok", "embedding"]))
    if faiss.try_extract_index_ivf(index) is None:  # flat codes: ids are positions, in order
        index.add(vecs)
    else:
        index.add_with_ids(vecs, np.arange(first_id, first_id + len(vecs), dtype=np.int64))
    _write_index(index, _block(Path(out), s))
    return time.perf_counter() - t0


def stage_add(out: Path, jobs: int = 1, time_limit: float | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Add each shard not yet added; stops starting new shards after ``time_limit`` seconds."""
    meta = sh.read_ann_meta(out)
    (out / "blocks").mkdir(exist_ok=True)
    todo = [s for s in range(len(meta["shards"])) if not _block(out, s).is_file()]
    t0 = time.perf_counter()
    threads = max(1, (os.cpu_count() or 1) // jobs)
    done = len(meta["shards"]) - len(todo)
    args = [(str(out), meta["shards"][s], s, meta["offsets"][s], meta["model"], threads)
            for s in todo]
    if jobs == 1:
        for a in args:
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
            _add_one(*a)
            done += 1
            if progress:
                progress(done, len(meta["shards"]))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            for _ in pool.map(_add_one, *zip(*args)):
                done += 1
                if progress:
                    progress(done, len(meta["shards"]))
    meta = sh.read_ann_meta(out)
    meta["stages"]["add_s"] = round(meta["stages"].get("add_s", 0) + time.perf_counter() - t0, 1)
    _save_meta(out, meta)
    return {"added": done, "shards": len(meta["shards"])}


def stage_merge(out: Path, keep_blocks: bool = False) -> dict[str, Any]:
    import faiss

    meta = sh.read_ann_meta(out)
    blocks = [_block(out, s) for s in range(len(meta["shards"]))]
    missing = [b.name for b in blocks if not b.is_file()]
    if missing:
        raise XmodalError(f"{len(missing)} shard(s) not added yet (first {missing[0]}): run "
                          "the add stage again")
    t0 = time.perf_counter()
    index = faiss.read_index(str(out / "trained.index"))
    if faiss.try_extract_index_ivf(index) is None:  # exact: the one block is the index
        merged = faiss.read_index(str(blocks[0]))
        for b in blocks[1:]:
            merged.merge_from(faiss.read_index(str(b)))
        _write_index(merged, out / "index.faiss")
    else:
        from faiss.contrib.ondisk import merge_ondisk

        data = out / DATA_FILE
        tmp = out / f"index.ivfdata.tmp{os.getpid()}"
        tmp.unlink(missing_ok=True)
        merge_ondisk(index, [str(b) for b in blocks], str(tmp))
        # the index records its data file by name: the final name, relative to OUT (opened
        # from OUT, see ann_search), so that the folder can be moved or copied
        od = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
        od.filename = DATA_FILE
        os.replace(tmp, data)
        _write_index(index, out / "index.faiss")
    if not keep_blocks:
        for b in blocks:
            b.unlink()
    meta["stages"]["merge_s"] = round(time.perf_counter() - t0, 1)
    meta["index_bytes"] = sum(p.stat().st_size for p in out.glob("index.*"))
    _save_meta(out, meta)
    return meta


def exact_top(shards: sh.ShardSet, queries: np.ndarray, k: int) -> np.ndarray:
    """Ids of the exact top-``k`` inner products of each query over all shards, in chunks."""
    q = np.ascontiguousarray(queries, np.float32)
    best_s = np.full((len(q), k), -np.inf, np.float32)
    best_i = np.zeros((len(q), k), np.int64)
    start = 0
    for _, vecs in shards.iter_vectors():
        for lo in range(0, len(vecs), 200_000):
            part = vecs[lo:lo + 200_000]
            s = q @ part.T
            kk = min(k, s.shape[1])
            idx = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            cand_s = np.concatenate([best_s, np.take_along_axis(s, idx, 1)], 1)
            cand_i = np.concatenate([best_i, idx + start + lo], 1)
            top = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
            best_s = np.take_along_axis(cand_s, top, 1)
            best_i = np.take_along_axis(cand_i, top, 1)
        start += len(vecs)
    return best_i


def recall_at(found: np.ndarray, truth: np.ndarray, k: int) -> float:
    """Mean over queries of |found top-k ∩ true top-k| / k."""
    return float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k
                          for f, t in zip(found, truth)]))


def stage_eval(out: Path, k: int = 10, target_recall: float = 0.9) -> dict[str, Any]:
    """Recall@k of the held-out queries (their own id left out) at each nprobe."""
    from xmodal.scale.ann_search import ShardIndex

    meta = sh.read_ann_meta(out)
    shards = sh.open_shards(sorted({str(Path(f).parent) for f in meta["shards"]}))
    query, q_ids = np.load(out / "queries.npy"), np.load(out / "query_ids.npy")
    t0 = time.perf_counter()
    truth = exact_top(shards, query, k + 1)
    truth = np.array([[i for i in row if i != qi][:k] for row, qi in zip(truth, q_ids)])
    meta["stages"]["ground_truth_s"] = round(time.perf_counter() - t0, 1)
    index = ShardIndex(out)
    rows = []
    for nprobe in (NPROBES if index.is_ivf else (None,)):
        if nprobe is not None and nprobe > index.nlist:
            break
        t0 = time.perf_counter()
        _, found = index.search_ids(query, k + 1, nprobe=nprobe)
        ms = (time.perf_counter() - t0) / len(query) * 1000
        found = np.array([[i for i in row if i != qi][:k] for row, qi in zip(found, q_ids)])
        rows.append({"nprobe": nprobe, "recall_at_k": round(recall_at(found, truth, k), 4),
                     "ms_per_query": round(ms, 3)})
        if rows[-1]["recall_at_k"] >= 0.999:
            break
    good = [r for r in rows if r["recall_at_k"] >= target_recall]
    chosen = good[0] if good else max(rows, key=lambda r: r["recall_at_k"])
    meta["eval"] = {"k": k, "queries": len(query), "target_recall": target_recall,
                    "rows": rows, "chosen": chosen}
    meta["nprobe"] = chosen["nprobe"]
    _save_meta(out, meta)
    return meta


def build_index(
    folders: list[str | os.PathLike],
    out: str | os.PathLike,
    *,
    memory_budget: str | int = "4GB",
    factory: str | None = None,
    stages: tuple[str, ...] = STAGES,
    jobs: int = 1,
    queries: int = 200,
    k: int = 10,
    target_recall: float = 0.9,
    seed: int = 0,
    time_limit: float | None = None,
    keep_blocks: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the given stages (default all); a stage whose output exists is not redone."""
    out = Path(out).expanduser()
    budget = parse_size(memory_budget)
    bad = [s for s in stages if s not in STAGES]
    if bad:
        raise XmodalError(f"unknown stage(s) {bad}: choose from {STAGES}")
    if "train" in stages and not (out / "trained.index").is_file():
        shards = sh.open_shards(list(folders))  # different models or corrupt: fails here
        if out.exists() and any(p.name not in ("blocks",) for p in out.iterdir()):
            raise XmodalError(f"OUT {out} exists and is not an unfinished index: give a new "
                              "folder")
        stage_train(shards, out, budget, factory, queries, seed)
    else:
        meta = sh.read_ann_meta(out)
        sh.open_shards(list(folders) or sorted({str(Path(f).parent) for f in meta["shards"]}))
    if "add" in stages and not (out / "index.faiss").is_file():
        stage_add(out, jobs, time_limit, progress)
    if "merge" in stages and not (out / "index.faiss").is_file():
        n_shards = len(sh.read_ann_meta(out)["shards"])
        pending = [s for s in range(n_shards) if not _block(out, s).is_file()]
        if pending:
            return sh.read_ann_meta(out)  # the add stage stopped at its time limit: run it again
        stage_merge(out, keep_blocks)
    if "eval" in stages and (out / "index.faiss").is_file() and "eval" not in sh.read_ann_meta(out):
        stage_eval(out, k, target_recall)
    if "catalog" in stages and (out / "index.faiss").is_file() and not catalog_path(out).is_file():
        build_catalog(out, progress=progress)  # paths, dates, places: filters on --ann searches
    return sh.read_ann_meta(out)
