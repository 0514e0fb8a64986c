"""Corel5K: CMRM (Jeon et al. 2003) and CRM (Lavrenko et al. 2003) annotation and retrieval.

Plain rows are selected on a held-out 500 of the 4,500 training images by mean per-word F1
(:func:`xmodal.eval.selection.select`); the calibrated rows (posterior temperature, word-prior
power) by 5-fold CV on the training set (:mod:`xmodal.reproduce.relevance`); then every model is
refit on the 4,500 images and scored once on the 500 test images. Results are the ``corel``
part of ``benchmarks/results/relevance_models.json``.
"""

from __future__ import annotations

import time

import numpy as np

from xmodal.eval.selection import best_row, grid, holdout, select
from xmodal.models.relevance import CMRM, CRM, blob_embedding, blob_regions
from xmodal.reproduce import corel5k_nested
from xmodal.reproduce.output import log
from xmodal.reproduce.relevance import (
    CMRM_KEYS,
    CRM_KEYS,
    PAPER_CMRM,
    WIDE_CV_GRID,
    annotation,
    cmrm_cv,
    crm_cv,
    retrieval_by_length,
    row,
    summary,
    top_words,
)

WIDE_LABEL = "wide grid, best CV F1, pre-registered"
CRM_WIDE_NAME = ("CRM on blob embeddings + temperature + word-prior normalisation "
                 "(best CV F1, pre-registered)")


def cmrm_checks(d) -> list[dict]:
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


def posterior_check(model, images, truth, kw, word_mask) -> dict:
    """How peaked the posterior over training images is, and what annotation gets from it."""
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


def heldout_selection(b, y, kw, tr, va) -> dict:
    """The plain rows' selection on the held-out 500: CMRM smoothing, CRM (embedding dim,
    bandwidth, Dirichlet mass), then the word-prior power of both."""
    log("Corel5K: CMRM grid on the held-out 500")

    def eval_cmrm(p):
        m = CMRM(**p).fit(b[tr], y[tr], kw)
        return annotation(m.word_scores(b[va]), y[va], kw)

    cmrm_grid = grid({"alpha": [0.1, 0.2, 0.3, 0.5], "beta": [0.1, 0.3, 0.5, 0.7, 0.9]},
                     smoothing="jm")
    cmrm_best, cmrm_rows = select(cmrm_grid, eval_cmrm, log=log)

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
                crm_rows.append(row({"dim": dim, "beta": beta, "mu": mu},
                                    model.word_scores_from_posterior(lp), y[va], kw))
    crm_best = best_row(crm_rows, keys=("dim", "beta", "mu"))
    log("Corel5K: word-prior normalisation (prior_power) on the held-out 500")
    model, lp = cache[(crm_best["dim"], crm_best["beta"])]
    cm_va = CMRM(**cmrm_best).fit(b[tr], y[tr], kw).log_posterior(b[va])
    pp_rows = []
    for g in (0.0, 0.25, 0.5, 0.75):
        model.set_params(mu=crm_best["mu"], prior_power=g)
        pp_rows.append(row({"model": "crm", "prior_power": g},
                           model.word_scores_from_posterior(lp), y[va], kw))
        cm = CMRM(**cmrm_best, prior_power=g).fit(b[tr], y[tr], kw)
        pp_rows.append(row({"model": "cmrm", "prior_power": g},
                           cm.word_scores_from_posterior(cm_va), y[va], kw))
    pick = {m: best_row([r for r in pp_rows if r["model"] == m], keys=("prior_power",))
            ["prior_power"] for m in ("crm", "cmrm")}
    return {"cmrm": cmrm_best, "crm": crm_best, "g_cmrm": pick["cmrm"], "g_crm": pick["crm"],
            "rows": {"cmrm": cmrm_rows, "crm": crm_rows, "prior_power": pp_rows}}


