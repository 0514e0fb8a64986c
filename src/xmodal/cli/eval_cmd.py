"""``xmodal eval``: run a model on an evaluation protocol and print or save the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from xmodal.cli._app import app, console, output
from xmodal.errors import XmodalError

SHOWN = ["R@1", "R@5", "R@10", "medR", "R-P", "mAP@R", "MAP", "nDCG@10"]


@app.command("eval")
def eval_command(
    protocols: list[str] = typer.Option(
        ..., "--protocol", "-p", help="Protocol name (list them with `xmodal protocols`); repeat "
        "it (with --out) for a sweep."),
    models: list[str] = typer.Option(
        ["random"], "--model", "-m",
        help="Registered model name (e.g. dual, scm, ksm-qe, hodosh-tri5sem, crm-wide; an unknown "
        "name prints the full list), a saved model directory, openclip:ARCH:CKPT, "
        "python:MODULE:FACTORY, precomputed embeddings FILE.npz or another system's ranked "
        "list run:FILE (TREC run, or a folder with i2t.run / t2i.run); repeat it (with --out) "
        "for a sweep.",
    ),
    data_args: list[str] | None = typer.Option(
        None, "--data", help="Data root (default: $XMODAL_DATA); for -p folder, your photo folder; "
        "for -p cc-heldout / cc-dev, the CC18K folder (default: $XMODAL_CC_DATA or ../data/cc18k); "
        "for -p coco5k / coco1k / eccv / cxc / flickr30k / xm3600 / webdataset / hf-dataset, your "
        "local copy; for -p caption-file, the CSV / JSONL. In a sweep, PROTOCOL=DIR gives one "
        "protocol its own (repeatable)."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Sweep folder: every -m x every -p, one JSON per finished cell "
        "(cells/), cached embeddings (cache/), results.csv / .parquet / .md; rerun the same "
        "command to resume."),
    captions: Path | None = typer.Option(
        None, "--captions", help="For -p folder: CSV (image,caption) or JSONL caption file, image "
        "names relative to the folder."
    ),
    scores: Path | None = typer.Option(
        None, "--scores", help="Evaluate precomputed scores (.npy images x texts, or .npz with "
        "'i2t'/'t2i') instead of running a model."
    ),
    positives: Path | None = typer.Option(
        None, "--positives", help="Evaluate against these positives instead of the protocol's "
        "(a directory in the eccv-caption layout, e.g. from `xmodal mitl export`)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed passed to the model."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON report to stdout."),
    report_file: Path | None = typer.Option(None, "--output", "-o",
                                            help="Also save the JSON report."),
    per_query: bool = typer.Option(False, "--per-query", help="Include per-query values (and "
                                   "the query ids, so `xmodal compare` pairs by id)."),
    strict: bool = typer.Option(False, "--strict", help="Refuse a partial copy of a benchmark "
                                "(fewer images, captions or queries than official) instead of "
                                "scoring it labelled partial."),
    language: str | None = typer.Option(None, "--language", help="For -p xm3600: the caption "
                                        "language (en, de, ja, ...; default en)."),
    export_run: tuple[str, Path] | None = typer.Option(
        None, "--export-run", help="FORMAT DIR: also write the ranked lists, e.g. `--export-run "
        "trec DIR` gives DIR/i2t.run, i2t.qrels, t2i.run, t2i.qrels (ranx, trec_eval)."),
    run_depth: int = typer.Option(1000, "--run-depth", help="Items per query in an exported run "
                                  "(0: all)."),
    device: str = typer.Option("cpu", "--device", help="Where torch-backed models (openclip:...) "
                               "run: cpu, cuda or cuda:N."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Images (and texts) per "
                                          "forward pass of torch-backed models (default: the "
                                          "model's own, 32 for open_clip)."),
) -> None:
    """Evaluate a model on a protocol, both directions (i2t = annotation, t2i = search).

    Examples:

      xmodal eval --protocol wikipedia --model random --json

      xmodal eval -p flickr8k-5cap -m dual

      xmodal eval -p corel5k -m crm-wide   # also prints Lavrenko et al.'s tables

      xmodal eval -p eccv --scores my_scores.npz --json

      xmodal eval -p flickr8k-hodosh -m dual --positives flickr-positives/   # MITL-extended

      xmodal eval -p folder --data ~/Pictures/trip --captions trip.csv -m dual   # your photos

      xmodal eval -p cc-heldout -m dual   # 1,000 held-out Conceptual Captions web images

      xmodal eval -p skimage-ood -m dual   # 13 sample photos among 1,000 Flickr8K distractors

      xmodal eval -p flickr8k-5cap -m dual-qb   # + querybank of its training data (needs CC18k)

      xmodal eval -p coco5k --data ~/data/coco -m openclip:ViT-B-32:ckpt.pt   # your COCO copy

      xmodal eval -p flickr30k --data ~/data/flickr30k -m python:mypkg.models:make_clip

      xmodal eval -m dual -m random -p flickr8k-5cap -p skimage-ood --out runs/   # a sweep

      xmodal eval -p coco5k --data ~/data/coco -m $CLIP --export-run trec runs/clip-trec

      xmodal eval -p coco5k --data ~/data/coco -m run:their-system/   # their ranked lists
    """
    from xmodal.eval.protocols import list_protocols
    from xmodal.models import torch_runtime

    torch_runtime.configure(device, batch_size)
    if export_run is not None and export_run[0] not in ("trec",):
        raise XmodalError(f"--export-run supports trec, not {export_run[0]!r}: --export-run trec "
                          "DIR")
    if language is not None and "xm3600" not in protocols:
        raise XmodalError("--language is for -p xm3600 (the caption language of Crossmodal-3600)")

    data_map: dict[str, Path] = {}
    for entry in data_args or []:
        name, sep, value = entry.partition("=")
        if sep and name in list_protocols():
            data_map[name] = Path(value).expanduser()
        else:
            data_map[""] = Path(entry).expanduser()
    if out is not None or len(protocols) > 1 or len(models) > 1:
        if out is None:
            raise XmodalError("several -m / -p make a sweep: give it a folder with --out DIR")
        if scores is not None or positives is not None or export_run is not None:
            raise XmodalError("--scores, --positives and --export-run are for single runs, not "
                              "sweeps (--out)")
        _sweep(models, protocols, out, data_map, captions, seed, as_json, strict,
               {"xm3600": {"language": language}} if language else None)
        return
    from xmodal.eval.benchmark_protocols import fold_scorer, fold_scores
    from xmodal.eval.protocols import get_protocol
    from xmodal.eval.coverage import check_strict
    from xmodal.eval.runner import direction_scores, evaluate
    from xmodal.eval.score_files import load_score_file
    from xmodal.factory import get_scorer

    protocol, model = protocols[0], models[0]
    data = data_map.get(protocol, data_map.get(""))
    if captions is not None and protocol != "folder":
        raise XmodalError("--captions is for the folder protocol (-p folder --data FOLDER)")
    options: dict = {"captions": captions} if protocol == "folder" else {}
    if language is not None:
        options["language"] = language
    proto = get_protocol(protocol, data, **options)
    if positives is not None:
        from xmodal.eval.positives import with_positives

        proto = with_positives(proto, positives)
    import time

    t0 = time.perf_counter()
    if scores is not None:
        given = fold_scores(proto, load_score_file(scores, proto))
        model = str(scores)
    else:
        given = direction_scores(proto, fold_scorer(proto, get_scorer(model, protocol)), seed)
    report = evaluate(proto, given, model=model, seed=seed, per_query=per_query)
    report["elapsed_s"] = time.perf_counter() - t0
    if strict:
        check_strict(report)
    if export_run is not None:
        from xmodal.eval.trec import export_trec

        report["exported"] = export_trec(proto, given, export_run[1], tag=Path(model).name,
                                         depth=run_depth)
    text = json.dumps(report, indent=2)
    if report_file is not None:
        report_file.parent.mkdir(parents=True, exist_ok=True)
        report_file.write_text(text + "\n")
    if as_json:
        typer.echo(text)
        return
    cov = report.get("coverage") or {}
    partial = f" · {cov['label']}" if cov.get("partial") else ""
    table = Table(title=f"{protocol} · {report['model']}{partial}")
    table.add_column("direction")
    for key in SHOWN:
        table.add_column(key, justify="right")
    table.add_column("queries", justify="right")
    for name, values in report["directions"].items():
        cells = [
            f"{values[k]:.1f}" if k.startswith("med") else f"{100 * values[k]:.1f}"
            for k in SHOWN
        ]
        table.add_row(name, *cells, str(report["n_queries"][name]))
    output.print(table)
    _print_paper_metrics(report.get("paper_metrics") or {})
    if cov.get("partial"):
        output.print(f"[yellow]partial copy of {cov['benchmark']}: {'; '.join(cov['missing'])}[/]")
    if report.get("notes"):
        output.print(f"[dim]{report['notes']}[/]")
    for name, files in (report.get("exported") or {}).items():
        output.print(f"[dim]{name}: {files['run']}, {files['qrels']}[/]")
    console.print(f"[dim]metrics as percentages; medR is a rank. {report['elapsed_s']:.2f} s[/]")


def _sweep(models: list[str], protocols: list[str], out: Path, data: dict, captions,
           seed: int, as_json: bool, strict: bool = False, options: dict | None = None) -> None:
    """Run (or resume) the grid with progress on stderr, then write and show the tables."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from xmodal.eval.sweep import run_sweep
    from xmodal.eval.sweep_table import write_tables

    err = Console(stderr=True)
    total = len(models) * len(protocols)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        task = bar.add_task("sweep", total=total)

        def progress(event: str, protocol: str, model: str, detail: str) -> None:
            if event == "start":
                bar.update(task, description=f"{protocol} · {model}")
                return
            bar.advance(task)
            mark = {"skip": "[dim]done before[/]", "done": f"[green]{detail}[/]",
                    "error": f"[red]{detail}[/]"}[event]
            bar.console.print(f"{protocol} · {model}: {mark}")

        result = run_sweep(models, protocols, out, data=data, captions=captions, seed=seed,
                           progress=progress, strict=strict, options=options)
    rows = write_tables(out, models, protocols)
    summary = {"out": str(out), "computed": result["computed"], "resumed": result["resumed"],
               "errors": result["errors"], "rows": rows}
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo((out / "results.md").read_text())  # with the partial benchmark copies
    err.print(f"{len(result['computed'])} cells computed, {len(result['resumed'])} done before, "
              f"{len(result['errors'])} could not run; tables: {out}/results.csv, .parquet, .md")


