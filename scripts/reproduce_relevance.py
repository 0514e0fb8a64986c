"""Reproduce the relevance-model tables (CMRM, CRM) on Corel5K and Flickr8K keywords.

    python scripts/reproduce_relevance.py                 # both parts, then the report
    python scripts/reproduce_relevance.py --part corel    # only Corel5K (about 2 minutes)
    python scripts/reproduce_relevance.py --part flickr   # only Flickr8K (features cached)
    python scripts/reproduce_relevance.py --part report   # rewrite the report from the JSON

Results go to ``benchmarks/results/relevance_models.json``; the Markdown report to
``reports/relevance_models.md``. Hyperparameters are selected on a held-out part of the training
set (Corel5K: 500 of the 4,500 training images, seed 0; Flickr8K: the official dev split) by the
mean per-word F1 of top-5 annotation, then the model is refit on the full training set.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from xmodal.eval.keyword_queries import query_relevance, word_combination_queries
from xmodal.eval.metrics import annotation_metrics, retrieval_metrics
from xmodal.models.relevance import (
    CMRM,
    CRM,
    RegionSets,
    blob_embedding,
    blob_regions,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "relevance_models.json"
REPORT = ROOT / "reports" / "relevance_models.md"
COMMAND = "python scripts/reproduce_relevance.py"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def summary(m: dict) -> dict:
    return {k: v for k, v in m.items() if k != "per_word"}


def annotation(scores, truth, vocabulary, word_mask=None) -> dict:
    m = annotation_metrics(scores, truth, n=5, best=49, vocabulary=vocabulary,
                           word_mask=word_mask)
    return m


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
        out[str(k)] = {
            "n_queries": len(sel),
            "n_relevant": int(rel[sel].sum()),
            "P@5": m["P@5"],
            "MAP": m["MAP"],
        }
    m = retrieval_metrics(s, rel, ks=(5,))
    out["all"] = {"n_queries": len(queries), "n_relevant": int(rel.sum()),
                  "P@5": m["P@5"], "MAP": m["MAP"]}
    return out, seconds


def select(grid: list[dict], evaluate) -> tuple[dict, list[dict]]:
    rows = []
    for params in grid:
        m = evaluate(params)
        rows.append({**params, **{k: round(m[k], 4) for k in
                                  ("mean_P", "mean_R", "mean_F1", "n_words_recall_gt0")}})
        log(f"  {rows[-1]}")
    best = max(rows, key=lambda r: (r["mean_F1"], r["n_words_recall_gt0"]))
    return {k: best[k] for k in grid[0]}, rows


# --------------------------------------------------------------------------- Corel5K


# the grid of the first calibrated-CMRM rows (word-prior power up to 0.3)
CV_GRID = {"temperature": (0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0), "alpha": (0.1, 0.2, 0.3),
           "beta": (0.1, 0.3, 0.5), "prior_power": (0.0, 0.1, 0.2, 0.3)}
# the pre-registered wide grid: word-prior power up to 1 (score P(w|image) / P(w)) and
# temperature down to 0.2, fixed before any test evaluation of it (see corel_nested_cv.py)
WIDE_CV_GRID = {"temperature": (0.2, 0.3, 0.4, 0.5, 0.7, 1.0), "alpha": (0.1, 0.3),
                "beta": (0.1, 0.3), "prior_power": (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)}


WIDE_LABEL = "wide grid, best CV F1, pre-registered"
CRM_WIDE_NAME = ("CRM on blob embeddings + temperature + word-prior normalisation "
                 "(best CV F1, pre-registered)")


def _cv_splits(n: int, y, seed: int, folds: int):
    """(fold, training part, held-out part, mask of the words seen in the training part)."""
    parts = np.array_split(np.random.default_rng(seed).permutation(n), folds)
    for f, va in enumerate(parts):
        va = np.sort(va)
        tr = np.setdiff1d(np.arange(n), va)
        yield f, tr, va, y[tr].sum(0) > 0


def _tempered(log_posterior: np.ndarray, t: float) -> np.ndarray:
    """log P(J | image) with temperature t, from the untempered log posterior."""
    from scipy.special import logsumexp

    x = t * log_posterior
    return x - logsumexp(x, axis=1, keepdims=True)


def _add_fold(acc: dict, setting: tuple, scores, y_va, kw, mask) -> None:
    r = annotation(scores, y_va, kw, mask)
    acc.setdefault(setting, []).append(
        [r["n_words_recall_gt0"], r["mean_R"], r["mean_P"], r["mean_F1"]])


def corel_cmrm_cv(b, y, kw, seed: int = 0, folds: int = 5, grid: dict = CV_GRID) -> list[dict]:
    """CMRM with posterior temperature and word-prior power: mean annotation metrics over a
    ``folds``-fold cross-validation on the training images (vocabulary of each held-out fold:
    its words also seen in the other folds), for every setting of ``grid``."""
    acc: dict = {}
    for f, tr, va, mask in _cv_splits(len(b), y, seed, folds):
        for be in grid["beta"]:
            lp = CMRM(0.1, be).fit(b[tr], y[tr], kw).log_posterior(b[va])
            models = {a: CMRM(a, be).fit(b[tr], y[tr], kw) for a in grid["alpha"]}
            for t in grid["temperature"]:
                lpt = _tempered(lp, t)
                for a, m in models.items():
                    for g in grid["prior_power"]:
                        m.prior_power = g
                        _add_fold(acc, (t, a, be, g), m.word_scores_from_posterior(lpt),
                                  y[va], kw, mask)
        log(f"  CMRM cross-validation: fold {f + 1}/{folds} done")
    return _cv_rows(acc, ("temperature", "alpha", "beta", "prior_power"))


def _cv_rows(acc: dict, keys: tuple[str, ...]) -> list[dict]:
    """Fold means of [#words R>0, mean R, mean P, mean F1] per setting, as table rows."""
    rows = []
    for setting, v in acc.items():
        v = np.mean(v, axis=0)
        rows.append({**dict(zip(keys, setting)),
                     "n_words_recall_gt0": round(float(v[0]), 1), "mean_R": round(float(v[1]), 4),
                     "mean_P": round(float(v[2]), 4), "mean_F1": round(float(v[3]), 4)})
    return rows


# the pre-registered CRM grid (blob embedding of 64 dimensions, as selected for the CRM row):
# kernel bandwidth, Dirichlet mass, posterior temperature and word-prior power
CRM_WIDE_CV_GRID = {"beta": (0.05, 0.1, 0.15, 0.2), "mu": (0.3, 1.0),
                    "temperature": (0.15, 0.3, 0.5, 1.0),
                    "prior_power": (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)}
CRM_KEYS = ("beta", "mu", "temperature", "prior_power")


def corel_crm_cv(b, y, kw, seed: int = 0, folds: int = 5,
                 grid: dict = CRM_WIDE_CV_GRID, dim: int = 64) -> list[dict]:
    """The CRM on blob embeddings (temperature and word-prior power added): mean annotation
    metrics over a ``folds``-fold cross-validation on the training images, as
    :func:`corel_cmrm_cv`; the blob embedding is learned on each fold's training part."""
    acc: dict = {}
    for f, tr, va, mask in _cv_splits(len(b), y, seed, folds):
        emb = blob_embedding(b[tr], y[tr], dim=dim)
        model = CRM(standardize=False).fit(blob_regions(b[tr], emb), y[tr], kw)
        regions = blob_regions(b[va], emb)
        for be in grid["beta"]:
            model.set_params(beta=be, temperature=1.0)
            lp = model.log_posterior(regions)
            for t in grid["temperature"]:
                lpt = _tempered(lp, t)
                for mu in grid["mu"]:
                    model.set_params(mu=mu)
                    for g in grid["prior_power"]:
                        model.prior_power = g
                        _add_fold(acc, (be, mu, t, g), model.word_scores_from_posterior(lpt),
                                  y[va], kw, mask)
        log(f"  CRM cross-validation: fold {f + 1}/{folds} done")
    return _cv_rows(acc, CRM_KEYS)


def corel_cmrm_checks(d) -> list[dict]:
    """Test-set diagnostics of the CMRM formulation at fixed settings (no selection here):
    the size |J| with or without J's words, the background over blobs / words separately or
    over the whole training set, ties at the 5th word, and precision over predicted words only."""
    from scipy.special import logsumexp

    b = d.blobs_train.astype(np.float64)
    y = np.asarray(d.labels_train, dtype=np.float64)
    bt = d.blobs_test.astype(np.float64)
    mask = y.sum(0) > 0
    rows = []
    for a, be in ((0.1, 0.9), (0.1, 0.1)):
        for j_size, t_size in (("words+blobs", "per modality"), ("words+blobs", "whole set"),
                               ("blobs only", "per modality")):
            size_b = b.sum(1, keepdims=True) + (y.sum(1, keepdims=True)
                                                if j_size == "words+blobs" else 0)
            size_w = size_b if j_size == "words+blobs" else y.sum(1, keepdims=True)
            tot_b, tot_w = (b.sum(), y.sum()) if t_size == "per modality" else (
                b.sum() + y.sum(),) * 2
            pb = (1 - be) * b / np.maximum(size_b, 1) + be * b.sum(0) / tot_b
            pw = (1 - a) * y / np.maximum(size_w, 1) + a * y.sum(0) / tot_w
            ll = bt @ np.log(pb).T
            s = np.exp(ll - logsumexp(ll, axis=1, keepdims=True)) @ pw
            top = np.sort(s, axis=1)[:, ::-1]
            m = annotation(s, d.labels_test, d.keywords, mask)
            pw_ = m["per_word"]
            prec, npred = np.asarray(pw_["precision"]), np.asarray(pw_["n_predicted"])
            rows.append({"alpha": a, "beta": be, "|J|": j_size, "|T|": t_size,
                         "n_words_recall_gt0": m["n_words_recall_gt0"],
                         "mean_R": round(m["mean_R"], 4), "mean_P": round(m["mean_P"], 4),
                         "ties_at_5th": int(np.sum(top[:, 4] == top[:, 5])),
                         "n_words_predicted": int((npred > 0).sum()),
                         "mean_P_predicted_words_only": round(float(prec[npred > 0].mean()), 4)})
    return rows


def _posterior_check(model, images, truth, kw, word_mask) -> dict:
    lp = model.log_posterior(images)
    entropy = -(np.exp(lp) * lp).sum(1)
    top10 = np.sort(np.exp(lp), axis=1)[:, -10:].sum(1)
    m = annotation(model.word_scores_from_posterior(lp), truth, kw, word_mask)
    npred = np.asarray(m["per_word"]["n_predicted"])
    return {"temperature": model.temperature, "prior_power": model.prior_power,
            "effective_n_train": float(np.median(np.exp(entropy))),
            "top10_mass": float(np.median(top10)), "n_words_predicted": int((npred > 0).sum()),
            "n_words_recall_gt0": m["n_words_recall_gt0"], "mean_R": m["mean_R"],
            "mean_P": m["mean_P"]}


def corel_experiment(seed: int = 0) -> dict:
    from xmodal.data import load_corel5k

    d = load_corel5k()
    b, y = d.blobs_train, d.labels_train
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(b))
    va, tr = np.sort(perm[:500]), np.sort(perm[500:])
    kw = d.keywords

    log("Corel5K: CMRM grid on the held-out 500")

    def eval_cmrm(p):
        m = CMRM(**p).fit(b[tr], y[tr], kw)
        return annotation(m.word_scores(b[va]), y[va], kw)

    cmrm_grid = [
        {"alpha": a, "beta": be, "smoothing": "jm"}
        for a, be in itertools.product([0.1, 0.2, 0.3, 0.5], [0.1, 0.3, 0.5, 0.7, 0.9])
    ]
    cmrm_best, cmrm_rows = select(cmrm_grid, eval_cmrm)

    log("Corel5K: CRM (blob-embedding regions) grid on the held-out 500")
    crm_rows: list[dict] = []
    cache: dict = {}
    for dim in (36, 64):
        emb = blob_embedding(b[tr], y[tr], dim=dim)
        model = CRM(standardize=False).fit(blob_regions(b[tr], emb), y[tr], kw)
        r_va = blob_regions(b[va], emb)
        for beta in (0.05, 0.1, 0.15, 0.2):
            model.set_params(beta=beta)
            lp = model.log_posterior(r_va)
            cache[(dim, beta)] = (model, lp)
            for mu in (0.3, 1.0):
                model.set_params(mu=mu, prior_power=0.0)
                crm_rows.append(_row({"dim": dim, "beta": beta, "mu": mu},
                                     model.word_scores_from_posterior(lp), y[va], kw))
    crm_best = _best(crm_rows, ("dim", "beta", "mu"))
    log("Corel5K: word-prior normalisation (prior_power) on the held-out 500")
    model, lp = cache[(crm_best["dim"], crm_best["beta"])]
    cm_va = CMRM(**cmrm_best).fit(b[tr], y[tr], kw).log_posterior(b[va])
    pp_rows = []
    for g in (0.0, 0.25, 0.5, 0.75):
        model.set_params(mu=crm_best["mu"], prior_power=g)
        pp_rows.append(_row({"model": "crm", "prior_power": g},
                            model.word_scores_from_posterior(lp), y[va], kw))
        cm = CMRM(**cmrm_best, prior_power=g).fit(b[tr], y[tr], kw)
        pp_rows.append(_row({"model": "cmrm", "prior_power": g},
                            cm.word_scores_from_posterior(cm_va), y[va], kw))
    g_crm = _best([r for r in pp_rows if r["model"] == "crm"], ("prior_power",))["prior_power"]
    g_cm = _best([r for r in pp_rows if r["model"] == "cmrm"], ("prior_power",))["prior_power"]

    log(f"Corel5K: refit on 4,500 images; CMRM {cmrm_best}, CRM {crm_best}")
    out: dict = {"n_train": len(b), "n_test": len(d.blobs_test),
                 "selection": {"cmrm": cmrm_rows, "crm": crm_rows, "prior_power": pp_rows},
                 "models": {}}
    emb = blob_embedding(b, y, dim=crm_best["dim"])
    r_te = blob_regions(d.blobs_test, emb)
    crm_kw = {"beta": crm_best["beta"], "mu": crm_best["mu"], "standardize": False}
    crm = CRM(**crm_kw).fit(blob_regions(b, emb), y, kw)
    crm_pp = CRM(**crm_kw, prior_power=g_crm).fit(blob_regions(b, emb), y, kw)
    runs = {
        "CMRM (alpha=0.1, beta=0.9 as in Jeon et al.)": (CMRM(0.1, 0.9).fit(b, y, kw),
                                                         d.blobs_test, {"alpha": 0.1, "beta": 0.9}),
        "CMRM (tuned)": (CMRM(**cmrm_best).fit(b, y, kw), d.blobs_test, cmrm_best),
        "CRM on blob embeddings (tuned)": (crm, r_te, crm_best),
    }
    # word-prior normalisation changes annotation only (retrieval is unchanged); a row is
    # added only when the held-out selection picks a power > 0
    if g_cm:
        runs["CMRM (tuned) + word-prior normalisation"] = (
            CMRM(**cmrm_best, prior_power=g_cm).fit(b, y, kw), d.blobs_test,
            {**cmrm_best, "prior_power": g_cm})
    if g_crm:
        runs["CRM on blob embeddings + word-prior normalisation"] = (
            crm_pp, r_te, {**crm_best, "prior_power": g_crm})
    out["selected_prior_power"] = {"cmrm": g_cm, "crm": g_crm}

    # CMRM + posterior temperature + word-prior power, 5-fold cross-validation on the training
    # set: (a) the best mean F1; (b) the paper-row operating point: the highest mean precision
    # among settings with >= 66 words of recall > 0 and mean recall >= 0.09 (Table 1, CMRM)
    log("Corel5K: CMRM temperature / word-prior power, 5-fold cross-validation on training")
    cv_rows = corel_cmrm_cv(b, y, kw, seed)
    keys = ("alpha", "beta", "temperature", "prior_power")
    cv_f1 = max(cv_rows, key=lambda r: (r["mean_F1"], r["n_words_recall_gt0"]))
    feasible = [r for r in cv_rows if r["n_words_recall_gt0"] >= 66 and r["mean_R"] >= 0.09]
    cv_paper = max(feasible, key=lambda r: r["mean_P"]) if feasible else None
    out["selection"]["cmrm_cv"] = cv_rows
    out["selected_cmrm_cv"] = {"mean_F1": {k: cv_f1[k] for k in keys},
                               "paper_row": {k: cv_paper[k] for k in keys} if cv_paper else None}
    log("Corel5K: the pre-registered wide grid, 5-fold cross-validation on training")
    wide_rows = corel_cmrm_cv(b, y, kw, seed, grid=WIDE_CV_GRID)
    cv_wide = max(wide_rows, key=lambda r: (r["mean_F1"], r["n_words_recall_gt0"]))
    out["selection"]["cmrm_cv_wide"] = wide_rows
    out["selected_cmrm_cv"]["wide_grid_mean_F1"] = {k: cv_wide[k] for k in keys}
    for label, r in (("best CV F1", cv_f1), ("CV paper-row operating point", cv_paper),
                     (WIDE_LABEL, cv_wide)):
        if r is None:
            continue
        p = {k: r[k] for k in keys}
        runs[f"CMRM + temperature + word-prior normalisation ({label})"] = (
            CMRM(**p, smoothing="jm").fit(b, y, kw), d.blobs_test, p)
    log("Corel5K: the pre-registered CRM grid, 5-fold cross-validation on training")
    crm_cv = corel_crm_cv(b, y, kw, seed)
    crm_sel = max(crm_cv, key=lambda r: (r["mean_F1"], r["n_words_recall_gt0"]))
    crm_p = {k: crm_sel[k] for k in CRM_KEYS}
    out["selection"]["crm_cv_wide"] = crm_cv
    out["selected_crm_cv"] = crm_p
    emb64 = blob_embedding(b, y, dim=64)
    runs[CRM_WIDE_NAME] = (CRM(**crm_p, standardize=False).fit(blob_regions(b, emb64), y, kw),
                           blob_regions(d.blobs_test, emb64), {"dim": 64, **crm_p})
    word_mask = y.sum(0) > 0  # test words also seen in training: the paper's 260
    out["cmrm_checks"] = corel_cmrm_checks(d)
    t_g = ((1.0, 0.0),) + (((cv_paper["temperature"], 0.0),
                            (cv_paper["temperature"], cv_paper["prior_power"]),
                            (1.0, cv_paper["prior_power"])) if cv_paper else ())
    out["cmrm_posterior_checks"] = [
        _posterior_check(CMRM(0.1, 0.1, prior_power=g, temperature=t).fit(b, y, kw),
                         d.blobs_test, d.labels_test, kw, word_mask)
        for t, g in t_g]
    for name, (model, images, params) in runs.items():
        t0 = time.perf_counter()
        s = model.word_scores(images)
        t_ann = time.perf_counter() - t0
        ann = annotation(s, d.labels_test, kw, word_mask)
        if "normalisation" in name and "temperature" not in name:
            ret, t_ret = None, None
        else:
            ret, t_ret = retrieval_by_length(model, images, d.labels_test)
        out["models"][name] = {
            "params": params,
            "annotation": summary(ann),
            "retrieval": ret,
            "seconds": {"annotation": t_ann, "retrieval_all_queries": t_ret},
            "top_words_by_recall": _top_words(ann),
        }
        log(f"  {name}: {summary(ann)}")
    return out


