"""The dual encoder's querybank: embeddings of its own training data (Flickr8K + CC18k train).

:class:`xmodal.models.querybank.QuerybankNorm` needs a bank of queries that are not the test
queries. For the dual encoder that bank is what it was trained on: the 22,643 Flickr8K and
Conceptual Captions training images and their 46,643 captions, embedded by the model being
evaluated. Images come through the stage-2 activation cache
(:func:`xmodal.models.dual_finetune.prehead_activations`, shared with training), captions through
the MPNet feature cache. The registered setting ``dual-qb`` (:mod:`xmodal.recipes.flickr8k`) is
the default model scored this way; its ``beta`` was selected on the dev splits
(``xmodal reproduce dual --querybank``, ``reports/dual_encoder.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError

# selected on Flickr8K dev + CC dev (reports/dual_encoder.md, sixth round)
QUERYBANK_BETA = 30.0
BETAS = (10.0, 20.0, 30.0, 40.0, 50.0)
SUBSET_SIZES = (1000, 4000)
KMEANS_SIZES = (128, 512)


_BANKS: dict[tuple, tuple] = {}


def training_bank(model, data=None, cc_path=None, splits=("train",), cache_key=None):
    """(bank image embeddings, bank caption embeddings, bank image paths) of ``model`` on the
    Flickr8K + CC images of ``splits`` (and all their captions); with ``cache_key`` (e.g. the
    model's spec) kept for the rest of the process."""
    key = (cache_key, str(data), str(cc_path), tuple(splits))
    if cache_key is not None and key in _BANKS:
        return _BANKS[key]
    bank = _embed_bank(model, data, cc_path, splits)
    if cache_key is not None:
        _BANKS[key] = bank
    return bank


def _embed_bank(model, data, cc_path, splits):
    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.features import encode_texts
    from xmodal.models.dual_finetune import prehead_activations
    from xmodal.models.dual_train import training_items
    from xmodal.models.image_top import pretrained_top, top_pooled

    ids, paths, captions, split_ids = training_items(
        data, None, {"cc": load_conceptual_captions(cc_path)})
    row = {k: i for i, k in enumerate(ids)}
    rows = np.array([row[i] for s in splits for i in split_ids[s]])
    pre, logits = prehead_activations(paths, "f8k_cc", backbone=model.image_backbone)
    top = None if model.image_top_ is not None else pretrained_top(model.image_backbone)
    parts = []
    for s in range(0, len(rows), 2000):
        r = rows[s : s + 2000]
        pooled = None if top is None else top_pooled(pre[r], top)
        parts.append(model.embed_image_features(pooled, logits[r], None, pre[r]))
    keep = {ids[r] for r in rows}
    texts = [t for i, t in captions if i in keep]
    bank_text = model.embed_text_features(
        encode_texts(texts, encoder=model.text_encoder, progress=False))
    return np.concatenate(parts), bank_text, [Path(paths[r]) for r in rows]


def check_disjoint(bank_paths: list[Path], paths: list) -> None:
    """Refuse to score images that are in the bank (the bank must not hold the test queries)."""
    bank = {Path(p).resolve() for p in bank_paths}
    shared = [p for p in paths if isinstance(p, str | Path) and Path(p).resolve() in bank]
    if shared:
        raise XmodalError(f"{len(shared)} of the images to score are in the querybank (e.g. "
                          f"{shared[0]}); the bank holds training images only, so evaluate on "
                          "dev or test images")


def select_beta(model, betas=BETAS, data=None, cc_path=None, alternatives: bool = True,
                log=print) -> dict:
    """Dev-only choice of ``beta``: every value's R@K on Flickr8K dev (1,000 x 5,000) and CC dev
    (1,000 x 1,000), scored as training selects (mean over the two splits of mean R@1), with
    the plain cosines (``beta`` None) first. The bank is the training split only. With
    ``alternatives``, also the smaller banks of :func:`smaller_banks` at the chosen ``beta``."""
    import time

    from xmodal.models.dual_train import recall_5cap_scores
    from xmodal.models.querybank import QuerybankNorm

    t0 = time.time()
    bank_images, bank_texts, _ = training_bank(model, data, cc_path)
    dev_images, dev_texts, _ = training_bank(model, data, cc_path, splits=("dev", "cc_dev"))
    log(f"bank: {len(bank_images):,} images, {len(bank_texts):,} captions "
        f"({time.time() - t0:.0f} s)")
    splits = {}
    for split in ("dev", "cc_dev"):
        ids = _dev_items(data, cc_path, split)
        img_rows = {i: k for k, i in enumerate(dict.fromkeys(i for i, _ in ids))}
        splits[split] = (img_rows, ids)

    def dev_line(qb, **what) -> dict:
        res, offset_i, offset_t = {}, 0, 0
        for split, (img_rows, ids) in splits.items():
            ei = dev_images[offset_i : offset_i + len(img_rows)]
            et = dev_texts[offset_t : offset_t + len(ids)]
            offset_i, offset_t = offset_i + len(img_rows), offset_t + len(ids)
            S = ei @ et.T if qb is None else qb.normalize(ei, et)
            res[split] = recall_5cap_scores(S, np.array([img_rows[i] for i, _ in ids]))
        score = float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in res.values()]))
        log(f"{what}: dev score {score:.3f}")
        return {**what, "score": round(score, 3), "dev": res}

    lines = [dev_line(None if beta is None else QuerybankNorm(beta).fit(bank_images, bank_texts),
                      beta=beta) for beta in (None, *betas)]
    best = max((v for v in lines if v["beta"] is not None), key=lambda v: v["score"])
    out = {"lines": lines, "beta": best["beta"], "bank_images": len(bank_images),
           "bank_captions": len(bank_texts), "dim": int(bank_images.shape[1])}
    if alternatives:
        out["alternatives"] = [
            dev_line(QuerybankNorm(best["beta"]).fit(*bank), bank=name)
            for name, bank in smaller_banks(model, bank_images, bank_texts, log)]
    return {**out, "time_s": round(time.time() - t0)}


