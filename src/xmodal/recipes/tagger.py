"""How keyword taggers are chosen and trained: the L2 penalty x word-prior power grid scored on
held-out photos (mean per-word F1 of top-5 tags), ``xmodal train tagger`` on a folder of your
own captioned photos, and the cached Flickr8K features the reproductions train on. The model
itself is :class:`xmodal.models.tagger.KeywordHead`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.tagger import KeywordHead


def select_keyword_head(x_train, y_train, x_dev, y_dev, words, l2s=(1e-5, 1e-4, 1e-3),
                        powers=(0.0, 0.25, 0.5, 0.75, 1.0)) -> tuple[dict, list[dict]]:
    """(best row, all rows): each L2 penalty x word-prior power, scored by mean per-word F1 of
    top-5 annotation on the dev images (first best wins ties)."""
    best, rows, _ = select_keyword_head_on(x_train, y_train, {"dev": (x_dev, y_dev)}, words,
                                           l2s, powers)
    return best, rows


METRIC_KEYS = ("mean_P", "mean_R", "mean_F1")


def select_keyword_head_on(x_train, y_train, devs: dict, words, l2s=(1e-5, 1e-4, 1e-3),
                           powers=(0.0, 0.25, 0.5, 0.75, 1.0)) -> tuple[dict, list[dict],
                                                                         KeywordHead]:
    """(best row, all rows, best model fit on the training images): each L2 penalty x
    word-prior power, scored by mean per-word F1 of top-5 annotation on each dev set of
    ``devs`` (``name -> (features, labels)``) and averaged over the sets, each set weighing the
    same (first best wins ties). With several sets a row also holds each set's metrics."""
    from xmodal.eval.metrics import annotation_metrics

    rows, best, best_model = [], None, None
    for l2 in l2s:
        m = KeywordHead(l2=l2).fit(x_train, y_train, words)
        for g in powers:
            m.prior_power = g
            per = {}
            for name, (x_dev, y_dev) in devs.items():
                r = annotation_metrics(m.word_scores(x_dev), y_dev, n=5, best=None)
                per[name] = {**{k: round(float(r[k]), 4) for k in METRIC_KEYS},
                             **{k: int(r[k]) for k in ("n_words_recall_gt0", "n_words")}}
            row = {"l2": l2, "prior_power": g}
            if len(per) == 1:
                row.update(next(iter(per.values())))
            else:
                row.update({k: round(float(np.mean([v[k] for v in per.values()])), 4)
                            for k in METRIC_KEYS})
                row["dev_sets"] = per
            rows.append(row)
            if best is None or row["mean_F1"] > best["mean_F1"]:
                best, best_model = row, m
    best_model.prior_power = best["prior_power"]
    return best, rows, best_model


def train_keyword_tagger(
    folder: str | os.PathLike,
    captions: str | os.PathLike,
    out: str | os.PathLike,
    min_images: int = 5,
    held_out: float = 0.2,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Train a keyword tagger on your own captioned photos and save it to ``out``.

    The keywords are the content lemmas (nouns, verbs, adjectives) in the captions of at least
    ``min_images`` photos; a logistic head on pooled EfficientNet-Lite0 features predicts them,
    as in the shipped tagger. Its L2 penalty and word-prior power are chosen by mean
    per-word F1 of top-5 tags on a random ``held_out`` share of the photos; the final model is
    then fit on all of them. Returns a summary (vocabulary, selection table, held-out scores).
    """
    from xmodal.data.folder import load_image_folder
    from xmodal.features.image_encoder import extract_image_features
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix
    from xmodal.provenance import provenance

    data = load_image_folder(folder, captions)
    ids = [i for i in data.image_ids if data.captions.get(i)]
    unknown = sorted(set(data.captions) - set(data.image_ids))
    if len(ids) < 10:
        raise XmodalError(f"{len(ids)} photos under {folder} have captions in {captions}; "
                          "a tagger needs at least 10 (caption image names are paths relative "
                          "to the folder)" + (f"; unmatched names: {unknown[:3]}" if unknown else ""))
    if not 0.0 < held_out < 1.0:
        raise XmodalError(f"held_out must be between 0 and 1, not {held_out}")
    vocab = build_keyword_vocabulary(data, ids, min_images=min_images)
    y = image_keyword_matrix(data, ids, vocab)
    x = extract_image_features([data.image_path(i) for i in ids], progress=progress).pooled
    perm = np.random.default_rng(seed).permutation(len(ids))
    n_va = max(1, int(round(held_out * len(ids))))
    va, tr = np.sort(perm[:n_va]), np.sort(perm[n_va:])
    best, rows = select_keyword_head(x[tr], y[tr], x[va], y[va], vocab.words)
    model = KeywordHead(l2=best["l2"], prior_power=best["prior_power"]).fit(x, y, vocab.words)
    summary = {"photos": len(ids), "keywords": len(vocab), "vocabulary": vocab.describe(),
               "selected": {"l2": best["l2"], "prior_power": best["prior_power"]},
               "held_out": {k: best[k] for k in ("mean_P", "mean_R", "mean_F1",
                                                  "n_words_recall_gt0", "n_words")},
               "selection": rows}
    model.save(out, provenance=provenance(
        trained_on=f"{len(ids)} captioned photos under {Path(folder).resolve()}",
        keyword_vocabulary=vocab.describe(), selection=rows,
        held_out_annotation=summary["held_out"]))
    return summary


def flickr8k_pooled_features(data) -> dict:
    """Pooled EfficientNet-Lite0 features of all Flickr8K images (cached):
    ``{"pooled": (n, 1280), "index": {image id: row}}``."""
    from xmodal.features import flickr8k_image_features

    ids, f = flickr8k_image_features(data)
    return {"pooled": f.pooled, "index": {i: n for n, i in enumerate(ids)}}