def _row(params: dict, scores, truth, vocabulary) -> dict:
    m = annotation(scores, truth, vocabulary)
    row = {**params, **{k: round(m[k], 4) for k in
                        ("mean_P", "mean_R", "mean_F1", "n_words_recall_gt0")}}
    log(f"  {row}")
    return row


def _best(rows: list[dict], keys) -> dict:
    best = max(rows, key=lambda r: (r["mean_F1"], r["n_words_recall_gt0"]))
    return {k: best[k] for k in keys}


def _top_words(ann: dict, k: int = 10) -> list:
    pw = ann["per_word"]
    order = np.lexsort((-np.asarray(pw["precision"]), -np.asarray(pw["recall"])))[:k]
    return [(pw["word"][i], round(pw["recall"][i], 3), round(pw["precision"][i], 3))
            for i in order]


# --------------------------------------------------------------------------- Flickr8K


def flickr_experiment(seed: int = 0, kinds=("grid", "effnet"), neural: bool = True,
                      previous: dict | None = None) -> dict:
    """Flickr8K keyword annotation/retrieval; rows of ``previous`` not rerun are kept."""
    import warnings

    from xmodal.data import load_flickr8k
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix
    from xmodal.features.regions import flickr8k_region_features

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8 = load_flickr8k(judgments=False)
    splits = {s: f8.split(s) for s in ("train", "dev", "test")}
    log("Flickr8K: keyword vocabulary from the training captions")
    vocab = build_keyword_vocabulary(f8, splits["train"])
    labels = {s: image_keyword_matrix(f8, ids, vocab) for s, ids in splits.items()}
    words = vocab.words
    out: dict = {"vocabulary": vocab.describe(), "models": {}, "selection": {}}
    if previous and previous.get("vocabulary") == out["vocabulary"]:
        out["models"].update(previous.get("models", {}))
        out["selection"].update(previous.get("selection", {}))
    for s, y in labels.items():
        out[f"n_{s}"] = len(y)
        out[f"keywords_per_image_{s}"] = float(y.sum(1).mean())

    names = {"grid": "grid colour+texture (4x4 cells, 30-d)",
             "effnet": "EfficientNet-Lite0 cells (3x3, PCA 64-d)"}
    feature_sets = {names[k]: flickr8k_region_features(f8, k) for k in kinds}
    betas = {names["grid"]: (0.1, 0.2, 0.4), names["effnet"]: (0.1, 0.3)}

    for fname, feats in feature_sets.items():
        idx = {s: np.array([feats["index"][i] for i in ids]) for s, ids in splits.items()}
        reg = {s: RegionSets.from_grid(feats["cells"][idx[s]]) for s in splits}
        log(f"Flickr8K [{fname}]: CRM grid on dev")
        model = CRM().fit(reg["train"], labels["train"], words)
        rows, posts = [], {}
        for beta in betas[fname]:
            model.set_params(beta=beta)
            lp = posts[beta] = model.log_posterior(reg["dev"])
            for mu in (0.3, 1.0):
                model.set_params(mu=mu)
                rows.append(_row({"beta": beta, "mu": mu},
                                 model.word_scores_from_posterior(lp), labels["dev"], words))
        best = _best(rows, ("beta", "mu"))
        for g in (0.25, 0.5):
            model.set_params(mu=best["mu"], prior_power=g)
            rows.append(_row({**best, "prior_power": g},
                             model.word_scores_from_posterior(posts[best["beta"]]),
                             labels["dev"], words))
        best_pp = _best([r | {"prior_power": r.get("prior_power", 0.0)} for r in rows],
                        ("beta", "mu", "prior_power"))
        out["selection"][f"CRM, {fname}"] = rows
        model.set_params(beta=best["beta"], mu=best["mu"], prior_power=0.0)
        lp_test = model.log_posterior(reg["test"])
        _evaluate_flickr(out, f"CRM, {fname}", model, reg["test"], labels["test"], words, best,
                         log_posterior=lp_test)
        if best_pp["prior_power"]:
            model.set_params(prior_power=best_pp["prior_power"])
            _evaluate_flickr(out, f"CRM, {fname} + word-prior normalisation", model,
                             reg["test"], labels["test"], words, best_pp, retrieval=False,
                             log_posterior=lp_test)
            model.set_params(prior_power=0.0)

        log(f"Flickr8K [{fname}]: CMRM on k-means blobs")
        blobs = _kmeans_blobs(feats["cells"], idx, seed)

        def eval_cmrm(p, blobs=blobs):
            m = CMRM(**p).fit(blobs["train"], labels["train"], words)
            return annotation(m.word_scores(blobs["dev"]), labels["dev"], words)

        cgrid = [{"alpha": a, "beta": be, "smoothing": "jm"}
                 for a, be in itertools.product([0.1, 0.3, 0.5], [0.1, 0.5, 0.9])]
        cbest, crows = select(cgrid, eval_cmrm)
        out["selection"][f"CMRM, {fname}"] = crows
        cm = CMRM(**cbest).fit(blobs["train"], labels["train"], words)
        _evaluate_flickr(out, f"CMRM, {fname} (500 k-means blobs)", cm, blobs["test"],
                         labels["test"], words, cbest)

    if neural:
        # the neural row is the shipped `xmodal tag` model (scripts/train_tagger.py: fit on the
        # training split, L2 and word-prior power selected on dev); it must share this vocabulary
        from xmodal.models.tagger import DEFAULT_MODEL_DIR, KeywordHead, flickr8k_pooled_features

        head = KeywordHead.load(DEFAULT_MODEL_DIR)
        if head.vocabulary_ != words:
            raise SystemExit("the shipped tagger has another vocabulary: rerun "
                             "scripts/train_tagger.py first")
        pooled = flickr8k_pooled_features(f8)
        x_test = pooled["pooled"][np.array([pooled["index"][i] for i in splits["test"]])]
        cfg = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
        out["selection"]["neural"] = cfg.get("selection", [])
        _evaluate_flickr(out, "Neural: logistic head on pooled EfficientNet-Lite0 (shipped)",
                         head, x_test, labels["test"], words,
                         {"l2": head.l2, "prior_power": head.prior_power})
    return out


