"""Embed a large image collection into Parquet shards, on a Ray cluster or in one process.

    run_embed(src, out, engine="ray", address="auto", workers=4) -> dict (the summary)

The pipeline (both engines run the same two functions):

1. :func:`decode_batch` - read each file's bytes, hash them (SHA-1), check and decode them with
   the photo index's checker (``xmodal.index.scan.load_checked``: size limits, EXIF rotation,
   shrink to 448 px), keep the RGB pixels; a bad file keeps its reason instead.
2. :class:`Embedder` - loads the embedding model once (ONNX Runtime on ``threads`` threads) and
   embeds a batch of decoded images; an image the model cannot embed gets a reason too.

With ``engine="ray"`` Ray Data runs step 1 as parallel tasks and step 2 on an actor pool of
``workers`` actors (Ray restarts actors and retries tasks lost with a node); the driver gathers
the rows of each shard and writes the shard when it is complete (see ``xmodal.scale.shards``),
so a killed job, re-run, skips finished shards and writes no duplicate. ``engine="local"``
runs the same steps in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.embedding import EmbeddingModel
from xmodal.scale import shards as sh
from xmodal.scale.sources import is_uri, list_inputs, read_source

ENGINES = ("ray", "local")
DECODE_BATCH = 16
EMBED_BATCH = 32
DECODE_CPUS = 0.25  # decoding is a small part of the work: most of a CPU goes to the encoder


def decode_batch(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rows (path, shard, pos) -> (+ sha1, error, pixels, h, w): read, hash, check, decode."""
    from xmodal.index.scan import load_checked

    n = len(batch["path"])
    sha1 = np.full(n, "", object)  # "" = none: Ray turns an all-None column into NaNs
    error = np.full(n, "", object)
    pixels = np.empty(n, object)
    meta = np.full(n, "", object)  # the photo's metadata as JSON (see photo_meta_json)
    h = np.zeros(n, np.int32)
    w = np.zeros(n, np.int32)
    for i, path in enumerate(batch["path"]):
        path = str(path)
        data, reason = read_source(path)
        image = None
        if data is not None:
            sha1[i] = hashlib.sha1(data).hexdigest()
            image, reason = load_checked(path, data)
        if image is None:
            error[i], pixels[i] = reason, b""
            continue
        meta[i] = photo_meta_json(path, data, image.info.get("original_size", image.size))
        arr = np.asarray(image, dtype=np.uint8)
        h[i], w[i] = arr.shape[:2]
        pixels[i] = arr.tobytes()
    return {"path": batch["path"], "shard": batch["shard"], "pos": batch["pos"],
            "sha1": sha1, "error": error, "pixels": pixels, "h": h, "w": w, "meta": meta}


def photo_meta_json(path: str, data: bytes, size: tuple[int, int]) -> str:
    """What a photo index records of a photo besides its vector, read while its bytes are at
    hand: EXIF date, camera, GPS position (place names are looked up later, by the catalog
    stage of 'xmodal ann build'), the file's time and size, and the picture's size upright."""
    from xmodal.index.metadata import read_metadata

    try:
        st = os.stat(path) if not is_uri(path) else None
    except OSError:
        st = None
    info = read_metadata(path, data, st.st_mtime_ns if st else None, geocode=False)
    fields = {k: v for k, v in info.to_dict().items()
              if k not in ("camera", "place", "extra") and v is not None}
    return json.dumps({**fields, "width": int(size[0]), "height": int(size[1]),
                       "bytes": len(data), "mtime_ns": st.st_mtime_ns if st else 0})


def embed_images(model: EmbeddingModel, images: list[Any]) -> np.ndarray:
    """(n, dim) float32: the model's ``embed_images`` without progress bar or feature cache
    (the shards are the cache)."""
    return np.asarray(model.embed_images(images, progress=False, cache=False), dtype=np.float32)


class Embedder:
    """Loads the model once; called on decoded batches, returns (..., embedding) rows."""

    def __init__(self, model_spec: str | None = None, threads: int | None = 1):
        from xmodal.factory import load_embedding_model
        from xmodal.features.onnx_engine import set_inference_threads
        from xmodal.index.photo_index import model_id

        if threads:
            set_inference_threads(threads)
        self.model = load_embedding_model(model_spec)
        self.model_id = model_id(self.model, model_spec)
        self.dim = int(self.model.dim)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from PIL import Image

        n = len(batch["path"])
        emb = np.zeros((n, self.dim), np.float32)
        error = np.array([text(e) for e in batch["error"]], dtype=object)
        good = [i for i in range(n) if not error[i]]
        if good:
            images = [Image.frombytes("RGB", (int(batch["w"][i]), int(batch["h"][i])),
                                      bytes(batch["pixels"][i])) for i in good]
            try:
                vecs = embed_images(self.model, images)
            except Exception as exc:  # noqa: BLE001 - one bad batch must not end the job
                vecs = None
                for i in good:
                    error[i] = f"the model failed: {type(exc).__name__}"
            if vecs is not None:
                for j, i in enumerate(good):
                    v = vecs[j]
                    if not np.all(np.isfinite(v)) or not np.any(v):
                        error[i] = "the model could not embed it"
                    else:
                        emb[i] = v
        return {"path": batch["path"], "shard": batch["shard"], "pos": batch["pos"],
                "sha1": batch["sha1"], "error": error, "embedding": emb,
                "meta": batch.get("meta", np.full(n, "", object))}


