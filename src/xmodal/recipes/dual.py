"""The dual encoder's training data and recipe: Flickr8K (plus extra datasets such as Conceptual
Captions 18k) as :class:`xmodal.models.dual_train.TrainData`, and stage 1 of ``xmodal train
dual``, which fits the heads (:func:`xmodal.models.dual_train.fit_heads`) and selects the epoch
and the bridge weight on the dev splits.

Model selection uses the official dev split only (1,000 images x 5,000 captions; plus each extra
dataset's dev split): the epoch with the best dev mean of R@1 (image->text and text->image),
then the largest bridge weight whose dev mean R@1 is within ``bridge_tolerance`` (1 point) of
the best weight's, so that as much ImageNet knowledge as Flickr8K tolerates stays in the score.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.dual import DualEncoder
from xmodal.models.dual_train import TrainConfig, TrainData, fit_heads, recall_5cap, split_rows

# The recipe of the shipped default model (src/xmodal/assets/dual; reports/dual_encoder.md,
# fourth round): TrainConfig overrides, and training on Conceptual Captions 18k beside Flickr8K.
SHIPPED_RECIPE: dict[str, Any] = {"image_backbone": "lite2", "text_encoder": "mpnet",
                                  "ensemble_size": 3, "use_flip": True,
                                  "hard_negative_beta": 5.0}
SHIPPED_USES_CC = True


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
