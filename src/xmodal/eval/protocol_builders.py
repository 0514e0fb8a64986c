"""The built-in evaluation protocols, by name in ``BUILDERS`` (see ``xmodal.eval.protocols``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from scipy import sparse

from xmodal.errors import XmodalError
from xmodal.eval.keyword_queries import query_relevance, word_combination_queries
from xmodal.eval.protocol_types import Direction, Protocol, pairs_to_relevance

BUILDERS: dict[str, Callable[..., Protocol]] = {}


def register(name: str):
    """Decorator: make ``fn(data, **options) -> Protocol`` available as protocol ``name``."""

    def deco(fn: Callable[..., Protocol]) -> Callable[..., Protocol]:
        BUILDERS[name] = fn
        return fn

    return deco


def both_directions(image_ids, text_ids, texts, relevance) -> dict[str, Direction]:
    return {
        "i2t": Direction("i2t", image_ids, text_ids, texts, relevance),
        "t2i": Direction("t2i", image_ids, text_ids, texts, relevance),
    }


def _flickr(data):
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_flickr8k(data)


def _hodosh_pool(ds):
    """The 1,000 test images and caption #2 of each (the captions the judgments are about)."""
    images = list(ds.split("test"))
    caps = [ds.caption(f"{i}#2") for i in images]
    return images, [c.id for c in caps], [c.text for c in caps]


@register("flickr8k-hodosh")
def flickr8k_hodosh(data=None) -> Protocol:
    ds = _flickr(data)
    images, text_ids, texts = _hodosh_pool(ds)
    rel = pairs_to_relevance(images, text_ids, [(i, f"{i}#2") for i in images])
    return Protocol(
        "flickr8k-hodosh", both_directions(images, text_ids, texts, rel), ds,
        "Hodosh et al. 2013 test pool: 1,000 test images x their caption #2; only the original "
        "pair is relevant.",
    )


def _hodosh_extended(name: str, ds, extra_pairs, note: str, options: dict) -> Protocol:
    """The Hodosh pool with the original pairs plus ``extra_pairs`` judged relevant."""
    images, text_ids, texts = _hodosh_pool(ds)
    pairs = [(i, f"{i}#2") for i in images] + list(extra_pairs)
    rel = pairs_to_relevance(images, text_ids, pairs)
    return Protocol(name, both_directions(images, text_ids, texts, rel), ds, note, options)


@register("flickr8k-hodosh-crowd")
def flickr8k_hodosh_crowd(data=None, min_yes_fraction: float = 0.5) -> Protocol:
    ds = _flickr(data)
    extra = [(c.image_id, c.caption_id) for c in ds.crowd if c.yes_fraction >= min_yes_fraction]
    return _hodosh_extended(
        "flickr8k-hodosh-crowd", ds, extra,
        f"Hodosh pool; a pair is also relevant when its crowd yes-fraction >= {min_yes_fraction} "
        "(0.5 = at least 2 of 3 workers said yes; gives the paper's 2,031 extra pairs).",
        {"min_yes_fraction": min_yes_fraction},
    )


@register("flickr8k-hodosh-expert")
def flickr8k_hodosh_expert(data=None, min_mean_score: float = 3.0) -> Protocol:
    ds = _flickr(data)
    extra = [(e.image_id, e.caption_id) for e in ds.expert if e.mean >= min_mean_score]
    return _hodosh_extended(
        "flickr8k-hodosh-expert", ds, extra,
        f"Hodosh pool; a pair is also relevant when its mean expert score >= {min_mean_score} "
        "(3 = describes the image with at most minor errors).",
        {"min_mean_score": min_mean_score},
    )


@register("flickr8k-5cap")
def flickr8k_5cap(data=None) -> Protocol:
    ds = _flickr(data)
    images = list(ds.split("test"))
    caps = [c for i in images for c in ds.captions_of(i)]
    rel = pairs_to_relevance(images, [c.id for c in caps], [(c.image_id, c.id) for c in caps])
    return Protocol(
        "flickr8k-5cap", both_directions(images, [c.id for c in caps], [c.text for c in caps], rel), ds,
        "1,000 test images x all 5,000 of their captions; a caption is relevant to its image.",
    )