def smaller_banks(model, bank_images: np.ndarray, bank_texts: np.ndarray, log=print):
    """Banks that would fit beside the model's files, to compare with the whole training set:
    random subsets, k-means centres weighted by their cluster sizes (seeded), and the 1,000
    ImageNet class-name prompts the model ships as a caption bank."""
    from sklearn.cluster import KMeans

    from xmodal.models.dual import class_name_embeddings

    rng = np.random.default_rng(0)
    for n in SUBSET_SIZES:
        yield f"random {n:,} images and {n:,} captions", (
            bank_images[rng.choice(len(bank_images), n, replace=False)],
            bank_texts[rng.choice(len(bank_texts), n, replace=False)])
    for k in KMEANS_SIZES:
        log(f"k-means, {k} centres per side")
        fits = [KMeans(k, n_init=1, random_state=0).fit(x) for x in (bank_images, bank_texts)]
        yield f"k-means: {k} image and {k} caption centres, weighted by cluster size", (
            fits[0].cluster_centers_, fits[1].cluster_centers_,
            *(np.log(np.bincount(f.labels_, minlength=k)) for f in fits))
    classes = model.embed_text_features(class_name_embeddings(encoder=model.text_encoder))
    yield "all training images; the 1,000 class-name prompts as the caption bank", (
        bank_images, classes)


def _dev_items(data, cc_path, split: str) -> list[tuple[str, str]]:
    """(image id, caption) pairs of a dev split, in the order :func:`training_bank` embeds."""
    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.models.dual_train import training_items

    _, _, captions, split_ids = training_items(
        data, None, {"cc": load_conceptual_captions(cc_path)})
    keep = set(split_ids[split])
    return [(i, t) for i, t in captions if i in keep]
