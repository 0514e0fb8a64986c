"""Rasiwasia et al. (2010) Tables 3-5 on the Wikipedia dataset, plus KSM and KSM-QE (ours).

1. Hyperparameters are selected by 5-fold stratified cross-validation on the 2,173 training
   documents only (:mod:`xmodal.eval.selection`): the CCA ridge by held-out cross-modal MAP
   (CM, NC); every logistic regression's C by held-out log-loss; KSM-QE's expansion by held-out
   MAP. ``skip_cv`` uses the settings table instead (:mod:`xmodal.recipes.wikipedia`).
2. The models (built from their settings records) are refitted on the training split and
   evaluated on the 693 test images x 693 test texts (relevant = same category).
3. KSM's exploration (the variants tried before it was shipped, by CV MAP on the same folds) and
   the whole run, :func:`xmodal.reproduce.wikipedia_exploration.reproduce`, build on this
   module; ``benchmarks/results/wikipedia_reproduction.json`` holds every number, and
   :mod:`xmodal.reproduce.wikipedia_report` renders the tables, figures and report from it.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
from scipy import sparse

from xmodal.eval.compare import compare
from xmodal.eval.metrics import curves, retrieval_metrics
from xmodal.eval.selection import argbest, fold_average, stratified_kfold
from xmodal.models.cca import LinearCCA
from xmodal.models.distances import similarity
from xmodal.models.rasiwasia import (
    MultinomialLogistic,
    exp_chi2_kernel,
    gaussian_kernel,
    kernel_feature_map,
)
from xmodal.recipes.settings import get_setting
from xmodal.reproduce.output import log

MODELS = ("cm", "sm", "scm", "ksm", "ksm-qe")
# hyperparameter name -> the setting parameters it sets, in the order of the result files
HP_TO_PARAMS: dict[str, dict[str, str]] = {
    "cm": {"reg": "cca_reg"},
    "sm": {"C_image": "sm_C_image", "C_text": "sm_C_text"},
    "scm": {"reg": "cca_reg", "C": "scm_C"},
    "ksm": {"gamma": "ksm_gamma", "C_image": "ksm_C_image", "C_text": "ksm_C_text",
            "n_components": "ksm_n_components"},
    "ksm-qe": {"gamma": "ksm_gamma", "n_components": "ksm_n_components",
               "C_image": "ksm_C_image", "text_gamma": "ksmqe_text_gamma",
               "C_text": "ksmqe_C_text", "expansion_k": "ksmqe_k",
               "expansion_weight": "ksmqe_weight"},
}
HP_KEYS = ("cca_reg", "sm_C_image", "sm_C_text", "scm_C", "ksm_gamma", "ksm_C_image",
           "ksm_C_text", "ksm_n_components", "ksmqe_text_gamma", "ksmqe_C_text", "ksmqe_k",
           "ksmqe_weight")
CV_GRID = {
    "cca_reg": [1e-4, 1e-3, 1e-2, 1e-1, 1.0],
    "sm_C": [3.0, 10.0, 30.0, 100.0],
    "scm_C": [0.1, 1.0, 10.0, 100.0],
    "ksm_gamma": [1.0, 2.0, 4.0],
    "ksm_C_image": [1.0, 3.0, 10.0],
    "ksm_C_text": [0.1, 1.0, 10.0],
    "ksm_n_components": [256, None],
    # KSM-QE (declared before its first test evaluation; image side = KSM's selection)
    "ksmqe_text_gamma": [0.5, 2.0, 8.0],
    "ksmqe_C_text": [1.0, 10.0, 100.0],
    "ksmqe_k": [5, 10, 20, 40, 80],
    "ksmqe_weight": [0.1, 0.2, 0.3, 0.5],
}
# diagnostics (not selection): the paper's setting, and the CCA ridge checked beyond the grid
PAPER_SETTING = {"cca_reg": 1e-3, "scm_C": 10.0}
CCA_REG_BEYOND_GRID = (3.0, 10.0, 100.0)


def cca_dim() -> int:
    return get_setting("cm").params["n_components"]


def relevance(y_query: np.ndarray, y_gallery: np.ndarray) -> sparse.csr_matrix:
    return sparse.csr_matrix(y_query[:, None] == y_gallery[None, :])


def ap_per_query(scores: np.ndarray, y_query: np.ndarray, y_gallery: np.ndarray) -> np.ndarray:
    _, pq = retrieval_metrics(scores, relevance(y_query, y_gallery), per_query=True)
    return pq["MAP"]


def both_maps(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(image-query MAP, text-query MAP) of one images x texts score matrix."""
    return float(np.mean(ap_per_query(s, y, y))), float(np.mean(ap_per_query(s.T, y, y)))


