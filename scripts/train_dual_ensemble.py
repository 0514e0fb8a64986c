"""Dev-split comparison of cheap dual-encoder variants: seed ensembles, hard-negative weighting,
shorter/longer schedules, wider heads (selection on the dev split only; no test numbers).

An ensemble of K heads concatenates the members' L2-normalised head embeddings / sqrt(K) (the
mean of their cosines; plain averaging of the embeddings mixes unaligned spaces and scored 1.8
to 3.2 points of dev mean R@1 below the single model), then blends the bridge with weight w as the single model does.

Usage: ``OMP_NUM_THREADS=2 nice -n 10 python scripts/train_dual_ensemble.py --variants shipped,hn5,ens2_hn5``
Writes one JSON line per (variant, w) to ``--out`` (default /tmp/dual_ensemble.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from xmodal.models.dual import DualEncoder, _normalize
from xmodal.models.dual_train import (
    TrainConfig,
    _subset,
    fit_heads,
    load_train_data,
    recall_5cap,
)

# name -> (config overrides, seeds)
VARIANTS: dict[str, tuple[dict, tuple[int, ...]]] = {
    "shipped": ({}, (0,)),
    "ep30": ({"epochs": 30}, (0,)),
    "hn5": ({"hard_negative_beta": 5.0}, (0,)),
    "hn10": ({"hard_negative_beta": 10.0}, (0,)),
    "h1024": ({"hidden": 1024}, (0,)),
    "ens3_ep30": ({"epochs": 30}, (0, 1, 2)),
    "ens2_ep30": ({"epochs": 30}, (0, 1)),
    "ens2_hn5": ({"hard_negative_beta": 5.0}, (0, 1)),
    "ens2": ({}, (0, 1)),
    "ens3": ({}, (0, 1, 2)),
}


def short(r: dict) -> str:
    return " ".join(f"{k}={v:.1f}" for k, v in r.items() if "R@1" in k)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--variants", default="shipped")
    ap.add_argument("--out", default="/tmp/dual_ensemble.jsonl")
    args = ap.parse_args()
    t0 = time.time()
    td = load_train_data(args.data, progress=False)
    print(f"loaded in {time.time() - t0:.0f}s", flush=True)
    enc = DualEncoder(image_input="pooled+bridge")
    raw = td.pooled
    td.pooled = enc.head_image_input(raw, td.logits)
    dev_rows, dev_caps = _subset(td, "dev")
    pos = {int(r): i for i, r in enumerate(dev_rows)}
    cap_img = np.array([pos[int(r)] for r in td.caption_image[dev_caps]])
    bridge_i = enc.bridge_image(td.logits[dev_rows])
    bridge_t = _normalize(td.text[dev_caps])

    def dev(zi, zt, w):
        ei = np.concatenate([np.sqrt(1 - w) * zi, np.sqrt(w) * bridge_i], 1)
        et = np.concatenate([np.sqrt(1 - w) * zt, np.sqrt(w) * bridge_t], 1)
        return recall_5cap(ei, et, cap_img)

    def eval_fn(heads):
        r = dev(heads.embed_images(td.pooled[dev_rows]), heads.embed_texts(td.text[dev_caps]), 0.0)
        return 0.5 * (r["i2t_R@1"] + r["t2i_R@1"])

    cache: dict = {}
    for name in args.variants.split(","):
        over, seeds = VARIANTS[name]
        zis, zts, took, epochs = [], [], 0.0, []
        for seed in seeds:
            key = (json.dumps(over, sort_keys=True), seed)
            if key not in cache:
                cfg = TrainConfig(**over, seed=seed)
                t1 = time.time()
                heads, _, best_epoch = fit_heads(td, cfg, log=lambda *_: None, eval_fn=eval_fn)
                cache[key] = (heads.embed_images(td.pooled[dev_rows]),
                              heads.embed_texts(td.text[dev_caps]), time.time() - t1, best_epoch)
            zi, zt, dt, ep = cache[key]
            zis.append(zi), zts.append(zt), epochs.append(ep)
            took += dt
        zi = np.concatenate(zis, 1) / np.sqrt(len(zis))
        zt = np.concatenate(zts, 1) / np.sqrt(len(zts))
        for w in (0.0, 0.1, 0.2):
            d = dev(zi, zt, w)
            mean = 0.5 * (d["i2t_R@1"] + d["t2i_R@1"])
            print(f"{name} w={w} epochs={epochs} fit={took:.0f}s | dev {short(d)} mean={mean:.2f}",
                  flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps({"variant": name, "w": w, "seeds": list(seeds), "best_epochs":
                                    epochs, "fit_s": round(took), "dev": d, "dev_mean_r1": mean})
                        + "\n")
