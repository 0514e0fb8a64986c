"""The dual encoder's querybank: embeddings of its own training data (Flickr8K + CC18k train).

:class:`xmodal.models.querybank.QuerybankNorm` needs a bank of queries that are not the test
queries. For the dual encoder that bank is what it was trained on: the 22,643 Flickr8K and
Conceptual Captions training images and their 46,643 captions, embedded by the model being
evaluated. Images come through the stage-2 activation cache
(:func:`xmodal.recipes.dual_finetune.prehead_activations`, shared with training), captions through
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

# the image bank shipped inside the default model (seventh round): every training image, on its
# top DIM principal directions, int8; selected on the dev splits by select_image_bank
SHIPPED_IMAGE_BANK = {"dim": 256, "beta": 20.0}
IMAGE_BANK_DIMS = (64, 128, 256)


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
    from xmodal.recipes.dual_finetune import prehead_activations
    from xmodal.recipes.dual import training_items
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

    from xmodal.models.querybank import QuerybankNorm

    t0 = time.time()
    bank_images, bank_texts, _ = training_bank(model, data, cc_path)
    dev_images, dev_texts, _ = training_bank(model, data, cc_path, splits=("dev", "cc_dev"))
    log(f"bank: {len(bank_images):,} images, {len(bank_texts):,} captions "
        f"({time.time() - t0:.0f} s)")
    score = _dev_scorer(data, cc_path, dev_images, dev_texts)

    def dev_line(qb, **what) -> dict:
        line = {**what, **score(qb)}
        log(f"{what}: dev score {line['score']:.3f}")
        return line

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
    from xmodal.recipes.dual import training_items

    _, _, captions, split_ids = training_items(
        data, None, {"cc": load_conceptual_captions(cc_path)})
    keep = set(split_ids[split])
    return [(i, t) for i, t in captions if i in keep]


def ship_with_image_bank(model_dir, dim: int, beta: float, data=None, cc_path=None,
                         log=print):
    """Rewrite the dual encoder saved in ``model_dir`` as the default model ships: its weight
    matrices in int8, plus a querybank of its training images (Flickr8K + CC18k train) embedded
    by that int8 model, kept on their top ``dim`` principal directions in int8
    (:func:`~xmodal.models.querybank.compress_bank`). Returns the rewritten model."""
    import tempfile
    import time

    from xmodal.models.dual import DualEncoder
    from xmodal.models.querybank import compress_bank

    t0 = time.time()
    model = DualEncoder.load(model_dir)
    if model.querybank_ is not None:
        raise XmodalError(f"{model_dir} already has a querybank")
    with tempfile.TemporaryDirectory() as tmp:
        model.save(tmp, weights="int8")
        shipped = DualEncoder.load(tmp)  # the bank is embedded by the model as it ships
    bank_images = training_bank(shipped, data, cc_path)[0]
    model.set_querybank(compress_bank(bank_images, dim), beta)
    model.save(model_dir, weights="int8")  # quantised from the same arrays as ``shipped``
    log(f"querybank: {len(bank_images):,} training images, {dim} dimensions, beta {beta:g} "
        f"({time.time() - t0:.0f} s)")
    return DualEncoder.load(model_dir)


def select_image_bank(model, dims=IMAGE_BANK_DIMS, betas=BETAS, data=None, cc_path=None,
                      log=print) -> dict:
    """Dev-only choice of the bank shipped inside the model: every training image, compressed
    to ``dim`` dimensions, at every ``beta``; scored as training selects (images only, so
    text -> image rankings keep the plain cosines). Also the bytes each adds to the model."""
    import time

    from xmodal.models.querybank import CompactImageBank, compress_bank

    t0 = time.time()
    bank_images = training_bank(model, data, cc_path)[0]
    dev_images, dev_texts, _ = training_bank(model, data, cc_path, splits=("dev", "cc_dev"))
    score = _dev_scorer(data, cc_path, dev_images, dev_texts)
    lines = [{"dim": None, "beta": None, "bytes": 0, **score(None)}]
    for dim in dims:
        compact = compress_bank(bank_images, dim)
        size = sum(v.nbytes for v in compact.values())
        for beta in betas:  # scored as the model scores (DualEncoder.caption_offsets)
            lines.append({"dim": dim, "beta": beta, "bytes": size,
                          **score(CompactImageBank(compact, beta))})
            log(f"image bank, {dim} dimensions, beta {beta:g}: dev score {lines[-1]['score']}")
    best = max(lines[1:], key=lambda v: v["score"])
    return {"lines": lines, "dim": best["dim"], "beta": best["beta"],
            "bank_images": len(bank_images), "time_s": round(time.time() - t0)}


def _dev_scorer(data, cc_path, dev_images, dev_texts):
    """A function of a QuerybankNorm (or None: plain cosines) giving the dev selection score
    (mean over Flickr8K dev and CC dev of the mean R@1 of both directions) and R@1s."""
    from xmodal.models.dual_train import recall_5cap_scores

    splits = []
    for split in ("dev", "cc_dev"):
        ids = _dev_items(data, cc_path, split)
        img_rows = {i: k for k, i in enumerate(dict.fromkeys(i for i, _ in ids))}
        splits.append((split, img_rows, ids))

    def score(qb) -> dict:
        res, offset_i, offset_t = {}, 0, 0
        for split, img_rows, ids in splits:
            ei = dev_images[offset_i : offset_i + len(img_rows)]
            et = dev_texts[offset_t : offset_t + len(ids)]
            offset_i, offset_t = offset_i + len(img_rows), offset_t + len(ids)
            S = ei @ et.T if qb is None else qb.normalize(ei, et)
            res[split] = recall_5cap_scores(S, np.array([img_rows[i] for i, _ in ids]))
        value = float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in res.values()]))
        return {"score": round(value, 3), "dev": res}

    return score
