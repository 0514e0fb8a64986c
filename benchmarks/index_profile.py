"""Where ``xmodal index`` spends its time, stage by stage, on three kinds of photos.

    python -m benchmarks.index_profile                     # 400 photos of each kind, ~5 minutes
    python -m benchmarks.index_profile --photos 100 --kinds flickr224 camera12mp
    python -m benchmarks.index_profile --originals ../data/flickr8k-originals/data/Images

Kinds of photos (the same photos, by file name, in each kind):

- ``flickr224``: the shared Flickr8K release (224-px JPEGs);
- ``originals``: the original Flickr8K JPEGs (longest side 500, mostly 500x375), from
  ``--originals`` (the "Flickr8K originals (1,000)" of the shared data README). When that folder
  is absent they are *made* by upscaling the 224-px photos to 500x375 and re-encoding at
  quality 90, and the result says so (``photos.originals.source``);
- ``camera12mp``: 12 MP JPEGs (4000x3000, or 3000x4000 for portrait photos) made by upscaling
  the originals (else the 224-px photos) with bicubic resampling and re-encoding at quality 92.
  This is a proxy for camera photos' decoding cost: the decoder reads every 8x8 block of the
  12 MP file whatever its content, but an upscaled photo is smoother than a camera's (no sensor
  noise, no fine detail), so its file is smaller and its entropy decoding cheaper than a real
  camera JPEG's; ``file_mb`` is recorded to compare (camera JPEGs: about 3-6 MB). Measured on
  one photo: 1.8 MB and 20 ms to ``load_checked``; with grain of sd 3, 5 and 8 grey levels
  2.8, 3.8 and 4.8 MB and 26, 35 and 40 ms: the decoding cost follows the file's size;
- ``camera12mp_grain``: the same with Gaussian luminance grain of sd 5 grey levels added before
  encoding (files of about 3.8 MB, a camera JPEG's size): the realistic decoding cost.

Generated photos go to a temporary folder under ``/tmp`` and are deleted at the end.

For each kind, a fresh process runs ``xmodal index FOLDER --db NEW.db`` in-process (the Typer
command itself, default model, encoders already exported: the run refuses to start otherwise),
with the library's functions wrapped at run time by timers that add up, per thread, each call's
wall time (``perf_counter``) and CPU time (``thread_time``); a stage's *self* time leaves out
the time of the timed stages nested inside it. Stages:

- loader threads (two, reading, hashing and decoding the next batch's files while the encoder
  embeds this one): ``read_bytes``, SHA-1, ``open`` (header), decode (``ImageFile.load`` after
  ``draft`` to the tower's input), ``exif_transpose`` + ``convert``, the resize to the tower's
  square input (260 px for Lite2; models that do not name one: the shrink to 448 px), EXIF
  metadata; their columns add both threads' time per photo;
- encoder (main) thread: waiting for the loaders, the pixel hash ``extract_image_features``
  computed as a cache key before the cache was skipped, the RGB copy (``open_image``), the
  resize in ``preprocess`` (a copy when the loader decoded to the input size), normalisation,
  the tower (``OnnxImageTower.forward``: ONNX Runtime, whose own worker threads are not Python threads),
  the default model's tuned head conv (``top_pooled``, numpy), the heads
  (``NumpyHeads.embed_images``) and the bridge, SQLite (``Ingest.commit`` minus
  the embedding), then the FAISS rebuild (``AnnIndex.rebuild``) and the rest of ``Ingest.run``.

Threads in use are sampled from ``/proc/self/task`` while indexing: the ORT intra-op pool (the
threads that appear when the session is created), the loader, tqdm's monitor, BLAS; with each
one's CPU seconds. The same process then measures the *decode-only* rate of the same files
(``read_bytes`` + ``load_checked`` to the tower's input size, as indexing decodes, on 2 threads
and on 1), to compare with indexing (issue 32:
"12 MP JPEGs index at >= 85% of the decode-only rate"). Last, unless ``--no-plain``, a plain
``xmodal index`` process without the timers gives the timers' overhead, and one more with
``OPENBLAS_NUM_THREADS=1`` tests whether numpy's OpenBLAS worker, which spins after each of the
heads' matrix products, takes CPU from ONNX Runtime and the loader.

Writes ``benchmarks/results/index_profile.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KINDS = ("flickr224", "originals", "camera12mp", "camera12mp_grain")
GRAIN = 5.0  # sd of the grain added to camera12mp_grain (grey levels): ~3.8 MB files
DEFAULT_ORIGINALS = Path(__file__).resolve().parents[2] / "data" / "flickr8k-originals" / \
    "data" / "Images"


# ----- the photo sets -----
def _names(n: int, originals: Path | None) -> list[str]:
    """The first ``n`` sorted names of the originals (all are in the 224-px release), else the
    first ``n`` Flickr8K test photos."""
    if originals is not None and originals.is_dir():
        return sorted(p.name for p in originals.iterdir() if p.suffix.lower() == ".jpg")[:n]
    from xmodal.paths import data_root

    text = data_root() / "flickr8k" / "Flickr8k_text" / "Flickr_8k.testImages.txt"
    return text.read_text().split()[:n]


def _upscale(args: tuple[str, str, int, int, int, float]) -> float:
    """Upscale one photo to (long, short) keeping its orientation, with Gaussian luminance grain
    of standard deviation ``grain`` grey levels when it is > 0; returns the file's MB."""
    import numpy as np
    from PIL import Image

    src, dest, long, short, quality, grain = args
    with Image.open(src) as im:
        im = im.convert("RGB")
        size = (long, short) if im.width >= im.height else (short, long)
        big = im.resize(size, Image.BICUBIC)
    if grain > 0:
        rng = np.random.default_rng(zlib.crc32(os.path.basename(src).encode()))
        a = np.asarray(big, np.int16) + rng.normal(0, grain, size[::-1]).astype(np.int16)[..., None]
        big = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
    big.save(dest, format="JPEG", quality=quality)
    return os.path.getsize(dest) / 1e6