def text(x: Any) -> str:
    """A string column value, "" for None or NaN (how Ray hands back an all-empty column)."""
    return x if isinstance(x, str) else ""


class ShardWriter:
    """Gathers embedded rows per shard and writes each shard once all its rows are in."""

    def __init__(self, out: Path, manifest: sh.Manifest, sizes: dict[int, int],
                 on_shard: Callable[[int, int], None] | None = None):
        self.out, self.m, self.sizes = out, manifest, sizes
        self.rows: dict[int, dict[int, tuple]] = {s: {} for s in sizes}
        self.on_shard = on_shard
        self.written: list[int] = []
        self.bad = 0

    def add(self, batch: dict[str, np.ndarray]) -> None:
        touched = set()
        for k in range(len(batch["path"])):
            s, pos = int(batch["shard"][k]), int(batch["pos"][k])
            if s not in self.rows:
                continue  # a row of a shard already written (a retried task's copy)
            err = text(batch["error"][k]) or None
            vec = None if err else batch["embedding"][k]
            # keyed by position: a row delivered twice (a retried task) is kept once
            meta = text(batch["meta"][k]) if "meta" in batch else ""
            self.rows[s][pos] = (str(batch["path"][k]), text(batch["sha1"][k]) or None, err, vec,
                                 meta or None)
            touched.add(s)
        for s in sorted(touched):
            if len(self.rows[s]) == self.sizes[s]:
                self._write(s)

    def _write(self, s: int) -> None:
        got = self.rows[s]
        rows = [got[p] for p in range(self.sizes[s])]
        cols = {"path": [r[0] for r in rows], "sha1": [r[1] for r in rows],
                "error": [r[2] for r in rows], "embedding": [r[3] for r in rows],
                "meta": [r[4] for r in rows]}
        table = sh.shard_table(cols, self.m.model_id, self.m.dim, self.m.dtype)
        sh.write_shard(self.out, s, table)
        del self.rows[s]  # only once written: a failed write leaves the shard pending
        self.bad += sum(r[2] is not None for r in rows)
        self.written.append(s)
        if self.on_shard:
            self.on_shard(s, len(rows))

    @property
    def pending(self) -> list[int]:
        return sorted(self.rows)


