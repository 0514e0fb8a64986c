"""Does the posterior temperature help the Flickr8K CRM too? Dev split only, never test.

The CRM on EfficientNet-Lite0 cells (3x3, as in ``reproduce_relevance.py``) is fit on the
Flickr8K training split; for every bandwidth, temperature, Dirichlet mass and word-prior power
of a small grid, top-5 annotation of the dev split is scored by mean per-word F1. Compare with
the neural head's best dev F1 (``src/xmodal/assets/tag/config.json``).

    python scripts/flickr_crm_temperature_dev.py     # about 1 minute with cached features

Writes ``benchmarks/results/flickr_crm_temperature_dev.json``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from benchmarks._record import record  # noqa: E402
from reproduce_relevance import _tempered, annotation  # noqa: E402

from xmodal.data import load_flickr8k  # noqa: E402
from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix  # noqa: E402
from xmodal.features.regions import flickr8k_region_features  # noqa: E402
from xmodal.models.relevance import CRM, RegionSets  # noqa: E402
from xmodal.models.tagger import DEFAULT_MODEL_DIR  # noqa: E402


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8 = load_flickr8k(judgments=False)
    splits = {s: f8.split(s) for s in ("train", "dev")}
    vocab = build_keyword_vocabulary(f8, splits["train"])
    labels = {s: image_keyword_matrix(f8, ids, vocab) for s, ids in splits.items()}
    feats = flickr8k_region_features(f8, "effnet")
    reg = {s: RegionSets.from_grid(feats["cells"][np.array([feats["index"][i] for i in ids])])
           for s, ids in splits.items()}
    model = CRM().fit(reg["train"], labels["train"], vocab.words)
    rows = []
    for beta in (0.1, 0.3, 0.6):
        model.set_params(beta=beta, temperature=1.0)
        lp = model.log_posterior(reg["dev"])
        for t in (0.2, 0.35, 0.5, 0.75, 1.0):
            lpt = _tempered(lp, t)
            for mu in (0.3, 1.0):
                model.set_params(mu=mu)
                for g in (0.0, 0.25, 0.5, 0.75, 1.0):
                    model.prior_power = g
                    r = annotation(model.word_scores_from_posterior(lpt), labels["dev"],
                                   vocab.words)
                    rows.append({"beta": beta, "temperature": t, "mu": mu, "prior_power": g,
                                 **{k: float(r[k]) for k in ("n_words_recall_gt0", "mean_R",
                                                             "mean_P", "mean_F1")}})
    best = max(rows, key=lambda r: r["mean_F1"])
    best_t1 = max((r for r in rows if r["temperature"] == 1.0), key=lambda r: r["mean_F1"])
    neural = max(json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())["selection"],
                 key=lambda r: r["mean_F1"])
    print("best:", best, "\nbest at t = 1:", best_t1, "\nneural head (dev):", neural)
    print(record("flickr_crm_temperature_dev", {
        "split": "dev (1,000 images), never test", "features": "EfficientNet-Lite0 cells 3x3",
        "best": best, "best_at_temperature_1": best_t1, "neural_head_best_dev": neural,
        "grid": rows}))


if __name__ == "__main__":
    main()