def make_sets(n: int, work: Path, originals: Path | None, kinds: list[str]) -> dict[str, dict]:
    from xmodal.paths import data_root

    flickr = data_root() / "flickr8k" / "Flicker8k_Dataset"
    names = _names(n, originals)
    have_originals = originals is not None and originals.is_dir()
    sets: dict[str, dict] = {}

    def linked(kind: str, folder: Path, source: str) -> dict:
        dest = work / kind
        dest.mkdir()
        for name in names:
            (dest / name).symlink_to((folder / name).resolve())
        return {"folder": dest, "source": source}

    def made(kind: str, src: Path, size: tuple[int, int], quality: int, source: str,
             grain: float = 0.0) -> dict:
        dest = work / kind
        dest.mkdir()
        jobs = [(str(src / m), str(dest / m), *size, quality, grain) for m in names]
        t = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:  # PIL releases the GIL while resizing and encoding
            mb = list(pool.map(_upscale, jobs))
        print(f"made {len(mb)} {kind} photos in {time.perf_counter() - t:.0f} s", flush=True)
        return {"folder": dest, "source": source, "generated": True}

    if "flickr224" in kinds:
        sets["flickr224"] = linked("flickr224", flickr, f"{flickr} (the 224-px release)")
    if "originals" in kinds:
        sets["originals"] = (
            linked("originals", originals, f"{originals}: real Flickr8K originals")
            if have_originals else
            made("originals", flickr, (500, 375), 90, "MADE: 224-px Flickr8K photos upscaled to "
                 "500x375 (bicubic) and re-encoded at JPEG quality 90; the originals were absent"))
    src = originals if have_originals else flickr
    camera = {
        "camera12mp": (0.0, f"MADE: {'Flickr8K originals' if have_originals else '224-px Flickr8K'}"
                       " photos upscaled to 4000x3000 (bicubic; portrait 3000x4000) and re-encoded"
                       " at JPEG quality 92: a proxy for a camera's decoding cost (every 8x8 block"
                       " is entropy-decoded), though smoother than a camera photo: a smaller file"),
        "camera12mp_grain": (GRAIN, f"MADE: as camera12mp, plus Gaussian luminance grain (sd "
                             f"{GRAIN} grey levels) before encoding, so that the files reach a "
                             "camera JPEG's size (about 3-6 MB) and its entropy-decoding cost"),
    }
    for kind, (grain, source) in camera.items():
        if kind in kinds:
            sets[kind] = made(kind, src, (4000, 3000), 92, source, grain=grain)
    for info in sets.values():
        files = sorted(info["folder"].iterdir())
        sizes = [f.stat().st_size for f in files]
        info.update(photos=len(files), file_mb_mean=round(statistics.mean(sizes) / 1e6, 3),
                    file_mb_total=round(sum(sizes) / 1e6, 1))
        from PIL import Image

        with Image.open(files[0]) as im:
            info["first_photo_px"] = list(im.size)
    return sets


