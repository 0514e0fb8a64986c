"""Training the dual encoder's heads on Flickr8K (frozen EfficientNet-Lite0 / MiniLM features).

Loss: symmetric InfoNCE over a batch of images with all five of their captions. Image-to-text
treats the five captions as positives (mean of their log-softmax); text-to-image is a plain
cross-entropy over the batch's images. Optional feature-level augmentation: the mirrored
image's features (cached separately) replace the original with probability ``flip_prob``.

Model selection uses the official dev split only (1,000 images x 5,000 captions): the epoch with
the best dev mean of R@1 (image->text and text->image), then the largest bridge weight whose dev
mean R@1 is within ``bridge_tolerance`` (1 point) of the best weight's, so that as much ImageNet
knowledge as Flickr8K tolerates stays in the score.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.dual import DualEncoder


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


def training_items(data=None, max_train_images: int | None = None,
                   extra: dict[str, Any] | None = None):
    """(ids, image paths, (id, caption) pairs, split -> ids) of Flickr8K's splits plus each
    extra dataset's (see :func:`load_train_data`), in the order every training run uses."""
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(data, judgments=False)
    train = ds.split("train")
    if max_train_images is not None:
        train = train[:max_train_images]
    sources = [("", ds, {"train": train, "dev": ds.split("dev"), "test": ds.split("test")})]
    for name, extra_ds in (extra or {}).items():
        sources.append((f"{name}:", extra_ds, {"train": extra_ds.split("train"),
                                               f"{name}_dev": extra_ds.split("dev"),
                                               f"{name}_test": extra_ds.split("test")}))
    ids, paths, captions, split_ids = [], [], [], {}
    for prefix, source, parts in sources:
        for split, members in parts.items():
            split_ids.setdefault(split, []).extend(prefix + i for i in members)
            for i in members:
                ids.append(prefix + i)
                paths.append(source.image_path(i))
                captions.extend((prefix + i, c.text) for c in source.captions_of(i))
    return ids, paths, captions, split_ids


def load_train_data(
    data=None,
    *,
    use_maps: bool = False,
    use_flip: bool = False,
    max_train_images: int | None = None,
    progress: bool = True,
    extra: dict[str, Any] | None = None,
    image_backbone: str | None = None,
    text_encoder: str | None = None,
) -> TrainData:
    """Cached features of Flickr8K images and captions (extracting what is missing).

    ``max_train_images`` keeps the first N images of the official train split file (dev and test
    are always complete). ``extra`` adds datasets by name (e.g. ``{"cc": load_conceptual_captions()}``:
    anything with ``split(name)``, ``captions_of(id)`` and ``image_path(id)``): their train images
    join the train split, their dev and test images become the splits ``<name>_dev`` and
    ``<name>_test``, and their ids are prefixed ``<name>:``.
    """
    from xmodal.features import encode_texts, extract_image_features

    ids, paths, captions, split_ids = training_items(data, max_train_images, extra)
    f = extract_image_features(paths, maps=use_maps, progress=progress, backbone=image_backbone)
    if not f.ok.all():
        raise XmodalError(f"{int((~f.ok).sum())} training images could not be read")
    pooled_flip = maps_flip = logits_flip = None
    if use_flip:
        ff = extract_image_features(paths, maps=use_maps, flip=True, progress=progress,
                                    backbone=image_backbone)
        pooled_flip, logits_flip = ff.pooled, ff.logits
        maps_flip = ff.maps.reshape(len(ids), -1, ff.maps.shape[-1]) if use_maps else None
    text = encode_texts([t for _, t in captions], progress=progress, encoder=text_encoder)
    row = {k: n for n, k in enumerate(ids)}
    caption_image = np.array([row[i] for i, _ in captions])
    splits = {s: np.array([row[i] for i in split_ids[s]], dtype=int) for s in split_ids}
    maps = f.maps.reshape(len(ids), -1, f.maps.shape[-1]) if use_maps else None
    return TrainData(
        f.pooled, f.logits, maps, pooled_flip, maps_flip, text, caption_image, ids, splits,
        logits_flip,
    )


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


# The recipe of the shipped default model (src/xmodal/assets/dual; reports/dual_encoder.md,
# fourth round): TrainConfig overrides, and training on Conceptual Captions 18k beside Flickr8K.
SHIPPED_RECIPE: dict[str, Any] = {"image_backbone": "lite2", "text_encoder": "mpnet",
                                  "ensemble_size": 3, "use_flip": True,
                                  "hard_negative_beta": 5.0}
SHIPPED_USES_CC = True


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
    owner = torch.arange(n).repeat_interleave(counts)  # caption -> image in batch
    pos = owner[None, :] == torch.arange(n)[:, None]
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
    """Train DualHeads on the train split; returns (best heads by ``eval_fn``, history)."""
    import copy

    import torch

    from xmodal.models.dual_heads import DualHeads

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
                maps = torch.from_numpy(m)
            cap_idx = [rng.permutation(by_image[int(r)])[:n_caps] for r in b]
            zi = heads.image_forward(torch.from_numpy(pooled.astype(np.float32)), maps)
            zt = heads.text_forward(torch.from_numpy(td.text[np.concatenate(cap_idx)]))
            counts = torch.tensor([len(c) for c in cap_idx])
            loss = contrastive_loss(heads, zi, zt, counts, cfg.hard_negative_beta)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        entry = {"epoch": epoch, "loss": float(np.mean(losses)), "time_s": time.time() - t0}
        if eval_fn is not None and (epoch % cfg.eval_every == 0 or epoch == cfg.epochs):
            heads.eval()
            score = eval_fn(heads)
            entry["dev"] = score
            if score > best[0]:
                best = (score, copy.deepcopy(heads), epoch)
        history.append(entry)
        log(f"epoch {epoch}: {entry}")
    heads.eval()
    if best[1] is None:
        return heads, history, cfg.epochs
    return best[1], history, best[2]


