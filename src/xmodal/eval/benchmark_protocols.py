"""Protocols over a user's local copies of the standard benchmarks (``--data DIR``).

Registered into ``BUILDERS`` when :mod:`xmodal.eval.protocols` is imported:

- ``coco5k`` / ``eccv`` / ``cxc``: without data, the eccv-caption positives alone (scores come
  from ``--scores``, as before); with ``--data DIR`` (a COCO folder,
  :func:`xmodal.data.benchmarks_local.load_coco`), the 5K test images x their 25K captions, so a
  model computes the scores; ``eccv`` / ``cxc`` take their positives from the eccv-caption package
  (restricted to the ids present), ``coco5k`` counts a caption relevant to its own image.
- ``coco1k``: the same gallery cut into 5 folds of 1,000 consecutive test images (with their
  captions; a partial copy into ceil(n / 1,000) folds as equal as can be). Every query ranks
  only its own fold (the other folds' scores are pushed below every score of the fold,
  :func:`fold_scores`); the headline metrics are the mean of the fold means (medR included), the
  numbers papers report as "COCO 1K" (with 5 equal folds also the mean over all queries);
  ``paper_metrics.folds`` holds each fold's metrics and their mean.
- Every COCO / Flickr30K / XM3600 protocol states its official sizes (``extra["official"]``);
  the report's ``coverage`` labels a partial copy (:mod:`xmodal.eval.coverage`).
- ``pmrp``: the COCO gallery with the ECCV Caption authors' plausible-match positives
  (``pm_image_to_caption.json`` / ``pm_caption_to_image.json`` in ``DIR``; not in the package):
  its R-P is PMRP.
- ``flickr30k``, ``xm3600``: Karpathy's 1K Flickr30K test split; Crossmodal-3600 (English).
- ``webdataset``, ``hf-dataset``, ``caption-file``: generic sources
  (:mod:`xmodal.data.generic_sources`).

Every captioned source gives the same protocol: all its images x all their captions, a caption
relevant to its own image.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xmodal.data.captioned import CaptionedImages
from xmodal.errors import XmodalError
from xmodal.eval import protocol_builders as _builtin
from xmodal.eval.protocol_builders import register
from xmodal.eval.protocol_types import Direction, Protocol, pairs_to_relevance

FOLD_SIZE = 1000
COCO_TEST = {"images": 5000, "texts": 25000}


def captioned_protocol(name: str, ds: CaptionedImages, note: str,
                       extra: dict[str, Any] | None = None) -> Protocol:
    """Every image of ``ds`` x all its captions; a caption is relevant to its image."""
    caps = [c for i in ds.image_ids for c in ds.captions_of(i)]
    ids = [c.id for c in caps]
    rel = pairs_to_relevance(ds.image_ids, ids, [(c.image_id, c.id) for c in caps])
    text = (f"{note} {len(ds.image_ids):,} images x {len(caps):,} captions from {ds.root}; a "
            "caption is relevant to its image.")
    if ds.notes:
        text += " Loader: " + "; ".join(ds.notes) + "."
    return Protocol(name, _builtin.both_directions(list(ds.image_ids), ids, [c.text for c in caps], rel),
                    ds, text, dict(extra or {}))


def _coco_local(name: str, data: Any, positives: str | None) -> Protocol:
    from xmodal.data.benchmarks_local import load_coco

    i2t, t2i = _positive_pairs(positives, data) if positives else ([], [])
    ds = load_coco(data)
    base = captioned_protocol(name, ds, "COCO (local copy):")
    base.extra["official"] = {"benchmark": "the COCO 5K test split", **COCO_TEST}
    if positives in ("eccv", "cxc"):
        base.extra["official"].update(benchmark=f"{positives.upper()} (COCO 5K test)",
                                      queries=_package_queries(positives))
    if positives is None:
        return base
    d = base.directions["i2t"]
    rel_i2t = pairs_to_relevance(d.image_ids, d.text_ids, i2t)
    rel_t2i = pairs_to_relevance(d.image_ids, d.text_ids, t2i)
    if not rel_i2t.nnz and not rel_t2i.nnz:
        raise XmodalError(f"none of the {positives} positives matches the images and captions in "
                          f"{data}: COCO image ids and annotation ids are expected (Karpathy's "
                          "dataset_coco.json or the official captions files give them)")
    base.directions = {
        "i2t": Direction("i2t", d.image_ids, d.text_ids, d.texts, rel_i2t),
        "t2i": Direction("t2i", d.image_ids, d.text_ids, d.texts, rel_t2i),
    }
    base.notes = base.notes.replace("a caption is relevant to its image",
                                    f"relevance: the {positives} positives on the ids present")
    return base


def _package_queries(source: str) -> dict[str, int]:
    """The official query counts of ``source`` (eccv: 1,261 images, 1,332 captions): the
    eccv-caption package's queries with at least one positive."""
    from xmodal.data.eccv import load_coco_positives

    pos = load_coco_positives(source)
    return {"i2t": sum(1 for v in pos.image_to_captions.values() if v),
            "t2i": sum(1 for v in pos.caption_to_images.values() if v)}