def _print_paper_metrics(pm: dict) -> None:
    """The protocol's own paper metrics (corel5k: Lavrenko et al.'s Tables 1 and 2)."""
    ann = pm.get("annotation_top5")
    if ann:
        output.print(
            f"top-5 annotation: {ann['n_words_recall_gt0']} of {ann['n_words']} words with "
            f"recall > 0 · mean R {100 * ann['mean_R']:.1f} · mean P {100 * ann['mean_P']:.1f}"
            f" · 49 best words R {100 * ann['best49_mean_R']:.1f} / P "
            f"{100 * ann['best49_mean_P']:.1f}")
    by_len = pm.get("retrieval_by_query_length")
    if by_len:
        t = Table(title="retrieval by query length")
        for col in ("words", "queries", "P@5", "MAP"):
            t.add_column(col, justify="right")
        for n, v in by_len.items():
            t.add_row(n, str(v["n_queries"]), f"{100 * v['P@5']:.1f}", f"{100 * v['MAP']:.1f}")
        output.print(t)
    ranks = pm.get("with_flickr8k_test_distractors")
    if ranks:  # skimage-ood: the rank of each query's photo
        t = Table(title="rank of the right photo (1 = first)")
        for col in ("photo", "photos only", "+ 1,000 Flickr8K test photos"):
            t.add_column(col, justify="left" if col == "photo" else "right")
        for name, r in ranks.items():
            t.add_row(name, str(pm["photos_only"][name]), str(r))
        output.print(t)
        output.print(f"first: {pm['top1_with_distractors']} with distractors "
                      f"({pm['top1_photos_only']} among the photos alone); top 5: "
                      f"{pm['top5_with_distractors']}")