def _kmeans_blobs(cells: np.ndarray, idx: dict, seed: int, k: int = 500) -> dict:
    from sklearn.cluster import MiniBatchKMeans

    _, c, dim = cells.shape
    tr = cells[idx["train"]].reshape(-1, dim).astype(np.float64)
    mean, std = tr.mean(0), tr.std(0) + 1e-9
    km = MiniBatchKMeans(k, random_state=seed, batch_size=4096, n_init=3).fit((tr - mean) / std)
    out = {}
    for s, ii in idx.items():
        lab = km.predict(((cells[ii].reshape(-1, dim) - mean) / std).astype(np.float64))
        counts = np.zeros((len(ii), k))
        np.add.at(counts, (np.repeat(np.arange(len(ii)), c), lab), 1)
        out[s] = counts > 0  # presence, as in the Corel5K data
    return out


def _evaluate_flickr(out, name, model, images, labels, words, params, retrieval=True,
                     log_posterior=None) -> None:
    t0 = time.perf_counter()
    if log_posterior is not None:
        s = model.word_scores_from_posterior(log_posterior)
    else:
        s = model.word_scores(images)
    t_ann = time.perf_counter() - t0
    ann = annotation(s, labels, words)
    entry = {"params": params, "annotation": summary(ann),
             "seconds": {"annotation": t_ann}, "top_words_by_recall": _top_words(ann)}
    if retrieval:
        ret, t_ret = retrieval_by_length(model, images, labels, max_len=2,
                                         log_posterior=log_posterior)
        entry["retrieval"] = ret
        entry["seconds"]["retrieval_all_queries"] = t_ret
    out["models"][name] = entry
    log(f"  {name}: {summary(ann)}")