def _positive_pairs(source: str, data: Any) -> tuple[list, list]:
    """(image, caption) pairs of the i2t and t2i positives of ``source``."""
    if source == "pm":
        from pathlib import Path

        from xmodal.data.benchmarks_local import read_json

        root = Path(data)
        files = [root / "pm_image_to_caption.json", root / "pm_caption_to_image.json"]
        absent = [str(f) for f in files if not f.is_file()]
        if absent:
            raise XmodalError("the pmrp protocol needs the ECCV Caption plausible-match files "
                              f"(the eccv-caption package does not ship them): {', '.join(absent)}")
        i2c, c2i = (read_json(f) for f in files)
    else:
        from xmodal.data.eccv import load_coco_positives

        pos = load_coco_positives(source)
        i2c, c2i = pos.image_to_captions, pos.caption_to_images
    i2t = [(str(i), str(c)) for i, cs in i2c.items() for c in cs]
    t2i = [(str(i), str(c)) for c, is_ in c2i.items() for i in is_]
    return i2t, t2i


def _package_or_local(name: str, positives: str | None) -> Callable[..., Protocol]:
    original = _builtin.BUILDERS[name]

    def build(data=None) -> Protocol:
        if data is None:
            return original(data)
        return _coco_local(name, data, positives)

    build.__doc__ = (f"{name}: the eccv-caption ids alone (--scores), or with --data DIR a local "
                     "COCO copy that a model scores.")
    return build


register("coco5k")(_package_or_local("coco5k", None))
register("eccv")(_package_or_local("eccv", "eccv"))
register("cxc")(_package_or_local("cxc", "cxc"))


@register("pmrp")
def pmrp(data=None) -> Protocol:
    """COCO 5K with the plausible-match positives (R-P = PMRP)."""
    if data is None:
        raise XmodalError("the pmrp protocol needs --data DIR: your COCO folder with "
                          "pm_image_to_caption.json and pm_caption_to_image.json")
    return _coco_local("pmrp", data, "pm")


