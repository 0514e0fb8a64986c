"""How far the "no good match" targets are from what the models and people reach (issue 31,
item 4), on the calibration's **fitting half only** (the evaluation half is not read).

The targets ask that, at one cutoff, at least 80% of shown judged pairs be matches and at least
70% of judged matches be shown. Thresholding a calibrated probability shows the same pairs as
thresholding the raw score, so what a calibrator can reach is fixed by the score's ranking of
the judged pairs. This measures, for each shipped model's search score (the score matrices the
calibration recipe caches):

* the best precision of any cutoff that shows at least 70% of the judged matches, the best
  recall of any cutoff whose precision is at least 80%, and the AUC;
* the same on the pairs judged by both the crowd and the experts, beside the ceiling set by
  people: how well the crowd's label (yes fraction >= 0.5) predicts the experts' (mean >= 3) on
  those pairs, and the model's precision at the crowd's recall.

    python -m benchmarks.calibration_ceiling [--data DIR] [--cache DIR]

Writes ``benchmarks/results/calibration_ceiling.json``. The score matrices are computed (about 2
minutes per model) when ``$XMODAL_CACHE/calibration`` lacks them.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from benchmarks._record import record


def best_precision_and_recall(scores, labels, precision: float, recall: float) -> dict:
    """Best precision of a cutoff (show score >= t) that keeps ``recall`` of the matches, best
    recall of one whose precision is ``precision``, and the ROC AUC."""
    from sklearn.metrics import precision_recall_curve, roc_auc_score

    p, r, _ = precision_recall_curve(labels, scores)
    keep = r >= recall
    sure = p >= precision
    return {"pairs": int(len(labels)), "matches": int(np.sum(labels)),
            "auc": float(roc_auc_score(labels, scores)),
            f"best_precision_at_recall_{recall}": float(p[keep].max()),
            f"best_recall_at_precision_{precision}": float(r[sure].max()) if sure.any() else 0.0}


def precision_at_recall(scores, labels, recall: float) -> float:
    from sklearn.metrics import precision_recall_curve

    p, r, _ = precision_recall_curve(labels, scores)
    return float(p[r >= recall].max())


def main(argv: list[str] | None = None) -> None:
    from xmodal.data import load_flickr8k
    from xmodal.paths import cache_dir
    from xmodal.recipes import calibration as R

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="data root or flickr8k folder")
    ap.add_argument("--cache", type=Path, default=None,
                    help="score-matrix cache (default $XMODAL_CACHE/calibration)")
    args = ap.parse_args(argv)
    cache = args.cache or cache_dir() / "calibration"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_flickr8k(args.data)
    pairs = R.judged_pairs(data.expert, data.crowd)
    fit_ids, _ = R.split_images({p.image_id for p in pairs}, R.SEED)
    fit_set = set(fit_ids)
    fit_pairs = [p for p in pairs if p.image_id in fit_set]
    labels = np.array([p.label for p in fit_pairs])
    both = np.array([p.source == "both" for p in fit_pairs])
    crowd = np.array([p.crowd_label if p.crowd_label is not None else -1 for p in fit_pairs])
    expert, crowd_b = labels[both], crowd[both]
    agree = int(np.sum((expert == 1) & (crowd_b == 1)))
    people = {"pairs": int(both.sum()), "expert_matches": int(expert.sum()),
              "crowd_matches": int(crowd_b.sum()), "both_match": agree,
              "precision": agree / int(crowd_b.sum()), "recall": agree / int(expert.sum())}
    results = {"half": "fitting (the evaluation half is not read)", "seed": R.SEED,
               "targets": {"precision_at_least": R.TARGET_PRECISION,
                           "recall_at_least": R.TARGET_RECALL},
               "crowd_label_predicting_the_expert_label": people, "models": {}}
    for name in R.MODELS:
        res, _ = R.compute(args.data, cache, fit_only=True, model_name=name)
        s, image_ids, caption_ids = R.cached_scores(res["model_id"], cache)
        scores = R.pair_arrays(fit_pairs, s, image_ids, caption_ids)[0]
        results["models"][name] = {
            "model_id": res["model_id"],
            "all_judged_pairs": best_precision_and_recall(
                scores, labels, R.TARGET_PRECISION, R.TARGET_RECALL),
            "pairs_judged_by_both": {
                **best_precision_and_recall(scores[both], expert, R.TARGET_PRECISION,
                                            R.TARGET_RECALL),
                "precision_at_the_crowds_recall": precision_at_recall(
                    scores[both], expert, people["recall"])}}
    path = record("calibration_ceiling", results)
    print(path)
    print({"people": people, **{k: v["all_judged_pairs"] for k, v in results["models"].items()}})


if __name__ == "__main__":
    main()