def cv_selection(b, y, kw, seed: int) -> dict:
    """The calibrated rows' 5-fold CV on the training set: the CMRM's best mean F1 and its
    paper-row operating point (highest mean P among settings with >= 66 words of recall > 0 and
    mean R >= 0.09), the pre-registered wide CMRM grid and the pre-registered CRM grid."""
    log("Corel5K: CMRM temperature / word-prior power, 5-fold cross-validation on training")
    cv_rows = cmrm_cv(b, y, kw, seed)
    cv_f1 = best_row(cv_rows)
    feasible = [r for r in cv_rows if r["n_words_recall_gt0"] >= PAPER_CMRM["n_words_recall_gt0"]
                and r["mean_R"] >= PAPER_CMRM["mean_R"]]
    cv_paper = best_row(feasible, by=("mean_P",)) if feasible else None
    log("Corel5K: the pre-registered wide grid, 5-fold cross-validation on training")
    wide_rows = cmrm_cv(b, y, kw, seed, grid=WIDE_CV_GRID)
    log("Corel5K: the pre-registered CRM grid, 5-fold cross-validation on training")
    crm_rows = crm_cv(b, y, kw, seed)
    return {"cmrm_cv": cv_rows, "cmrm_cv_wide": wide_rows, "crm_cv_wide": crm_rows,
            "best CV F1": {k: cv_f1[k] for k in CMRM_KEYS},
            "CV paper-row operating point": (None if cv_paper is None else
                                             {k: cv_paper[k] for k in CMRM_KEYS}),
            WIDE_LABEL: best_row(wide_rows, keys=CMRM_KEYS),
            "crm": best_row(crm_rows, keys=CRM_KEYS)}