@register("coco1k")
def coco1k(data=None, fold_size: int = FOLD_SIZE) -> Protocol:
    """COCO 1K: the 5K test images in folds of ``fold_size`` (Karpathy's order)."""
    if data is None:
        raise XmodalError("the coco1k protocol needs --data DIR (your COCO folder); for "
                          "precomputed scores use -p coco5k --scores")
    p = _coco_local("coco1k", data, None)
    d = p.directions["i2t"]
    n = len(d.image_ids)
    n_folds = max(1, -(-n // fold_size))
    # consecutive folds as equal as can be (sizes differ by at most one image): a 2,500-image
    # copy gives 834 + 833 + 833, not 1,000 + 1,000 + 500
    image_fold = np.repeat(np.arange(n_folds), [len(a) for a in np.array_split(np.arange(n),
                                                                                n_folds)]).tolist()
    fold_of = dict(zip(d.image_ids, image_fold))
    image_of = {c.id: c.image_id for c in p.dataset.captions}
    text_fold = [fold_of[image_of[t]] for t in d.text_ids]
    sizes = np.bincount(image_fold, minlength=n_folds).tolist()
    p.extra.update(image_fold=image_fold, text_fold=text_fold, n_folds=n_folds,
                   fold_size=fold_size, fold_sizes=sizes, headline="fold-mean")
    shape = (f"{n_folds} folds of {sizes[0]:,}" if len(set(sizes)) == 1 else
             f"{n_folds} folds of {', '.join(f'{s:,}' for s in sizes)}")
    p.notes = (f"COCO 1K: {shape} consecutive test images with their captions; each query "
               "ranks its own fold only; the headline metrics are the mean of the fold means (each "
               "fold weighs the same, as papers report COCO 1K); paper_metrics.folds: per fold, "
               "and their mean. " + p.notes)
    p.paper_metrics = lambda scores: fold_metrics(p, scores)
    return p


def fold_scores(protocol: Protocol, scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Scores with every cross-fold pair pushed below the lowest in-fold score (identity for a
    protocol without folds)."""
    if "image_fold" not in protocol.extra:
        return scores
    fi = np.asarray(protocol.extra["image_fold"])
    ft = np.asarray(protocol.extra["text_fold"])
    same = fi[:, None] == ft[None, :]
    out = {}
    for name, s in scores.items():
        s = np.array(s, dtype=np.float64, copy=True)
        floor = (s[same].min() if same.any() else 0.0) - 1.0
        s[~same] = floor
        out[name] = s
    return out


def fold_scorer(protocol: Protocol, scorer: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``scorer`` with :func:`fold_scores` applied (``scorer`` itself when there are no folds)."""
    if "image_fold" not in protocol.extra:
        return scorer

    def masked(proto, direction, seed: int = 0):
        return fold_scores(proto, {"s": scorer(proto, direction, seed)})["s"]

    masked.per_direction = getattr(scorer, "per_direction", False)  # type: ignore[attr-defined]
    return masked


def fold_metrics(protocol: Protocol, scores: dict[str, np.ndarray]) -> dict[str, Any]:
    """Each fold's metrics (queries and gallery of the fold only) and their mean."""
    from xmodal.eval.metrics import retrieval_metrics

    fi = np.asarray(protocol.extra["image_fold"])
    ft = np.asarray(protocol.extra["text_fold"])
    per_fold = []
    for f in range(protocol.extra["n_folds"]):
        ii, tt = np.flatnonzero(fi == f), np.flatnonzero(ft == f)
        row = {}
        for name, d in protocol.directions.items():
            if name not in scores:
                continue
            s = np.asarray(scores[name])[np.ix_(ii, tt)]
            rel = d.relevance[ii][:, tt]
            s, rel = (s, rel) if name == "i2t" else (s.T, rel.T)
            row[name] = retrieval_metrics(s, rel.tocsr())
        per_fold.append(row)
    mean: dict[str, dict[str, float]] = {}
    for name in per_fold[0] if per_fold else []:
        keys = per_fold[0][name].keys()
        mean[name] = {k: float(np.mean([r[name][k] for r in per_fold])) for k in keys}
    return {"folds": {"n_folds": len(per_fold), "fold_size": protocol.extra["fold_size"],
                      "fold_sizes": protocol.extra.get("fold_sizes"), "mean": mean,
                      "per_fold": per_fold}}


@register("flickr30k")
def flickr30k(data=None, split: str = "test") -> Protocol:
    """Flickr30K (Karpathy's 1K test split) from your copy (``--data DIR``)."""
    from xmodal.data.benchmarks_local import load_flickr30k

    p = captioned_protocol("flickr30k", load_flickr30k(data, split), "Flickr30K (local copy):")
    if split == "test":
        p.extra["official"] = {"benchmark": "the Flickr30K 1K test split", "images": 1000,
                               "texts": 5000}
    return p


@register("xm3600")
def xm3600(data=None, language: str = "en") -> Protocol:
    """Crossmodal-3600 (captions in ``language``) from your copy (``--data DIR``)."""
    from xmodal.data.benchmarks_local import load_xm3600

    return captioned_protocol("xm3600", load_xm3600(data, language),
                              f"Crossmodal-3600 ({language}):",
                              {"language": language,
                               "official": {"benchmark": "Crossmodal-3600", "images": 3600}})


@register("webdataset")
def webdataset(data=None) -> Protocol:
    """A folder of webdataset .tar shards (KEY.jpg + KEY.txt / KEY.json per sample)."""
    from xmodal.data.generic_sources import load_tar_shards

    return captioned_protocol("webdataset", load_tar_shards(data), "webdataset shards:")


@register("hf-dataset")
def hf_dataset(data=None, split: str = "test") -> Protocol:
    """A Hugging Face datasets folder (save_to_disk) or Parquet files with image + caption."""
    from xmodal.data.generic_sources import load_hf_table

    return captioned_protocol("hf-dataset", load_hf_table(data, split), "Hugging Face dataset:")


@register("caption-file")
def caption_file(data=None) -> Protocol:
    """A CSV / TSV / JSONL of image paths and captions (``--data FILE``)."""
    from xmodal.data.generic_sources import load_caption_file

    return captioned_protocol("caption-file", load_caption_file(data), "caption file:")