# ----- the timers (in the child process) -----
class Timers:
    """Per (thread role, stage): calls, inclusive and self wall seconds, self CPU seconds."""

    def __init__(self) -> None:
        self.stats: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0,
                                                                              0.0])
        self.local = threading.local()
        self.lock = threading.Lock()
        self.loader_tid: int | None = None

    @staticmethod
    def role() -> str:
        t = threading.current_thread()
        if t is threading.main_thread():
            return "encoder"
        if t.name.startswith("ThreadPoolExecutor"):
            return "loader"
        return t.name

    def wrap(self, name: str, fn, opaque: bool = False):
        """``fn`` timed as stage ``name``; inside an ``opaque`` stage nothing else is timed."""
        timers = self

        @functools.wraps(fn)
        def timed(*a, **k):
            stack = getattr(timers.local, "stack", None)
            if stack is None:
                stack = timers.local.stack = []
            if stack and stack[-1][2]:
                return fn(*a, **k)
            frame = [0.0, 0.0, opaque]  # nested wall, nested CPU
            stack.append(frame)
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                dt, dc = time.perf_counter() - t0, time.thread_time() - c0
                stack.pop()
                if stack:
                    stack[-1][0] += dt
                    stack[-1][1] += dc
                with timers.lock:
                    s = timers.stats[(timers.role(), name)]
                    s[0] += 1
                    s[1] += dt
                    s[2] += dt - frame[0]
                    s[3] += dc - frame[1]
                    s[4] += dc

        return timed

    def patch(self, owner, attr: str, name: str, opaque: bool = False) -> None:
        setattr(owner, attr, self.wrap(name, getattr(owner, attr), opaque))

    def table(self) -> dict[str, dict[str, dict]]:
        out: dict[str, dict[str, dict]] = defaultdict(dict)
        for (role, name), (calls, wall, self_wall, self_cpu, cpu) in sorted(self.stats.items()):
            out[role][name] = {"calls": int(calls), "wall_s": round(wall, 4),
                               "self_wall_s": round(self_wall, 4),
                               "self_cpu_s": round(self_cpu, 4), "cpu_s": round(cpu, 4)}
        return dict(out)