# --------------------------------------------------------------------------- report


INTRO = """\
## Models

- **CMRM** (Jeon et al. 2003): discrete relevance model over blob tokens,
  P(w, b_1..b_m) = 1/|T| sum_J P(w|J) prod_i P(b_i|J), Jelinek-Mercer smoothing (alpha for
  words, beta for blobs; |J| counts J's words and blobs).
- **CRM** (Lavrenko, Manmatha & Jeon 2003): regions are continuous vectors; P(r|J) is a Gaussian
  kernel density over J's regions with bandwidth beta (exp(-||r - g||^2 / (beta * dim)) on the
  model's features), P(w|J) Dirichlet-smoothed with mu, uniform prior over training images.
- Annotation ranks words by P(w | image); retrieval ranks images by the query likelihood
  log P(q | image) = log sum_J P(J | image) prod_{w in q} P(w|J), for all queries at once.
- **CRM on Corel5K is an approximation.** The distributed Corel5K (Mulan ARFF) has only binary
  blob-presence vectors, not the 36-d region features of the paper. We give each blob id a
  continuous vector: the Hellinger map of its smoothed word distribution P(w | blob) on the
  training images, reduced by SVD (dim selected from 36/64) and scaled so the median squared
  distance between blobs equals dim. An image's regions are the vectors of its blobs (one per
  present blob, about 8 per image), and the CRM runs unchanged on those sets. The kernel thus
  smooths between blobs that co-occur with the same words, which CMRM cannot; it cannot recover
  the visual information lost by the quantisation, so the paper's CRM row (real features) is an
  upper reference, not a target this data can reach.
- **Word-prior normalisation** (optional, not in the papers): rank words by
  P(w | image) / P(w)^g with g chosen on held-out data; trades precision on frequent words for
  recall on rare ones. Rows appear only where the selection picked g > 0.
- **Posterior temperature** (CMRM and CRM option `temperature`, not in the papers; 1 = the
  papers' models): P(J | image) proportional to P(image | J)^t; t < 1 flattens an
  over-confident posterior. Unlike g it also changes retrieval.
"""


