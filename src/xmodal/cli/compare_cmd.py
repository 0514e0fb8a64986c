"""``xmodal compare``: saved runs side by side with paired significance tests."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.errors import XmodalError

FORMATS = ("markdown", "latex", "json")
SUFFIXES = {".md": "markdown", ".tex": "latex", ".json": "json"}


@app.command("compare")
def compare_command(
    runs: list[Path] = typer.Argument(..., help="Runs saved by `xmodal eval ... --per-query "
                                      "--output RUN.json`; the first is the baseline."),
    metric: list[str] = typer.Option(
        None, "--metric", help="Metric to compare (repeat it); default R@1, R@5, R@10 and MAP "
        "where the runs have them."),
    test: str = typer.Option("randomization", "--test",
                             help="randomization (paired sign flips), t (paired t-test) or "
                             "mcnemar (exact; hit/miss metrics such as R@1)."),
    correction: str = typer.Option("holm", "--correction",
                                   help="holm, bh (Benjamini-Hochberg) or none: over the runs "
                                   "compared with the baseline, per direction and metric."),
    resamples: int = typer.Option(10000, "--resamples", help="Randomization and bootstrap "
                                  "resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level (corrected p)."),
    fmt: str | None = typer.Option(None, "--format", help="markdown, latex or json on stdout "
                                   "(default: a table on the terminal)."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    out: Path | None = typer.Option(None, "--out", help="Also write the result to FILE (format "
                                    "from --format, else from the suffix .md, .tex or .json)."),
    intersect: bool = typer.Option(False, "--intersect", help="Compare the queries every run "
                                   "has when their query sets differ (otherwise refused)."),
) -> None:
    """Compare runs per direction and metric: means, difference with a bootstrap 95% CI, p-value
    and corrected p-value against the first run. * / † mark runs significantly better / worse
    than the baseline.

    Examples:

      xmodal eval -p wikipedia -m scm --per-query --output scm.json

      xmodal eval -p wikipedia -m ksm --per-query --output ksm.json

      xmodal compare scm.json ksm.json

      xmodal compare scm.json cm.json sm.json ksm.json --metric MAP --correction bh --format markdown

      xmodal compare scm.json ksm.json --metric R@1 --test mcnemar --json

      xmodal compare scm.json ksm.json --format latex --out table.tex
    """
    from xmodal.eval.significance import compare_runs, load_run
    from xmodal.eval.significance_render import (
        detail_head,
        details,
        legend,
        table,
        to_latex,
        to_markdown,
    )

    if as_json:
        fmt = "json"
    if fmt is not None and fmt not in FORMATS:
        raise XmodalError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    result = compare_runs([load_run(p) for p in runs], metrics=metric or None, test=test,
                          correction=correction, n_resamples=resamples, seed=seed, alpha=alpha,
                          intersect=intersect)

    def render(kind: str) -> str:
        if kind == "json":
            return json.dumps(result, indent=2) + "\n"
        return to_latex(result) if kind == "latex" else to_markdown(result)

    if out is not None:
        kind = fmt or SUFFIXES.get(out.suffix.lower(), "json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(kind), encoding="utf-8")
    if fmt is not None:
        typer.echo(render(fmt), nl=False)
        return
    t = table(result)
    rich = Table(title=f"{result['protocol']} · baseline {result['baseline']}")
    rich.add_column("run")
    for d, m in t["columns"]:
        rich.add_column(f"{d} {m}", justify="right")
    for r in t["rows"]:
        style = {"*": "green", "†": "red"}
        cells = [f"[{style[m]}]{v}{m}[/]" if m else v for v, m in r["cells"]]
        rich.add_row(r["run"] + (" (baseline)" if r["baseline"] else ""), *cells)
    console.print(rich)
    console.print(f"[dim]{legend(result)}[/]")
    console.print(f"[dim]{result['pairing']['note']}[/]")
    d = Table(show_header=True)
    for i, h in enumerate(detail_head(result)):
        d.add_column(h, justify="right" if i >= 3 else "left")
    for row in details(result):
        d.add_row(*row)
    console.print(d)
