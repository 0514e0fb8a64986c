"""Decoding and indexing camera-size photos by format: JPEG, HEIC and PNG (issue 32 item 3).

    python -m benchmarks.decode_formats                 # 20 photos a format, ~10 minutes
    python -m benchmarks.decode_formats --formats heic_copy   # one format, the others kept

The same 12 MP photos (Flickr8K test photos upscaled to 4000x3000 with grain, as
``benchmarks/index_profile.py`` makes its ``camera12mp_grain`` kind) saved three ways: JPEG
quality 92, HEIC quality 80 (x265 through pillow-heif, an iPhone's default format), the same
HEIC with a 320-px embedded copy as an iPhone stores it (``heic_copy``: indexing reads the copy,
see ``scan.HEIF_THUMBNAIL_MIN_SHARE``) and PNG. Per
format: file size, the decode-only rate (``read_bytes`` + SHA-1 + ``load_checked`` to the default
model's 260-px input, as indexing decodes, on 2 threads) and a fresh ``xmodal index`` process's
rate on the same files (encoders exported), also after its start-up (the wall time of indexing
one photo, best of 3, taken off), with the ratio of that to the decode-only rate. JPEGs decode at
a reduced scale (``draft``); HEIC and PNG have no such shortcut and are decoded whole.

Writes ``benchmarks/results/decode_formats.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._record import record
from benchmarks.index_profile import hash_decode_rate, make_sets
from xmodal.paths import models_dir


FORMATS = ("jpeg", "heic", "heic_copy", "png")


def read_results(name: str) -> dict:
    path = Path(__file__).parent / "results" / f"{name}.json"
    return json.loads(path.read_text())["results"] if path.is_file() else {}


def convert(src: Path, dest: Path, fmt: str) -> None:
    from PIL import Image

    dest.mkdir(parents=True, exist_ok=True)
    if fmt.startswith("heic"):
        import pillow_heif

        pillow_heif.register_heif_opener()
    for f in sorted(src.iterdir()):
        with Image.open(f) as im:
            out = dest / f"{f.stem}.{fmt.removesuffix('_copy')}"
            if fmt == "heic":
                im.save(out, format="HEIF", quality=80)
            elif fmt == "heic_copy":
                im.save(out, format="HEIF", quality=80, thumbnails=[320])
            else:
                im.save(out, format="PNG", compress_level=6)


def decode_rate(folder: Path, square: int) -> float:
    files = sorted(str(p) for p in folder.iterdir())
    rate, ok = hash_decode_rate(files, square)
    if ok != len(files):
        raise SystemExit(f"{len(files) - ok} of {folder} could not be decoded")
    return rate


def index_wall(folder: Path, db: Path, work: Path) -> float:
    """Seconds of a fresh ``xmodal index`` process into a new database ``db``."""
    env = {**os.environ, "XMODAL_CACHE": str(work / "cache"), "XMODAL_MODELS": str(models_dir())}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "xmodal", "index", str(folder), "--db", str(db), "-q"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=20)
    ap.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS,
                    help="formats to measure; the stored results of the others are kept")
    args = ap.parse_args()
    from xmodal.factory import load_embedding_model

    square = load_embedding_model(None).image_input_size
    work = Path(tempfile.mkdtemp(prefix="xmodal-formats-"))
    try:
        jpeg = make_sets(args.photos, work, None, ["camera12mp_grain"])["camera12mp_grain"]
        folders = {"jpeg": Path(jpeg["folder"])}
        for fmt in (f for f in FORMATS[1:] if f in args.formats):
            t = time.perf_counter()
            convert(folders["jpeg"], work / fmt, fmt)
            print(f"made {fmt} in {time.perf_counter() - t:.0f} s", flush=True)
            folders[fmt] = work / fmt
        one = work / "one"  # a one-photo folder: the start-up of an index process
        one.mkdir()
        first = sorted(folders["jpeg"].iterdir())[0]
        (one / first.name).symlink_to(first)
        index_wall(folders["jpeg"], work / "warm.db", work)  # exports, page cache
        startup = min(index_wall(one, work / f"one{k}.db", work) for k in range(3))
        previous = read_results("decode_formats") if set(args.formats) != set(FORMATS) else {}
        out = dict(previous.get("formats", {}))
        for fmt, folder in folders.items():
            if fmt not in args.formats:
                continue
            files = list(folder.iterdir())
            decode = decode_rate(folder, square)
            wall = index_wall(folder, work / f"{fmt}.db", work)
            loop = len(files) / max(wall - startup, 1e-9)
            out[fmt] = {"photos": len(files),
                        "file_mb_mean": round(sum(f.stat().st_size for f in files)
                                              / len(files) / 1e6, 2),
                        "decode_only_images_per_s_2_threads": round(decode, 1),
                        "index_images_per_s_process": round(len(files) / wall, 1),
                        "index_images_per_s_after_startup": round(loop, 1),
                        "index_vs_decode_only": round(loop / decode, 2)}
            print(fmt, out[fmt], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record("decode_formats", {"photos": "Flickr8K test photos upscaled to 4000x3000 with grain "
                              "(sd 5), saved as JPEG q92, HEIC q80 (x265), HEIC q80 with a 320-px "
                              "copy (heic_copy) and PNG",
                              "tower_input_px": square,
                              "startup_s": round(startup, 3),
                              "measured_in_this_run": args.formats,
                              "kept_from_the_previous_record":
                                  sorted(set(out) - set(args.formats)),
                              "index_vs_decode_only": "index rate after start-up (the process's "
                              "wall minus that of indexing one photo) / decode-only rate",
                              "formats": out})


if __name__ == "__main__":
    main()
