"""Flickr8K keywords: CRM and CMRM on region features against the shipped neural tagger.

Keywords are caption lemmas (:mod:`xmodal.features.keywords`); hyperparameters are selected on
the official dev split by mean per-word F1 (:mod:`xmodal.eval.selection`), models fit on the
6,000 training images and scored on the 1,000 test images. Results are the ``flickr`` part of
``benchmarks/results/relevance_models.json``. :func:`crm_temperature_dev` is the dev-only
exploration recorded in ``benchmarks/results/flickr_crm_temperature_dev.json``.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from xmodal.eval.selection import best_row, grid, select
from xmodal.models.relevance import CMRM, CRM, RegionSets
from xmodal.reproduce.output import log
from xmodal.reproduce.relevance import (
    annotation,
    retrieval_by_length,
    row,
    summary,
    tempered,
    top_words,
)

FEATURE_NAMES = {"grid": "grid colour+texture (4x4 cells, 30-d)",
                 "effnet": "EfficientNet-Lite0 cells (3x3, PCA 64-d)"}
CRM_BETAS = {"grid": (0.1, 0.2, 0.4), "effnet": (0.1, 0.3)}
NEURAL = "Neural: logistic head on pooled EfficientNet-Lite0 (shipped)"


def tagger_selection(model_dir: Path) -> list[dict]:
    """The dev-selection rows a saved keyword tagger records in its provenance."""
    from xmodal.models.modeldir import read_config

    return read_config(model_dir, "keyword tagger").get("provenance", {}).get("selection", [])


def keyword_data(data=None, splits=("train", "dev", "test")):
    """``(dataset, {split: image ids}, vocabulary, {split: image x keyword matrix})``."""
    from xmodal.data import load_flickr8k
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8 = load_flickr8k(data, judgments=False)
    ids = {s: f8.split(s) for s in splits}
    vocab = build_keyword_vocabulary(f8, ids["train"])
    labels = {s: image_keyword_matrix(f8, i, vocab) for s, i in ids.items()}
    return f8, ids, vocab, labels


def experiment(data=None, seed: int = 0, kinds=("grid", "effnet"), neural: bool = True,
               previous: dict | None = None) -> dict:
    """Flickr8K keyword annotation/retrieval; rows of ``previous`` not rerun are kept."""
    from xmodal.features.regions import flickr8k_region_features

    log("Flickr8K: keyword vocabulary from the training captions")
    f8, splits, vocab, labels = keyword_data(data)
    words = vocab.words
    out: dict = {"vocabulary": vocab.describe(), "models": {}, "selection": {}}
    if previous and previous.get("vocabulary") == out["vocabulary"]:
        out["models"].update(previous.get("models", {}))
        out["selection"].update(previous.get("selection", {}))
    for s, y in labels.items():
        out[f"n_{s}"] = len(y)
        out[f"keywords_per_image_{s}"] = float(y.sum(1).mean())

    for kind in kinds:
        fname, feats = FEATURE_NAMES[kind], flickr8k_region_features(f8, kind)
        idx = {s: np.array([feats["index"][i] for i in ids]) for s, ids in splits.items()}
        reg = {s: RegionSets.from_grid(feats["cells"][idx[s]]) for s in splits}
        log(f"Flickr8K [{fname}]: CRM grid on dev")
        model = CRM().fit(reg["train"], labels["train"], words)
        rows, posts = [], {}
        for beta in CRM_BETAS[kind]:
            model.set_params(beta=beta)
            lp = posts[beta] = model.log_posterior(reg["dev"])
            for mu in (0.3, 1.0):
                model.set_params(mu=mu)
                rows.append(row({"beta": beta, "mu": mu},
                                model.word_scores_from_posterior(lp), labels["dev"], words))
        best = best_row(rows, keys=("beta", "mu"))
        for g in (0.25, 0.5):
            model.set_params(mu=best["mu"], prior_power=g)
            rows.append(row({**best, "prior_power": g},
                            model.word_scores_from_posterior(posts[best["beta"]]),
                            labels["dev"], words))
        best_pp = best_row([r | {"prior_power": r.get("prior_power", 0.0)} for r in rows],
                           keys=("beta", "mu", "prior_power"))
        out["selection"][f"CRM, {fname}"] = rows
        model.set_params(beta=best["beta"], mu=best["mu"], prior_power=0.0)
        lp_test = model.log_posterior(reg["test"])
        _evaluate(out, f"CRM, {fname}", model, reg["test"], labels["test"], words, best,
                  log_posterior=lp_test)
        if best_pp["prior_power"]:
            model.set_params(prior_power=best_pp["prior_power"])
            _evaluate(out, f"CRM, {fname} + word-prior normalisation", model, reg["test"],
                      labels["test"], words, best_pp, retrieval=False, log_posterior=lp_test)
            model.set_params(prior_power=0.0)

        log(f"Flickr8K [{fname}]: CMRM on k-means blobs")
        blobs = kmeans_blobs(feats["cells"], idx, seed)

        def eval_cmrm(p, blobs=blobs):
            m = CMRM(**p).fit(blobs["train"], labels["train"], words)
            return annotation(m.word_scores(blobs["dev"]), labels["dev"], words)

        cgrid = grid({"alpha": [0.1, 0.3, 0.5], "beta": [0.1, 0.5, 0.9]}, smoothing="jm")
        cbest, crows = select(cgrid, eval_cmrm, log=log)
        out["selection"][f"CMRM, {fname}"] = crows
        cm = CMRM(**cbest).fit(blobs["train"], labels["train"], words)
        _evaluate(out, f"CMRM, {fname} (500 k-means blobs)", cm, blobs["test"], labels["test"],
                  words, cbest)

    if neural:
        # the neural row is the shipped `xmodal tag` model (fit on the training split, L2 and
        # word-prior power selected on dev); it must share this vocabulary
        from xmodal.errors import XmodalError
        from xmodal.models.tagger import FLICKR8K_MODEL_DIR, KeywordHead
        from xmodal.recipes.tagger import flickr8k_pooled_features

        head = KeywordHead.load(FLICKR8K_MODEL_DIR)
        if head.vocabulary_ != words:
            raise XmodalError("the shipped tagger has another vocabulary: retrain it with "
                              "xmodal reproduce tagger first")
        pooled = flickr8k_pooled_features(f8)
        x_test = pooled["pooled"][np.array([pooled["index"][i] for i in splits["test"]])]
        out["selection"]["neural"] = tagger_selection(FLICKR8K_MODEL_DIR)
        _evaluate(out, NEURAL, head, x_test, labels["test"], words,
                  {"l2": head.l2, "prior_power": head.prior_power})
    return out


def kmeans_blobs(cells: np.ndarray, idx: dict, seed: int, k: int = 500) -> dict:
    """Blob presence vectors per split: k-means (fit on training cells) over the region cells."""
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


def _evaluate(out, name, model, images, labels, words, params, retrieval=True,
              log_posterior=None) -> None:
    t0 = time.perf_counter()
    if log_posterior is not None:
        s = model.word_scores_from_posterior(log_posterior)
    else:
        s = model.word_scores(images)
    t_ann = time.perf_counter() - t0
    ann = annotation(s, labels, words)
    entry = {"params": params, "annotation": summary(ann),
             "seconds": {"annotation": t_ann}, "top_words_by_recall": top_words(ann)}
    if retrieval:
        ret, t_ret = retrieval_by_length(model, images, labels, max_len=2,
                                         log_posterior=log_posterior)
        entry["retrieval"] = ret
        entry["seconds"]["retrieval_all_queries"] = t_ret
    out["models"][name] = entry
    log(f"  {name}: {summary(ann)}")


def crm_temperature_dev(data=None) -> dict:
    """Does the posterior temperature help the Flickr8K CRM too? Dev split only, never test:
    the CRM on EfficientNet-Lite0 cells over a grid of bandwidth, temperature, Dirichlet mass
    and word-prior power, against the neural head's best dev F1."""
    from xmodal.features.regions import flickr8k_region_features
    from xmodal.models.tagger import FLICKR8K_MODEL_DIR

    f8, splits, vocab, labels = keyword_data(data, ("train", "dev"))
    feats = flickr8k_region_features(f8, "effnet")
    reg = {s: RegionSets.from_grid(feats["cells"][np.array([feats["index"][i] for i in ids])])
           for s, ids in splits.items()}
    model = CRM().fit(reg["train"], labels["train"], vocab.words)
    rows = []
    for beta in (0.1, 0.3, 0.6):
        model.set_params(beta=beta, temperature=1.0)
        lp = model.log_posterior(reg["dev"])
        for t in (0.2, 0.35, 0.5, 0.75, 1.0):
            lpt = tempered(lp, t)
            for mu in (0.3, 1.0):
                model.set_params(mu=mu)
                for g in (0.0, 0.25, 0.5, 0.75, 1.0):
                    model.prior_power = g
                    r = annotation(model.word_scores_from_posterior(lpt), labels["dev"],
                                   vocab.words)
                    rows.append({"beta": beta, "temperature": t, "mu": mu, "prior_power": g,
                                 **{k: float(r[k]) for k in ("n_words_recall_gt0", "mean_R",
                                                             "mean_P", "mean_F1")}})
    best = best_row(rows, by=("mean_F1",))
    best_t1 = best_row([r for r in rows if r["temperature"] == 1.0], by=("mean_F1",))
    neural = best_row(tagger_selection(FLICKR8K_MODEL_DIR), by=("mean_F1",))
    return {"split": "dev (1,000 images), never test", "features": "EfficientNet-Lite0 cells 3x3",
            "best": best, "best_at_temperature_1": best_t1, "neural_head_best_dev": neural,
            "grid": rows}