def _summary(results: dict) -> list[str]:
    """Headline sentences computed from the results."""
    out = ["## Summary", ""]
    corel = results.get("corel", {}).get("models", {})
    cm = corel.get("CMRM (tuned)", {}).get("annotation")
    crm = corel.get("CRM on blob embeddings (tuned)", {})
    if cm:
        out.append(
            f"- Corel5K, CMRM (Jeon et al.'s model, smoothing tuned on held-out training images): "
            f"{cm['n_words_recall_gt0']} words with recall > 0 (paper 66), mean recall "
            f"{cm['mean_R']:.3f} (paper 0.09), mean precision {cm['mean_P']:.3f} (paper 0.10) "
            f"over {cm['n_words']} test words (those also seen in training). Words and recall "
            "reach the paper's CMRM row, precision does not; no Jelinek-Mercer setting of the "
            "plain model reached both (the formulation matches Jeon et al.; see 'Why plain CMRM "
            "precision falls short' below).")
    wide = corel.get(f"CMRM + temperature + word-prior normalisation ({WIDE_LABEL})", {})
    if wide.get("annotation"):
        a, r = wide["annotation"], wide["retrieval"]["all"]
        ok = a["n_words_recall_gt0"] >= 66 and a["mean_R"] >= 0.09 and a["mean_P"] >= 0.10
        nested = json.loads(NESTED.read_text()) if NESTED.is_file() else {}
        w = next((v for k, v in nested.get("summary", {}).items() if "pre-registered" in k),
                 None)
        out.append(
            f"- **Corel5K, pre-registered calibrated CMRM** (posterior temperature and "
            "word-prior power over a wide grid, chosen by best mean F1 in 5-fold CV on the "
            "training set and committed before its single test evaluation; `xmodal eval -p "
            f"corel5k -m cmrm-wide`): {a['n_words_recall_gt0']} words with recall > 0, mean "
            f"recall {a['mean_R']:.3f}, mean precision {a['mean_P']:.3f} over {a['n_words']} "
            "words"
            + (", which reaches the paper's CMRM row (66, 0.09, 0.10)" if ok else
               ", still below the paper's CMRM row (66, 0.09, 0.10)")
            + f"; retrieval MAP {r['MAP']:.3f}."
            + (f" Nested CV on the training set (the rule re-run inside each of "
               f"{w['folds']} outer folds of 500 images) meets the row in {w['meets_paper_row']} "
               f"of {w['folds']} folds, mean P {w['mean_P_mean']:.3f} (lowest "
               f"{w['mean_P_min']:.3f}): the row is reached on average, not in every sample "
               "of 500 images." if w else "")
            + " Temperature and word-prior power are not in Jeon et al.; this is a modified "
            "CMRM (see 'Nested cross-validation of the selection rules').")
    cal = corel.get("CMRM + temperature + word-prior normalisation "
                    "(CV paper-row operating point)", {}).get("annotation")
    f1 = corel.get("CMRM + temperature + word-prior normalisation (best CV F1)",
                   {}).get("annotation")
    if cal:
        ok = (cal["n_words_recall_gt0"] >= 66 and cal["mean_R"] >= 0.09
              and cal["mean_P"] >= 0.10)
        out.append(
            f"- Corel5K, the first calibrated CMRM rows (temperature and word-prior "
            f"normalisation, chosen by 5-fold cross-validation on the training set): "
            f"{cal['n_words_recall_gt0']} words, mean recall {cal['mean_R']:.3f}, mean "
            f"precision {cal['mean_P']:.3f} at the paper-row operating point (highest CV "
            "precision among settings with >= 66 words and recall >= 0.09 in CV)"
            + (", which reaches the paper's CMRM row" if ok else
               ", still below the paper's CMRM row")
            + (f"; selecting by CV mean F1 instead gives {f1['n_words_recall_gt0']} words, R "
               f"{f1['mean_R']:.3f}, P {f1['mean_P']:.3f}" if f1 else "")
            + ". Nested cross-validation on the training set shows that the precision margin "
            "of these two earlier rules (grid with word-prior power up to 0.3) is not robust.")
    if crm.get("annotation"):
        a, r = crm["annotation"], crm["retrieval"]["all"]
        out.append(
            f"- Corel5K, CRM on blob embeddings: "
            f"{a['n_words_recall_gt0']} words, mean recall {a['mean_R']:.3f}, mean precision "
            f"{a['mean_P']:.3f}, retrieval MAP {r['MAP']:.3f} over {r['n_queries']} queries. "
            "It beats plain CMRM on precision and on retrieval at every query length, but "
            "stays below the paper's CRM row (107 words, 0.19 / 0.16), which used continuous "
            "36-d region features that this distribution of Corel5K does not contain.")
    crm_wide = corel.get(CRM_WIDE_NAME, {})
    crm_nested = json.loads(NESTED.read_text()).get("crm") if NESTED.is_file() else None
    c = next(iter(crm_nested["summary"].values())) if crm_nested else None
    if crm_wide.get("annotation"):
        a, r = crm_wide["annotation"], crm_wide["retrieval"]["all"]
        reached = (a["n_words_recall_gt0"] >= 107 and a["mean_R"] >= 0.19
                   and a["mean_P"] >= 0.16)
        out.append(
            "- **Corel5K, our best model: the CRM on blob embeddings with temperature and "
            "word-prior power** (pre-registered like the CMRM above; `xmodal eval -p corel5k "
            f"-m crm-wide`): {a['n_words_recall_gt0']} words, mean recall {a['mean_R']:.3f}, "
            f"mean precision {a['mean_P']:.3f}, F1 {a['mean_F1']:.3f}, retrieval MAP "
            f"{r['MAP']:.3f}. "
            + ("It reaches the paper's CRM row (107, 0.19, 0.16)." if reached else
               "The goal, the paper's CRM row (107 words, R 0.19, P 0.16), is not reached ("
               + ", ".join(f"{name} {have:.3g} vs {want:.3g}" for name, have, want in (
                   ("words", a["n_words_recall_gt0"], 107), ("R", a["mean_R"], 0.19),
                   ("P", a["mean_P"], 0.16)) if have < want)
               + "). The paper's CRM used continuous region features; this data has only "
               "blob ids.")
            + (f" Nested CV on the training set: it {_nested_result(c)}." if c else ""))
    fl = results.get("flickr", {}).get("models", {})
    if fl:
        best = max(fl.items(), key=lambda kv: kv[1]["annotation"]["mean_F1"])
        a = best[1]["annotation"]
        out.append(
            f"- Flickr8K keywords: best model **{best[0]}** (mean P {a['mean_P']:.3f}, "
            f"R {a['mean_R']:.3f}, F1 {a['mean_F1']:.3f}, {a['n_words_recall_gt0']} of "
            f"{a['n_words']} words with recall > 0). On the same EfficientNet-Lite0 features the "
            "CRM (over 3x3 feature-map cells) is second; on hand-made grid colour/texture "
            "regions both relevance models are weak: colour and texture say little about the "
            "people, actions and objects that Flickr8K captions name.")
        crms = [(n, m["annotation"]) for n, m in fl.items() if n.startswith("CRM")]
        if "shipped" in best[0] and crms:
            keys = ("mean_P", "mean_R", "mean_F1", "n_words_recall_gt0")
            wins = all(a[k] > c[k] for _, c in crms for k in keys)
            out.append("- `xmodal tag` ships that neural head (`src/xmodal/assets/tag/`, "
                       "float16 weights, 1.3 MB)" + (
                           ": it beats every CRM row on mean P, R, F1 and words with "
                           "recall > 0" if wins else "") +
                       ". A CRM tagger would have to ship its training regions (96,000 grid "
                       "regions x 30 dims = 5.8 MB in float16) and is slower per image.")
    secs = [m["seconds"].get("retrieval_all_queries") for m in corel.values()
            if m.get("retrieval")]
    if secs:
        out.append(f"- Retrieval scores all {corel['CMRM (tuned)']['retrieval']['all']['n_queries']}"
                   f" Corel5K queries (1-4 words) against the 500 test images in "
                   f"{min(secs):.1f}-{max(secs):.1f} s on the shared 2-core CPU (vectorized; "
                   "`benchmarks/results/relevance_retrieval.json`).")
    return out


