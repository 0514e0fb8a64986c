"""What the relevance-model reproductions share (Corel5K and Flickr8K keywords).

Annotation metrics as the report tables them, retrieval MAP / P@5 per query length, and the
cross-validation of the posterior temperature and word-prior power for the CMRM and the CRM on
blob embeddings (folds, grids and fold means from :mod:`xmodal.eval.selection`).
"""

from __future__ import annotations

import time

import numpy as np

from xmodal.eval.keyword_queries import query_relevance, word_combination_queries
from xmodal.eval.metrics import annotation_metrics, retrieval_metrics
from xmodal.eval.selection import ANNOTATION_COLUMNS, fold_mean_rows, kfold
from xmodal.models.relevance import CMRM, CRM, blob_embedding, blob_regions
from xmodal.reproduce.output import log

# the grid of the first calibrated-CMRM rows (word-prior power up to 0.3)
CV_GRID = {"temperature": (0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0), "alpha": (0.1, 0.2, 0.3),
           "beta": (0.1, 0.3, 0.5), "prior_power": (0.0, 0.1, 0.2, 0.3)}
# the pre-registered wide grid: word-prior power up to 1 (score P(w|image) / P(w)) and
# temperature down to 0.2, fixed before any test evaluation of it (see corel5k_nested)
WIDE_CV_GRID = {"temperature": (0.2, 0.3, 0.4, 0.5, 0.7, 1.0), "alpha": (0.1, 0.3),
                "beta": (0.1, 0.3), "prior_power": (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)}
CMRM_KEYS = ("alpha", "beta", "temperature", "prior_power")
# the pre-registered CRM grid (blob embedding of 64 dimensions, as selected for the CRM row):
# kernel bandwidth, Dirichlet mass, posterior temperature and word-prior power
CRM_WIDE_CV_GRID = {"beta": (0.05, 0.1, 0.15, 0.2), "mu": (0.3, 1.0),
                    "temperature": (0.15, 0.3, 0.5, 1.0),
                    "prior_power": (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)}
CRM_KEYS = ("beta", "mu", "temperature", "prior_power")
PAPER_CMRM = {"n_words_recall_gt0": 66, "mean_R": 0.09, "mean_P": 0.10}  # Jeon et al. Table 1
# fold means in the CV tables: [#words R>0, mean R, mean P, mean F1]
CV_COLUMNS = {"n_words_recall_gt0": 1, "mean_R": 4, "mean_P": 4, "mean_F1": 4}


def summary(m: dict) -> dict:
    """Annotation metrics without the per-word lists."""
    return {k: v for k, v in m.items() if k != "per_word"}


def annotation(scores, truth, vocabulary, word_mask=None) -> dict:
    """Top-5 annotation metrics, with the 49 best words (Jeon et al.'s protocol)."""
    return annotation_metrics(scores, truth, n=5, best=49, vocabulary=vocabulary,
                              word_mask=word_mask)


def row(params: dict, scores, truth, vocabulary) -> dict:
    """A selection-table row: the setting and its rounded annotation metrics."""
    m = annotation(scores, truth, vocabulary)
    r = {**params, **{k: m[k] if d is None else round(m[k], d)
                      for k, d in ANNOTATION_COLUMNS.items()}}
    log(f"  {r}")
    return r


def top_words(ann: dict, k: int = 10) -> list:
    """The ``k`` words of highest recall (then precision): (word, recall, precision)."""
    pw = ann["per_word"]
    order = np.lexsort((-np.asarray(pw["precision"]), -np.asarray(pw["recall"])))[:k]
    return [(pw["word"][i], round(pw["recall"][i], 3), round(pw["precision"][i], 3))
            for i in order]