def _plan(src: str, out: Path, model_spec: str | None, shard_size: int, dtype: str):
    """(manifest, plan table) for OUT: read back on a re-run, else listed from SRC and written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from xmodal.factory import load_embedding_model
    from xmodal.index.photo_index import model_id

    if dtype not in sh.DTYPES:
        raise XmodalError(f"--dtype must be one of {sh.DTYPES}, not {dtype!r}")
    if shard_size < 1:
        raise XmodalError("--shard-size must be at least 1")
    model = load_embedding_model(model_spec)
    mid = model_id(model, model_spec)
    if (out / sh.MANIFEST).is_file():  # a re-run: the stored plan, never a new listing
        m = sh.read_manifest(out)
        if m.model_id != mid:
            raise XmodalError(f"{out} holds embeddings of model {m.model_id}, not {mid}: "
                              "write this model's embeddings to another OUT")
        if m.source != _source_id(src):
            raise XmodalError(f"{out} holds the embeddings of {m.source}, not {_source_id(src)}: "
                              "use another OUT (nothing was changed)")
        try:
            plan = pq.read_table(out / sh.INPUTS)
        except Exception as exc:  # noqa: BLE001
            raise XmodalError(f"{out / sh.INPUTS} is unreadable ({exc}); move OUT aside and "
                              "start again") from None
        return m, plan
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise XmodalError(f"OUT {out} exists and is not an embedding folder: give a new or "
                          "empty folder")
    paths = list_inputs(src)  # XmodalError when SRC holds no image: nothing is written
    idx = np.arange(len(paths))
    plan = pa.table({"path": pa.array(paths, pa.string()),
                     "shard": pa.array(idx // shard_size, pa.int32()),
                     "pos": pa.array(idx % shard_size, pa.int32())})
    n_shards = int(-(-len(paths) // shard_size))
    m = sh.Manifest(mid, model_spec or "", int(model.dim), dtype, _source_id(src), shard_size,
                    len(paths), n_shards)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{sh.INPUTS}.tmp{os.getpid()}"
    pq.write_table(plan, tmp)
    os.replace(tmp, out / sh.INPUTS)
    sh.write_json_atomic(out / sh.MANIFEST, m.to_dict())  # last: marks the plan complete
    return m, plan


def _source_id(src: str) -> str:
    text = str(src)
    return text if is_uri(text) else os.path.abspath(Path(text.removeprefix("file://"))
                                                     .expanduser())


def _pending(out: Path, m: sh.Manifest, plan) -> dict[int, int]:
    """{shard: rows} of the shards still to write (a complete shard file is kept)."""
    counts = np.bincount(plan["shard"].to_numpy(), minlength=m.n_shards)
    return {s: int(counts[s]) for s in range(m.n_shards)
            if not sh.shard_done(out / sh.shard_name(s), int(counts[s]), m.model_id)}


def _chunks(plan, shards: Iterable[int], size: int) -> list:
    """Plan rows of the given shards, in blocks of at most ``size`` rows (one shard each)."""
    import pyarrow.compute as pc

    blocks = []
    for s in shards:
        part = plan.filter(pc.equal(plan["shard"], s))
        blocks += [part.slice(i, size) for i in range(0, part.num_rows, size)]
    return blocks


def _batch(table) -> dict[str, np.ndarray]:
    return {c: table[c].to_numpy(zero_copy_only=False) for c in ("path", "shard", "pos")}


def _run_local(plan, writer: ShardWriter, model_spec: str | None, threads: int | None) -> None:
    embedder = Embedder(model_spec, threads)
    for block in _chunks(plan, writer.pending, EMBED_BATCH):
        writer.add(embedder(decode_batch(_batch(block))))


def connect(address: str | None, workers: int) -> bool:
    """Join the Ray cluster at ``address`` ("auto", HOST:PORT) or start a local one (None);
    False when this process was connected already."""
    import ray

    if ray.is_initialized():
        return False
    if address and address != "auto":
        host, _, port = address.removeprefix("ray://").rpartition(":")
        if not host or not port.isdigit():
            raise XmodalError(f"--address must be 'auto' or HOST:PORT, not {address!r}")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as exc:
            raise XmodalError(f"cannot reach a Ray cluster at {address}: {exc.strerror or exc} "
                              "(start one with 'ray start --head', or pass --address auto on a "
                              "cluster node)") from None
    try:
        if address:
            ray.init(address=address, logging_level="warning", log_to_driver=False)
        else:
            ray.init(num_cpus=workers + 1, include_dashboard=False, logging_level="warning",
                     log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise XmodalError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    return True


def alive_node_cpus() -> list[float]:
    """The CPUs of each living node of the connected Ray cluster."""
    import ray

    return [float(n["Resources"].get("CPU", 0)) for n in ray.nodes()
            if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]


def actor_cpus(node_cpus: list[float], workers: int, requested: float | None) -> float:
    """CPUs each encoder actor reserves so that decoding always has room beside them.

    Actors are spread over the nodes (``SPREAD``), so the busiest node holds
    ``ceil(workers / nodes)`` of them; that node keeps ``DECODE_CPUS`` free for the decode
    tasks. ``requested`` (``--cpus-per-worker``) is used when it leaves that room, else refused
    with the value that would; None sizes it: at most 1 CPU an actor. Without the room, the
    encoder actors hold every CPU and the decode tasks wait forever (a 2-node, 1-CPU cluster
    with two 1-CPU actors did)."""
    if not node_cpus:
        raise XmodalError("the Ray cluster has no living node with a CPU")
    per_node = -(-workers // len(node_cpus))
    fits = (min(node_cpus) - DECODE_CPUS) / per_node
    if fits < 0.05:
        raise XmodalError(
            f"the Ray cluster's nodes ({', '.join(f'{c:g}' for c in node_cpus)} CPUs) are too "
            f"small for {workers} encoder actors plus decoding: use fewer --workers or bigger "
            "nodes")
    if requested is None:
        return round(min(1.0, fits), 3)
    if requested > fits + 1e-9:
        raise XmodalError(
            f"--cpus-per-worker {requested:g} leaves no CPU for decoding on this cluster "
            f"({len(node_cpus)} node(s) of {min(node_cpus):g}+ CPUs, {per_node} actor(s) on a "
            f"node): use --cpus-per-worker {fits:.2f} or less, or leave it out to size it "
            "automatically")
    return requested


def _run_ray(plan, writer: ShardWriter, model_spec: str | None, workers: int,
             cpus_per_worker: float | None, threads: int | None) -> None:
    import ray.data

    nodes = alive_node_cpus()
    cpus = actor_cpus(nodes, workers, cpus_per_worker)
    print(f"Ray cluster: {len(nodes)} node(s), {sum(nodes):g} CPUs; {workers} encoder "
          f"actor(s) of {cpus:g} CPU, decoding in {DECODE_CPUS:g}-CPU tasks beside them",
          file=sys.stderr, flush=True)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    blocks = _chunks(plan, writer.pending, 64)
    ds = ray.data.from_arrow(blocks)
    ds = ds.map_batches(decode_batch, batch_size=DECODE_BATCH, batch_format="numpy",
                        num_cpus=DECODE_CPUS)
    ds = ds.map_batches(Embedder, batch_size=EMBED_BATCH, batch_format="numpy",
                        fn_constructor_kwargs={"model_spec": model_spec, "threads": threads},
                        # runs on as few as one actor when a node is lost
                        compute=ray.data.ActorPoolStrategy(min_size=1, max_size=workers),
                        num_cpus=cpus,  # one actor per node first (SPREAD)
                        ray_remote_args_fn=lambda: {"scheduling_strategy": "SPREAD"})
    for batch in ds.iter_batches(batch_format="numpy", batch_size=None):
        writer.add(batch)


def run_embed(
    src: str | os.PathLike,
    out: str | os.PathLike,
    *,
    engine: str = "local",
    address: str | None = None,
    workers: int = 2,
    cpus_per_worker: float | None = None,
    threads: int | None = 1,
    model_spec: str | None = None,
    shard_size: int = 1000,
    dtype: str = "float16",
    attempts: int = 3,
    on_shard: Callable[[int, int], None] | None = None,
    on_plan: Callable[[sh.Manifest, int], None] | None = None,
) -> dict[str, Any]:
    """Embed every image of SRC into shards under OUT; returns the summary (also in
    ``OUT/summary.json``). Finished shards of an earlier run are kept and skipped."""
    if engine not in ENGINES:
        raise XmodalError(f"--engine must be one of {ENGINES}, not {engine!r}")
    if workers < 1:
        raise XmodalError("--workers must be at least 1")
    out = Path(out).expanduser()
    # an unreachable cluster fails before anything is written
    ours = engine == "ray" and connect(address, workers)
    try:
        return _run(src, out, engine, workers, cpus_per_worker, threads, model_spec, shard_size,
                    dtype, attempts, on_shard, on_plan)
    finally:
        if ours:
            import ray

            ray.shutdown()


def _run(src, out, engine, workers, cpus_per_worker, threads, model_spec, shard_size, dtype,
         attempts, on_shard, on_plan) -> dict[str, Any]:
    t0 = time.perf_counter()
    m, plan = _plan(str(src), out, model_spec, shard_size, dtype)
    todo = _pending(out, m, plan)
    skipped = m.n_shards - len(todo)
    if on_plan:
        on_plan(m, sum(todo.values()))
    writer = ShardWriter(out, m, todo, on_shard)
    for attempt in range(1, attempts + 1):
        if not writer.pending:
            break
        try:
            if engine == "ray":
                _run_ray(plan, writer, model_spec, workers, cpus_per_worker, threads)
            else:
                _run_local(plan, writer, model_spec, threads)
        except XmodalError:
            raise
        except Exception as exc:  # noqa: BLE001 - a lost node or actor: redo what is missing
            if attempt == attempts or engine == "local":
                raise XmodalError(f"embedding failed after {attempt} attempt(s) ({exc}); the "
                                  f"{len(writer.written)} shards written are kept: run the same "
                                  "command again to finish") from exc
    if writer.pending:
        raise XmodalError(f"{len(writer.pending)} shards were not completed; run the same "
                          "command again to finish")
    elapsed = time.perf_counter() - t0
    done_rows = sum(todo.values())
    summary = {"out": str(out), "engine": engine, "model": m.model_id, "dim": m.dim,
               "dtype": m.dtype, "images": m.n_inputs, "shards": m.n_shards,
               "shards_written": len(writer.written), "shards_skipped_done": skipped,
               "rows_written": done_rows, "bad_in_written": writer.bad,
               "workers": workers if engine == "ray" else 1,
               "elapsed_s": round(elapsed, 2),
               "images_per_s": round(done_rows / elapsed, 2) if elapsed > 0 else 0.0}
    sh.write_json_atomic(out / "summary.json", summary)
    return summary