def train_dual(
    data=None,
    *,
    epochs: int | None = None,
    max_train_images: int | None = None,
    seed: int = 0,
    config: TrainConfig | None = None,
    log: Callable[[str], Any] = print,
    progress: bool = True,
    extra: dict[str, Any] | None = None,
) -> tuple[DualEncoder, dict[str, Any]]:
    """Train the shipped recipe; select epoch and bridge weight on the dev split(s).

    ``extra`` adds training datasets (see :func:`load_train_data`); each one's dev split then
    selects too: the score is the mean over dev splits of the mean R@1 of both directions.
    """
    cfg = config or TrainConfig()
    if epochs is not None:
        cfg.epochs = epochs
    if max_train_images is not None:
        cfg.max_train_images = max_train_images
    cfg.seed = seed
    t0 = time.time()
    td = load_train_data(
        data,
        use_maps=cfg.use_maps,
        use_flip=cfg.use_flip,
        max_train_images=cfg.max_train_images,
        progress=progress,
        extra=extra,
        image_backbone=cfg.image_backbone,
        text_encoder=cfg.text_encoder,
    )
    log(f"features loaded in {time.time() - t0:.1f}s")
    model = DualEncoder(
        dim=cfg.dim,
        hidden=cfg.hidden,
        dropout=cfg.dropout,
        bridge_temperature=cfg.bridge_temperature,
        image_input="pooled+bridge" if cfg.bridge_input else "pooled",
        image_backbone=cfg.image_backbone,
        text_encoder=cfg.text_encoder,
    )
    raw_pooled = td.pooled
    td.pooled = model.head_image_input(td.pooled, td.logits)
    if td.pooled_flip is not None:  # the mirrored images' head input: their own bridge too
        td.pooled_flip = model.head_image_input(td.pooled_flip, td.logits_flip)
    dev = {}
    for split in td.dev_splits:
        rows, caps = split_rows(td, split)
        position = {int(r): i for i, r in enumerate(rows)}
        cap_img = np.array([position[int(r)] for r in td.caption_image[caps]])
        dev[split] = (rows, caps, cap_img, model.bridge_image(td.logits[rows]), td.text[caps])

    def dev_scores(heads, w: float, split: str = "dev") -> dict[str, float]:
        rows, caps, cap_img, bridge_img, bridge_txt = dev[split]
        zi = heads.embed_images(td.pooled[rows], td.maps[rows] if cfg.use_maps else None)
        zt = heads.embed_texts(td.text[caps])
        ei = np.concatenate([np.sqrt(1 - w) * zi, np.sqrt(w) * bridge_img], 1)
        et = np.concatenate([np.sqrt(1 - w) * zt, np.sqrt(w) * bridge_txt], 1)
        return recall_5cap(ei, et, cap_img)

    def mean_r1(scores: dict[str, dict[str, float]]) -> float:
        return float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in scores.values()]))

    def eval_fn(heads) -> float:
        return mean_r1({split: dev_scores(heads, 0.0, split) for split in dev})

    if cfg.ensemble_size > 1:
        import dataclasses

        from xmodal.models.dual_heads import EnsembleHeads

        members, best_epochs, history = [], [], []
        for k in range(cfg.ensemble_size):
            member_cfg = dataclasses.replace(cfg, seed=cfg.seed + k)
            h, hist, ep = fit_heads(td, member_cfg, log=log, eval_fn=eval_fn)
            members.append(h)
            best_epochs.append(ep)
            history.extend(hist)
            log(f"ensemble member {k + 1}/{cfg.ensemble_size} (seed {member_cfg.seed}): "
                f"best epoch {ep}, dev mean R@1 {eval_fn(h):.2f}")
        heads = EnsembleHeads(members)
        best_epoch = best_epochs
    else:
        heads, history, best_epoch = fit_heads(td, cfg, log=log, eval_fn=eval_fn)
    by_w = {}
    for w in cfg.bridge_weights:
        by_w[w] = {split: dev_scores(heads, w, split) for split in dev}
        log(f"bridge weight {w}: dev {by_w[w]}")
    # The bridge carries ImageNet knowledge that the dev splits cannot fully reward: keep the
    # largest weight whose dev mean R@1 is within ``bridge_tolerance`` points of the best.
    score_w = {w: mean_r1(r) for w, r in by_w.items()}
    top = max(score_w.values())
    best_w = max(w for w, v in score_w.items() if v >= top - cfg.bridge_tolerance)
    td.pooled = raw_pooled
    model.bridge_weight = float(best_w)
    model.heads_ = heads
    model.class_text_ = model._class_text()
    report = {
        "best_epoch": best_epoch,
        "bridge_weight": float(best_w),
        "dev": by_w[best_w]["dev"],
        "dev_by_bridge_weight": {str(k): v["dev"] for k, v in by_w.items()},
        "train_time_s": round(time.time() - t0, 1),
        "config": cfg.__dict__ | {"bridge_weights": list(cfg.bridge_weights)},
    }
    if len(dev) > 1:
        report["dev_splits"] = by_w[best_w]
        report["extra_data"] = sorted(extra or {})
    model.meta_ = {k: report[k] for k in ("best_epoch", "bridge_weight", "dev", "config")}
    if len(dev) > 1:
        model.meta_["dev_splits"] = report["dev_splits"]
        model.meta_["extra_data"] = report["extra_data"]
    return model, report