@app.command("protocols")
def protocols_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON: a list of names."),
) -> None:
    """List the evaluation protocols."""
    from xmodal.eval.protocols import list_protocols

    if as_json:
        typer.echo(json.dumps(list(list_protocols())))
        return
    for name in list_protocols():
        typer.echo(name)


@app.command("models")
def models_command(
    as_json: bool = typer.Option(False, "--json", help="Print every record as JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also show hyperparameters."),
) -> None:
    """List the registered models (the settings table) with where their values come from.

    Each name works with `xmodal eval -m NAME`; a name with a family trains with
    `xmodal train FAMILY --setting NAME`.

    Examples:

      xmodal models

      xmodal models --json | jq '.[] | select(.family == "kcca") | .name'
    """
    from xmodal.recipes.settings import all_settings

    settings = list(all_settings().values())
    if as_json:
        typer.echo(json.dumps([s.describe() for s in settings], indent=2))
        return
    table = Table(show_lines=verbose)
    for col in ("model", "family", "estimator", "protocols", "provenance"):
        table.add_column(col, overflow="fold")
    for s in settings:
        estimator = s.estimator.split(":")[1]
        if verbose:
            estimator += "\n" + ", ".join(f"{k}={v}" for k, v in s.params.items())
        table.add_row(s.name, s.family or "-", estimator, ", ".join(s.protocols) or "any",
                      s.provenance)
    output.print(table)
