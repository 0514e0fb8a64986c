"""Dual-encoder experiments on Flickr8K: variants compared on the dev split (selection) and,
for the record, on the test split (flickr8k-5cap, 1,000 images x 5,000 captions).

Usage: ``nice -n 10 python scripts/train_dual_experiments.py [--max-train N] [--variants a,b]``
Uses only the train images whose features are already cached when ``--max-train auto``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from xmodal.models.dual import DualEncoder  # noqa: E402
from xmodal.models.dual_train import (  # noqa: E402
    TrainConfig,
    _subset,
    fit_heads,
    load_train_data,
    recall_5cap,
)


def cached_train_prefix(data=None) -> int:
    from xmodal.data import load_flickr8k
    from xmodal.features._cache import file_hash
    from xmodal.features.image_encoder import _caches
    from xmodal.features.text_encoder import VERSION
    from xmodal.features._cache import ArrayCache, content_hash

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(data, judgments=False)
    small, _ = _caches()
    texts = ArrayCache(VERSION, {"emb": ((384,), "float32")})
    train = ds.split("train")
    keys = [file_hash(ds.image_path(i)) for i in train]
    have = small.get_many(keys)
    n = 0
    for i, k in zip(train, keys):
        if k not in have:
            break
        caps = [content_hash(c.text.encode()) for c in ds.captions_of(i)]
        if len(texts.get_many(caps)) < len(set(caps)):
            break
        n += 1
    return n


def split_eval(model: DualEncoder, td, split: str) -> dict:
    rows, caps = _subset(td, split)
    pos = {int(r): i for i, r in enumerate(rows)}
    cap_img = np.array([pos[int(r)] for r in td.caption_image[caps]])
    maps = td.maps[rows] if td.maps is not None else None
    ei = model.embed_image_features(RAW["pooled"][rows], td.logits[rows], maps)
    et = model.embed_text_features(td.text[caps])
    return recall_5cap(ei, et, cap_img)


RAW: dict = {}


def short(r: dict) -> str:
    return " ".join(f"{k}={v:.1f}" for k, v in r.items() if "R@" in k)


VARIANTS = {
    "base": {},
    "d512": {"dim": 512},
    "h1024": {"hidden": 1024},
    "drop4": {"dropout": 0.4},
    "drop4ep60": {"dropout": 0.4, "epochs": 60},
    "maps": {"use_maps": True},
    "ep80": {"epochs": 80},
    "lr3": {"lr": 3e-3},
    "b256": {"batch_images": 256},
    "bridgein": {"bridge_input": True},
    "lit": {"text_identity": True},
    "lit_bridgein": {"text_identity": True, "bridge_input": True},
}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--max-train", default="auto")
    ap.add_argument("--variants", default="base")
    ap.add_argument("--out", default="/tmp/dual_experiments.jsonl")
    args = ap.parse_args()
    n = cached_train_prefix(args.data) if args.max_train == "auto" else int(args.max_train)
    print(f"train images: {n}", flush=True)
    names = args.variants.split(",")
    use_maps = any(VARIANTS[v].get("use_maps") for v in names)
    t0 = time.time()
    td = load_train_data(args.data, max_train_images=n, use_maps=use_maps, progress=False)
    print(f"loaded in {time.time() - t0:.0f}s", flush=True)
    RAW["pooled"] = td.pooled
    zs = DualEncoder(bridge_weight=1.0)
    for split in ("dev", "test"):
        print(f"zero-shot bridge {split}: {short(split_eval(zs, td, split))}", flush=True)
    dev_rows, dev_caps = _subset(td, "dev")
    pos = {int(r): i for i, r in enumerate(dev_rows)}
    dev_cap_img = np.array([pos[int(r)] for r in td.caption_image[dev_caps]])
    for name in names:
        cfg = TrainConfig(**{k: v for k, v in VARIANTS[name].items()})
        cfg.max_train_images = n
        image_input = "pooled+bridge" if cfg.bridge_input else "pooled"
        td.pooled = DualEncoder(image_input=image_input).head_image_input(RAW["pooled"], td.logits)

        def eval_fn(heads):
            m = DualEncoder(bridge_weight=0.0, image_input=image_input)
            m.heads_ = heads
            r = split_eval(m, td, "dev")
            return 0.5 * (r["i2t_R@1"] + r["t2i_R@1"])

        t1 = time.time()
        heads, hist, best_epoch = fit_heads(td, cfg, log=lambda *_: None, eval_fn=eval_fn)
        took = time.time() - t1
        for w in (0.0, 0.1, 0.2, 0.3, 0.4):
            m = DualEncoder(bridge_weight=w, image_input=image_input)
            m.heads_ = heads
            d, t = split_eval(m, td, "dev"), split_eval(m, td, "test")
            line = {"variant": name, "n_train": n, "w": w, "best_epoch": best_epoch,
                    "fit_s": round(took), "dev": d, "test": t}
            print(f"{name} w={w} ep={best_epoch} fit={took:.0f}s | dev {short(d)} | test {short(t)}",
                  flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(line) + "\n")