def retrieval_by_length(model, images, labels, max_len: int = 4,
                        log_posterior=None) -> tuple[dict, float]:
    """MAP and P@5 for every query length; the query set of Jeon et al. (>= 2 test images).
    With ``log_posterior`` given, the timing excludes the posterior."""
    queries = word_combination_queries(labels, max_len=max_len, min_count=2)
    rel = query_relevance(queries, labels)
    t0 = time.perf_counter()
    if log_posterior is not None:
        s = model.query_scores_from_posterior([list(q) for q in queries], log_posterior)
    else:
        s = model.query_scores([list(q) for q in queries], images)
    seconds = time.perf_counter() - t0
    lengths = np.array([len(q) for q in queries])
    out = {}
    for k in range(1, max_len + 1):
        sel = np.flatnonzero(lengths == k)
        if not len(sel):
            continue
        m = retrieval_metrics(s[sel], rel[sel], ks=(5,))
        out[str(k)] = {"n_queries": len(sel), "n_relevant": int(rel[sel].sum()),
                       "P@5": m["P@5"], "MAP": m["MAP"]}
    m = retrieval_metrics(s, rel, ks=(5,))
    out["all"] = {"n_queries": len(queries), "n_relevant": int(rel.sum()),
                  "P@5": m["P@5"], "MAP": m["MAP"]}
    return out, seconds


def tempered(log_posterior: np.ndarray, t: float) -> np.ndarray:
    """log P(J | image) with temperature t, from the untempered log posterior."""
    from scipy.special import logsumexp

    x = t * log_posterior
    return x - logsumexp(x, axis=1, keepdims=True)


def _add_fold(acc: dict, setting: tuple, scores, y_va, kw, mask) -> None:
    r = annotation(scores, y_va, kw, mask)
    acc.setdefault(setting, []).append(
        [r["n_words_recall_gt0"], r["mean_R"], r["mean_P"], r["mean_F1"]])


def _folds(n: int, y, seed: int, folds: int):
    """(fold, training part, held-out part, mask of the words seen in the training part)."""
    for f, (tr, va) in enumerate(kfold(n, folds, seed)):
        yield f, tr, va, y[tr].sum(0) > 0


def cmrm_cv(b, y, kw, seed: int = 0, folds: int = 5, grid: dict = CV_GRID) -> list[dict]:
    """CMRM with posterior temperature and word-prior power: mean annotation metrics over a
    ``folds``-fold cross-validation on the training images (vocabulary of each held-out fold:
    its words also seen in the other folds), for every setting of ``grid``."""
    acc: dict = {}
    for f, tr, va, mask in _folds(len(b), y, seed, folds):
        for be in grid["beta"]:
            lp = CMRM(0.1, be).fit(b[tr], y[tr], kw).log_posterior(b[va])
            models = {a: CMRM(a, be).fit(b[tr], y[tr], kw) for a in grid["alpha"]}
            for t in grid["temperature"]:
                lpt = tempered(lp, t)
                for a, m in models.items():
                    for g in grid["prior_power"]:
                        m.prior_power = g
                        _add_fold(acc, (t, a, be, g), m.word_scores_from_posterior(lpt),
                                  y[va], kw, mask)
        log(f"  CMRM cross-validation: fold {f + 1}/{folds} done")
    return fold_mean_rows(acc, ("temperature", "alpha", "beta", "prior_power"), CV_COLUMNS)


def crm_cv(b, y, kw, seed: int = 0, folds: int = 5, grid: dict = CRM_WIDE_CV_GRID,
           dim: int = 64) -> list[dict]:
    """The CRM on blob embeddings (temperature and word-prior power added): mean annotation
    metrics over a ``folds``-fold cross-validation on the training images, as :func:`cmrm_cv`;
    the blob embedding is learned on each fold's training part."""
    acc: dict = {}
    for f, tr, va, mask in _folds(len(b), y, seed, folds):
        emb = blob_embedding(b[tr], y[tr], dim=dim)
        model = CRM(standardize=False).fit(blob_regions(b[tr], emb), y[tr], kw)
        regions = blob_regions(b[va], emb)
        for be in grid["beta"]:
            model.set_params(beta=be, temperature=1.0)
            lp = model.log_posterior(regions)
            for t in grid["temperature"]:
                lpt = tempered(lp, t)
                for mu in grid["mu"]:
                    model.set_params(mu=mu)
                    for g in grid["prior_power"]:
                        model.prior_power = g
                        _add_fold(acc, (be, mu, t, g), model.word_scores_from_posterior(lpt),
                                  y[va], kw, mask)
        log(f"  CRM cross-validation: fold {f + 1}/{folds} done")
    return fold_mean_rows(acc, CRM_KEYS, CV_COLUMNS)