def _cmrm_checks_section(corel: dict) -> list[str]:
    checks = corel.get("cmrm_checks")
    if not checks:
        return []
    bar = "\\|"  # a literal | inside a Markdown table cell
    out = [
        "### Why plain CMRM precision falls short", "",
        ("Checks of the formulation against Jeon et al. 2003 (P(w, b_1..b_m) = sum_J P(J) "
         "P(w|J) prod_i P(b_i|J), Jelinek-Mercer smoothing) on the test set at fixed settings:"),
        "",
        ("- The implementation is the paper's: |J| counts J's words and blobs; the test image's "
         "blobs enter once each (Corel5K as distributed has blob *presence*, so the blob "
         "multiset of the original data, with repeated blobs, cannot be used); words are "
         "ranked by P(w | image), proportional to P(w, b_1..b_m)."),
        ("- Variants of |J| (blobs only) and of the background (over the whole training set "
         "rather than per modality) move the numbers by about as much as a change of "
         "alpha/beta, not enough to reach the row."),
        "- No ties at the 5th word (the pessimistic tie rule of the metric never applies).",
        ("- Precision is the paper's per-word mean over all test words, a never-predicted word "
         "counting 0. Averaged over the predicted words only, it would be far higher (last "
         "column), so the definition is not the cause."),
        "",
        (f"| alpha | beta | {bar}J{bar} | background {bar}T{bar} | #words R>0 | mean R | mean P "
         "| ties at 5th | #words predicted | mean P over predicted words |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in checks:
        out.append(f"| {r['alpha']} | {r['beta']} | {r['|J|']} | {r['|T|']} | "
                   f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} | "
                   f"{r['ties_at_5th']} | {r['n_words_predicted']} | "
                   f"{r['mean_P_predicted_words_only']:.3f} |")
    post = corel.get("cmrm_posterior_checks") or []
    if post:
        out += ["", ("The posterior over training images is the cause. With blob presence the "
                     "plain posterior is extremely peaked, so annotation is a vote of a few "
                     "nearest training images: many words get predicted, each with low "
                     "precision. Test set, alpha = beta = 0.1 (t = posterior temperature, "
                     "g = word-prior power):"), "",
                ("| t | g | effective #training images (median exp entropy) | mass of the top "
                 "10 (median) | #words predicted | #words R>0 | mean R | mean P |"),
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['temperature']} | {r['prior_power']} | {r['effective_n_train']:.1f} | "
                f"{r['top10_mass']:.3f} | {r['n_words_predicted']} | "
                f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} |"
                for r in post]
    sel = corel.get("selected_cmrm_cv") or {}
    rows = corel.get("selection", {}).get("cmrm_cv", [])
    out += ["", (
        "What closes the gap: flattening the posterior with a temperature t < 1 "
        "(P(J | image) proportional to P(blobs | J)^t) averages over many more training images, "
        "which by itself favours frequent words; dividing the word scores by the word's "
        "training frequency to a power g (word-prior normalisation) rebalances them. Neither is "
        "in Jeon et al., so these rows are a modified CMRM. t, g, alpha and beta are chosen by "
        f"5-fold cross-validation on the 4,500 training images only ({len(rows)} settings: t in "
        "0.3..1, g in 0..0.3, alpha in 0.1..0.3, beta in 0.1..0.5). Two selection rules, both "
        f"on the training folds: best mean F1 -> {sel.get('mean_F1')}; the paper-row "
        "operating point (highest mean precision among settings with >= 66 words of recall "
        f"> 0 and mean recall >= 0.09 in cross-validation) -> {sel.get('paper_row')}. A single "
        "held-out split of 500 training images (instead of 5 folds) is noisier and picked "
        "t = 0.5, g = 0.25, which gave 81 words, mean recall 0.114 and mean precision 0.095 on "
        "the test set (an exploratory run with t in 0.5..3 and g in -0.25..0.25, not in these "
        "tables): the result depends on the selection protocol, and the margin above the "
        "paper's 0.10 is small."), ""]
    out += _nested_cv_section()
    top = sorted(rows, key=lambda r: -r["mean_F1"])[:8]
    if top:
        out += [("Top cross-validation settings by mean F1 (means over 5 folds of 900 images; "
                 "more words per fold than the 500-image test set):"), "",
                "| t | alpha | beta | g | #words R>0 | mean R | mean P | mean F1 |",
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['temperature']} | {r['alpha']} | {r['beta']} | {r['prior_power']} | "
                f"{r['n_words_recall_gt0']} | {r['mean_R']:.3f} | {r['mean_P']:.3f} | "
                f"{r['mean_F1']:.3f} |" for r in top]
        out.append("")
    return out


NESTED = ROOT / "benchmarks" / "results" / "corel_nested_cv.json"
FIGURE = ROOT / "reports" / "figures" / "relevance_corel.png"
PAPER_ROWS = {"paper CMRM": (0.09, 0.10), "paper CRM": (0.19, 0.16)}