@register("folder")
def folder(data=None, captions=None) -> Protocol:
    """Your own captioned photos: ``data`` is the folder, ``captions`` a CSV/JSONL caption file
    (image names relative to the folder). Every captioned photo x all captions."""
    from xmodal.data import load_image_folder

    if data is None or captions is None:
        raise XmodalError("the folder protocol needs the photo folder (--data FOLDER) and a "
                          "caption file (--captions FILE)")
    ds = load_image_folder(data, captions)
    images = [i for i in ds.image_ids if ds.captions.get(i)]
    missing = sorted(set(ds.captions) - set(ds.image_ids))
    if not images:
        raise XmodalError(f"no photo under {data} has a caption in {captions} (image names must "
                          f"be paths relative to the folder, e.g. {missing[:2]})")
    caps = [c for i in images for c in ds.captions_of(i)]
    rel = pairs_to_relevance(images, [c.id for c in caps], [(c.image_id, c.id) for c in caps])
    note = (f"{len(images)} captioned photos under {data} x all {len(caps)} of their captions; "
            "a caption is relevant to its photo.")
    if missing:
        note += f" {len(missing)} caption image names match no file (ignored)."
    return Protocol("folder", both_directions(images, [c.id for c in caps], [c.text for c in caps], rel),
                    ds, note)


@register("wikipedia")
def wikipedia(data=None) -> Protocol:
    from xmodal.data import load_wikipedia

    ds = load_wikipedia(data)
    y = ds.labels_test
    rel = sparse.csr_matrix(y[:, None] == y[None, :])
    return Protocol(
        "wikipedia", both_directions(list(ds.image_ids_test), list(ds.text_ids_test), [], rel), ds,
        "Rasiwasia et al. 2010: 693 test images x 693 test texts; relevant = same category.",
    )


@register("corel5k")
def corel5k(data=None) -> Protocol:
    from xmodal.data import load_corel5k

    ds = load_corel5k(data)
    labels = ds.labels_test.astype(bool)
    queries = word_combination_queries(labels)
    q_text = [" ".join(ds.keywords[w] for w in q) for q in queries]
    # image x query relevance: the annotation contains every query word
    rel_q = query_relevance(queries, labels).T.tocsr()
    directions = {
        "i2t": Direction("i2t", list(ds.ids_test), list(ds.keywords), list(ds.keywords),
                         sparse.csr_matrix(labels)),
        "t2i": Direction("t2i", list(ds.ids_test), q_text, q_text, rel_q),
    }
    lengths = np.array([len(q) for q in queries])
    train_words = np.asarray(ds.labels_train).sum(0) > 0

    def paper_metrics(scores: dict[str, np.ndarray]) -> dict:
        return corel5k_paper_metrics(scores, labels, train_words, lengths, rel_q)

    return Protocol(
        "corel5k", directions, ds,
        "Lavrenko et al. 2003: i2t ranks the 374 keywords for each of the 500 test images; t2i "
        "ranks the test images for every 1- to 4-word query occurring on >= 2 test images "
        "(relevant = annotation contains every query word). paper_metrics: Table 1 (top-5 "
        "annotation, per-word P/R over the test words seen in training) and Table 2 (P@5 and "
        "MAP by query length).",
        {"query_lengths": lengths.tolist()},
        paper_metrics,
    )


def corel5k_paper_metrics(scores, labels, train_words, lengths, rel_q) -> dict:
    """Lavrenko et al.'s Table 1 and Table 2 from the corel5k score matrices."""
    from xmodal.eval.metrics import annotation_metrics, retrieval_metrics

    out: dict = {}
    if "i2t" in scores:
        ann = annotation_metrics(scores["i2t"], labels, n=5, best=49, word_mask=train_words)
        out["annotation_top5"] = {k: v for k, v in ann.items() if k != "per_word"}
    if "t2i" in scores:
        s = np.asarray(scores["t2i"]).T  # queries x images
        rel = rel_q.T.tocsr()
        by_length = {}
        for n in sorted(set(lengths.tolist())):
            sel = np.flatnonzero(lengths == n)
            m = retrieval_metrics(s[sel], rel[sel], ks=(5,))
            by_length[str(n)] = {"n_queries": int(len(sel)), "P@5": m["P@5"], "MAP": m["MAP"]}
        out["retrieval_by_query_length"] = by_length
    return out


def _coco(name: str) -> Protocol:
    from xmodal.data.eccv import load_coco_positives

    pos = load_coco_positives(name)
    i2t = pairs_to_relevance(pos.image_ids, pos.caption_ids,
                             [(i, c) for i, cs in pos.image_to_captions.items() for c in cs])
    t2i = pairs_to_relevance(pos.image_ids, pos.caption_ids,
                             [(i, c) for c, is_ in pos.caption_to_images.items() for i in is_])
    return Protocol(
        name,
        {
            "i2t": Direction("i2t", pos.image_ids, pos.caption_ids, [], i2t),
            "t2i": Direction("t2i", pos.image_ids, pos.caption_ids, [], t2i),
        },
        pos,
        f"{name} positives from the eccv-caption package over the COCO 5K test gallery (5,000 "
        "images, 25,000 captions). Images are not available here: the caller supplies scores.",
    )