def cv_map(ds, splits, build) -> float:
    """Held-out cross-modal MAP (mean of both directions, then of the folds) of ``build()``
    fitted on each training fold."""
    xi, xt, y = ds.image_train, ds.text_train, ds.labels_train
    maps = []
    for tr, va in splits:
        m = build().fit(xi[tr], xt[tr], y[tr])
        maps.append(np.mean(both_maps(m.score(xi[va], xt[va]), y[va])))
    return float(np.mean(maps))


# -- hyperparameters ------------------------------------------------------------------------------
def default_hyperparameters() -> dict[str, Any]:
    """The values of the settings table (which the cross-validation chose)."""
    hp: dict[str, Any] = {}
    for name, mapping in HP_TO_PARAMS.items():
        params = get_setting(name).params
        for p, h in mapping.items():
            if hp.setdefault(h, params[p]) != params[p]:
                raise RuntimeError(f"settings disagree on {h}: {hp[h]} vs {params[p]} ({name})")
    return {k: hp[k] for k in HP_KEYS}


def build_models(hp: dict, names=MODELS) -> dict[str, Any]:
    """Fresh estimators: each setting record with the hyperparameters ``hp``."""
    return {n: get_setting(n).build(**{p: hp[h] for p, h in HP_TO_PARAMS[n].items()})
            for n in names}


def log_loss(p: np.ndarray, y: np.ndarray, classes: np.ndarray) -> float:
    col = np.searchsorted(classes, y)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), col], 1e-15, 1.0))))


def cv_logistic(features_fn, y, splits, Cs, standardize=False) -> dict[float, float]:
    """Held-out log-loss of a logistic regression for each C; ``features_fn(k, tr, va)`` gives
    the (train, held-out) feature matrices of fold k."""
    def fold(k, tr, va):
        a, b = features_fn(k, tr, va)
        out = {}
        for C in Cs:
            lr = MultinomialLogistic(C, standardize).fit(a, y[tr])
            out[C] = log_loss(lr.predict_proba(b), y[va], lr.classes_)
        return out

    return fold_average(splits, Cs, fold)


