"""``xmodal eval``: run a model on an evaluation protocol and print or save the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.errors import XmodalError

SHOWN = ["R@1", "R@5", "R@10", "medR", "R-P", "mAP@R", "MAP", "nDCG@10"]


def _load_scores(path: Path) -> dict[str, np.ndarray]:
    """Scores from .npy (one images x texts matrix) or .npz (arrays ``i2t`` and/or ``t2i``)."""
    if not path.is_file():
        raise XmodalError(f"scores file not found: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise XmodalError(f"{path}: not a numpy .npy/.npz file ({exc})") from exc
    if isinstance(loaded, np.ndarray):
        return {"i2t": loaded, "t2i": loaded}
    arrays = dict(loaded)
    if not {"i2t", "t2i"} & set(arrays):
        raise XmodalError(f"{path}: expected arrays named 'i2t' and/or 't2i'")
    return {"i2t": arrays.get("i2t", arrays.get("t2i")), "t2i": arrays.get("t2i", arrays.get("i2t"))}


@app.command("eval")
def eval_command(
    protocol: str = typer.Option(..., "--protocol", "-p", help="Protocol name (list them with `xmodal protocols`)."),
    model: str = typer.Option(
        "random", "--model", "-m",
        help="Registered model name (e.g. dual, scm, ksm-qe, hodosh-tri5sem, cmrm; an unknown "
        "name prints the full list) or a saved model directory.",
    ),
    data: Path | None = typer.Option(None, "--data", help="Data root (default: $XMODAL_DATA)."),
    scores: Path | None = typer.Option(
        None, "--scores", help="Evaluate precomputed scores (.npy images x texts, or .npz with "
        "'i2t'/'t2i') instead of running a model."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed passed to the model."),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON report to stdout."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Also save the JSON report."),
    per_query: bool = typer.Option(False, "--per-query", help="Include per-query values."),
) -> None:
    """Evaluate a model on a protocol, both directions (i2t = annotation, t2i = search).

    Examples:

      xmodal eval --protocol wikipedia --model random --json

      xmodal eval -p flickr8k-5cap -m dual

      xmodal eval -p eccv --scores my_scores.npz --json
    """
    from xmodal.eval.protocols import get_protocol
    from xmodal.eval.runner import evaluate, run_eval
    from xmodal.models.registry import get_scorer

    proto = get_protocol(protocol, data)
    if scores is not None:
        import time

        t0 = time.perf_counter()
        given = _load_scores(scores)
        report = evaluate(proto, given, model=str(scores), seed=seed, per_query=per_query)
        report["elapsed_s"] = time.perf_counter() - t0
    else:
        scorer = get_scorer(model, protocol)
        report = run_eval(proto, scorer, model=model, seed=seed, per_query=per_query)
    text = json.dumps(report, indent=2)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
    if as_json:
        typer.echo(text)
        return
    table = Table(title=f"{protocol} · {report['model']}")
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
    console.print(table)
    console.print(f"[dim]metrics as percentages; medR is a rank. {report['elapsed_s']:.2f} s[/]")


@app.command("protocols")
def protocols_command() -> None:
    """List the evaluation protocols."""
    from xmodal.eval.protocols import list_protocols

    for name in list_protocols():
        typer.echo(name)
