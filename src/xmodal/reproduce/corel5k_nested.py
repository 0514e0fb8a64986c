"""Nested cross-validation of the Corel5K selection rules on the *training* set only.

The 4,500 training images are cut into 9 outer folds of 500 (the test set's size); for each,
the rules are applied to a 5-fold CV on the other 4,000 images exactly as
:mod:`xmodal.reproduce.corel5k` applies them to the full training set, and the chosen model is
scored on the held-out 500 (vocabulary: the held-out words also seen in the 4,000). Parts:
``cmrm`` (the first two CMRM rules, the fixed reference settings and the pre-registered wide-grid
rule) and ``crm`` (the pre-registered CRM rule). Each pre-registered rule is also applied to the
whole training set (seed 0) to fix the setting then evaluated once on the test set. Nothing here
reads the test set. Results: ``benchmarks/results/corel_nested_cv.json``.
"""

from __future__ import annotations

import numpy as np

from xmodal.eval.selection import best_row, kfold
from xmodal.models.relevance import CMRM, CRM, blob_embedding, blob_regions
from xmodal.reproduce.output import log
from xmodal.reproduce.relevance import (
    CMRM_KEYS,
    CRM_KEYS,
    CRM_WIDE_CV_GRID,
    PAPER_CMRM,
    WIDE_CV_GRID,
    annotation,
    cmrm_cv,
    crm_cv,
)

METRICS = ("n_words_recall_gt0", "mean_R", "mean_P", "mean_F1")
WIDE_RULE = "calibrated CMRM, wide grid, best CV F1 (pre-registered)"
CRM_RULE = "CRM on blob embeddings + temperature + word-prior power, best CV F1 (pre-registered)"
N_OUTER, OUTER_SEED = 9, 1


def rules(cv_rows: list[dict], wide_rows: list[dict]) -> dict[str, dict]:
    """The CMRM selection rules of the Corel5K reproduction, plus the fixed reference settings."""
    f1 = best_row(cv_rows)
    feasible = [r for r in cv_rows if r["n_words_recall_gt0"] >= PAPER_CMRM["n_words_recall_gt0"]
                and r["mean_R"] >= PAPER_CMRM["mean_R"]]
    out = {
        "CMRM, Jeon et al. setting (alpha 0.1, beta 0.9)":
            {"alpha": 0.1, "beta": 0.9, "temperature": 1.0, "prior_power": 0.0},
        "CMRM, tuned plain (alpha 0.1, beta 0.1)":
            {"alpha": 0.1, "beta": 0.1, "temperature": 1.0, "prior_power": 0.0},
        "calibrated CMRM, best CV F1": {k: f1[k] for k in CMRM_KEYS},
    }
    if feasible:
        out["calibrated CMRM, CV paper-row operating point"] = best_row(
            feasible, by=("mean_P",), keys=CMRM_KEYS)
    out[WIDE_RULE] = best_row(wide_rows, keys=CMRM_KEYS)
    return out


def _scored(m, images, y_va, kw, mask, p) -> dict:
    r = annotation(m.word_scores(images), y_va, kw, mask)
    return {"params": p, **{k: float(r[k]) for k in METRICS}}


def nested_cmrm(b, y, kw) -> dict:
    folds = []
    for o, (tr, va) in enumerate(kfold(len(b), N_OUTER, OUTER_SEED)):
        chosen = rules(cmrm_cv(b[tr], y[tr], kw, seed=o),
                       cmrm_cv(b[tr], y[tr], kw, seed=o, grid=WIDE_CV_GRID))
        mask = y[tr].sum(0) > 0
        res = {name: _scored(CMRM(**p, smoothing="jm").fit(b[tr], y[tr], kw), b[va], y[va], kw,
                             mask, p) for name, p in chosen.items()}
        folds.append(fold_record(o, y[va], mask, res))
    wide_rows = cmrm_cv(b, y, kw, seed=0, grid=WIDE_CV_GRID)
    selected = best_row(wide_rows, keys=CMRM_KEYS)
    log(f"wide-grid CMRM rule on the whole training set selects {selected}")
    return {"summary": summarize(folds), "folds": folds,
            "wide_grid": {k: list(v) for k, v in WIDE_CV_GRID.items()},
            "preregistered_full_training_selection": selected,
            "preregistered_full_training_cv_top": sorted(wide_rows,
                                                         key=lambda r: -r["mean_F1"])[:8]}


def nested_crm(b, y, kw) -> dict:
    folds = []
    for o, (tr, va) in enumerate(kfold(len(b), N_OUTER, OUTER_SEED)):
        p = best_row(crm_cv(b[tr], y[tr], kw, seed=o), keys=CRM_KEYS)
        emb = blob_embedding(b[tr], y[tr], dim=64)
        m = CRM(**p, standardize=False).fit(blob_regions(b[tr], emb), y[tr], kw)
        mask = y[tr].sum(0) > 0
        res = {CRM_RULE: _scored(m, blob_regions(b[va], emb), y[va], kw, mask, p)}
        folds.append(fold_record(o, y[va], mask, res))
    rows = crm_cv(b, y, kw, seed=0)
    selected = best_row(rows, keys=CRM_KEYS)
    log(f"CRM rule on the whole training set selects {selected}")
    return {"summary": summarize(folds), "folds": folds,
            "grid": {k: list(v) for k, v in CRM_WIDE_CV_GRID.items()}, "dim": 64,
            "preregistered_full_training_selection": selected,
            "preregistered_full_training_cv_top": sorted(rows, key=lambda r: -r["mean_F1"])[:8]}


def fold_record(o: int, y_va, mask, res: dict) -> dict:
    n_vocab = int((y_va.sum(0) > 0)[mask].sum())
    log(f"outer fold {o + 1}/{N_OUTER}: vocabulary {n_vocab}; " + "; ".join(
        f"{n}: {v['n_words_recall_gt0']:.0f} / {v['mean_R']:.3f} / {v['mean_P']:.3f}"
        for n, v in res.items()))
    return {"fold": o, "n_vocabulary": n_vocab, "results": res}


def summarize(folds: list[dict]) -> dict:
    """Per rule: folds meeting the paper's CMRM row, means and minima over the outer folds."""
    summary = {}
    for n in folds[0]["results"]:
        rows = [f["results"][n] for f in folds if n in f["results"]]
        meets = sum(all(r[k] >= v for k, v in PAPER_CMRM.items()) for r in rows)
        summary[n] = {
            "folds": len(rows),
            "meets_paper_row": int(meets),
            **{f"{k}_mean": float(np.mean([r[k] for r in rows])) for k in METRICS},
            **{f"{k}_min": float(np.min([r[k] for r in rows])) for k in METRICS[:3]},
        }
    return summary


def table(summary: dict) -> str:
    """The nested-CV summary as a Markdown table."""
    lines = ["| Model (rule applied inside each outer fold) | folds meeting the paper's CMRM row | "
             "#words R>0 (mean, min) | mean R (mean, min) | mean P (mean, min) |",
             "|---|---|---|---|---|"]
    for n, s in summary.items():
        lines.append(f"| {n} | {s['meets_paper_row']} / {s['folds']} | "
                     f"{s['n_words_recall_gt0_mean']:.1f}, {s['n_words_recall_gt0_min']:.0f} | "
                     f"{s['mean_R_mean']:.3f}, {s['mean_R_min']:.3f} | "
                     f"{s['mean_P_mean']:.3f}, {s['mean_P_min']:.3f} |")
    return "\n".join(lines)