def _tasks() -> dict[int, dict]:
    """This process's OS threads: tid -> name and CPU seconds (utime + stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(tid)] = {"comm": stat[stat.index("(") + 1: stat.rindex(")")],
                             "cpu_s": (int(fields[11]) + int(fields[12])) / tick}
        except (OSError, ValueError):
            continue
    return out


def child(folder: Path, db: Path, result: Path) -> None:
    """One profiled ``xmodal index`` run, then the decode-only rates of the same files."""
    t_start = time.perf_counter()
    spawned = float(os.environ.get("INDEX_PROFILE_SPAWNED", time.time()))
    import concurrent.futures._base as futures_base

    import numpy  # noqa: F401 - its OpenBLAS starts its worker threads at import

    numpy_threads = set(_tasks()) - {os.getpid()}

    import PIL.Image
    import PIL.ImageFile
    import PIL.ImageOps
    import PIL.JpegImagePlugin

    import xmodal.factory as factory
    import xmodal.features.image_encoder as ie
    import xmodal.features.onnx_engine as oe
    import xmodal.features.towers as towers
    import xmodal.index.ann as ann
    import xmodal.index.ingest as pi  # indexing: xmodal.index.ingest.Ingest
    import xmodal.index.scan as scan
    import xmodal.models.dual as dual
    import xmodal.models.head_inference as hi
    import xmodal.models.image_top as image_top

    if oe.engine() != "onnx":
        raise SystemExit("index_profile measures the ONNX engine (the default)")
    model = dual.default_model()
    if not (towers.image_tower(model.image_backbone).is_prepared()
            and towers.text_tower(model.text_encoder).is_prepared()):
        raise SystemExit("export the default model's encoders first (run xmodal prepare)")
    setattr(dual, "_DEFAULT", None)  # the CLI loads the model itself, timed
    t_imports = time.perf_counter()

    T = Timers()
    # whole-run stages
    T.patch(factory, "load_embedding_model", "model load", opaque=True)
    T.patch(pi.Ingest, "run", "update (all)")
    T.patch(pi, "walk_images", "walk folder", opaque=True)
    T.patch(pi.Ingest, "refresh_metadata", "metadata refresh", opaque=True)
    T.patch(ann.AnnIndex, "rebuild", "FAISS rebuild (vectors from SQLite, build, save)",
            opaque=True)
    T.patch(dual.DualEncoder, "prepare_queries", "prepare text encoder", opaque=True)
    # loader thread
    T.patch(pi, "load_file", "load file")
    T.patch(pi, "read_bytes", "read file", opaque=True)

    class _Hashlib:  # photo_index's hashlib with a timed sha1
        sha1 = staticmethod(T.wrap("sha1", pi.hashlib.sha1, opaque=True))

        def __getattr__(self, name):
            import hashlib

            return getattr(hashlib, name)

    pi.hashlib = _Hashlib()
    T.patch(pi, "load_checked", "load_checked (rest: checks)")
    T.patch(scan, "open_image", "open (header)")
    T.patch(PIL.JpegImagePlugin.JpegImageFile, "draft", "draft (set scale)")
    T.patch(PIL.ImageFile.ImageFile, "load", "decode (ImageFile.load)")
    T.patch(PIL.ImageOps, "exif_transpose", "exif_transpose")
    T.patch(PIL.Image.Image, "convert", "convert")
    T.patch(PIL.Image.Image, "thumbnail", "thumbnail to 448 (rest)")
    T.patch(PIL.Image.Image, "resize", "resize")
    T.patch(PIL.Image.Image, "reduce", "reduce")
    T.patch(pi, "read_metadata", "metadata (EXIF)", opaque=True)
    # encoder (main) thread
    T.patch(futures_base.Future, "result", "wait for loader")
    T.patch(pi.Ingest, "commit", "embed_and_commit (rest: SQLite)")
    T.patch(pi.Ingest, "embed", "_embed (rest)")
    T.patch(dual.DualEncoder, "embed_images", "embed_images (rest)")
    T.patch(ie, "extract_image_features", "extract_image_features (rest: stack, copy)")
    T.patch(ie, "_key", "pixel hash (cache key)", opaque=True)
    T.patch(ie, "open_image", "RGB copy (open_image)")
    T.patch(ie, "preprocess", "preprocess (rest: to float, normalise)")
    T.patch(ie, "_forward", "_forward (rest)")
    T.patch(towers.OnnxImageTower, "forward", "tower (ORT run)")
    T.patch(towers.OnnxImageTower, "prepare", "tower file check", opaque=True)
    T.patch(towers, "session", "ORT session create", opaque=True)
    T.patch(dual.DualEncoder, "embed_image_features", "heads+bridge (rest: concat, norm)")
    T.patch(dual.DualEncoder, "bridge_image", "bridge (softmax @ class names)", opaque=True)
    T.patch(hi.NumpyHeads, "embed_images", "heads (NumpyHeads)", opaque=True)
    T.patch(image_top, "top_pooled", "tuned head conv (top_pooled)", opaque=True)

    # threads: sample /proc/self/task while indexing; the ORT pool appears with the session
    before_session: dict[int, dict] = {}
    # private functions are wrapped by name (getattr / setattr): a profiler must reach them
    orig_session = getattr(oe, "_session")

    def session(path, export):
        if not before_session:
            before_session.update(_tasks())
        return orig_session(path, export)

    setattr(oe, "_session", session)
    samples = {"os_threads_max": 0, "python_threads_max": 0}
    stop = threading.Event()
    sampler_tid: list[int] = []

    def sample() -> None:
        sampler_tid.append(threading.get_native_id())
        while not stop.wait(0.05):
            samples["os_threads_max"] = max(samples["os_threads_max"],
                                            len(os.listdir("/proc/self/task")) - 1)
            samples["python_threads_max"] = max(samples["python_threads_max"],
                                                threading.active_count() - 1)

    loader_tids: set[int] = set()
    pool_threads: dict[int, str] = {}
    orig_load_file = getattr(pi, "load_file")

    def load_file(*a, **k):
        loader_tids.add(threading.get_native_id())
        return orig_load_file(*a, **k)

    setattr(pi, "load_file", load_file)
    after_loop: dict[int, dict] = {}
    orig_update = pi.Ingest.run

    def update(self, *a, **k):
        r0, c0 = os.times(), time.thread_time()
        try:
            return orig_update(self, *a, **k)
        finally:
            r1 = os.times()
            after_loop.update(_tasks())
            samples["process_cpu_s_update"] = round((r1.user + r1.system)
                                                    - (r0.user + r0.system), 3)
            samples["main_thread_cpu_s_update"] = round(time.thread_time() - c0, 3)
            for t in threading.enumerate():
                if t.native_id is not None:
                    pool_threads[t.native_id] = t.name

    pi.Ingest.run = update

    threading.Thread(target=sample, daemon=True, name="sampler").start()
    from xmodal.cli import app

    t_cli = time.perf_counter()
    app(["index", str(folder), "--db", str(db), "--json"], standalone_mode=False)
    t_done = time.perf_counter()
    process_wall = time.time() - spawned
    stop.set()
    timers = T.table()  # before the decode-only runs below (their pool.map calls result())

    # thread report: who used the CPU during the run
    ort_new = {tid for tid in after_loop if tid not in before_session}
    threads = []
    main_tid = os.getpid()
    for tid, info in sorted(after_loop.items()):
        if tid == main_tid:
            who = "main (encoder)"
        elif sampler_tid and tid == sampler_tid[0]:
            continue
        elif tid in pool_threads:
            who = f"python: {pool_threads[tid]}"
        elif tid in ort_new:
            who = "ONNX Runtime intra-op pool"
        elif tid in numpy_threads:
            who = "numpy's OpenBLAS pool (started at import)"
        else:
            who = "native, started at import (onnxruntime, faiss: idle pools)"
        cpu = info["cpu_s"] - before_session.get(tid, {"cpu_s": 0.0})["cpu_s"]
        threads.append({"tid": tid, "who": who, "cpu_s_since_session": round(cpu, 2)})
    sess = next(iter(getattr(oe, "_SESSIONS").values()), None)
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: d.get(k) for k in ("internal_api", "num_threads")} for d in threadpool_info()]
    except ImportError:
        blas = None
    thread_info = {
        "affinity_cpus": sorted(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "XMODAL_THREADS": os.environ.get("XMODAL_THREADS"),
        "ort_intra_op_num_threads_setting": (sess.get_session_options().intra_op_num_threads
                                             if sess is not None else None),
        "ort_pool_threads_started": len(ort_new - loader_tids - set(pool_threads)),
        "loader_threads": len(loader_tids),
        "blas": blas,
        "python_threads_max": samples["python_threads_max"],
        "os_threads_max": samples["os_threads_max"],
        "process_cpu_s_during_update": samples.get("process_cpu_s_update"),
        "main_thread_cpu_s_during_update": samples.get("main_thread_cpu_s_update"),
        "os_threads": threads,
    }

    # decode-only rates of the same files, warm in the page cache (the index just read them)
    files = sorted(str(p.resolve()) for p in folder.iterdir())
    import hashlib

    pi.hashlib = hashlib

    square = factory.load_embedding_model(None).image_input_size  # decoded as indexing does

    def decode(path: str) -> bool:
        data, _ = scan.read_bytes(path)
        return scan.load_checked(path, data, square)[0] is not None

    orig = {}  # unwrap the decoder's timed functions for the decode-only runs
    for owner, attr in ((PIL.ImageFile.ImageFile, "load"), (PIL.Image.Image, "convert"),
                        (PIL.Image.Image, "thumbnail"), (PIL.Image.Image, "resize"),
                        (PIL.Image.Image, "reduce"), (PIL.ImageOps, "exif_transpose"),
                        (PIL.JpegImagePlugin.JpegImageFile, "draft"), (scan, "open_image")):
        orig[(owner, attr)] = getattr(owner, attr)
        setattr(owner, attr, getattr(owner, attr).__wrapped__)
    rates = {}
    for n_threads in (2, 1):
        t = time.perf_counter()
        with ThreadPoolExecutor(n_threads) as pool:
            ok = sum(pool.map(decode, files))
        rates[f"{n_threads}_threads"] = {"images_per_s": round(len(files) / (time.perf_counter()
                                                                              - t), 2),
                                         "decoded": ok}
    rates["2_threads_with_sha1"] = {"images_per_s": round(hash_decode_rate(files, square)[0], 2)}
    out = {"timers": timers, "threads": thread_info, "decode_only": rates,
           "seconds": {"imports_and_checks": round(t_imports - t_start, 3),
                       "cli_call": round(t_done - t_cli, 3),
                       "process_start_to_indexed": round(process_wall, 3)}}
    result.write_text(json.dumps(out))


# ----- the parent -----
def hash_decode_rate(files: list[str], square: int, threads: int = 2) -> tuple[float, int]:
    """(images/s, photos decoded) of what indexing does to a file before the tower: read it,
    hash it (SHA-1) and decode it to the tower's ``square`` input, on ``threads`` threads."""
    import hashlib

    from xmodal.index import scan

    def one(path: str) -> bool:
        data, _ = scan.read_bytes(path)
        hashlib.sha1(data).hexdigest()
        return scan.load_checked(path, data, square)[0] is not None

    t = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        ok = sum(pool.map(one, files))
    return len(files) / (time.perf_counter() - t), ok


