"""Indexing speed end to end: ``xmodal index FOLDER`` in a fresh process, engines side by side.

    python -m benchmarks.index_speed                   # 1,000 Flickr8K test photos, ~3 minutes
    python -m benchmarks.index_speed --images 200 --engines onnx
    python -m benchmarks.index_speed --folder ../data/flickr8k-originals/data/Images --name full
    python -m benchmarks.index_speed --engines onnx --models dual /tmp/lite0-model --name models

Each run is a new ``xmodal index`` process on a fresh database and an empty cache folder
(``XMODAL_CACHE``), timed by wall clock from process start to exit: start-up, model load, the
ONNX export when it happens (``first use``), reading, hashing, decoding, embedding, SQLite and
FAISS. The runs alternate engines so that background load hits them alike; the median of the
repeats is reported, with images/s and the ratio to the torch engine. ``--models`` times
several embedding models (``xmodal index --model``) the same way, alternating, with the ratio
to the first model.

Writes ``benchmarks/results/index_speed.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._record import record
from xmodal.paths import data_root, models_dir


def photos(n: int, dest: Path, folder: Path | None = None) -> Path:
    """Symlinks in ``dest`` to the first ``n`` photos of ``folder`` (sorted names), by default
    the Flickr8K test photos (224-px JPEGs)."""
    if folder is None:
        root = data_root() / "flickr8k"
        ids = (root / "Flickr8k_text" / "Flickr_8k.testImages.txt").read_text().split()[:n]
        files = [root / "Flicker8k_Dataset" / i for i in ids]
    else:
        files = sorted(p for p in Path(folder).iterdir() if p.is_file())[:n]
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        (dest / f.name).symlink_to(f.resolve())
    return dest


def run(folder: Path, engine: str, work: Path, keep_export: Path | None,
        model: str | None = None) -> float:
    """Seconds for one fresh ``xmodal index`` process."""
    cache = work / f"cache-{engine}-{time.monotonic_ns()}"
    if keep_export is not None and keep_export.is_dir():
        shutil.copytree(keep_export, cache / "onnx")  # export done before: not first use
    # the feature cache is empty, the models folder is the user's (unpacked weights and the
    # sentence encoder's export persist across runs, as they do for a user)
    env = {**os.environ, "XMODAL_CACHE": str(cache), "XMODAL_ENGINE": engine,
           "XMODAL_MODELS": str(models_dir()), "HF_HUB_OFFLINE": "1"}
    db = work / f"index-{time.monotonic_ns()}.db"
    t0 = time.perf_counter()
    extra = ["--model", model] if model else []
    subprocess.run([sys.executable, "-m", "xmodal", "index", str(folder), "--db", str(db), *extra],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t0
    if keep_export is not None and not keep_export.is_dir() and (cache / "onnx").is_dir():
        shutil.copytree(cache / "onnx", keep_export)
    shutil.rmtree(cache, ignore_errors=True)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--engines", nargs="+", default=["torch", "onnx"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folder", type=Path, default=None,
                    help="photos to index instead of the Flickr8K test photos (e.g. full-size)")
    ap.add_argument("--name", default="", help="suffix of the result file (index_speed_NAME)")
    ap.add_argument("--models", nargs="+", default=None,
                    help="embedding models to compare (xmodal index --model), alternating")
    args = ap.parse_args()
    if args.models:
        return compare_models(args)
    work = Path(tempfile.mkdtemp(prefix="xmodal-index-speed-"))
    try:
        folder = photos(args.images, work / "photos", args.folder)
        n_images = sum(1 for _ in folder.iterdir())
        export = work / "onnx-export"
        first_use = run(folder, "onnx", work, export) if "onnx" in args.engines else None
        times: dict[str, list[float]] = {e: [] for e in args.engines}
        for _ in range(args.repeats):
            for e in args.engines:
                times[e].append(run(folder, e, work, export if e == "onnx" else None))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.images = n_images
    what = str(args.folder) if args.folder else "Flickr8K test photos (224-px JPEGs)"
    out = {"images": n_images, "photos": what, "engines": {}}
    base = statistics.median(times["torch"]) if "torch" in times else None
    for e, ts in times.items():
        med = statistics.median(ts)
        out["engines"][e] = {"wall_s": ts, "median_wall_s": med,
                             "images_per_s": args.images / med,
                             "ratio_to_torch": base / med if base else None}
    if first_use is not None:
        out["onnx_first_use_wall_s"] = first_use
        out["onnx_first_use_images_per_s"] = args.images / first_use
    print(out)
    record("index_speed" + (f"_{args.name}" if args.name else ""), out)


def compare_models(args) -> None:
    """``--models``: one engine (the first of --engines), each model alternately, with its own
    warm ONNX export (the export happens once per model, before the timed runs)."""
    engine = args.engines[0]
    work = Path(tempfile.mkdtemp(prefix="xmodal-index-speed-"))
    try:
        folder = photos(args.images, work / "photos", args.folder)
        n_images = sum(1 for _ in folder.iterdir())
        exports = {m: work / f"onnx-export-{k}" for k, m in enumerate(args.models)}
        for m in args.models:
            run(folder, engine, work, exports[m], m)
        times: dict[str, list[float]] = {m: [] for m in args.models}
        for _ in range(args.repeats):
            for m in args.models:
                times[m].append(run(folder, engine, work, exports[m], m))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = str(args.folder) if args.folder else "Flickr8K test photos (224-px JPEGs)"
    base = statistics.median(times[args.models[0]])
    out = {"images": n_images, "photos": what, "engine": engine, "models": {}}
    for m, ts in times.items():
        med = statistics.median(ts)
        out["models"][m] = {"wall_s": ts, "median_wall_s": med, "images_per_s": n_images / med,
                            "ratio_to_first": base / med}
    print(out)
    record("index_speed" + (f"_{args.name}" if args.name else ""), out)


if __name__ == "__main__":
    main()
