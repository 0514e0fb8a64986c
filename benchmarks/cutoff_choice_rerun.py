"""The default model's cutoff choice, rerun on dev after a change to how it embeds queries.

The shipped cutoff (threshold, then a share of the best match) was chosen on the short-query
dev benchmark by :func:`xmodal.recipes.calibration.short_query_cutoff`. Its probability map
comes from the Flickr8K judgments and does not depend on how short queries are routed, but
the choice reads the dev benchmark's short, absent and sentence queries, and a change to the
route (``short_text.max_words``) moves some of them. This reruns the dev half of that choice
alone, with the recorded recall-first threshold as the floor's source (the evaluation half of
the judgments is not read), and says whether it still picks what the shipped calibrator holds.

    python -m benchmarks.cutoff_choice_rerun [--models dual]

Writes ``benchmarks/results/cutoff_choice_rerun.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

from benchmarks._record import record

REPO = Path(__file__).resolve().parents[1]
RESULTS = {"dual": "calibration", "fast": "calibration_fast"}
KEEP = ("threshold", "relative", "f1_mean", "oracle_f1_mean", "right_shown_share",
        "precision_of_shown", "absent_no_good_match_share", "sentence_right_photo_shown_share")


def brief(row: dict) -> dict:
    return {k: row[k] for k in KEEP if k in row}


def run_model(spec: str) -> dict:
    from xmodal.factory import load_embedding_model
    from xmodal.index.calibration import load_calibrator
    from xmodal.index.photo_index import model_id
    from xmodal.recipes import calibration as R

    model = load_embedding_model(None if spec == "dual" else spec)
    key = model_id(model, None if spec == "dual" else spec)
    shipped = load_calibrator(key)
    recorded = json.loads((REPO / "benchmarks" / "results" / f"{RESULTS[spec]}.json")
                          .read_text())["results"]["short_queries"]
    start = copy.deepcopy(shipped)  # the probability map as shipped, the recall-first threshold
    start.threshold, start.relative = recorded["recall_first"]["threshold"], 0.0
    now = R.short_query_cutoff(model, key, start)
    chosen = now["chosen"]
    return {"model_id": key, "short_max_words": getattr(model, "short_max_words_", None),
            "recorded": {"recall_first": brief(recorded["recall_first"]),
                         "chosen": brief(recorded["chosen"])},
            "now": {"recall_first": brief(now["recall_first"]), "chosen": brief(chosen),
                    "with_relative": brief(chosen["with_relative"]), "map": now["map"]},
            "shipped": {"threshold": shipped.threshold, "relative": shipped.relative},
            "same_choice": (abs(chosen["threshold"] - shipped.threshold) < 1e-12
                            and chosen["relative"] == shipped.relative)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["dual"], choices=sorted(RESULTS))
    args = ap.parse_args(argv)
    results = {"models": {m: run_model(m) for m in args.models}}
    path = record("cutoff_choice_rerun", results)
    for m, r in results["models"].items():
        c = r["now"]["with_relative"]
        print(f"{m}: threshold {r['now']['chosen']['threshold']:.6f}, relative {c['relative']} "
              f"(shipped {r['shipped']['threshold']:.6f}, {r['shipped']['relative']}): same "
              f"choice {r['same_choice']}; F1 {c['f1_mean']:.4f}, right shown "
              f"{c['right_shown_share']:.3f}, sentences {c['sentence_right_photo_shown_share']}")
    print(path)


if __name__ == "__main__":
    main()