def experiment(data=None, seed: int = 0) -> dict:
    """The ``corel`` part of the results: selection rows, every model's test numbers, checks."""
    from xmodal.data import load_corel5k

    d = load_corel5k(data)
    b, y, kw = d.blobs_train, d.labels_train, d.keywords
    tr, va = holdout(len(b), 500, seed)
    h = heldout_selection(b, y, kw, tr, va)
    cmrm_best, crm_best, g_cm, g_crm = h["cmrm"], h["crm"], h["g_cmrm"], h["g_crm"]

    log(f"Corel5K: refit on 4,500 images; CMRM {cmrm_best}, CRM {crm_best}")
    out: dict = {"n_train": len(b), "n_test": len(d.blobs_test), "selection": h["rows"],
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

    cv = cv_selection(b, y, kw, seed)
    out["selection"]["cmrm_cv"] = cv["cmrm_cv"]
    out["selected_cmrm_cv"] = {"mean_F1": cv["best CV F1"],
                               "paper_row": cv["CV paper-row operating point"]}
    out["selection"]["cmrm_cv_wide"] = cv["cmrm_cv_wide"]
    out["selected_cmrm_cv"]["wide_grid_mean_F1"] = cv[WIDE_LABEL]
    for label in ("best CV F1", "CV paper-row operating point", WIDE_LABEL):
        p = cv[label]
        if p is not None:
            runs[f"CMRM + temperature + word-prior normalisation ({label})"] = (
                CMRM(**p, smoothing="jm").fit(b, y, kw), d.blobs_test, p)
    crm_p = cv["crm"]
    out["selection"]["crm_cv_wide"] = cv["crm_cv_wide"]
    out["selected_crm_cv"] = crm_p
    emb64 = blob_embedding(b, y, dim=64)
    runs[CRM_WIDE_NAME] = (CRM(**crm_p, standardize=False).fit(blob_regions(b, emb64), y, kw),
                           blob_regions(d.blobs_test, emb64), {"dim": 64, **crm_p})
    word_mask = y.sum(0) > 0  # test words also seen in training: the paper's 260
    out["cmrm_checks"] = cmrm_checks(d)
    paper = cv["CV paper-row operating point"]
    t_g = ((1.0, 0.0),) + (((paper["temperature"], 0.0),
                            (paper["temperature"], paper["prior_power"]),
                            (1.0, paper["prior_power"])) if paper else ())
    out["cmrm_posterior_checks"] = [
        posterior_check(CMRM(0.1, 0.1, prior_power=g, temperature=t).fit(b, y, kw),
                        d.blobs_test, d.labels_test, kw, word_mask)
        for t, g in t_g]
    for name, (model, images, params) in runs.items():
        out["models"][name] = evaluate_model(model, images, d.labels_test, kw, params, word_mask,
                                             retrieval=not ("normalisation" in name
                                                            and "temperature" not in name))
        log(f"  {name}: {out['models'][name]['annotation']}")
    return out


def evaluate_model(model, images, labels, kw, params, word_mask=None, retrieval: bool = True,
                   max_len: int = 4) -> dict:
    """A model's test row: annotation (top 5), retrieval by query length, timings."""
    t0 = time.perf_counter()
    s = model.word_scores(images)
    t_ann = time.perf_counter() - t0
    ann = annotation(s, labels, kw, word_mask)
    ret, t_ret = retrieval_by_length(model, images, labels, max_len) if retrieval else (None, None)
    return {"params": params, "annotation": summary(ann), "retrieval": ret,
            "seconds": {"annotation": t_ann, "retrieval_all_queries": t_ret},
            "top_words_by_recall": top_words(ann)}


PARTS = ("all", "corel", "flickr", "report", "nested", "nested-cmrm", "nested-crm",
         "flickr-temperature")


def reproduce(part: str = "all", data=None, seed: int = 0, features=("grid", "effnet"),
              neural: bool = True, out=None, command: str = "xmodal reproduce corel5k") -> dict:
    """Run ``part`` and return the results of ``relevance_models.json`` in ``out``.

    ``all`` = ``corel`` + ``flickr`` (``relevance_models.json``); ``nested``, ``nested-cmrm``,
    ``nested-crm``: :mod:`xmodal.reproduce.corel5k_nested` (``corel_nested_cv.json``, about
    30 minutes); ``flickr-temperature``: the dev-only CRM exploration
    (``flickr_crm_temperature_dev.json``); ``report``: nothing to compute (the command renders
    the report from the JSON, :mod:`xmodal.reproduce.relevance_report`). Rows of a previous
    result file that a part does not redo are kept.
    """
    from pathlib import Path

    from xmodal.errors import XmodalError
    from xmodal.reproduce.output import RESULTS, read_json, stamp, write_json

    if part not in PARTS:
        raise XmodalError(f"unknown part {part!r}; choose from {PARTS}")
    out = Path(out or RESULTS)
    results_file, nested_file = out / "relevance_models.json", out / "corel_nested_cv.json"
    if part.startswith("nested"):
        run_nested(part, data, nested_file, command)
    elif part == "flickr-temperature":
        from xmodal.reproduce.keywords_flickr import crm_temperature_dev
        from xmodal.reproduce.output import record

        record("flickr_crm_temperature_dev", crm_temperature_dev(data), command, out)
    results = read_json(results_file)
    if part in ("all", "corel"):
        results["corel"] = experiment(data, seed)
    if part in ("all", "flickr"):
        from xmodal.reproduce.keywords_flickr import experiment as flickr_experiment

        results["flickr"] = flickr_experiment(data, seed, tuple(features), neural,
                                              results.get("flickr"))
    if part in ("all", "corel", "flickr"):
        st = stamp(command)
        results.update(command=command, commit=st["git_commit"], machine=st["machine"],
                       date=st["date"], seed=seed)
        if results_file.exists() and "flickr" in results:
            # another run may have added Flickr8K rows meanwhile: keep the ones we did not redo
            disk = read_json(results_file).get("flickr", {})
            if disk.get("vocabulary") == results["flickr"].get("vocabulary"):
                for key in ("models", "selection"):
                    results["flickr"][key] = {**disk.get(key, {}), **results["flickr"][key]}
        write_json(results_file, results)
    return results


def run_nested(part: str, data, path, command: str) -> dict:
    """The nested CV parts; the other part's results in ``path`` are kept."""
    from xmodal.data import load_corel5k
    from xmodal.reproduce.output import read_json, stamp, write_json

    N = corel5k_nested
    d = load_corel5k(data)
    b, y, kw = d.blobs_train, d.labels_train, d.keywords
    res = read_json(path)
    if part in ("nested", "nested-cmrm"):
        t = time.time()
        res.update(N.nested_cmrm(b, y, kw))
        res.update(stamp(command), elapsed_s=time.time() - t, paper_row=PAPER_CMRM)
        print(N.table(res["summary"]))
    if part in ("nested", "nested-crm"):
        t = time.time()
        res["crm"] = {**N.nested_crm(b, y, kw), **stamp(command), "elapsed_s": time.time() - t}
        print(N.table(res["crm"]["summary"]))
    write_json(path, res)
    return res