def summarise(timers: dict, n: int) -> dict:
    """ms per photo per stage (self wall time of the thread that runs it)."""
    enc, load = timers.get("encoder", {}), timers.get("loader", {})

    def w(table, *names, key="self_wall_s"):
        return sum(table.get(x, {}).get(key, 0.0) for x in names)

    def ms(seconds):
        return round(1000 * seconds / n, 2)

    decode = ("open (header)", "draft (set scale)", "decode (ImageFile.load)")
    shrink = ("thumbnail to 448 (rest)", "resize", "reduce")
    loader = {
        "read file": ms(w(load, "read file")),
        "sha1": ms(w(load, "sha1")),
        "decode (header, draft, entropy + IDCT)": ms(w(load, *decode)),
        "exif_transpose + convert": ms(w(load, "exif_transpose", "convert")),
        "shrink (to the tower's input, or 448 px)": ms(w(load, *shrink)),
        "load_checked checks (rest)": ms(w(load, "load_checked (rest: checks)")),
        "EXIF metadata": ms(w(load, "metadata (EXIF)")),
        "rest of _load_file": ms(w(load, "load file")),
    }
    encoder = {
        "wait for loader": ms(w(enc, "wait for loader")),
        "pixel hash (cache key, cache off)": ms(w(enc, "pixel hash (cache key)")),
        "RGB copy (open_image)": ms(w(enc, "RGB copy (open_image)", "convert")),
        "resize to 260": ms(w(enc, "resize", "reduce")),
        "to float + normalise": ms(w(enc, "preprocess (rest: to float, normalise)")),
        "stack + other glue": ms(w(enc, "extract_image_features (rest: stack, copy)",
                                   "embed_images (rest)", "_embed (rest)", "_forward (rest)")),
        "tower (ORT run)": ms(w(enc, "tower (ORT run)")),
        "ORT session create + file digest (once)": ms(w(enc, "ORT session create",
                                                        "tower file digest")),
        "tuned head conv (numpy, on prehead)": ms(w(enc, "tuned head conv (top_pooled)")),
        "heads (NumpyHeads)": ms(w(enc, "heads (NumpyHeads)")),
        "bridge + concat/normalise": ms(w(enc, "bridge (softmax @ class names)",
                                          "heads+bridge (rest: concat, norm)")),
        "SQLite (_embed_and_commit minus embedding)": ms(w(enc, "embed_and_commit (rest: "
                                                              "SQLite)")),
    }
    after = {
        "FAISS rebuild": ms(w(enc, "FAISS rebuild (vectors from SQLite, build, save)")),
        "prepare text encoder": ms(w(enc, "prepare text encoder")),
        "metadata refresh": ms(w(enc, "metadata refresh")),
        "walk folder": ms(w(enc, "walk folder")),
        "rest of _update (loop glue, progress, SQLite reads)": ms(w(enc, "update (all)")),
        "model load": ms(w(enc, "model load")),
    }
    busy_loader = w(load, "load file", key="wall_s")
    return {"loader_thread_ms_per_photo": loader, "encoder_thread_ms_per_photo": encoder,
            "once_per_run_ms_per_photo": after,
            "loader_busy_ms_per_photo": ms(busy_loader),
            "loader_cpu_ms_per_photo": ms(w(load, "load file", key="cpu_s")),
            "encoder_loop_ms_per_photo": round(sum(encoder.values())
                                               - encoder["ORT session create + file digest "
                                                         "(once)"], 2)}


