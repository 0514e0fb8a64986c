"""The Wikipedia reproduction's whole run (:func:`reproduce`) and KSM's exploration, recomputed:
the variants tried before KSM was shipped, compared by held-out cross-modal MAP on the training
folds of the selection, plus the numbers the report quotes beside them (SM's CV MAP over C, two
earlier test MAPs, the timing of KSM-QE's fitting steps).

:func:`exploration` runs after the selection of :mod:`xmodal.reproduce.wikipedia`; nothing here
selects a shipped hyperparameter. Results go to ``exploration`` in
``wikipedia_reproduction.json``; CV MAP keys are ``variant/parameters`` as listed in :data:`GRID`.
The report is rendered from the JSON by :mod:`xmodal.reproduce.wikipedia_report` (the command
calls it; nothing here imports it).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from xmodal.data import load_wikipedia
from xmodal.eval.selection import stratified_kfold
from xmodal.models.distances import similarity
from xmodal.models.rasiwasia import (
    ExpandedKernelSemanticMatching,
    MultinomialLogistic,
    exp_chi2_kernel,
    gaussian_kernel,
    kernel_feature_map,
)
from xmodal.recipes.settings import get_setting
from xmodal.reproduce.output import log, stamp, write_json
from xmodal.reproduce.wikipedia import (
    HP_KEYS,
    analyses,
    ap_per_query,
    best_256,
    both_maps,
    build_models,
    cv_map,
    default_hyperparameters,
    diagnostics,
    fit_and_score,
    select_hyperparameters,
)

# The variants' parameters (KSM's gamma and image C are the selection's unless given here).
GRID = {
    "ranks": [1024, 512, 256],
    "rank1024_C": [1.0, 2.0, 5.0],
    "rank1024_gamma": 1.0,
    "concat_gammas": [1.0, 2.0, 4.0],
    "concat_rank": 256,
    "concat_C": [1.0, 3.0],
    "svm_gamma": 2.0,
    "svm_C": 1.0,
    "sqrt_lr_C": [0.003, 0.01, 0.03],
    "powers": [0.5, 1.0, 1.5, 2.0, 3.0],
    "prf_k": [5, 10, 20],
    "prf_weight": [0.25, 0.5, 1.0],
    "fusion_lambda": [0.05, 0.1, 0.2, 0.4],
    "sm_C": [3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
}
TEXT_FEATURES = {"topics": lambda t: t, "log": np.log, "sqrt": np.sqrt}


def exploration(ds, sel: dict, fitted: dict) -> dict:
    """Everything of this module for the cross-validation ``sel`` (its folds and choices) and the
    test-set models ``fitted`` of :func:`~xmodal.reproduce.wikipedia.fit_and_score`."""
    hp = {k: sel[k] for k in HP_KEYS}
    splits = stratified_kfold(ds.labels_train, sel["folds"], seed=0)
    log("Exploration: KSM's variants by held-out MAP on the training folds")
    t = time.time()
    cv = variants_cv(ds, hp, splits)
    log(f"  {len(cv)} variants in {time.time() - t:.0f}s")
    return {"exploration": {"grid": GRID, "cv_map": cv, "sm_cv_map": sm_cv_map(ds, splits),
                            "test_map": test_maps(ds, sel, fitted),
                            "kernel_step_s": kernel_step_seconds(ds, hp)}}


# -- held-out MAP of the variants -----------------------------------------------------------------
def variants_cv(ds, hp: dict, splits) -> dict[str, float]:
    """Held-out cross-modal MAP (mean of both directions, then of the folds) of every variant."""
    gammas = sorted({hp["ksm_gamma"], GRID["rank1024_gamma"], GRID["svm_gamma"],
                     *GRID["concat_gammas"]})
    kernels = {g: exp_chi2_kernel(ds.image_train, ds.image_train, g) for g in gammas}
    y = ds.labels_train
    folds = []
    for tr, va in splits:
        scores = fold_scores(ds, hp, kernels, tr, va)
        folds.append({name: _map(pair, y[va]) for name, pair in scores.items()})
    return {name: float(np.mean([f[name] for f in folds])) for name in folds[0]}


def sm_cv_map(ds, splits) -> dict[str, float]:
    """Held-out cross-modal MAP of SM (NC) with both modalities at each C of ``GRID["sm_C"]``."""
    return {str(C): cv_map(ds, splits, lambda C=C: get_setting("sm").build(C_image=C, C_text=C))
            for C in GRID["sm_C"]}


def _map(pair: tuple[np.ndarray, np.ndarray], y: np.ndarray) -> float:
    """Mean of the image-query MAP of ``pair[0]`` and the text-query MAP of ``pair[1]``."""
    return float((np.mean(ap_per_query(pair[0], y, y)) + np.mean(ap_per_query(pair[1].T, y, y)))
                 / 2)


def fold_scores(ds, hp: dict, kernels: dict, tr, va) -> dict[str, tuple]:
    """Held-out (i2t, t2i) score matrices of every variant, fitted on the fold's part ``tr``."""
    img = image_posteriors(ds, hp, kernels, tr, va)
    t, y, txt = ds.text_train, ds.labels_train, {}
    for name, f in TEXT_FEATURES.items():
        lr = MultinomialLogistic(hp["ksm_C_text"], True).fit(f(t[tr]), y[tr])
        txt[name] = lr.predict_proba(f(t[va]))
    base = img.pop("all")
    s = {name: p @ txt["topics"].T for name, p in img.items()}
    s.update({f"text/{name}": img["rank/256"] @ txt[name].T for name in ("log", "sqrt")})
    s.update({f"power/{a}/{b}": _power(base, a) @ _power(txt["topics"], b).T
              for a in GRID["powers"] for b in GRID["powers"]})
    s.update(fusions(ds, hp, s["rank/256"], tr, va))
    out = {k: (v, v) for k, v in s.items()}
    out.update(feedback(base, txt["topics"]))
    return out


