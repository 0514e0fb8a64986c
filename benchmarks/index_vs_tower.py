"""Indexing against the image tower alone, in one run (issue 43: "keep indexing at >= 70% of the
tower-only rate measured in the same run").

    python -m benchmarks.index_vs_tower                  # 600 Flickr8K test photos, 3 rounds
    python -m benchmarks.index_vs_tower --photos 200 --rounds 1

Each round, alternating:

* **tower only**: the default model's image tower (ONNX Runtime, the precision and outputs the
  photo index asks for) on the photos already decoded, resized and normalised in memory, in
  batches of 32: the ceiling for any indexer on this machine;
* **model only**: ``model.embed_images`` on the same photos decoded in memory (tower, heads, no
  file reading, decoding or SQLite);
* **index**: a fresh ``xmodal index FOLDER --db NEW.db -q`` process on an empty feature cache
  (the prepared towers in ``XMODAL_MODELS`` as installed), timed from process start to exit:
  start-up, model load, reading, hashing, decoding, EXIF, embedding, SQLite, FAISS. Start-up
  is not subtracted, so the ratio is conservative.

The ratio index / tower is reported per round and as the median. Results:
``benchmarks/results/index_vs_tower.json``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._record import machine, record


def photos(n: int) -> list[Path]:
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_flickr8k(judgments=False)
    return [Path(data.image_path(i)) for i in data.split("test")[:n]]


def tower_rate(model, paths: list[Path]) -> tuple[float, float]:
    """(tower-only images/s, model-only images/s) on photos decoded beforehand."""
    from xmodal.features.image_encoder import preprocess
    from xmodal.features.towers import image_precision, image_tower
    from xmodal.index.scan import load_checked

    square = getattr(model, "image_input_size", None)
    images = [load_checked(str(p), square=square)[0] for p in paths]
    size = model.image_input_size
    batch = np.stack([preprocess(im, size=size) for im in images]).astype(np.float32)
    outputs = ("pooled", "logits", "prehead") if model.image_top_ is not None else ("pooled",
                                                                                   "logits")
    precision = image_precision(model.image_backbone) if model.image_int8 else "fp32"
    tower = image_tower(model.image_backbone)
    tower.forward(batch[:32], outputs, precision)  # warm up
    t0 = time.perf_counter()
    for s in range(0, len(batch), 32):
        tower.forward(batch[s:s + 32], outputs, precision)
    t_tower = time.perf_counter() - t0
    model.embed_images(images[:32], progress=False, cache=False)
    t0 = time.perf_counter()
    for s in range(0, len(images), 32):
        model.embed_images(images[s:s + 32], progress=False, cache=False)
    t_model = time.perf_counter() - t0
    return len(batch) / t_tower, len(images) / t_model


def index_rate(paths: list[Path]) -> dict:
    import os

    from benchmarks.cold_search import timed
    from benchmarks.model_table import environment
    from xmodal.paths import models_dir

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "photos"
        folder.mkdir()
        for p in paths:
            os.symlink(p, folder / p.name)
        cache = Path(tmp) / "cache"
        cache.mkdir()
        # the prepared towers stay where they are: only the feature cache is fresh
        with environment({"XMODAL_CACHE": str(cache), "XMODAL_MODELS": str(models_dir())}):
            run = timed(["index", str(folder), "--db", str(Path(tmp) / "i.db"), "-q"])
    return {**run, "images_per_s": round(len(paths) / run["s"], 2)}


def main(argv: list[str] | None = None) -> None:
    from xmodal.factory import load_embedding_model
    from xmodal.index.photo_index import model_id

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="index_vs_tower")
    args = ap.parse_args(argv)
    model = load_embedding_model(None)
    paths = photos(args.photos)
    rounds = []
    for r in range(args.rounds):
        tower, whole_model = tower_rate(model, paths)
        index = index_rate(paths)
        row = {"round": r + 1, "tower_images_per_s": round(tower, 2),
               "model_images_per_s": round(whole_model, 2), "index": index,
               "index_over_tower": round(index["images_per_s"] / tower, 3)}
        print(row)
        rounds.append(row)
    ratios = [x["index_over_tower"] for x in rounds]
    record(args.name, {
        "benchmark": "index_vs_tower", "model": model_id(model, None), "photos": len(paths),
        "rounds": rounds, "median_index_over_tower": statistics.median(ratios),
        "target": 0.70, "meets_target": statistics.median(ratios) >= 0.70,
        "machine": machine()})


if __name__ == "__main__":
    main()