def run_child(folder: Path, work: Path) -> tuple[float, dict, dict]:
    db = work / f"profile-{time.monotonic_ns()}.db"
    result = work / f"profile-{time.monotonic_ns()}.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.index_profile", "--child",
                           str(folder), str(db), str(result)], check=True, capture_output=True,
                          text=True, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                          "INDEX_PROFILE_SPAWNED": repr(time.time())})
    prof = json.loads(result.read_text())
    # process start to the end of indexing (the decode-only runs that follow are left out)
    wall = prof["seconds"]["process_start_to_indexed"]
    stats = json.loads(proc.stdout[proc.stdout.index("{"):proc.stdout.rindex("}") + 1])
    return wall, stats, prof


def run_plain(folder: Path, work: Path, **env: str) -> tuple[float, dict]:
    db = work / f"plain-{time.monotonic_ns()}.db"
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "xmodal", "index", str(folder), "--db", str(db),
                           "--json"], check=True, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
    wall = time.perf_counter() - t
    return wall, json.loads(proc.stdout[proc.stdout.index("{"):proc.stdout.rindex("}") + 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=400)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--originals", type=Path, default=DEFAULT_ORIGINALS,
                    help="folder of the Flickr8K originals (else they are made by upscaling)")
    ap.add_argument("--name", default="index_profile", help="results file name")
    ap.add_argument("--no-plain", action="store_true",
                    help="skip the plain xmodal index run (the timers' overhead)")
    ap.add_argument("--child", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)

    from benchmarks._record import record

    work = Path(tempfile.mkdtemp(prefix="xmodal-index-profile-", dir="/tmp"))
    results: dict = {
        "photos_per_kind": args.photos,
        "definitions": {
            "images_per_s_process": "photos / seconds from process start to the end of indexing "
                                    "(start-up, imports, model load included)",
            "images_per_s_update": "photos / PhotoIndex.update's elapsed_s (model load, walk, "
                                   "embedding loop, FAISS rebuild)",
            "ms_per_photo": "a stage's self wall time summed over the run / photos; the loader "
                            "thread runs concurrently with the encoder thread, so the two "
                            "threads' columns overlap in time and do not add up to the wall",
            "decode_only": "read_bytes + load_checked of the same files, warm page cache, in the "
                           "same process after indexing",
        },
        "kinds": {}}
    try:
        sets = make_sets(args.photos, work, args.originals, args.kinds)
        for kind, info in sets.items():
            folder = info.pop("folder")
            load_before = os.getloadavg()[0]
            wall, stats, prof = run_child(folder, work)
            n = stats["added"]
            row = {"photos": info, "load_avg_before": round(load_before, 2),
                   "process_wall_s": round(wall, 2),
                   "images_per_s_process": round(n / wall, 2),
                   "images_per_s_update": round(n / stats["elapsed_s"], 2),
                   "update_stats": stats,
                   "decode_only": prof["decode_only"],
                   "index_vs_decode_only_2_threads": round(
                       (n / stats["elapsed_s"]) / prof["decode_only"]["2_threads"]
                       ["images_per_s"], 3),
                   "index_vs_decode_only_1_thread": round(
                       (n / stats["elapsed_s"]) / prof["decode_only"]["1_threads"]
                       ["images_per_s"], 3),
                   "summary": summarise(prof["timers"], n), "threads": prof["threads"],
                   "child_seconds": prof["seconds"], "timers": prof["timers"]}
            if not args.no_plain:
                # without the timers; then with numpy's OpenBLAS on one thread, whose idle
                # worker otherwise spins beside ORT and the loader (an experiment, not a fix)
                for name, env in (("plain_run", {}),
                                  ("plain_run_openblas_1_thread", {"OPENBLAS_NUM_THREADS": "1"})):
                    pwall, pstats = run_plain(folder, work, **env)
                    row[name] = {"env": env, "process_wall_s": round(pwall, 2),
                                 "images_per_s_process": round(pstats["added"] / pwall, 2),
                                 "images_per_s_update": round(pstats["added"]
                                                              / pstats["elapsed_s"], 2)}
            results["kinds"][kind] = row
            print(kind, json.dumps({k: row[k] for k in ("images_per_s_process",
                                                       "images_per_s_update", "decode_only",
                                                       "summary")}, indent=1), flush=True)
            print("  plain:", row.get("plain_run"), row.get("plain_run_openblas_1_thread"),
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(record(args.name, results))


if __name__ == "__main__":
    main()
