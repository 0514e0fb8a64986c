"""Fitting the dual encoder's heads on frozen image and text features.

Loss: symmetric InfoNCE over a batch of images with all five of their captions. Image-to-text
treats the five captions as positives (mean of their log-softmax); text-to-image is a plain
cross-entropy over the batch's images. Optional feature-level augmentation: the mirrored
image's features (cached separately) replace the original with probability ``flip_prob``.

:func:`fit_heads` keeps the epoch with the best score of a caller's ``eval_fn`` (early stopping
on dev). Which data, and how the epoch and the bridge weight are selected on which dev splits,
is the recipe's: :mod:`xmodal.recipes.dual`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xmodal.errors import XmodalError


@dataclass
class TrainData:
    pooled: np.ndarray  # (n_images, 1280)
    logits: np.ndarray  # (n_images, 1000)
    maps: np.ndarray | None  # (n_images, cells, 1280) float16 or None
    pooled_flip: np.ndarray | None
    maps_flip: np.ndarray | None
    text: np.ndarray  # (n_captions, d)
    caption_image: np.ndarray  # (n_captions,) row of the caption's image
    image_ids: list[str]
    splits: dict[str, np.ndarray]  # split -> image rows ("train", "dev", "test", "cc_dev", ...)
    logits_flip: np.ndarray | None = None  # ImageNet logits of the mirrored images

    @property
    def dev_splits(self) -> list[str]:
        """The splits that select: Flickr8K's ``dev`` and every extra dataset's ``<name>_dev``."""
        return [s for s in self.splits if s == "dev" or s.endswith("_dev")]


def recall_5cap(
    img_emb: np.ndarray, txt_emb: np.ndarray, caption_image: np.ndarray
) -> dict[str, float]:
    """R@1/5/10 (percent) both ways for images x their captions (caption_image: image row)."""
    return recall_5cap_scores(img_emb @ txt_emb.T, caption_image)


def recall_5cap_scores(S: np.ndarray, caption_image: np.ndarray) -> dict[str, float]:
    """:func:`recall_5cap` from a score matrix S[n_images, n_captions] (higher = better)."""
    if not np.isfinite(S).all():
        raise XmodalError("non-finite similarities: the model diverged or saw too little data")
    n_img = S.shape[0]
    out: dict[str, float] = {}
    # image -> text: rank of the best-ranked own caption
    own = np.zeros_like(S, dtype=bool)
    own[caption_image, np.arange(S.shape[1])] = True
    best_own = np.where(own, S, -np.inf).max(axis=1)
    rank_i2t = (S > best_own[:, None]).sum(axis=1)
    # text -> image
    s_own = S[caption_image, np.arange(S.shape[1])]
    rank_t2i = (S > s_own[None, :]).sum(axis=0)
    for k in (1, 5, 10):
        out[f"i2t_R@{k}"] = 100.0 * float((rank_i2t < k).mean())
        out[f"t2i_R@{k}"] = 100.0 * float((rank_t2i < k).mean())
    out["i2t_medR"] = float(np.median(rank_i2t) + 1)
    out["t2i_medR"] = float(np.median(rank_t2i) + 1)
    assert n_img == len(np.unique(caption_image))
    return out


def split_rows(td: TrainData, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(image rows, caption indices with caption_image remapped 0..n-1) of a split."""
    rows = td.splits[split]
    pos = -np.ones(len(td.image_ids), int)
    pos[rows] = np.arange(len(rows))
    caps = np.flatnonzero(pos[td.caption_image] >= 0)
    return rows, caps


@dataclass
class TrainConfig:
    dim: int = 256
    hidden: int = 512
    dropout: float = 0.4
    epochs: int = 60
    batch_images: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    flip_prob: float = 0.5
    use_flip: bool = False
    max_train_images: int | None = None
    use_maps: bool = False
    bridge_input: bool = True
    text_identity: bool = False
    bridge_temperature: float = 1.0
    bridge_weights: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4)
    bridge_tolerance: float = 1.0
    eval_every: int = 5
    seed: int = 0
    ensemble_size: int = 1  # > 1: that many heads (seeds seed, seed+1, ...), embeddings averaged
    hard_negative_beta: float = 0.0  # > 0: negatives re-weighted by exp(beta * cos) (mean 1)
    image_backbone: str = "lite0"
    text_encoder: str = "minilm"


def contrastive_loss(heads, zi, zt, counts, hard_negative_beta: float = 0.0):
    """Symmetric InfoNCE for a batch of unit image embeddings ``zi`` (B, d) and caption
    embeddings ``zt`` (sum(counts), d), image ``j``'s ``counts[j]`` captions in a row. Image->text
    averages the log-softmax over an image's captions; text->image is a cross-entropy over the
    batch's images. ``hard_negative_beta`` > 0 re-weights negatives by exp(beta * cos), mean 1."""
    import torch
    from torch.nn import functional as F

    scale = heads.log_scale.exp().clamp(max=100.0)
    logits = scale * zi @ zt.T  # (B, captions in the batch)
    n = len(counts)
    owner = torch.arange(n, device=zi.device).repeat_interleave(counts)  # caption -> image
    pos = owner[None, :] == torch.arange(n, device=zi.device)[:, None]
    if hard_negative_beta > 0:
        # importance weights on the negatives, proportional to exp(beta * cos) and with mean 1
        # per row (i2t) / column (t2i): log w added to the negatives' logits
        sim = (zi @ zt.T).detach() * hard_negative_beta
        neg = ~pos
        n_neg_r = neg.sum(1, keepdim=True).float()
        n_neg_c = neg.sum(0, keepdim=True).float()
        masked = sim.masked_fill(pos, float("-inf"))
        log_w_r = masked - torch.logsumexp(masked, 1, keepdim=True) + n_neg_r.log()
        log_w_c = masked - torch.logsumexp(masked, 0, keepdim=True) + n_neg_c.log()
        logits_r = logits + log_w_r.masked_fill(pos, 0.0)
        logits_c = logits + log_w_c.masked_fill(pos, 0.0)
    else:
        logits_r = logits_c = logits
    loss_i2t = -(F.log_softmax(logits_r, dim=1) * pos).sum(1).div(counts).mean()
    loss_t2i = F.cross_entropy(logits_c.T, owner)
    return 0.5 * (loss_i2t + loss_t2i)