def image_posteriors(ds, hp: dict, kernels: dict, tr, va) -> dict[str, np.ndarray]:
    """Held-out image SMNs of the image classifiers tried (``"all"``: KSM as shipped)."""
    y = ds.labels_train
    maps = {g: _feature_map(k, tr, va) for g, k in kernels.items()}
    g, c, r = hp["ksm_gamma"], hp["ksm_C_image"], GRID["concat_rank"]
    concat = tuple(np.hstack([maps[cg][i][:, :r] for cg in GRID["concat_gammas"]]) for i in (0, 1))
    fits = {"all": (maps[g], hp["ksm_n_components"], c),
            **{f"rank/{n}": (maps[g], n, c) for n in GRID["ranks"]},
            **{f"rank1024_C/{C}": (maps[g], 1024, C) for C in GRID["rank1024_C"]},
            f"rank1024_gamma/{GRID['rank1024_gamma']}": (maps[GRID["rank1024_gamma"]], 1024, c),
            **{f"concat_C/{C}": (concat, None, C) for C in GRID["concat_C"]}}
    out = {name: MultinomialLogistic(C).fit(a[:, :n], y[tr]).predict_proba(b[:, :n])
           for name, ((a, b), n, C) in fits.items()}
    out["svm"] = _svm(kernels[GRID["svm_gamma"]], y, tr, va)
    x = np.sqrt(ds.image_train)
    for C in GRID["sqrt_lr_C"]:
        p = MultinomialLogistic(C, True).fit(x[tr], y[tr]).predict_proba(x[va])
        out[f"sqrt_lr_C/{C}"], out[f"svm+sqrt_lr/{C}"] = p, (p + out["svm"]) / 2
    scm = build_models(hp, ("scm",))["scm"].fit(ds.image_train[tr], ds.text_train[tr], y[tr])
    out["svm+scm"] = (scm.embed_images(ds.image_train[va]) + out["svm"]) / 2
    return out


def _feature_map(kern: np.ndarray, tr, va) -> tuple[np.ndarray, np.ndarray]:
    """The fold's kernel feature map with all directions, (training part, held-out part); its
    first r columns are the r-direction map."""
    p, phi = kernel_feature_map(kern[np.ix_(tr, tr)], None)
    return phi, kern[np.ix_(va, tr)] @ p