def plot_corel(corel: dict) -> None:
    """Mean recall vs mean precision: test-set rows (left) and nested-CV folds (right), with the
    paper's Table 1 rows; the shaded corner is where the paper's CMRM row is reached."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nested = json.loads(NESTED.read_text()) if NESTED.is_file() else {}
    folds = {n: [f["results"][n] for f in nested.get("folds", []) if n in f["results"]]
             for n in nested.get("summary", {})}
    for f in nested.get("crm", {}).get("folds", []):
        for n, v in f["results"].items():
            folds.setdefault(n, []).append(v)
    fig, axes = plt.subplots(1, 2, figsize=(13, 7), sharex=True, sharey=True)
    for ax in axes:
        ax.fill_between([0.09, 0.25], 0.10, 0.2, color="tab:green", alpha=0.08)
        for label, (r, p) in PAPER_ROWS.items():
            ax.plot(r, p, marker="*", ms=16, color="black", ls="")
            ax.annotate(label, (r, p), textcoords="offset points", xytext=(6, 6))
        ax.set(xlabel="mean per-word recall", xlim=(0.03, 0.21), ylim=(0.05, 0.18))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean per-word precision")
    for name, m in corel.get("models", {}).items():
        a = m["annotation"]
        axes[0].plot(a["mean_R"], a["mean_P"], marker="o", ls="", label=name)
    axes[0].set_title("Test set (500 images, 260 words)")
    axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    for name, rows in folds.items():
        if rows:
            axes[1].plot([r["mean_R"] for r in rows], [r["mean_P"] for r in rows], marker="o",
                         ls="", alpha=0.7, label=name)
    axes[1].set_title("Nested CV: 9 held-out folds of 500 training images")
    axes[1].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=80)
    plt.close(fig)


def _nested_result(w: dict) -> str:
    """One nested-CV summary row as a phrase."""
    return (f"meets the paper's CMRM row in {w['meets_paper_row']} of {w['folds']} outer folds "
            f"(mean {w['n_words_recall_gt0_mean']:.1f} words / R {w['mean_R_mean']:.3f} / P "
            f"{w['mean_P_mean']:.3f}; lowest fold P {w['mean_P_min']:.3f})")


def _nested_cv_section() -> list[str]:
    """The training-set-only check of the selection rules (scripts/corel_nested_cv.py)."""
    if not NESTED.is_file():
        return []
    nested = json.loads(NESTED.read_text())
    summ = nested["summary"]
    wide_name = next((k for k in summ if "pre-registered" in k), None)
    old = [k for k in summ if k.startswith("calibrated") and k != wide_name]
    cal = [summ[k] for k in old]
    n_folds = max(v["folds"] for v in summ.values())
    p_old = [f["results"][k]["mean_P"] for f in nested["folds"] for k in old]
    out = ["### Nested cross-validation of the selection rules (training set only)", "",
           "Because the paper-row rule was adopted after the F1 rule's test precision had been "
           f"seen, the rules were checked without the test set: `{nested['command']}` "
           f"({nested['elapsed_s'] / 60:.0f} min, commit {nested['git_commit']}; "
           "`benchmarks/results/corel_nested_cv.json`) cuts the 4,500 training images into "
           f"{n_folds} outer folds of 500 (the test set's size), applies each rule to a 5-fold CV "
           "on the other 4,000 exactly as above, and scores the chosen model on the held-out 500 "
           "(vocabulary: its words also seen in the 4,000). A bootstrap over the test images "
           "was tried instead and dropped: resampling with replacement repeats images and "
           "shrinks the vocabulary, which biases the per-word metrics (for plain CMRM the 95% "
           "interval of words with recall > 0 was 57-71 around a point value of 77).", "",
           "| Model (rule applied inside each outer fold) | folds meeting the paper's CMRM row "
           "| #words R>0 (mean, min) | mean R (mean, min) | mean P (mean, min) |",
           "|---|---|---|---|---|"]
    for n, v in summ.items():
        out.append(f"| {n} | {v['meets_paper_row']} / {v['folds']} | "
                   f"{v['n_words_recall_gt0_mean']:.1f}, {v['n_words_recall_gt0_min']:.0f} | "
                   f"{v['mean_R_mean']:.3f}, {v['mean_R_min']:.3f} | "
                   f"{v['mean_P_mean']:.3f}, {v['mean_P_min']:.3f} |")
    out += ["", "**What this says about the first two rules.** On unseen images of the training "
            "distribution their mean precision is about "
            f"{np.mean([v['mean_P_mean'] for v in cal]):.2f} ({min(p_old):.3f}-{max(p_old):.3f} "
            "across folds and rules), and they reach all three numbers of the paper's CMRM row "
            "in " + " and ".join(f"{v['meets_paper_row']}" for v in cal) + f" of {n_folds} "
            "folds. The test-set precision of the paper-row rule is at the favourable end of "
            "that spread: these rules reach the paper's words-with-recall and mean recall, but "
            "not robustly its mean precision of 0.10. "
            "Plain CMRM with Dirichlet instead of Jelinek-Mercer smoothing was also tried on "
            "5 training folds (word / blob priors m in {0.3, 1, 3, 10} x {1, 3, 10, 30, 100}): "
            "its best mean precision was 0.079, below the calibrated model's. Two other blob "
            "likelihoods, with temperature and word-prior power tuned the same way on 5 training "
            "folds, did not help either: IDF-weighted blobs (sum_b idf(b) log P(b|J); best-F1 "
            "setting P 0.075, R 0.096) and a multiple-Bernoulli likelihood that also scores "
            "absent blobs (P 0.073, R 0.099), against P 0.079, R 0.100 for the calibrated CMRM "
            "on the same folds.", ""]
    if wide_name:
        w, sel = summ[wide_name], nested.get("preregistered_full_training_selection", {})
        grid = nested.get("wide_grid", {})
        per_fold = [f["results"][wide_name]["params"] for f in nested["folds"]]
        out += [
            "#### The pre-registered wide-grid rule",
            "",
            "The first grid stopped at a word-prior power g of 0.3. Fixed-setting runs on the "
            "nine outer folds of the training set (an exploration, no test data) showed that "
            "precision and recall both keep rising up to g of about 0.8 at a low temperature, "
            "where the score P(w | image) / P(w)^g approaches the likelihood ratio "
            "P(image | w) / P(image). So a new rule was fixed **before any test evaluation of "
            "it**: the same CMRM (Jeon et al.'s Jelinek-Mercer formulation, with "
            "temperature and word-prior power), the grid "
            + ", ".join(f"{k} {tuple(v)}" for k, v in grid.items())
            + ", and the standard criterion, best mean F1 over a 5-fold CV of the training "
            "set. Nothing about the paper's row enters the rule.",
            "",
            f"- Nested CV (table above): it {_nested_result(w)}, against 2 of 9 for the "
            "earlier rules. The settings it picks in the nine folds: " + "; ".join(
                f"t {p['temperature']}, g {p['prior_power']}, beta {p['beta']}"
                for p in per_fold) + ".",
            f"- Applied to all 4,500 training images (seed 0), the rule selects {sel}. The "
            "temperature is at the low end of the grid; a training-only check with t in "
            "{0.1, 0.15, 0.2} and g up to 1.2 still picks t 0.2, g 0.8.",
            "- This section, the grid, the rule and the selected setting were committed "
            "(25d306d) before the single test evaluation, whose result is the row 'CMRM + "
            f"temperature + word-prior normalisation ({WIDE_LABEL})' in the Corel5K tables.",
            "- Caveat: the grid's range was chosen after looking at the outer folds, so the "
            "nested-CV numbers for this rule are somewhat optimistic; the test set was not "
            "used for it.", ""]
    crm = nested.get("crm")
    if crm:
        (name, w), = crm["summary"].items()
        per_fold = [f["results"][name]["params"] for f in crm["folds"]]
        out += [
            "#### The pre-registered CRM rule",
            "",
            "The same two knobs were then tried on the CRM over blob embeddings (64-d "
            "embedding, as selected for its row), again on the outer folds of the training set "
            "only: with a temperature of 0.15-0.3 and a word-prior power of about 0.6 it beat "
            "the wide-grid CMRM on every metric there. Fixed before its single test "
            "evaluation: the grid " + ", ".join(f"{k} {tuple(v)}" for k, v in
                                                 crm["grid"].items())
            + " and the best mean F1 over a 5-fold CV of the training set (the blob embedding "
            f"re-learned on each fold's training part). `{crm['command']}` "
            f"({crm['elapsed_s'] / 60:.0f} min, commit {crm['git_commit']}):",
            "",
            f"- Nested CV: it {_nested_result(w)}; the paper's CRM row (107, 0.19, 0.16) is not reached in "
            "any fold" + ("" if not any(
                f["results"][name]["n_words_recall_gt0"] >= 107
                and f["results"][name]["mean_R"] >= 0.19 and f["results"][name]["mean_P"] >= 0.16
                for f in crm["folds"]) else " (it is in some folds)") + ". Settings picked in "
            "the nine folds: " + "; ".join(
                f"beta {p['beta']}, mu {p['mu']}, t {p['temperature']}, g {p['prior_power']}"
                for p in per_fold) + ".",
            f"- Applied to all 4,500 training images (seed 0) the rule selects "
            f"{crm['preregistered_full_training_selection']}. Bandwidth and temperature "
            "trade off along a ridge, and both are at the low end of the grid; a training-only "
            "check with beta 0.025 and t 0.075 or 0.1 does not beat it (CV F1 0.1033 vs "
            "0.1043).",
            "- Committed (6ee263c) before the single test evaluation, whose result is the row "
            f"'{CRM_WIDE_NAME}' in the Corel5K tables. As for the CMRM, the grid's range was "
            "chosen after looking at the outer folds, so its nested-CV numbers are somewhat "
            "optimistic.", ""]
    return out


def _git_commit() -> str:
    from xmodal.provenance import git_commit

    return git_commit()


def _f(x) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def write_report(results: dict) -> None:
    lines = ["# Relevance models (CMRM, CRM): keyword annotation and retrieval", "",
             f"Regenerate: `{COMMAND}` (writes `benchmarks/results/relevance_models.json` and "
             "this file). Measured on " + results.get("machine", "?") + ", " +
             results.get("date", "?") + f", commit {results.get('commit', '?')}.",
             "", "The committed numbers come from these partial runs of the same script "
             "(seed 0): `--part corel`, `--part flickr --features grid "
             "--no-neural`, `--part flickr --features effnet --no-neural`, `--part flickr "
             "--features ''` (the neural row evaluates the shipped tagger trained by "
             "`python scripts/train_tagger.py`).", ""]
    lines += _summary(results) + [""]
    lines += INTRO.splitlines() + [""]
    corel = results.get("corel")
    if corel:
        lines += ["## Corel5K (4,500 train / 500 test, Mulan blob-presence features)", "",
                  "Annotation: top 5 words per test image; per-word precision and recall "
                  "averaged over the test vocabulary (words of the test annotations also seen in "
                  "training; precision "
                  "0 for a word never predicted) and over the 49 words with the highest recall.",
                  "",
                  "| Model | #words recall>0 | mean R (all) | mean P (all) | mean F1 (all) | "
                  "mean R (49 best) | mean P (49 best) |",
                  "|---|---|---|---|---|---|---|",
                  "| Paper: CMRM (Table 1) | 66 | 0.09 | 0.10 | | 0.48 | 0.40 |",
                  "| Paper: CRM, continuous 36-d regions (Table 1) | 107 | 0.19 | 0.16 | | "
                  "0.70 | 0.59 |"]
        n_words = None
        for name, m in corel["models"].items():
            a = m["annotation"]
            n_words = a["n_words"]
            lines.append(f"| {name} | {a['n_words_recall_gt0']} | {_f(a['mean_R'])} | "
                         f"{_f(a['mean_P'])} | {_f(a['mean_F1'])} | {_f(a['best49_mean_R'])} | "
                         f"{_f(a['best49_mean_P'])} |")
        lines += ["", f"Test vocabulary here: {n_words} words (test words also seen in training; "
                  "the paper says 260).", ""]
        plot_corel(corel)
        lines += [f"![mean recall vs mean precision of the Corel5K models on the test set and "
                  f"in nested cross-validation](figures/{FIGURE.name})", "",
                  "The shaded corner is where the paper's CMRM row (R >= 0.09, P >= 0.10) is "
                  "reached; stars are the paper's rows. Right: each point is one held-out fold "
                  "of the nested cross-validation (the rule re-run on the other 4,000 images).",
                  ""]
        lines += _cmrm_checks_section(corel)
        lines += ["Retrieval: every 1- to 4-word combination present in at least two test "
                  "annotations (query counts by length below); relevant = the annotation "
                  "contains all query words. Cells: P@5 / MAP.", "",
                  "| Model | 1 word | 2 words | 3 words | 4 words | all |",
                  "|---|---|---|---|---|---|",
                  "| Paper: #queries | 179 | 386 | 178 | 24 | 767 |"]
        first = next(m for m in corel["models"].values() if m.get("retrieval"))
        lines.append("| Here: #queries (#relevant pairs) | " + " | ".join(
            f"{first['retrieval'][k]['n_queries']} ({first['retrieval'][k]['n_relevant']})"
            for k in ("1", "2", "3", "4", "all")) + " |")
        paper = {"CMRM": ([0.1989, 0.1306, 0.1494, 0.2083], [0.1697, 0.1642, 0.2030, 0.2765]),
                 "CRM": ([0.2480, 0.1902, 0.1888, 0.2333], [0.2353, 0.2534, 0.3152, 0.4471])}
        for pname, (p5, ap) in paper.items():
            lines.append(f"| Paper: {pname} (Table 2) | " + " | ".join(
                f"{p5[k]:.3f} / {ap[k]:.3f}" for k in range(4)) + " | |")
        for name, m in corel["models"].items():
            if not m.get("retrieval"):
                continue
            lines.append(f"| {name} | " + " | ".join(
                f"{m['retrieval'][k]['P@5']:.3f} / {m['retrieval'][k]['MAP']:.3f}"
                for k in ("1", "2", "3", "4", "all")) + " |")
        lines += ["", "Seconds to score all queries against the 500 test images at once "
                  "(vectorized; includes the test-x-train posterior): " + ", ".join(
                      f"{n}: {m['seconds']['retrieval_all_queries']:.2f} s"
                      for n, m in corel["models"].items() if m.get("retrieval")) +
                  ". See also `benchmarks/results/relevance_retrieval.json`.", ""]
        lines += ["Selected hyperparameters (held-out 500 of the training set, by mean per-word "
                  "F1; the temperature rows by 5-fold cross-validation on the training set, see "
                  "above): " + "; ".join(f"{n}: {m['params']}"
                                         for n, m in corel["models"].items())
                  + f". Selected word-prior power: {corel.get('selected_prior_power')} "
                  "(0 = no normalisation row).", ""]
    fl = results.get("flickr")
    if fl:
        v = fl["vocabulary"]
        lines += ["## Flickr8K keywords (6,000 train / 1,000 dev for selection / 1,000 test)", "",
                  f"Vocabulary: {v}. Keywords per test image: "
                  f"{fl.get('keywords_per_image_test', 0):.1f} on average.", "",
                  "| Model | #words recall>0 | mean R | mean P | mean F1 | mean R (49 best) | "
                  "mean P (49 best) | MAP 1-word | MAP 2-word |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, m in fl["models"].items():
            a = m["annotation"]
            r = m.get("retrieval", {})
            lines.append(
                f"| {name} | {a['n_words_recall_gt0']} / {a['n_words']} | {_f(a['mean_R'])} | "
                f"{_f(a['mean_P'])} | {_f(a['mean_F1'])} | {_f(a['best49_mean_R'])} | "
                f"{_f(a['best49_mean_P'])} | {_f(r.get('1', {}).get('MAP', ''))} | "
                f"{_f(r.get('2', {}).get('MAP', ''))} |")
        r1 = next((m["retrieval"] for m in fl["models"].values() if m.get("retrieval")), None)
        if r1:
            lines += ["", "Retrieval (MAP columns): every 1- and 2-word keyword combination "
                      "present in at least two test images (" + ", ".join(
                          f"{r1[k]['n_queries']} {k}-word" for k in ("1", "2") if k in r1) +
                      " queries); relevant = the image's keywords contain every query word."]
        sel = fl.get("selection", {}).get("neural")
        if sel:
            lines += ["", "Neural head, dev-split selection (scripts/train_tagger.py):", "",
                      "| L2 | word-prior power | mean P | mean R | mean F1 | #words recall>0 |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {r['l2']:g} | {r['prior_power']:g} | {r['mean_P']:.3f} | "
                      f"{r['mean_R']:.3f} | {r['mean_F1']:.3f} | {r['n_words_recall_gt0']} |"
                      for r in sel]
        lines += ["", "Selected hyperparameters (dev split): " + "; ".join(
            f"{n}: {m['params']}" for n, m in fl["models"].items()), ""]
        lines += [
            "Exploration on the dev split only (not in the tables, never run on test; "
            "`python scripts/flickr_crm_temperature_dev.py`, "
            "`benchmarks/results/flickr_crm_temperature_dev.json`): the "
            "posterior temperature that helps on Corel5K also helps the EfficientNet-Lite0 CRM "
            "here. Its best dev mean F1 rises from 0.109 (t = 1) to 0.128 (t 0.2, beta 0.1, mu "
            "0.3, word-prior power 0.5; 271 words, R 0.125, P 0.196), still far below the "
            "neural head's dev F1 of 0.188, so the shipped tagger stays the neural head.", ""]
        lines += ["Highest-recall words (word, recall, precision):", ""]
        for name, m in fl["models"].items():
            lines.append(f"- {name}: " + ", ".join(f"{w} {r:.2f}/{p:.2f}"
                                                   for w, r, p in m["top_words_by_recall"]))
        lines.append("")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    log(f"wrote {REPORT}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--part", choices=["all", "corel", "flickr", "report"], default="all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--features", default="grid,effnet",
                    help="Flickr8K region features to run: grid, effnet (comma-separated)")
    ap.add_argument("--no-neural", action="store_true", help="skip the Flickr8K neural row")
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.part in ("all", "corel"):
        results["corel"] = corel_experiment(args.seed)
    if args.part in ("all", "flickr"):
        kinds = tuple(k for k in args.features.split(",") if k)
        results["flickr"] = flickr_experiment(args.seed, kinds, not args.no_neural,
                                              results.get("flickr"))
    if args.part != "report":
        results.update(
            command=COMMAND + ("" if args.part == "all" else f" --part {args.part}"),
            commit=_git_commit(),
            machine=f"{platform.machine()} CPU, 2 cores (shared)",
            date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            seed=args.seed,
        )
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        if RESULTS.exists() and "flickr" in results:
            # another run may have added Flickr8K rows meanwhile: keep the ones we did not redo
            disk = json.loads(RESULTS.read_text()).get("flickr", {})
            if disk.get("vocabulary") == results["flickr"].get("vocabulary"):
                for key in ("models", "selection"):
                    results["flickr"][key] = {**disk.get(key, {}), **results["flickr"][key]}
        RESULTS.write_text(json.dumps(results, indent=1))
    write_report(results)


if __name__ == "__main__":
    main()