def select_hyperparameters(ds, k: int) -> dict:
    """5-fold CV on the training split; the chosen values and every CV number."""
    xi, xt, y = ds.image_train, ds.text_train, ds.labels_train
    splits = stratified_kfold(y, k, seed=0)
    sel: dict = {"folds": k, "grid": CV_GRID, "cv": {}}
    d = cca_dim()

    log("CV: CCA ridge (held-out cross-modal MAP of CM with NC)")
    cv = {reg: cv_map(ds, splits, lambda reg=reg: get_setting("cm").build(n_components=d, reg=reg))
          for reg in CV_GRID["cca_reg"]}
    sel["cv"]["cca_reg"] = cv
    sel["cca_reg"] = reg_best = argbest(cv, "max")

    log("CV: SM logistic regressions (held-out log-loss)")
    for name, x in (("image", xi), ("text", xt)):
        cv = cv_logistic(lambda k, tr, va, x=x: (x[tr], x[va]), y, splits, CV_GRID["sm_C"])
        sel["cv"][f"sm_C_{name}"] = cv
        sel[f"sm_C_{name}"] = argbest(cv, "min")

    log("CV: SCM logistic regressions in the CCA space (held-out log-loss, both modalities)")
    cv = {C: 0.0 for C in CV_GRID["scm_C"]}
    for tr, va in splits:
        cca = LinearCCA(d, reg_best).fit(xi[tr], xt[tr])
        for proj, x in ((cca.transform_x, xi), (cca.transform_y, xt)):
            part = cv_logistic(lambda k, a, b, f=proj, x=x: (f(x[a]), f(x[b])), y, [(tr, va)], cv)
            for C in cv:
                cv[C] += part[C] / len(splits)
    sel["cv"]["scm_C"] = cv
    sel["scm_C"] = argbest(cv, "min")

    log("CV: KSM text classifier (held-out log-loss)")
    cv = cv_logistic(lambda k, tr, va: (xt[tr], xt[va]), y, splits, CV_GRID["ksm_C_text"], True)
    sel["cv"]["ksm_C_text"] = cv
    sel["ksm_C_text"] = argbest(cv, "min")

    log("CV: KSM image classifier, kernel width, rank and C (held-out log-loss)")
    cv = {}
    for gamma in CV_GRID["ksm_gamma"]:
        kern = exp_chi2_kernel(xi, xi, gamma)
        for rank in CV_GRID["ksm_n_components"]:
            maps = []
            for tr, va in splits:
                p, phi = kernel_feature_map(kern[np.ix_(tr, tr)], rank)
                maps.append((phi, kern[np.ix_(va, tr)] @ p))
            part = cv_logistic(lambda k, tr, va, m=maps: m[k], y, splits, CV_GRID["ksm_C_image"])
            for C, v in part.items():
                cv[f"{gamma}/{rank}/{C}"] = v
            log(f"  gamma {gamma}, rank {rank}: "
                + ", ".join(f"C={C}: {v:.4f}" for C, v in part.items()))
    sel["cv"]["ksm_gamma/n_components/C_image"] = cv
    g, r, c = argbest(cv, "min").split("/")
    sel["ksm_gamma"], sel["ksm_C_image"] = float(g), float(c)
    sel["ksm_n_components"] = None if r == "None" else int(r)
    select_ksmqe(ds, splits, sel)
    return sel


def select_ksmqe(ds, splits, sel: dict) -> None:
    """KSM-QE: text kernel width and C by held-out log-loss, then the query expansion (k, weight)
    by held-out cross-modal MAP of the whole model; every fit on training folds only."""
    xi, xt, y = ds.image_train, ds.text_train, ds.labels_train
    log("CV: KSM-QE text kernel classifier (held-out log-loss)")
    cv = {}
    for tg in CV_GRID["ksmqe_text_gamma"]:
        kern = gaussian_kernel(np.sqrt(xt), np.sqrt(xt), tg)
        maps = []
        for tr, va in splits:
            p, phi = kernel_feature_map(kern[np.ix_(tr, tr)], None)
            maps.append((phi, kern[np.ix_(va, tr)] @ p))
        part = cv_logistic(lambda k, tr, va, m=maps: m[k], y, splits, CV_GRID["ksmqe_C_text"])
        cv.update({f"{tg}/{C}": v for C, v in part.items()})
    sel["cv"]["ksmqe_text_gamma/C_text"] = cv
    tg, tc = (float(v) for v in argbest(cv, "min").split("/"))
    sel["ksmqe_text_gamma"], sel["ksmqe_C_text"] = tg, tc

    log("CV: KSM-QE query expansion (held-out cross-modal MAP)")
    fold_models = []
    for tr, va in splits:
        m = get_setting("ksm-qe").build(
            gamma=sel["ksm_gamma"], n_components=sel["ksm_n_components"],
            C_image=sel["ksm_C_image"], C_text=tc, text_gamma=tg).fit(xi[tr], xt[tr], y[tr])
        fold_models.append((m, va))
    cv = {}
    for k in [0] + CV_GRID["ksmqe_k"]:
        for w in ([0.0] if k == 0 else CV_GRID["ksmqe_weight"]):
            maps = []
            for m, va in fold_models:
                m.expansion_k, m.expansion_weight = k, w
                i2t = m.score(xi[va], xt[va], direction="i2t")
                t2i = m.score(xi[va], xt[va], direction="t2i")
                maps.append((np.mean(ap_per_query(i2t, y[va], y[va])),
                             np.mean(ap_per_query(t2i.T, y[va], y[va]))))
            cv[f"{k}/{w}"] = float(np.mean(maps))
    sel["cv"]["ksmqe_k/weight (MAP, higher is better)"] = cv
    k, w = min(cv, key=lambda key: (-cv[key], key)).split("/")
    sel["ksmqe_k"], sel["ksmqe_weight"] = int(k), float(w)


