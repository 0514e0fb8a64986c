"""``xmodal compare``: saved runs side by side with paired significance tests."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from xmodal.cli._app import app, output
from xmodal.errors import XmodalError

FORMATS = ("markdown", "latex", "html", "csv", "json")
SUFFIXES = {".md": "markdown", ".tex": "latex", ".html": "html", ".htm": "html", ".csv": "csv",
            ".json": "json"}


@app.command("compare")
def compare_command(
    runs: list[Path] = typer.Argument(..., help="Runs saved by `xmodal eval ... --per-query "
                                      "--output RUN.json`, or a sweep folder (`xmodal eval ... "
                                      "--out DIR`: its cells, one comparison per protocol); the "
                                      "first run is the baseline."),
    metric: list[str] = typer.Option(
        None, "--metric", help="Metric to compare (repeat it); default R@1, R@5, R@10 and MAP "
        "where the runs have them."),
    test: str = typer.Option("randomization", "--test",
                             help="randomization (paired sign flips), t (paired t-test; p = 1 "
                             "when every difference is 0, where scipy gives NaN) or mcnemar "
                             "(exact; hit/miss metrics such as R@1)."),
    correction: str = typer.Option("holm", "--correction",
                                   help="holm, bh (Benjamini-Hochberg) or none: over the runs "
                                   "compared with the baseline (or all pairs), per direction and "
                                   "metric."),
    resamples: int = typer.Option(10000, "--resamples", help="Randomization and bootstrap "
                                  "resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the resampling."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level (corrected p)."),
    fmt: str | None = typer.Option(None, "--format", help="markdown, latex, html, csv or json on "
                                   "stdout (default: a table on the terminal)."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    out: Path | None = typer.Option(None, "--out", "--output", "-o",
                                    help="Also write the result to FILE (format "
                                    "from --format, else from the suffix .md, .tex, .html, .csv "
                                    "or .json)."),
    intersect: bool = typer.Option(False, "--intersect", help="Compare the queries every run "
                                   "has when their query sets differ (otherwise refused)."),
    all_pairs: bool = typer.Option(False, "--all-pairs", help="Test every pair of runs (as ranx's "
                                   "compare), not only each against the baseline; a cell's "
                                   "superscript letters name the runs it significantly beats."),
    baseline: str | None = typer.Option(None, "--baseline", help="The baseline run by name "
                                        "(default: the first)."),
    short_labels: bool = typer.Option(False, "--short-labels", help="Name the runs a, b, c, ... "
                                      "in the tables, with a legend of their full names."),
    protocol: str | None = typer.Option(None, "--protocol", "-p", help="With a sweep folder: "
                                        "compare only this protocol's cells."),
) -> None:
    """Compare runs per direction and metric: means, difference with a bootstrap 95% CI, p-value
    and corrected p-value against the first run (or every pair). * / † mark runs significantly
    better / worse than the baseline. Queries are paired by id; runs on different queries are
    refused unless --intersect.

    Examples:

      xmodal eval -p wikipedia -m scm --per-query --output scm.json

      xmodal eval -p wikipedia -m ksm --per-query --output ksm.json

      xmodal compare scm.json ksm.json

      xmodal compare scm.json cm.json sm.json ksm.json --metric MAP --correction bh --format markdown

      xmodal compare scm.json ksm.json --metric R@1 --test mcnemar --json

      xmodal compare scm.json ksm.json --format latex --out table.tex

      xmodal compare runs/ --all-pairs --short-labels --format html   # a sweep folder
    """
    from xmodal.eval.significance import compare_runs, load_runs
    from xmodal.eval.significance_render import (
        detail_head,
        details,
        label_legend,
        legend,
        table,
        title,
        to_csv,
        to_html,
        to_latex,
        to_markdown,
    )

    if as_json:
        fmt = "json"
    if fmt is not None and fmt not in FORMATS:
        raise XmodalError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    results = []
    for group in load_runs(runs, protocol).values():
        base = 0
        if baseline is not None:
            names = [str(r.get("name") or r.get("model")) for r in group]
            if baseline not in names:
                raise XmodalError(f"--baseline {baseline!r} is none of the runs: "
                                  f"{', '.join(names)}")
            base = names.index(baseline)
        results.append(compare_runs(group, metrics=metric or None, test=test,
                                    correction=correction, n_resamples=resamples, seed=seed,
                                    alpha=alpha, baseline=base, intersect=intersect,
                                    all_pairs=all_pairs))

    def render(kind: str) -> str:
        if kind == "json":
            body = results[0] if len(results) == 1 else {"results": results}
            return json.dumps(body, indent=2) + "\n"
        if kind == "csv":
            texts = [to_csv(r) for r in results]
            return texts[0] + "".join(t.split("\n", 1)[1] for t in texts[1:])
        fn = {"latex": to_latex, "markdown": to_markdown, "html": to_html}[kind]
        return "\n".join(fn(r, short=short_labels) for r in results)

    if out is not None:
        kind = fmt or SUFFIXES.get(out.suffix.lower(), "json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render(kind), encoding="utf-8")
    if fmt is not None:
        typer.echo(render(fmt), nl=False)
        return
    for result in results:
        t = table(result, short=short_labels)
        rich = Table(title=title(result))
        rich.add_column("run", overflow="fold", min_width=min(
            40, max(len(r["run"]) for r in t["rows"]) + 11))
        for d, m in t["columns"]:
            rich.add_column(f"{d} {m}".strip(), justify="right")
        for r in t["rows"]:
            style = {"*": "green", "†": "red"}
            cells = [f"[{style.get(m, 'green')}]{v}{m}[/]" if m else v for v, m in r["cells"]]
            rich.add_row(r["run"] + (" (baseline)" if r["baseline"] else ""), *cells)
        output.print(rich)
        output.print(f"[dim]{legend(result)}[/]")
        if short_labels:
            output.print(f"[dim]runs: {label_legend(result)}[/]")
        cov = result.get("coverage") or {}
        if cov.get("partial"):
            output.print(f"[yellow]partial copy of {cov['benchmark']}: "
                          f"{'; '.join(cov['missing'])}[/]")
        d = Table(show_header=True)
        for i, h in enumerate(detail_head(result)):
            d.add_column(h, justify="right" if i >= len(detail_head(result)) - 3 else "left",
                         overflow="fold")
        for row in details(result, short=short_labels):
            d.add_row(*row)
        output.print(d)