def fit_heads(
    td: TrainData,
    cfg: TrainConfig,
    log: Callable[[str], Any] = print,
    eval_fn: Callable[[Any], float] | None = None,
):
    """Train DualHeads on the train split; returns (best heads by ``eval_fn``, history).

    Trains on :func:`xmodal.models.torch_runtime.device` (``--device``; the CPU by default);
    ``eval_fn`` gets, and the caller gets back, heads on the CPU."""
    import copy

    import torch

    from xmodal.models import torch_runtime
    from xmodal.models.dual_heads import DualHeads

    dev = torch.device(torch_runtime.device())

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    rows, caps = split_rows(td, "train")
    if len(rows) < 2:
        raise XmodalError("need at least two training images")
    heads = DualHeads(
        image_dim=td.pooled.shape[1],
        text_dim=td.text.shape[1],
        dim=cfg.dim,
        hidden=cfg.hidden,
        dropout=cfg.dropout,
        use_maps=cfg.use_maps,
        text_identity=cfg.text_identity,
        map_dim=td.maps.shape[-1] if cfg.use_maps else 1280,
    )
    # input standardisation from the training split
    with torch.no_grad():
        P = torch.from_numpy(td.pooled[rows])
        heads.image.mean.copy_(P.mean(0))
        heads.image.std.copy_(P.std(0) + 1e-4)
        if heads.text is not None:
            T = torch.from_numpy(td.text[caps])
            heads.text.mean.copy_(T.mean(0))
            heads.text.std.copy_(T.std(0) + 1e-4)
        if cfg.use_maps:
            M = torch.from_numpy(td.maps[rows[:2000]].astype(np.float32)).flatten(0, 1)
            heads.cells.mean.copy_(M.mean(0))
            heads.cells.std.copy_(M.std(0) + 1e-4)

    # captions of each train image (Flickr8K: 5; web alt-texts: 1)
    by_image: dict[int, list[int]] = {}
    for c in caps:
        by_image.setdefault(int(td.caption_image[c]), []).append(int(c))
    rows = np.array([r for r in rows if len(by_image.get(int(r), [])) >= 1])
    n_caps = max(len(v) for v in by_image.values())

    heads.to(dev)
    opt = torch.optim.AdamW(heads.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = int(np.ceil(len(rows) / cfg.batch_images))
    total = steps_per_epoch * cfg.epochs
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=cfg.lr, total_steps=total, pct_start=0.1
    )
    best = (-np.inf, None, -1)
    history = []
    t0 = time.time()
    for epoch in range(1, cfg.epochs + 1):
        heads.train()
        order = rng.permutation(rows)
        losses = []
        for s in range(0, len(order), cfg.batch_images):
            b = order[s : s + cfg.batch_images]
            flip = (
                rng.random(len(b)) < cfg.flip_prob
                if td.pooled_flip is not None
                else np.zeros(len(b), bool)
            )
            pooled = np.where(flip[:, None], td.pooled_flip[b] if flip.any() else 0, td.pooled[b])
            maps = None
            if cfg.use_maps:
                m = td.maps[b].astype(np.float32)
                if flip.any():
                    m[flip] = td.maps_flip[b[flip]].astype(np.float32)
                maps = torch.from_numpy(m).to(dev)
            cap_idx = [rng.permutation(by_image[int(r)])[:n_caps] for r in b]
            zi = heads.image_forward(torch.from_numpy(pooled.astype(np.float32)).to(dev), maps)
            zt = heads.text_forward(torch.from_numpy(td.text[np.concatenate(cap_idx)]).to(dev))
            counts = torch.tensor([len(c) for c in cap_idx], device=dev)
            loss = contrastive_loss(heads, zi, zt, counts, cfg.hard_negative_beta)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        entry = {"epoch": epoch, "loss": float(np.mean(losses)), "time_s": time.time() - t0}
        if eval_fn is not None and (epoch % cfg.eval_every == 0 or epoch == cfg.epochs):
            heads.eval()
            score = eval_fn(heads.cpu())
            entry["dev"] = score
            if score > best[0]:
                best = (score, copy.deepcopy(heads), epoch)
            heads.to(dev)
        history.append(entry)
        log(f"epoch {epoch}: {entry}")
    heads.eval()
    if best[1] is None:
        return heads.cpu(), history, cfg.epochs
    return best[1], history, best[2]