# -- fit, score, analyse --------------------------------------------------------------------------
def fit_and_score(ds, hp: dict, names=MODELS) -> dict[str, dict]:
    """Per model: fit seconds, test embeddings, S, and S per direction (KSM-QE expands each
    direction's queries differently)."""
    out = {}
    y = ds.labels_test
    for n, m in build_models(hp, names).items():
        t = time.time()
        m.fit(ds.image_train, ds.text_train, ds.labels_train)
        fit_s = time.time() - t
        s = m.score(ds.image_test, ds.text_test)
        if getattr(m, "expands_queries", False):
            by_dir = (m.score(ds.image_test, ds.text_test, direction="i2t"),
                      m.score(ds.image_test, ds.text_test, direction="t2i"))
        else:
            by_dir = (s, s)
        out[n] = {"fit_s": fit_s, "emb": (m.embed_images(ds.image_test),
                                          m.embed_texts(ds.text_test)),
                  "scores": s, "by_dir": by_dir}
        log(f"{n}: fitted in {fit_s:.1f}s, MAP "
            f"{(both_maps(by_dir[0], y)[0], both_maps(by_dir[1], y)[1])}")
    return out


def per_query_ap(by_dir: tuple[np.ndarray, np.ndarray], y: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query AP of the image queries (i2t) and the text queries (t2i)."""
    return {"i2t": ap_per_query(by_dir[0], y, y), "t2i": ap_per_query(by_dir[1].T, y, y)}


def confusion(scores: np.ndarray, y_query: np.ndarray, y_gallery: np.ndarray, n: int) -> np.ndarray:
    """Fig. 6: each query goes to the class whose items its ranking retrieves with the highest
    AP; rows = true class, columns = predicted, row-normalised."""
    order = np.argsort(-scores, axis=1, kind="stable")
    g = y_gallery[order]
    ranks = np.arange(1, g.shape[1] + 1)
    ap = np.zeros((len(y_query), n))
    for c in range(n):
        rel = g == c
        ap[:, c] = (np.cumsum(rel, 1) / ranks * rel).sum(1) / max(rel[0].sum(), 1)
    pred = ap.argmax(1)
    m = np.zeros((n, n))
    np.add.at(m, (y_query, pred), 1)
    return m / np.maximum(m.sum(1, keepdims=True), 1)


def image_to_image(s: np.ndarray, y: np.ndarray) -> float:
    """MAP of an image x image score matrix, the query itself left out of its ranking."""
    s = np.array(s, dtype=np.float64)
    np.fill_diagonal(s, s.min() - 1.0)  # last place: it cannot move any relevant item
    rel = y[:, None] == y[None, :]
    np.fill_diagonal(rel, False)
    _, pq = retrieval_metrics(s, sparse.csr_matrix(rel), per_query=True)
    return float(np.nanmean(pq["MAP"]))


TABLE3 = (("cm", ("nc", "centered_nc", "l2", "l1")),
          ("sm", ("nc", "centered_nc", "l1", "kl", "kl_image_text", "l2")),
          ("scm", ("nc", "centered_nc", "kl", "kl_image_text", "l1", "l2")),
          ("ksm", ("dot", "nc", "centered_nc", "kl", "l1")))


def analyses(ds, fitted: dict, rng: np.random.Generator, random_runs: list) -> dict:
    """Tables 3-5, significance against SCM, curves, per-category MAP, confusion matrices."""
    y, n_cls = ds.labels_test, len(ds.categories)
    res: dict = {"table3_rows": [((n, metric), both_maps(similarity(*fitted[n]["emb"], metric), y))
                                 for n, metrics in TABLE3 for metric in metrics]}
    t4 = {"random": {"i2t": float(np.mean([r[0] for r in random_runs])),
                     "t2i": float(np.mean([r[1] for r in random_runs]))}}
    per_q = {}
    res["pr"], res["per_category"], res["confusion"] = {}, {}, {}
    rr = rng.random((len(y), len(y)))
    for n, (s, s_t) in [("random", (rr, rr))] + [(n, f["by_dir"]) for n, f in fitted.items()]:
        per_q[n] = per_query_ap((s, s_t), y)
        if n != "random":
            t4[n] = {d: float(np.mean(per_q[n][d])) for d in ("i2t", "t2i")}
        res["pr"][n] = {"i2t": curves(s, relevance(y, y))["pr"],
                        "t2i": curves(s_t.T, relevance(y, y))["pr"]}
        res["per_category"][n] = {d: [float(np.mean(per_q[n][d][y == c])) for c in range(n_cls)]
                                  for d in ("i2t", "t2i")}
        res["confusion"][n] = {"i2t": confusion(s, y, y, n_cls).tolist(),
                               "t2i": confusion(s_t.T, y, y, n_cls).tolist()}
    for v in t4.values():
        v["avg"] = (v["i2t"] + v["t2i"]) / 2
    res["table4"] = t4
    res["random_seeds_sd"] = np.std(random_runs, axis=0).tolist()
    for pq in per_q.values():
        pq["both"] = np.r_[pq["i2t"], pq["t2i"]]
    tests = dict.fromkeys(("i2t", "t2i", "both"), "randomization")
    res["significance_vs_scm"] = compare(per_q, "scm", tests,
                                         systems=("cm", "sm", "ksm", "ksm-qe"))
    res["ksmqe_vs_ksm_p"] = compare(per_q, "ksm", tests, systems=("ksm-qe",))["ksm-qe"]
    res["table5"] = table5(ds, fitted, rng)
    res["table5_proxy_with_self"] = {"ranking": t4["scm"]["i2t"], "query": t4["scm"]["t2i"]}
    return res


def table5(ds, fitted: dict, rng: np.random.Generator) -> list:
    """Image-to-image retrieval through the proxies of the paper, and baselines."""
    y = ds.labels_test
    scm, ksm = fitted["scm"]["scores"], fitted["ksm"]["scores"]
    sm_img, ksm_img = fitted["sm"]["emb"][0], fitted["ksm"]["emb"][0]
    return [
        ("SCM, proxy text ranking (query image vs the gallery images' texts)",
         image_to_image(scm, y), "0.277"),
        ("SCM, proxy text query (the query image's text vs the gallery images)",
         image_to_image(scm.T, y), "0.226"),
        ("KSM (ours), proxy text ranking", image_to_image(ksm, y), "-"),
        ("KSM (ours), proxy text query", image_to_image(ksm.T, y), "-"),
        ("Image SMN (SM's image logistic regression), NC", image_to_image(
            similarity(sm_img, sm_img, "nc"), y), "0.152"),
        ("Image SMN (KSM's kernel logistic regression), dot", image_to_image(
            similarity(ksm_img, ksm_img, "dot"), y), "-"),
        ("Image SIFT histogram, NC", image_to_image(
            similarity(ds.image_test, ds.image_test, "nc"), y), "0.140"),
        ("Image SIFT histogram, L1", image_to_image(
            similarity(ds.image_test, ds.image_test, "l1"), y), "0.140"),
        ("Random (mean of 10 seeds)", float(np.mean([image_to_image(
            rng.random((len(y), len(y))), y) for _ in range(10)])), "0.117"),
    ]


def diagnostics(ds, sel: dict, fitted: dict) -> dict:
    """Test-set diagnostics, used to select nothing: SM's C against the paper's numbers,
    scikit-learn's iterative CCA in place of the closed-form one, CM and SCM in the paper's
    setting, KSM-QE without query expansion and (with the cross-validation ``sel``) with the
    image classifier that the original rank grid {256} picks; plus :func:`fold_checks`."""
    y = ds.labels_test
    sweep = {}
    for C in (3.0, 10.0, 15.0, 20.0, 30.0, 100.0, 1000.0):
        e = get_setting("sm").build(C_image=C, C_text=C).fit(ds.image_train, ds.text_train,
                                                             ds.labels_train)
        ei, et = e.embed_images(ds.image_test), e.embed_texts(ds.text_test)
        sweep[C] = [both_maps(similarity(ei, et, m), y) for m in ("nc", "l1", "kl")]
    from sklearn.cross_decomposition import CCA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = CCA(n_components=cca_dim(), max_iter=2000).fit(ds.image_train, ds.text_train)
        pi, pt = sk.transform(ds.image_test, ds.text_test)
    out = {"sm_C_sweep": sweep, "cm_sklearn_cca_nc": both_maps(similarity(pi, pt, "nc"), y),
           "paper_setting": paper_setting(ds),
           "ksmqe_no_expansion": both_maps(fitted["ksm-qe"]["scores"], y)}
    if "cv" not in sel:
        return out
    image_256 = {**{k: sel[k] for k in HP_KEYS}, **best_256(sel), "ksm_n_components": 256}
    pq = per_query_ap(fit_and_score(ds, image_256, ("ksm-qe",))["ksm-qe"]["by_dir"], y)
    out["ksmqe_image_256"] = (float(np.mean(pq["i2t"])), float(np.mean(pq["t2i"])))
    return {**out, **fold_checks(ds, sel)}


def paper_setting(ds) -> dict:
    """Test MAP (image query, text query) of CM (NC) and SCM (several distances) with
    :data:`PAPER_SETTING`: a nearly unregularized CCA and weak logistic regressions."""
    y, reg = ds.labels_test, PAPER_SETTING["cca_reg"]
    cm = get_setting("cm").build(reg=reg).fit(ds.image_train, ds.text_train, ds.labels_train)
    scm = get_setting("scm").build(reg=reg, C=PAPER_SETTING["scm_C"]).fit(
        ds.image_train, ds.text_train, ds.labels_train)
    emb = scm.embed_images(ds.image_test), scm.embed_texts(ds.text_test)
    return {**PAPER_SETTING, "cm_nc": both_maps(cm.score(ds.image_test, ds.text_test), y),
            "scm": {m: both_maps(similarity(*emb, m), y)
                    for m in ("nc", "centered_nc", "kl", "kl_image_text", "l1")}}


def best_256(sel: dict) -> dict:
    """KSM's image classifier as the original rank grid {256} would have picked it by CV."""
    cv = sel["cv"]["ksm_gamma/n_components/C_image"]
    g, _, c = min((k for k in cv if k.split("/")[1] == "256"), key=cv.get).split("/")
    return {"ksm_gamma": float(g), "ksm_C_image": float(c)}


def fold_checks(ds, sel: dict) -> dict:
    """On the training folds of ``sel``: the CV MAP of CM beyond the ridge grid and of KSM as
    selected, and the held-out accuracy of the 256-direction image classifier of
    :func:`best_256` and of KSM's text classifier."""
    xi, xt, y = ds.image_train, ds.text_train, ds.labels_train
    splits = stratified_kfold(y, sel["folds"], seed=0)
    log("Diagnostics on the training folds: CCA ridge beyond the grid, KSM's CV MAP, accuracy")
    beyond = {reg: cv_map(ds, splits, lambda reg=reg: get_setting("cm").build(reg=reg))
              for reg in CCA_REG_BEYOND_GRID}
    ksm = cv_map(ds, splits, lambda: build_models(sel, ("ksm",))["ksm"])
    image = best_256(sel)
    kern = exp_chi2_kernel(xi, xi, image["ksm_gamma"])
    acc: dict[str, list[float]] = {"image": [], "text": []}
    for tr, va in splits:
        p, phi = kernel_feature_map(kern[np.ix_(tr, tr)], 256)
        for name, lr, x_va in (
                ("image", MultinomialLogistic(image["ksm_C_image"]).fit(phi, y[tr]),
                 kern[np.ix_(va, tr)] @ p),
                ("text", MultinomialLogistic(sel["ksm_C_text"], True).fit(xt[tr], y[tr]),
                 xt[va])):
            pred = lr.classes_[np.argmax(lr.predict_proba(x_va), axis=1)]
            acc[name].append(float(np.mean(pred == y[va])))
    return {"cca_reg_cv_beyond_grid": beyond, "ksm_cv_map": ksm,
            "heldout_accuracy_256": {k: float(np.mean(v)) for k, v in acc.items()}}
