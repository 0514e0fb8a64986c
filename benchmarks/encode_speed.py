"""Encoder throughput on this machine: EfficientNet-Lite0 images/s and MiniLM sentences/s,
with the disk cache off (cold) and on (warm), and the dual encoder's embedding cost on top.

Usage: ``python benchmarks/encode_speed.py [--images 64] [--texts 512]``
Writes ``benchmarks/results/encode_speed.json`` (command, git commit, machine, date, numbers).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    from xmodal.data import load_flickr8k
    from xmodal.features import encode_texts, extract_image_features
    from xmodal.models.dual import load_embedding_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=64)
    ap.add_argument("--texts", type=int, default=512)
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(judgments=False)
    paths = [ds.image_path(i) for i in ds.split("test")[: args.images]]
    texts = [c.text for c in ds.captions[: args.texts]]
    extract_image_features(paths[:4], cache=False, progress=False)  # load + warm up
    encode_texts(texts[:8], cache=False, progress=False)
    out = {}
    t = time.perf_counter()
    extract_image_features(paths, cache=False, progress=False)
    out["efficientnet_images_per_s_cold"] = len(paths) / (time.perf_counter() - t)
    t = time.perf_counter()
    extract_image_features(paths, maps=True, cache=False, progress=False)
    out["efficientnet_images_per_s_cold_with_maps"] = len(paths) / (time.perf_counter() - t)
    extract_image_features(paths, progress=False)  # fill the cache
    t = time.perf_counter()
    extract_image_features(paths, progress=False)
    out["efficientnet_images_per_s_cached"] = len(paths) / (time.perf_counter() - t)
    t = time.perf_counter()
    encode_texts(texts, cache=False, progress=False)
    out["minilm_texts_per_s_cold"] = len(texts) / (time.perf_counter() - t)
    model = load_embedding_model()
    model.embed_texts(["warm up"], progress=False)
    t = time.perf_counter()
    for q in texts[:50]:
        model.embed_texts([q], progress=False)
    out["dual_single_query_ms"] = 1000 * (time.perf_counter() - t) / 50
    from xmodal.provenance import git_commit

    commit = git_commit()
    report = {
        "command": "python " + " ".join(sys.argv),
        "git_commit": commit,
        "machine": f"{os.cpu_count()}-core CPU ({platform.processor() or platform.machine()}), "
        "shared with other jobs",
        "torch_threads": __import__("torch").get_num_threads(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "n_images": len(paths),
        "n_texts": len(texts),
        "results": {k: round(v, 2) for k, v in out.items()},
    }
    dest = Path(__file__).resolve().parent / "results" / "encode_speed.json"
    dest.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
