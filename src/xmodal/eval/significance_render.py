"""Render the JSON of :func:`xmodal.eval.significance.compare_runs` (reads only that JSON).

One table object (:func:`table`: rows = runs, columns = direction x metric, cells = mean with a
significance mark) feeds Markdown, LaTeX (booktabs) and the CLI's Rich table. ``*`` marks a run
significantly better than the baseline, ``†`` significantly worse (corrected p <= alpha).
"""

from __future__ import annotations

from typing import Any

BETTER, WORSE = "*", "†"
TEST_NAMES = {"randomization": "two-sided paired sign-flip randomization test",
              "t": "paired t-test", "mcnemar": "exact McNemar test"}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}


def fmt_value(value: float | None, metric: str, result: dict, digits: int = 1) -> str:
    """Percent for metrics in [0, 1], the raw number for ranks."""
    if value is None:
        return "–"
    if metric in result.get("lower_is_better", ()):
        return f"{value:.{digits}f}"
    return f"{100 * value:.{digits}f}"


def fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def mark(c: dict) -> str:
    if not c["significant"] or c["better"] is None:
        return ""
    return BETTER if c["better"] else WORSE


def table(result: dict, digits: int = 1) -> dict[str, Any]:
    """``{"columns": [(direction, metric)], "rows": [{"run", "baseline", "cells": [(text,
    mark)]}]}``."""
    columns = [(d, m) for d in result["directions"] for m in result["metrics"]]
    found = {(c["run"], c["direction"], c["metric"]): c for c in result["comparisons"]}
    rows = []
    for run in result["runs"]:
        name = run["name"]
        cells = []
        for d, m in columns:
            c = found.get((name, d, m))
            cells.append((fmt_value(result["means"][name][d][m], m, result, digits),
                          mark(c) if c else ""))
        rows.append({"run": name, "baseline": name == result["baseline"], "cells": cells})
    return {"columns": columns, "rows": rows}


def legend(result: dict, units: bool = True) -> str:
    """What the marks mean (test, correction, alpha); ``units``: start with the cells' units."""
    corr = CORRECTION_NAMES.get(result["correction"], result["correction"])
    resamples = (f", {result['n_resamples']:,} resamples, seed {result['seed']}"
                 if result["test"] == "randomization" else "")
    ranks = ", ".join(result.get("lower_is_better") or ())
    corrected = ("no correction for multiple comparisons; p" if corr == "no" else
                 f"{corr} correction over the runs per direction and metric; corrected p")
    head = f"Means over queries, in % (ranks as numbers{': ' + ranks if ranks else ''}). "
    return ((head if units else "")
            + f"{BETTER} / {WORSE}: significantly better / worse than the baseline "
            f"{result['baseline']} ({TEST_NAMES.get(result['test'], result['test'])} on the "
            f"per-query values{resamples}; {corrected} <= {result['alpha']:g}).")


def details(result: dict, digits: int = 1) -> list[list[str]]:
    """One row per comparison: run, direction, metric, difference [CI], p, corrected p."""
    out = []
    for c in result["comparisons"]:
        m = c["metric"]
        ci = (f"{fmt_value(c['difference'], m, result, digits)} "
              f"[{fmt_value(c['ci_low'], m, result, digits)}, "
              f"{fmt_value(c['ci_high'], m, result, digits)}]")
        out.append([c["run"], c["direction"], m, ci, fmt_p(c["p_value"]),
                    fmt_p(c["p_corrected"]) + mark(c)])
    return out


def detail_head(result: dict) -> list[str]:
    """Column names of :func:`details`."""
    return ["run", "direction", "metric", f"difference [{result['confidence']:.0%} CI]", "p",
            "corrected p"]


def to_markdown(result: dict, digits: int = 1) -> str:
    t = table(result, digits)
    head = ["Run"] + [f"{d} {m}" for d, m in t["columns"]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t["rows"]:
        name = f"{r['run']} (baseline)" if r["baseline"] else r["run"]
        lines.append("| " + " | ".join([name] + [v + m for v, m in r["cells"]]) + " |")
    lines += ["", legend(result), ""]
    dh = detail_head(result)
    lines += ["| " + " | ".join(dh) + " |", "|" + "---|" * len(dh)]
    lines += ["| " + " | ".join(row) + " |" for row in details(result, digits)]
    return "\n".join(lines) + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
        "{": r"\{", "}": r"\}"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(result: dict, digits: int = 1) -> str:
    """A booktabs table (``\\usepackage{booktabs}``); marks as superscripts."""
    t = table(result, digits)
    dirs = result["directions"]
    n = len(result["metrics"])
    marks = {BETTER: r"$^{*}$", WORSE: r"$^{\dagger}$", "": ""}
    lines = [r"\begin{tabular}{l" + "r" * len(t["columns"]) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{n}}}{{c}}{{{_tex(d)}}}" for d in dirs) + r" \\",
             "".join(rf"\cmidrule(lr){{{2 + i * n}-{1 + (i + 1) * n}}}" for i in range(len(dirs))),
             "Run & " + " & ".join(_tex(m) for _, m in t["columns"]) + r" \\", r"\midrule"]
    for r in t["rows"]:
        cells = [v + marks[m] for v, m in r["cells"]]
        lines.append(_tex(r["run"]) + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "% " + legend(result)]
    return "\n".join(lines) + "\n"
