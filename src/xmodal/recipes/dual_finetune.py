"""Stage 2 of the dual encoder's training: fine-tuning the top of the image encoder.

Stage 1 (:func:`xmodal.recipes.dual.train_dual`) trains heads on EfficientNet-Lite2's
frozen pooled features. Stage 2 tunes the top of the image tower too: the head convolution
(its batch norm folded in, :mod:`xmodal.models.image_top`), warm-started from the stage-1
heads (the usual two-stage fine-tune). The activations below the head conv are cached once per
image and orientation (``(cells, 352)`` float16; 3 GB for Flickr8K + CC, both orientations), so
an epoch costs one small matrix product per image instead of a full forward pass.

With ``top_lr`` 0 the head conv stays frozen (the control: only the warm-started heads keep
training); otherwise one conv, shared by the ensemble's heads, is tuned with them. Each epoch
is scored on the dev splits as stage 1 selects (mean over Flickr8K dev and CC dev of mean R@1
at bridge weight 0), the best epoch kept (epoch 0 = the stage-1 heads), then the bridge weight
chosen as :func:`xmodal.recipes.dual.train_dual` does. Nothing here reads a test split.
The shipped model's settings: :data:`SHIPPED_STAGE2` (``xmodal train dual`` runs both stages;
``xmodal reproduce dual --finetune`` compares rates).

    from xmodal.recipes.dual_finetune import SHIPPED_STAGE2, finetune
    line, model = finetune(warm_from="models/stage1", **SHIPPED_STAGE2)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.paths import cache_dir

BACKBONE = "lite2"
# the shipped model's stage 2 (reports/dual_encoder.md, fifth round)
SHIPPED_STAGE2 = {"top_lr": 1e-3, "head_lr": 1e-4, "epochs": 6, "flip_prob": 0.5,
                  "hard_negative_beta": 5.0, "seed": 0}


def cache_root() -> Path:
    """Where the activation caches live: ``$XMODAL_FINETUNE_CACHE`` or ``cache_dir()/finetune``."""
    return Path(os.environ.get("XMODAL_FINETUNE_CACHE") or cache_dir() / "finetune")


# -- activations below the head conv -------------------------------------------------------------
def prehead_activations(paths: list, name: str, flip: bool = False, backbone: str = BACKBONE,
                        batch: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """(n, cells, C) float16 activations below the head conv and (n, 1000) logits of ``paths``,
    cached under ``cache_root()/name`` (resumable: a killed run goes on where it stopped)."""
    from tqdm.auto import tqdm

    from xmodal.features.image_encoder import get_backbone, open_image, preprocess
    from xmodal.features.towers import image_tower

    b = get_backbone(backbone)
    root = cache_root()
    stem = root / f"{name}_{b.name}{'_flip' if flip else ''}"
    done_file = stem.with_suffix(".done")
    meta = {"n": len(paths), "first": str(paths[0]), "last": str(paths[-1])}
    cells = b.grid * b.grid
    n = len(paths)
    done = 0
    if done_file.is_file():
        saved = json.loads(done_file.read_text())
        if {k: saved.get(k) for k in meta} == meta:
            done = saved["done"]
    mode = "r+" if done else "w+"
    if done == n:
        mode = "r"
    pre = logits = None
    for start in tqdm(range(done, n, batch), desc=f"prehead {name}{' flip' if flip else ''}",
                      unit="batch", disable=done == n):
        if pre is None:
            pre, logits = _open(stem, n, cells, b.prehead_channels, mode)
        x = np.stack([preprocess(open_image(p), flip=flip, size=b.image_size)
                      for p in paths[start : start + batch]])
        got = image_tower(b.name).forward(x, ("prehead", "logits"))
        pre[start : start + len(x)] = got["prehead"]
        logits[start : start + len(x)] = got["logits"]
        if (start // batch) % 20 == 0 or start + batch >= n:
            pre.flush()
            logits.flush()
            done_file.write_text(json.dumps({**meta, "done": min(start + batch, n)}))
    if pre is None:
        pre, logits = _open(stem, n, cells, b.prehead_channels, "r")
    return pre, logits


def _open(stem: Path, n: int, cells: int, channels: int, mode: str):
    stem.parent.mkdir(parents=True, exist_ok=True)
    pre = np.lib.format.open_memmap(f"{stem}.prehead.npy", mode=mode, dtype=np.float16,
                                    shape=None if mode == "r" else (n, cells, channels))
    lg = np.lib.format.open_memmap(f"{stem}.logits.npy", mode=mode, dtype=np.float32,
                                   shape=None if mode == "r" else (n, 1000))
    return pre, lg


# -- stage-2 training ----------------------------------------------------------------------------
def _warm_heads(model_dir: Path):
    """The torch heads of a saved dual encoder (its float16 arrays as float32)."""
    from xmodal.models.dual_heads import heads_from_arrays
    from xmodal.models.modeldir import read_model_dir

    saved = read_model_dir(model_dir, "dual-encoder", None, "dual encoder")
    arrays = {k[6:]: v.astype(np.float32) for k, v in saved.arrays.items()
              if k.startswith("heads.")}
    return heads_from_arrays(saved.state["heads"], arrays)


def finetune(top_lr: float = 3e-5, head_lr: float = 1e-4, epochs: int = 6, seed: int = 0,
             hard_negative_beta: float = 5.0, flip_prob: float = 0.5, batch_images: int = 128,
             warm_from: str | Path | None = None, data=None, cc_path=None,
             bridge_weights=(0.0, 0.1, 0.2, 0.3, 0.4),
             bridge_tolerance: float = 1.0, log=print):
    """One stage-2 run (``top_lr`` 0: the control): (its line for the report, the selected
    model: a :class:`~xmodal.models.dual.DualEncoder` with the tuned top, if any)."""
    import copy

    import torch

    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.features import encode_texts
    from xmodal.models.dual import DEFAULT_MODEL_DIR, DualEncoder, l2_normalize
    from xmodal.models.dual_heads import EnsembleHeads
    from xmodal.models.dual_train import contrastive_loss, recall_5cap
    from xmodal.recipes.dual import training_items
    from xmodal.models.image_top import pretrained_top, top_pooled, tunable_top

    t0 = time.time()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    warm_from = Path(warm_from or DEFAULT_MODEL_DIR)
    model = DualEncoder.load(warm_from)
    if model.image_backbone != BACKBONE or model.text_encoder != "mpnet":
        raise XmodalError("stage 2 expects a Lite2 + MPNet model to start from")
    if model.image_top_ is not None:
        raise XmodalError(f"{warm_from} has been through stage 2 already; start from a stage-1 "
                          "model (xmodal train dual --no-stage2 --out DIR)")
    heads = _warm_heads(warm_from)
    members = heads.members if isinstance(heads, EnsembleHeads) else [heads]
    ids, paths, captions, split_ids = training_items(data, None,
                                                     {"cc": load_conceptual_captions(cc_path)})
    row = {k: i for i, k in enumerate(ids)}
    pre, logits = prehead_activations(paths, "f8k_cc")
    pre_f, logits_f = (prehead_activations(paths, "f8k_cc", flip=True) if flip_prob > 0
                       else (pre, logits))
    text = encode_texts([t for _, t in captions], encoder="mpnet", progress=False)
    caption_image = np.array([row[i] for i, _ in captions])
    bridge = model.bridge_image(logits)
    bridge_f = model.bridge_image(logits_f)
    top = tunable_top(pretrained_top(BACKBONE))
    frozen = top_lr == 0
    pooled0 = top_pooled(pre, top.arrays()) if frozen else None
    pooled0_f = top_pooled(pre_f, top.arrays()) if frozen else None

    by_image: dict[int, list[int]] = {}
    for c, r in enumerate(caption_image):
        by_image.setdefault(int(r), []).append(c)
    train = np.array([row[i] for i in split_ids["train"]])
    dev = {}
    for split in ("dev", "cc_dev"):
        rows = np.array([row[i] for i in split_ids[split]])
        caps = np.concatenate([by_image[int(r)] for r in rows])
        pos = {int(r): j for j, r in enumerate(rows)}
        dev[split] = (rows, caps, np.array([pos[int(caption_image[c])] for c in caps]))

    def embed_dev(split: str, w: float):
        rows, caps, cap_img = dev[split]
        pooled = pooled0[rows] if frozen else top_pooled(pre[rows], top.arrays())
        x = np.concatenate([pooled, bridge[rows]], 1)
        zi = heads.embed_images(x)
        zt = heads.embed_texts(text[caps])
        ei = np.concatenate([np.sqrt(1 - w) * zi, np.sqrt(w) * bridge[rows]], 1)
        et = np.concatenate([np.sqrt(1 - w) * zt, np.sqrt(w) * l2_normalize(text[caps])], 1)
        return recall_5cap(ei, et, cap_img)

    def score(w: float = 0.0) -> tuple[float, dict]:
        res = {s: embed_dev(s, w) for s in dev}
        return float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in res.values()])), res

    params = [{"params": [p for m in members for p in m.parameters()], "lr": head_lr}]
    if not frozen:
        params.append({"params": list(top.parameters()), "lr": top_lr})
    opt = torch.optim.AdamW(params, weight_decay=1e-4)
    steps = int(np.ceil(len(train) / batch_images)) * epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=[g["lr"] for g in params], total_steps=steps, pct_start=0.1)
    best_score, _ = score()
    history = [{"epoch": 0, "dev_score": round(best_score, 3)}]
    log(f"epoch 0 (warm start): dev score {best_score:.3f}")
    best = (best_score, 0, copy.deepcopy(members), top.arrays())
    for epoch in range(1, epochs + 1):
        for m in members:
            m.train()
        order = rng.permutation(train)
        losses = []
        for s in range(0, len(order), batch_images):
            b = np.sort(order[s : s + batch_images])
            flip = rng.random(len(b)) < flip_prob
            if frozen:
                pooled = torch.from_numpy(np.where(flip[:, None], pooled0_f[b], pooled0[b]))
            else:
                x = np.where(flip[:, None, None], pre_f[b], pre[b]).astype(np.float32)
                pooled = top(torch.from_numpy(x))
            br = torch.from_numpy(np.where(flip[:, None], bridge_f[b], bridge[b]))
            head_in = torch.cat([pooled, br], 1)
            cap_idx = [rng.permutation(by_image[int(r)])[:5] for r in b]
            counts = torch.tensor([len(c) for c in cap_idx])
            t = torch.from_numpy(text[np.concatenate(cap_idx)])
            loss = sum(contrastive_loss(m, m.image_forward(head_in), m.text_forward(t), counts,
                                        hard_negative_beta) for m in members) / len(members)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        for m in members:
            m.eval()
        sc, res = score()
        history.append({"epoch": epoch, "loss": round(float(np.mean(losses)), 4),
                        "dev_score": round(sc, 3), "time_s": round(time.time() - t0)})
        log(f"epoch {epoch}: loss {np.mean(losses):.4f} dev score {sc:.3f} "
            f"({time.time() - t0:.0f} s)")
        if sc > best[0]:
            best = (sc, epoch, copy.deepcopy(members), top.arrays())
    best_score, best_epoch, best_members, best_top = best
    heads = EnsembleHeads(best_members) if len(best_members) > 1 else best_members[0]
    top.weight.data = torch.from_numpy(best_top["weight"])
    top.bias.data = torch.from_numpy(best_top["bias"])
    by_w = {w: score(w) for w in bridge_weights}
    top_w = max(v[0] for v in by_w.values())
    w = max(k for k, v in by_w.items() if v[0] >= top_w - bridge_tolerance)
    line = {"variant": "top" if not frozen else "control", "top_lr": top_lr, "head_lr": head_lr,
            "epochs": epochs, "best_epoch": best_epoch, "w": w,
            "fit_s": round(time.time() - t0), "score_w0": round(best_score, 3),
            "score": round(by_w[w][0], 3), "dev": by_w[w][1], "history": history,
            "warm_from": str(warm_from), "flip_prob": flip_prob,
            "hard_negative_beta": hard_negative_beta, "seed": seed}
    model.heads_ = heads
    model.image_top_ = None if frozen else best_top
    model.bridge_weight = float(w)
    model.meta_ = {**model.meta_, "stage2": {k: v for k, v in line.items() if k != "history"}}
    log(json.dumps({k: v for k, v in line.items() if k != "history"}))
    return line, model

