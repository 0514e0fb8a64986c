"""A cutoff relative to the best match, chosen on the short-query dev benchmark (issue 40).

With each shipped model's threshold fixed, a result is also hidden when its probability is
below a share of the best match's probability in the library ("a horse": the horse at 73%, then
dogs at 9%, 3%, 2% ...). The share is chosen among ``RELATIVE_GRID`` by the rule that chose the
threshold (:func:`xmodal.recipes.calibration.choose_relative`): the highest mean F1 of the
default answer on short queries (40 random 100-photo libraries of Flickr8K + CC18K dev photos,
k = 10), among shares that show sentences' right photo at least as often as the recall-first
threshold did (recorded in ``benchmarks/results/calibration*.json``); ties go to the smaller
share. Dev data only; the probability map and threshold are unchanged.

    python -m benchmarks.relative_cutoff [--models dual fast] [--write]
    python -m benchmarks.relative_cutoff --figure-only   # redraw the figure from the JSON

Writes ``benchmarks/results/relative_cutoff.json`` and draws ``docs/relative_cutoff.png`` from
it; with ``--write``, also the chosen share into each model's shipped ``calibration.json``
(``relative``).
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

from benchmarks._record import record

REPO = Path(__file__).resolve().parents[1]
MODELS = {"dual": "calibration", "fast": "calibration_fast"}
RESULT = REPO / "benchmarks" / "results" / "relative_cutoff.json"
FIGURE = REPO / "docs" / "relative_cutoff.png"


def run_model(spec: str, cache: Path) -> dict:
    from xmodal.eval import short_queries as sqm
    from xmodal.factory import load_embedding_model
    from xmodal.index.calibration import load_calibrator
    from xmodal.index.photo_index import model_id
    from xmodal.recipes import calibration as R

    model = load_embedding_model(None if spec == "dual" else spec)
    key = model_id(model, None if spec == "dual" else spec)
    cal = load_calibrator(key)
    recorded = json.loads((REPO / "benchmarks" / "results" / f"{MODELS[spec]}.json")
                          .read_text())["results"]["short_queries"]
    sentences_at_least = recorded["recall_first"]["sentence_right_photo_shown_share"]
    sq, S, libs, slibs = R.short_query_scores(model, key, cache)
    chosen, curve = R.choose_relative(sq, S, cal, cal.threshold, libs, slibs, sentences_at_least)
    return {"model_id": key, "threshold": cal.threshold,
            "sentences_at_least": sentences_at_least, "grid": list(R.RELATIVE_GRID),
            "chosen": chosen, "curve": curve, "map": sqm.mean_ap(sq, S)["map"]}


def write_asset(result: dict, command: str) -> Path:
    from xmodal.index.calibration import asset_path, load_calibrator

    cal = load_calibrator(result["model_id"])
    cal.relative = float(result["chosen"]["relative"])
    cal.provenance["relative_rule"] = (
        "with the threshold fixed, the share of the best match's probability (among "
        f"{result['grid']}) with the highest short-query dev F1 among those that show "
        f"sentences' right photo at least {result['sentences_at_least']:.4f} of the time "
        f"(the recall-first threshold's); {command}; benchmarks/results/relative_cutoff.json")
    path = asset_path(result["model_id"])
    path.write_text(cal.to_json())
    return path


def render_figure(results_path: Path = RESULT, figure: Path = FIGURE) -> Path:
    """One panel per model: the default answer on the short-query dev benchmark against the
    share of the best match below which results are hidden, the sentence floor and the choice."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = json.loads(Path(results_path).read_text())["results"]["models"]
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 4.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], models.items()):
        rows = sorted(r["curve"], key=lambda row: row["relative"])
        x = [row["relative"] for row in rows]
        for key, label, colour in (
                ("f1_mean", "short queries: mean F1", "tab:blue"),
                ("right_shown_share", "short queries: right photos shown", "tab:green"),
                ("precision_of_shown", "short queries: precision of what is shown", "tab:orange"),
                ("absent_no_good_match_share", "absent subjects: 'no good match'", "tab:red"),
                ("sentence_right_photo_shown_share", "sentences: right photo shown",
                 "tab:purple")):
            ax.plot(x, [row[key] for row in rows], marker="o", ms=3, color=colour, label=label)
        ax.axhline(r["sentences_at_least"], color="tab:purple", lw=0.8, ls="--",
                   label=f"sentences' floor ({r['sentences_at_least']:.1%})")
        ax.axvline(r["chosen"]["relative"], color="black", lw=1, ls=":",
                   label=f"chosen by F1: {r['chosen']['relative']}")
        ax.set(ylim=(0, 1), xlabel="hidden below this share of the best match's relevance",
               ylabel="share / F1",
               title=f"{name} ({r['model_id']}), threshold {r['threshold']:.4f}")
        ax.legend(fontsize=7, loc="center right", bbox_to_anchor=(1.0, 0.70), framealpha=0.85)
    fig.suptitle("The cutoff relative to the best match, short-query dev benchmark "
                 "(100-photo libraries, k = 10)")
    fig.tight_layout()
    Path(figure).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure, dpi=110)
    plt.close(fig)
    return Path(figure)


def main(argv: list[str] | None = None) -> None:
    from xmodal.eval import short_queries as sqm
    from xmodal.paths import cache_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--write", action="store_true",
                    help="write the chosen share into the shipped calibration files")
    ap.add_argument("--figure-only", action="store_true",
                    help="only redraw docs/relative_cutoff.png from the recorded JSON")
    args = ap.parse_args(argv)
    if args.figure_only:
        print(render_figure())
        return
    cache = cache_dir() / "short_queries"
    models = {m: run_model(m, cache) for m in args.models}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {"set": sqm.build(cache=cache).summary(), "models": models}
    path = record("relative_cutoff", results)
    for m, r in results["models"].items():
        c = r["chosen"]
        print(f"{m}: relative {c['relative']} at threshold {r['threshold']:.4f}: F1 "
              f"{c['f1_mean']:.3f} / oracle {c['oracle_f1_mean']:.3f}, right shown "
              f"{c['right_shown_share']:.1%}, precision {c['precision_of_shown']:.2f}, absent "
              f"no-match {c['absent_no_good_match_share']:.0%}, sentences shown "
              f"{c['sentence_right_photo_shown_share']:.1%}")
        if args.write:
            print(write_asset(r, "python -m benchmarks.relative_cutoff --write"))
    print(path)
    print(render_figure(path))


if __name__ == "__main__":
    main()
