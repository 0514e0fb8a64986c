"""``xmodal reproduce NAME``: rerun a report's numbers; JSON to benchmarks/results/, tables from it.

Thin: each command parses its options and calls :mod:`xmodal.reproduce`.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from xmodal.cli._app import app, console
from xmodal.paths import figures_dir, reports_dir, results_dir

RESULTS, REPORTS, FIGURES = results_dir(), reports_dir(), figures_dir()

reproduce_app = typer.Typer(
    help="Reproduce the numbers of a report in reports/: write its JSON to benchmarks/results/ "
    "and its tables from that JSON (one code path for every number a user sees).\n\n"
    "Examples:\n\n  xmodal reproduce wikipedia --skip-cv\n\n  xmodal reproduce corel5k --part corel"
    "\n\n  xmodal reproduce hodosh --systems bow5-effnet,tri5sem-effnet --singles '' --out /tmp/h"
    "\n\n  xmodal reproduce gist --report-only\n\n  xmodal reproduce dual",
    no_args_is_help=True,
)
app.add_typer(reproduce_app, name="reproduce")

DATA = typer.Option(None, "--data", help="Data root (or the dataset folder); default $XMODAL_DATA.")
OUT = typer.Option(RESULTS, "--out", help="Folder for the result JSON (benchmarks/results).")


def _command(name: str, **flags) -> str:
    """The command line recorded in the results (only the options that were given)."""
    parts = [f"xmodal reproduce {name}"]
    for k, v in flags.items():
        if v is True:
            parts.append(f"--{k.replace('_', '-')}")
        elif v not in (None, False, "", ()):
            vals = v if isinstance(v, (list, tuple)) else [v]
            parts.append(f"--{k.replace('_', '-')} " + " ".join(str(x) for x in vals))
    return " ".join(parts)


@reproduce_app.command("wikipedia")
def wikipedia(
    data: Path = DATA,
    folds: int = typer.Option(5, "--folds", help="Cross-validation folds on the training split."),
    skip_cv: bool = typer.Option(False, "--skip-cv",
                                 help="Use the settings table's hyperparameters (no selection)."),
    cv_only: bool = typer.Option(False, "--cv-only", help="Run the training-set selection, "
                                 "print it as JSON and stop (no test data used)."),
    plots_only: bool = typer.Option(False, "--plots-only",
                                    help="Redraw the figures from the saved JSON and stop."),
    report_only: bool = typer.Option(False, "--report-only", help="Rewrite the tables and the "
                                     "report from the saved JSON (in --out) and stop."),
    out: Path = OUT,
    figures: Path = typer.Option(FIGURES, "--figures", help="Folder for the figures."),
    report: Path = typer.Option(REPORTS / "wikipedia.md", "--report",
                                help="The report to write."),
) -> None:
    """Rasiwasia et al. (2010) Tables 3-5 on Wikipedia, plus KSM and KSM-QE (reports/wikipedia.md).

    Writes wikipedia_reproduction.json and wikipedia_tables.md to --out, the figures to
    --figures and the report (rendered from the JSON; not with --skip-cv, which has no selection
    to report) to --report. 10-16 minutes on 2 cores, most of it the cross-validation; about 2
    with --skip-cv; seconds with --report-only.

    Examples:

      xmodal reproduce wikipedia

      xmodal reproduce wikipedia --report-only

      xmodal reproduce wikipedia --skip-cv --out /tmp/wiki --figures /tmp/wiki
    """
    from xmodal.reproduce import wikipedia as W
    from xmodal.reproduce.output import read_json
    from xmodal.reproduce.wikipedia_report import plots, write_report

    if report_only:
        write_report(out, report)
        console.print(f"wrote {report} and {out / 'wikipedia_tables.md'}")
        return
    if plots_only:
        saved = read_json(out / "wikipedia_reproduction.json")
        plots(saved, saved["categories"], figures)
        console.print(f"figures redrawn in {figures}")
        return
    if cv_only:
        from xmodal.data import load_wikipedia

        sel = W.select_hyperparameters(load_wikipedia(data), folds)
        print(json.dumps({"hyperparameters": {k: sel[k] for k in W.HP_KEYS}, "cv": sel["cv"]},
                         indent=1, default=str))
        return
    from xmodal.reproduce.wikipedia_exploration import reproduce

    res = reproduce(out, data, folds, skip_cv,
                    _command("wikipedia", skip_cv=skip_cv, folds=None if folds == 5 else folds))
    Path(figures).mkdir(parents=True, exist_ok=True)
    plots(res, res["categories"], Path(figures))
    write_report(out, None if skip_cv else report)
    written = "wikipedia_tables.md" if skip_cv else f"wikipedia_tables.md and {report}"
    console.print(f"wrote {out / 'wikipedia_reproduction.json'}, {written} "
                  f"({res['elapsed_s']:.0f} s)")


@reproduce_app.command("corel5k")
def corel5k(
    part: str = typer.Option("all", "--part", help="all (= corel + flickr), corel, flickr, "
                             "report, nested, nested-cmrm, nested-crm, flickr-temperature."),
    data: Path = DATA,
    seed: int = typer.Option(0, "--seed", help="Seed of the held-out split and the CV folds."),
    features: str = typer.Option("grid,effnet", "--features",
                                 help="Flickr8K region features to run: grid, effnet "
                                 "(comma-separated; '' for none)."),
    no_neural: bool = typer.Option(False, "--no-neural", help="Skip the Flickr8K neural row."),
    out: Path = OUT,
    report: Path = typer.Option(REPORTS / "relevance_models.md", "--report",
                                help="The Markdown report to write."),
    figures: Path = typer.Option(FIGURES, "--figures", help="Folder for the figure."),
) -> None:
    """CMRM and CRM on Corel5K and Flickr8K keywords (reports/relevance_models.md).

    Results go to relevance_models.json (and corel_nested_cv.json for the nested parts,
    flickr_crm_temperature_dev.json for flickr-temperature) in --out; the report is rewritten
    from them after every part. --part corel takes a few minutes on 2 cores, the nested parts
    about 30 minutes.

    Examples:

      xmodal reproduce corel5k --part corel

      xmodal reproduce corel5k --part flickr --features effnet --no-neural

      xmodal reproduce corel5k --part report
    """
    from xmodal.reproduce.corel5k import reproduce
    from xmodal.errors import XmodalError
    from xmodal.reproduce.relevance_report import FIGURE_NAME, write_report

    kinds = tuple(k for k in features.split(",") if k)
    cmd = _command("corel5k", part=None if part == "all" else part,
                   features=None if features == "grid,effnet" else repr(features),
                   no_neural=no_neural, seed=seed or None)
    reproduce(part, data, seed, kinds, not no_neural, out, cmd)
    try:
        write_report(out, report, Path(figures) / FIGURE_NAME)
    except XmodalError as exc:  # a partial run in a fresh --out: its JSON is written
        console.print(f"results in {out}; report not written: {exc}")
        return
    console.print(f"wrote {report}")


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [v for v in value.split(",") if v]


@reproduce_app.command("hodosh")
def hodosh(
    part: str = typer.Option("main", "--part", help="main: every system on the 8K test pools; "
                             "originals: the original-resolution photos against our 224-px "
                             "copies (issue 18); originals-report: rewrite that section of the "
                             "report from its JSON; explore: the variations of BoW5 and Tri5Sem "
                             "tried on the dev pool (\"What was tried\"); report: rewrite the "
                             "whole report from the stored JSON (seconds)."),
    systems: str = typer.Option(None, "--systems", help="Comma-separated systems (setting names "
                                "without 'hodosh-'); default: every system of the report "
                                "(--part originals: bow5,tagrank,tri5,tri5sem; --part explore: "
                                "the explorations, e.g. bow5-d3,tri5sem-d8)."),
    singles: str = typer.Option(None, "--singles", help="KCCA systems also evaluated as their "
                                "single best dev model (default: every KCCA system; '' none)."),
    data: Path = DATA,
    out: Path = OUT,
    report: Path = typer.Option(REPORTS / "hodosh.md", "--report", help="The report to write."),
    figures: Path = typer.Option(FIGURES, "--figures", help="Folder for the R@K figure."),
    extra: Path = typer.Option(None, "--extra", help="Markdown inserted after the preamble."),
    originals: Path = typer.Option(None, "--originals", help="--part originals: the folder of "
                                   "the original photos (Images/ and captions.txt, or data/ "
                                   "holding them); default ../data/flickr8k-originals beside "
                                   "the repository ($XMODAL_FLICKR8K_ORIGINALS)."),
    conditions: str = typer.Option(None, "--conditions", help="--part originals: copies to run "
                                   "(default 224,originals,originals@224,224@448)."),
) -> None:
    """Hodosh et al. (2013) on flickr8k-hodosh, -crowd and expert scores (reports/hodosh.md).

    Systems are trained (or loaded from $XMODAL_CACHE/hodosh) through their settings records;
    77 minutes on 2 cores from an empty cache (measured; benchmarks/results/
    hodosh_rerun_check.json), seconds once the cache holds the kernels and systems. Writes
    hodosh_reproduction.json to --out.

    --part explore trains variations of BoW5 and Tri5Sem (kappas, diagonal factors, p, landmarks,
    rank) and scores them on the dev pool only; writes hodosh_exploration.json.

    --part originals runs the same pipeline on 1,000 original-resolution photos and on our
    224-px copies of them (official split of the set and 8-fold cross-validation, paired tests,
    kernel comparison; about 15 minutes), writes hodosh_originals.json to --out and rewrites
    only its section of --report.

    Examples:

      xmodal reproduce hodosh

      xmodal reproduce hodosh --systems bow5-effnet,tri5sem-effnet --singles ''
      --out /tmp/h --figures /tmp/h   # a subset: its JSON and figure, no report

      xmodal reproduce hodosh --part originals --originals ../data/flickr8k-originals

      xmodal reproduce hodosh --part explore   # minutes once the main run's cache is full

      xmodal reproduce hodosh --part report

      xmodal reproduce hodosh --part originals --systems bow5 --conditions 224,originals
      --out /tmp/h --report /tmp/h/hodosh.md
    """
    from xmodal.reproduce.hodosh_report import report_text, write_originals_section
    from xmodal.reproduce.output import read_json

    if part not in ("main", "originals", "originals-report", "explore", "report"):
        raise typer.BadParameter(f"unknown part {part!r}; choose main, originals, "
                                 "originals-report, explore or report", param_hint="--part")
    if part in ("originals", "originals-report"):
        from xmodal.reproduce.hodosh_originals import RESULT
        from xmodal.reproduce.hodosh_originals import reproduce as originals_run

        if part == "originals":
            originals_run(originals, _names(systems), _names(conditions), data=data, out=out,
                          command=_command("hodosh", part=part, systems=systems,
                                           conditions=conditions, originals=originals))
        payload = read_json(out / f"{RESULT}.json")
        if not payload:
            raise typer.BadParameter(f"no {RESULT}.json in {out}; run --part originals")
        main = read_json(out / "hodosh_reproduction.json") or read_json(
            RESULTS / "hodosh_reproduction.json")
        write_originals_section(report, payload, main)
        console.print(f"wrote {report}")
        return
    if part == "explore":
        from xmodal.reproduce.hodosh_explore import reproduce as explore_run

        explore_run(_names(systems), data, out, _command("hodosh", part=part, systems=systems))
        console.print(f"wrote {out / 'hodosh_exploration.json'}")
    if part == "main":
        from xmodal.reproduce.hodosh import plot_recall_curves, reproduce

        cmd = _command("hodosh", systems=systems,
                       singles=None if singles is None else repr(singles), extra=extra)
        res = reproduce(_names(systems), _names(singles), data, out, cmd)
        plot_recall_curves(res, figures / "hodosh_recall_at_k.png")
        if systems:  # a subset: its numbers are in the JSON, the report needs every system
            console.print(f"wrote {out / 'hodosh_reproduction.json'}")
            return
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(report_text(out, extra.read_text() if extra and part == "main" else ""))
    console.print(f"wrote {report}")


@reproduce_app.command("gist")
def gist(
    fresh: bool = typer.Option(False, "--fresh", help="Recompute the cached queries and "
                               "candidates."),
    limit: int = typer.Option(None, "--limit", help="Use only the first N test images (a quick "
                              "check: nothing is written)."),
    no_auto_captions: bool = typer.Option(False, "--no-auto-captions", help="Skip the "
                                          "automatic-caption rows (they need the training "
                                          "images' features: about 1 h on an empty cache)."),
    report_only: bool = typer.Option(False, "--report-only",
                                     help="Rewrite the report from the saved JSON and stop."),
    data: Path = DATA,
    out: Path = OUT,
    report: Path = typer.Option(REPORTS / "gist.md", "--report", help="The report to write."),
    asset: Path = typer.Option(None, "--asset", help="Where to save the final ranker (default: "
                               "the shipped one, xmodal/assets/gist/ranker)."),
) -> None:
    """Literal gist on Flickr8K: the rows of reports/gist.md and the shipped gist ranker.

    15-25 minutes on 2 busy cores; queries and candidates are cached, so a rerun redoes only
    the cross-validation and the report. Writes gist.json to --out.

    Examples:

      nice -n 10 xmodal reproduce gist

      xmodal reproduce gist --limit 50 --no-auto-captions

      xmodal reproduce gist --report-only
    """
    from xmodal.reproduce.gist import reproduce
    from xmodal.reproduce.gist_report import write_report
    from xmodal.reproduce.render import load_results

    if report_only:
        write_report(load_results(out, ["gist"], "reports/gist.md",
                                  "run `xmodal reproduce gist`")["gist"], report)
        console.print(f"wrote {report}")
        return
    res = reproduce(fresh, limit, not no_auto_captions, data, out, asset,
                    _command("gist", fresh=fresh, limit=limit,
                             no_auto_captions=no_auto_captions))
    if limit is not None:
        print(json.dumps(res, indent=1, default=float))
    else:
        write_report(res, report)
        console.print(f"wrote {report}, {out / 'gist.json'} and the ranker")


@reproduce_app.command("dual")
def dual(
    no_eval: bool = typer.Option(False, "--no-eval", help="Skip the test tables (the shipped "
                                 "model and the zero-shot bridge on the three protocols)."),
    ood: str = typer.Option("dual", "--ood", help="Models of the out-of-domain check "
                            "(comma-separated; '' to skip)."),
    variants: str = typer.Option("", "--variants", help="Training variants to compare on dev "
                                 "and test, e.g. base,lit,drop4ep60 (minutes each)."),
    ensembles: str = typer.Option("", "--ensembles", help="Second-round variants, dev only, "
                                  "e.g. shipped,ep30,ens2_hn5."),
    max_train: int = typer.Option(6000, "--max-train", help="Training images for --variants."),
    bridge_temperature: str = typer.Option("", "--bridge-temperature", help="First round: the "
                                           "zero-shot bridge on dev with each softmax "
                                           "temperature over the ImageNet classes, e.g. "
                                           "0.5,1,2 (seconds)."),
    broader: str = typer.Option("", "--broader", help="Third-round variants (broader data, "
                                "stronger encoders; dev only), e.g. cc,cc_lite2_mpnet."),
    models_dir: Path = typer.Option(None, "--models-dir", help="Also save each --broader "
                                    "model in this folder (NAME/; --finetune: "
                                    "finetune_LR_flipP/)."),
    finetune: str = typer.Option("", "--finetune", help="Fifth round: stage-2 runs from the "
                                 "shipped model, one per learning rate of the image tower's "
                                 "head conv (0: the frozen control), e.g. 0,3e-5 (dev only)."),
    finetune_epochs: int = typer.Option(6, "--finetune-epochs", help="Epochs of each "
                                        "--finetune run."),
    finetune_flip: float = typer.Option(0.5, "--finetune-flip", help="Share of mirrored "
                                        "images in --finetune runs (0: no mirrored cache)."),
    finetune_from: Path = typer.Option(None, "--finetune-from", help="The stage-1 model the "
                                       "--finetune runs start from (the fourth round's shipped "
                                       "model; xmodal train dual --no-stage2 makes one)."),
    querybank: str = typer.Option("", "--querybank", help="Sixth round: querybank "
                                  "normalisation of the shipped model (dual-qb), one dev line "
                                  "per beta, e.g. 10,20,30,40,50, plus smaller banks at the "
                                  "best (dev only; needs CC18k)."),
    image_bank: str = typer.Option("", "--image-bank", help="Seventh round: the querybank "
                                   "shipped inside the model (every training image, on its top "
                                   "DIM principal directions, int8), one dev line per DIM and "
                                   "beta (--querybank's betas, else 10-50), e.g. 64,128,256 "
                                   "(dev only; needs CC18k)."),
    previous: bool = typer.Option(False, "--previous", help="Also score the earlier default "
                                  "models on the test protocols, from their files in the git "
                                  "history (the comparison rows of the test tables)."),
    train_cli: str = typer.Option(None, "--train-cli", help="Also run `xmodal train dual` as a "
                                  "user would and record its time and how far its arrays are "
                                  "from the shipped ones: 'full' (both stages, ~35 min) or a "
                                  "stage-1 model folder (stage 2 from it, ~12 min)."),
    report_only: bool = typer.Option(False, "--report-only", help="Rewrite the tables and the "
                                     "report from the saved JSON (in --out) and stop."),
    data: Path = DATA,
    out: Path = OUT,
    report: Path = typer.Option(REPORTS / "dual_encoder.md", "--report",
                                help="The report to write."),
) -> None:
    """The dual encoder's numbers (reports/dual_encoder.md): test tables, OOD check, variants.

    Writes dual_encoder.json (parts not rerun are kept) and dual_encoder_tables.md to --out,
    and the report, rendered from them and the other results in --out that it cites, to
    --report. Features come from the disk cache (fill it once with
    scripts/train_dual_features.py). Seconds with --report-only.

    Examples:

      xmodal reproduce dual

      xmodal reproduce dual --report-only

      xmodal reproduce dual --no-eval --ood '' --variants base,lit,drop4ep60

      xmodal reproduce dual --no-eval --ood '' --bridge-temperature 0.5,1,2

      OMP_NUM_THREADS=2 xmodal reproduce dual --no-eval --ood '' --ensembles shipped,ens2_hn5

      xmodal reproduce dual --no-eval --ood '' --broader f8k,cc,cc_lite2_mpnet --models-dir m

      xmodal reproduce dual --no-eval --ood '' --finetune 0,3e-4 --finetune-from m/stage1

      xmodal reproduce dual --ood dual,dual-qb --querybank 10,20,30,40,50

      xmodal reproduce dual --no-eval --ood '' --image-bank 64,128,256

      xmodal reproduce dual --no-eval --ood '' --previous

      xmodal reproduce dual --no-eval --ood '' --train-cli full
    """
    from xmodal.errors import XmodalError
    from xmodal.reproduce.dual import reproduce
    from xmodal.reproduce.dual_report import write_report

    if report_only:
        write_report(out, report)
        console.print(f"wrote {report} and {out / 'dual_encoder_tables.md'}")
        return
    cmd = _command("dual", no_eval=no_eval, ood=None if ood == "dual" else repr(ood),
                   variants=variants, ensembles=ensembles,
                   max_train=None if max_train == 6000 else max_train, broader=broader,
                   finetune=finetune,
                   finetune_epochs=None if finetune_epochs == 6 else finetune_epochs,
                   finetune_flip=None if finetune_flip == 0.5 else finetune_flip,
                   querybank=querybank, image_bank=image_bank, previous=previous,
                   train_cli=train_cli, bridge_temperature=bridge_temperature)
    reproduce(not no_eval, tuple(_names(ood)), tuple(_names(variants)), tuple(_names(ensembles)),
              max_train, data, out, cmd, broader_names=tuple(_names(broader)),
              models_dir=models_dir,
              finetune_lrs=tuple(float(x) for x in _names(finetune)),
              finetune_epochs=finetune_epochs, finetune_flip=finetune_flip,
              finetune_from=finetune_from,
              querybank_betas=tuple(float(x) for x in _names(querybank)),
              image_bank_dims=tuple(int(x) for x in _names(image_bank)), previous=previous,
              train_cli_from=None if train_cli is None else
              (train_cli if train_cli == "full" else Path(train_cli)),
              bridge_temperature=tuple(float(x) for x in _names(bridge_temperature)))
    console.print(f"wrote {out / 'dual_encoder.json'}")
    try:
        write_report(out, report)
    except XmodalError as exc:  # the JSON and its tables are written: the run is not lost
        console.print(f"{report} not rewritten: {exc}")
    console.print(f"wrote {out / 'dual_encoder_tables.md'}")


@reproduce_app.command("mitl")
def mitl(
    data: Path = DATA,
    out: Path = OUT,
    work: Path = typer.Option(None, "--work", help="Folder for the campaign databases "
                              "(default: a temporary folder)."),
    report: Path = typer.Option(REPORTS / "mitl_flickr8k.md", "--report",
                                help="The report to write."),
    figures: Path = typer.Option(FIGURES, "--figures", help="Folder for the figures."),
) -> None:
    """The missing-positives study on the Flickr8K Hodosh pool (reports/mitl_flickr8k.md).

    Runs the whole MITL loop twice, with simulated crowd and expert judges (recorded Flickr8K
    judgments), and writes mitl_flickr8k_{crowd,expert}.json to --out, the yield figures to
    --figures and the report's tables. About 2 minutes with warm feature caches.

    Example: xmodal reproduce mitl --work /tmp/mitl
    """
    from xmodal.reproduce.mitl import reproduce
    from xmodal.reproduce.mitl_findings import write_report

    reproduce(_command("mitl", work=work), data, work, out, figures,
              log=lambda m: console.print(f"[dim]{m}[/]"))
    write_report(out, report)
    console.print(f"wrote {report}")


@reproduce_app.command("tagger")
def tagger(
    data: Path = DATA,
    cc_data: Path = typer.Option(None, "--cc-data", help="CC18K folder (default: "
                                 "$XMODAL_CC_DATA or ../data/cc18k beside the repository)."),
    out: Path = OUT,
    report: Path = typer.Option(REPORTS / "tagger.md", "--report", help="The report to write."),
    model_out: Path = typer.Option(None, "--model-out", help="Where to save the new tagger "
                                   "(default: $XMODAL_CACHE/tagger/...)."),
    install: bool = typer.Option(False, "--install", help="Also replace the shipped tagger "
                                 "(src/xmodal/assets/tag) when the report's replacement rule "
                                 "passes."),
    ship: bool = typer.Option(False, "--ship", help="With --install: install even when the rule "
                              "fails (the report records the override)."),
    min_images: int = typer.Option(25, "--min-images", help="Vocabulary: content lemmas in "
                                   "the captions of at least this many training images."),
    l2s: str = typer.Option("1e-5,1e-4", "--l2s", help="Comma-separated L2 penalties to "
                            "select from on dev (both taggers)."),
    backbone: str = typer.Option(None, "--backbone", help="EfficientNet-Lite backbone of the "
                                 "features (default: the shipped dual model's)."),
) -> None:
    """The keyword tagger on Flickr8K + Conceptual Captions 18K (reports/tagger.md).

    Trains the tagger on Flickr8K train + CC train and the Flickr8K-only tagger for the
    comparison, selects the L2 penalty and word-prior power on Flickr8K dev + CC dev, scores
    both on the test splits and writes tagger.json to --out and the report. About 5 minutes
    with the features cached (cold: about 4 more for the 26,734 images on 2 cores).

    Examples:

      xmodal reproduce tagger

      xmodal reproduce tagger --install --ship

      xmodal reproduce tagger --min-images 10 --model-out /tmp/tagger --out /tmp/t
      --report /tmp/t/tagger.md
    """
    from xmodal.reproduce.tagger import reproduce

    try:
        penalties = tuple(float(v) for v in l2s.split(",") if v)
    except ValueError:
        raise typer.BadParameter(f"not a list of numbers: {l2s!r}", param_hint="--l2s") from None
    cmd = _command("tagger", install=install, ship=ship,
                   min_images=None if min_images == 25 else min_images,
                   l2s=None if l2s == "1e-5,1e-4" else l2s, backbone=backbone)
    res = reproduce(data, cc_data, backbone, min_images, model_out, install, out, report, cmd,
                    penalties, ship=ship)
    console.print(f"saved {res['model_out']}; installed: {res['installed']} "
                  f"({res['install_rule']['reason']}); wrote {report}")


@reproduce_app.command("calibration")
def calibration(
    data: Path = DATA,
    cache: Path = typer.Option(None, "--cache", help="Folder caching the score matrix "
                               "(default $XMODAL_CACHE/calibration)."),
    out: Path = OUT,
    model: str = typer.Option("dual", "--model", help="The shipped model to calibrate: dual "
                              "(the default model) or fast."),
    asset: Path = typer.Option(None, "--asset", help="Where to write the calibrator (default: "
                               "beside the model, xmodal/assets/<model>/calibration.json)."),
    figure: Path = typer.Option(None, "--figure", help="The reliability plot (default "
                                "docs/calibration.png, docs/calibration_fast.png for fast)."),
    fit_only: bool = typer.Option(False, "--fit-only", help="Fitting half only: print its "
                                  "numbers and write nothing (the evaluation half unread)."),
    no_short_queries: bool = typer.Option(False, "--no-short-queries", help="Keep the "
                                          "recall-first threshold instead of choosing it on "
                                          "the short-query dev benchmark (Flickr8K + CC18K "
                                          "dev photos)."),
) -> None:
    """The calibrated "no good match" cutoff of photo search (issue 31; docs/calibration.png).

    Fits score -> probability of a match on half of Flickr8K's judged test photos (crowd +
    expert judgments, split by photo) and measures it on the other half; the default threshold
    is chosen by F1 on the short-query dev benchmark (issue 40: one- and two-word queries from
    Flickr8K and CC18K dev captions; benchmarks/short_queries.py). Writes calibration.json (calibration_fast.json for --model fast) to
    --out, the shipped calibrator and the figure. About 2 minutes on 2 cores from an empty
    cache (109 s measured: 64 s embedding the 1,000 photos, 36 s the 1,000 captions), plus the
    2,000 dev photos and 2,106 queries of the short-query benchmark; both are then cached.

    Examples:

      xmodal reproduce calibration

      xmodal reproduce calibration --model fast

      xmodal reproduce calibration --fit-only
    """
    from xmodal.paths import cache_dir
    from xmodal.recipes.calibration import reproduce

    cmd = _command("calibration", model=None if model == "dual" else model, cache=cache,
                   asset=asset, figure=figure, fit_only=fit_only,
                   no_short_queries=no_short_queries)
    res = reproduce(data, cache or cache_dir() / "calibration", out, asset, figure, cmd,
                    fit_only, model, not no_short_queries)
    brief = {k: res[k] for k in ("calibrator", "targets_met") if k in res}
    for half in ("fitting_half", "evaluation_half"):
        if half in res:
            brief[half] = {k: res[half][k] for k in ("ece_equal_mass", "brier", "at_threshold")}
    print(json.dumps(brief, indent=1, default=float))