@register("eccv")
def eccv(data=None) -> Protocol:
    return _coco("eccv")


@register("cxc")
def cxc(data=None) -> Protocol:
    return _coco("cxc")


@register("coco5k")
def coco5k(data=None) -> Protocol:
    return _coco("coco5k")


def _cc_split(name: str, split: str, data) -> Protocol:
    from xmodal.data.conceptual_captions import load_conceptual_captions

    ds = load_conceptual_captions(data)
    images = list(ds.split(split))
    caps = [ds.captions_of(i)[0] for i in images]
    rel = pairs_to_relevance(images, [c.id for c in caps], [(c.image_id, c.id) for c in caps])
    return Protocol(
        name, both_directions(images, [c.id for c in caps], [c.text for c in caps], rel), ds,
        f"Conceptual Captions (CC18K) {split} split: {len(images):,} web images x their "
        f"{len(caps):,} alt-text captions, one relevant caption each (fixed sha1-of-key split, "
        "xmodal.data.conceptual_captions; data from $XMODAL_CC_DATA or ../data/cc18k)."
        + (" Held out: never trained or selected on." if split == "test" else ""),
    )


@register("cc-heldout")
def cc_heldout(data=None) -> Protocol:
    """The 1,000 held-out CC18K test images x their captions (``--data``: the CC18K folder)."""
    return _cc_split("cc-heldout", "test", data)


@register("cc-dev")
def cc_dev(data=None) -> Protocol:
    """The 1,000 CC18K dev images x their captions (for selection)."""
    return _cc_split("cc-dev", "dev", data)


def ood_ranks(scores: dict[str, np.ndarray], names: list[str]) -> dict:
    """The skimage-ood check from the t2i score matrix (photos first, then distractors): the
    rank of each query's photo (1 = first; ties count against it, as every metric here) among
    the photos alone and with the distractors, and top-1 / top-5 counts."""
    from xmodal.eval.metrics import retrieval_metrics

    if "t2i" not in scores:
        return {}
    s = np.asarray(scores["t2i"]).T  # queries x images
    n = len(names)
    rel = sparse.identity(n, dtype=bool, format="csr")
    with_d = retrieval_metrics(s, sparse.hstack([rel, sparse.csr_matrix((n, s.shape[1] - n),
                                                 dtype=bool)]).tocsr(), per_query=True)[1]
    alone = retrieval_metrics(s[:, :n], rel, per_query=True)[1]
    ra = [int(r) for r in alone["rank"]]
    rb = [int(r) for r in with_d["rank"]]
    return {
        "photos_only": dict(zip(names, ra)),
        "with_flickr8k_test_distractors": dict(zip(names, rb)),
        "top1_photos_only": f"{sum(r == 1 for r in ra)}/{n}",
        "top1_with_distractors": f"{sum(r == 1 for r in rb)}/{n}",
        "top5_with_distractors": f"{sum(r <= 5 for r in rb)}/{n}",
    }


@register("skimage-ood")
def skimage_ood(data=None) -> Protocol:
    """13 scikit-image sample photos, one sentence each, searched among themselves and the
    1,000 Flickr8K test photos (``--data``: the data root holding flickr8k/)."""
    from xmodal.data.skimage_samples import PREFIX, QUERIES, SampleGallery, photo_files

    ds = _flickr(data)
    names = list(QUERIES)
    images = [PREFIX + k for k in names] + list(ds.split("test"))
    text_ids = [f"{PREFIX}{k}#q" for k in names]
    rel = pairs_to_relevance(images, text_ids, [(images[j], text_ids[j]) for j in range(len(names))])
    return Protocol(
        "skimage-ood",
        {"t2i": Direction("t2i", images, text_ids, list(QUERIES.values()), rel)},
        SampleGallery(photo_files(), ds),
        f"Out of domain: {len(names)} scikit-image sample photos (astronaut, rocket, coins, a "
        "printed page...), one sentence query each, text->image over the photos + the 1,000 "
        "Flickr8K test photos as distractors. paper_metrics: the rank of each query's photo "
        "among the photos alone and with the distractors; top-1 / top-5 counts.",
        {"queries": dict(QUERIES)},
        lambda scores: ood_ranks(scores, names),
    )