def _svm(kern: np.ndarray, y: np.ndarray, tr, va) -> np.ndarray:
    """Held-out posteriors of an SVM on a precomputed kernel, with Platt probabilities."""
    from sklearn.svm import SVC

    svm = SVC(C=GRID["svm_C"], kernel="precomputed", probability=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # `probability` (scikit-learn >= 1.9)
        return svm.fit(kern[np.ix_(tr, tr)], y[tr]).predict_proba(kern[np.ix_(va, tr)])


def _power(p: np.ndarray, a: float) -> np.ndarray:
    q = p ** a
    return q / q.sum(1, keepdims=True)


def _z(s: np.ndarray) -> np.ndarray:
    return (s - s.mean()) / s.std()


def fusions(ds, hp: dict, ksm: np.ndarray, tr, va) -> dict[str, np.ndarray]:
    """z(KSM) + lambda z(SCM or CM), each model's own score, on the fold's held-out part."""
    x, t, y = ds.image_train, ds.text_train, ds.labels_train
    out = {}
    for name, m in build_models(hp, ("scm", "cm")).items():
        other = _z(m.fit(x[tr], t[tr], y[tr]).score(x[va], t[va]))
        out.update({f"fusion_{name}/{lam}": _z(ksm) + lam * other
                    for lam in GRID["fusion_lambda"]})
    return out


def feedback(pi: np.ndarray, pt: np.ndarray) -> dict[str, tuple]:
    """Pseudo-relevance feedback on KSM's SMNs (KSM-QE's expansion), per direction."""
    out = {}
    for k in GRID["prf_k"]:
        for w in GRID["prf_weight"]:
            qe = ExpandedKernelSemanticMatching(expansion_k=k, expansion_weight=w)
            out[f"prf/{k}/{w}"] = (similarity(qe._expand(pi, pt, "dot"), pt, "dot"),
                                   similarity(pi, qe._expand(pt, pi, "dot"), "dot"))
    return out


# -- test MAPs and timings ------------------------------------------------------------------------
def test_maps(ds, sel: dict, fitted: dict) -> dict[str, tuple[float, float]]:
    """Test MAP (image query, text query) of KSM with the 256-direction image classifier that the
    rank grid {256} picks, and of the chi-squared SVM (Platt) with KSM's text classifier."""
    y, hp = ds.labels_test, {k: sel[k] for k in HP_KEYS}
    ksm = fit_and_score(ds, {**hp, **best_256(sel), "ksm_n_components": 256}, ("ksm",))
    x = np.vstack([ds.image_train, ds.image_test])
    n = len(ds.image_train)
    p = _svm(exp_chi2_kernel(x, x, GRID["svm_gamma"]), np.r_[ds.labels_train, y],
             np.arange(n), np.arange(n, len(x)))
    return {"ksm_256": both_maps(ksm["ksm"]["scores"], y),
            "chi2_svm": both_maps(similarity(p, fitted["ksm"]["emb"][1], "dot"), y)}


def kernel_step_seconds(ds, hp: dict) -> dict[str, dict[str, float]]:
    """Wall seconds of KSM-QE's fitting steps per modality on the training split: the kernel,
    its eigendecomposition (kernel feature map) and the logistic regression."""
    xi, xt = ds.image_train, np.sqrt(ds.text_train)
    steps = {"image": (lambda: exp_chi2_kernel(xi, xi, hp["ksm_gamma"]),
                       hp["ksm_n_components"], hp["ksm_C_image"]),
             "text": (lambda: gaussian_kernel(xt, xt, hp["ksmqe_text_gamma"]), None,
                      hp["ksmqe_C_text"])}
    out = {}
    for name, (kernel, rank, C) in steps.items():
        t0 = time.perf_counter()
        k = kernel()
        t1 = time.perf_counter()
        _, phi = kernel_feature_map(k, rank)
        t2 = time.perf_counter()
        MultinomialLogistic(C).fit(phi, ds.labels_train)
        out[name] = {"kernel": t1 - t0, "eigendecomposition": t2 - t1,
                     "fit": time.perf_counter() - t2}
    return out


def reproduce(out: Path, data=None, folds: int = 5, skip_cv: bool = False,
              command: str = "xmodal reproduce wikipedia") -> dict:
    """The whole reproduction: selection (unless ``skip_cv``: the settings table's values), the
    test-set models, the analyses and the exploration; writes ``wikipedia_reproduction.json`` to
    ``out`` and returns the result dict."""
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    t0 = time.time()
    ds = load_wikipedia(data)
    y = ds.labels_test
    sel = default_hyperparameters() if skip_cv else select_hyperparameters(ds, folds)
    hp = {k: sel[k] for k in HP_KEYS}
    log(f"hyperparameters: {hp}")
    if hp != default_hyperparameters():
        log(f"NOTE: CV choice differs from the settings table {default_hyperparameters()}")
    fitted = fit_and_score(ds, hp)
    rng = np.random.default_rng(0)
    random_runs = [both_maps(rng.random((len(y), len(y))), y) for _ in range(10)]
    res: dict = {**stamp(command, short_commit=False), "selection": sel, "hyperparameters": hp,
                 "fit_seconds": {n: f["fit_s"] for n, f in fitted.items()},
                 "categories": ds.categories}
    res.update(analyses(ds, fitted, rng, random_runs))
    res.update(diagnostics(ds, sel, fitted))
    if "cv" in sel:
        res.update(exploration(ds, sel, fitted))
    res["elapsed_s"] = time.time() - t0
    res["table3_rows"] = [{"model": m, "distance": d, "i2t": v[0], "t2i": v[1]}
                          for (m, d), v in res["table3_rows"]]
    res["sm_C_sweep"] = {str(C): dict(zip(("nc", "l1", "kl"), v))
                         for C, v in res["sm_C_sweep"].items()}
    write_json(Path(out) / "wikipedia_reproduction.json", res)
    log(f"done in {res['elapsed_s']:.0f}s")
    return res
