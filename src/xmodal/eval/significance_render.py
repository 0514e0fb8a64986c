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


def title(result: dict) -> str:
    """The table title: protocol, baseline, and "partial (239 of 5,000 images)" for a partial
    benchmark copy."""
    head = str(result.get("protocol") or "")
    if result.get("baseline") is not None:
        head += f" · baseline {result['baseline']}"
    else:
        head += " · all pairs"
    cov = result.get("coverage") or {}
    if cov.get("partial"):
        head += f" · {cov['label']}"
    return head


def _names(result: dict, short: bool) -> dict[str, str]:
    return {r["name"]: (r.get("label") or r["name"]) if short else r["name"]
            for r in result["runs"]}


def _all_pair_marks(result: dict) -> dict[tuple[str, str, str], str]:
    """``(run, direction, metric) -> labels of the runs it is significantly better than``."""
    labels = {r["name"]: r.get("label") or r["name"] for r in result["runs"]}
    out: dict[tuple[str, str, str], list[str]] = {}
    for c in result["comparisons"]:
        if not c["significant"] or c["better"] is None:
            continue
        win, lose = (c["run"], c["baseline"]) if c["better"] else (c["baseline"], c["run"])
        out.setdefault((win, c["direction"], c["metric"]), []).append(labels[lose])
    order = {r.get("label") or r["name"]: i for i, r in enumerate(result["runs"])}
    return {k: "".join(sorted(v, key=order.get)) for k, v in out.items()}


def table(result: dict, digits: int = 1, short: bool = False) -> dict[str, Any]:
    """``{"columns": [(direction, metric)], "rows": [{"run", "baseline", "cells": [(text,
    mark)]}]}``; an ``RSUM`` column (no mark) where the result has one. Against a baseline a mark
    is ``*`` / ``†``; with all pairs, the labels of the runs the cell is significantly better
    than. ``short``: rows named by the runs' labels (see :func:`label_legend`)."""
    columns = [(d, m) for d in result["directions"] for m in result["metrics"]]
    found = {(c["run"], c["direction"], c["metric"]): c for c in result["comparisons"]}
    pair_marks = _all_pair_marks(result) if result.get("all_pairs") else {}
    names = _names(result, short)
    rsum = result.get("rsum")
    rows = []
    for run in result["runs"]:
        name = run["name"]
        cells = []
        for d, m in columns:
            if result.get("all_pairs"):
                mk = pair_marks.get((name, d, m), "")
            else:
                c = found.get((name, d, m))
                mk = mark(c) if c else ""
            cells.append((fmt_value(result["means"][name][d][m], m, result, digits), mk))
        if rsum:
            cells.append(("–" if rsum[name] is None else f"{rsum[name]:.{digits}f}", ""))
        rows.append({"run": names[name], "baseline": name == result.get("baseline"),
                     "cells": cells})
    if rsum:
        columns.append(("", "RSUM"))
    return {"columns": columns, "rows": rows}


def label_legend(result: dict) -> str:
    """``a = full name, b = ...``: what the short labels stand for."""
    return "; ".join(f"{r.get('label')} = {r['name']}" for r in result["runs"])


def legend(result: dict, units: bool = True) -> str:
    """What the marks mean (test, correction, alpha); ``units``: start with the cells' units."""
    corr = CORRECTION_NAMES.get(result["correction"], result["correction"])
    resamples = (f", {result['n_resamples']:,} resamples, seed {result['seed']}"
                 if result["test"] == "randomization" else "")
    ranks = ", ".join(result.get("lower_is_better") or ())
    family = "all pairs of runs" if result.get("all_pairs") else "the runs"
    corrected = ("no correction for multiple comparisons; p" if corr == "no" else
                 f"{corr} correction over {family} per direction and metric; corrected p")
    head = f"Means over queries, in % (ranks as numbers{': ' + ranks if ranks else ''}). "
    if result.get("rsum"):
        head += "RSUM: R@1 + R@5 + R@10 of both directions. "
    test = (f"({TEST_NAMES.get(result['test'], result['test'])} on the per-query values"
            f"{resamples}; {corrected} <= {result['alpha']:g})")
    if result.get("all_pairs"):
        marks = ("Superscript letters: the runs (by label) that this run is significantly "
                 f"better than {test}.")
    else:
        marks = (f"{BETTER} / {WORSE}: significantly better / worse than the baseline "
                 f"{result['baseline']} {test}.")
    pairing = (result.get("pairing") or {}).get("note")
    return (head if units else "") + marks + (f" Queries {pairing}." if pairing else "")


def details(result: dict, digits: int = 1, short: bool = False) -> list[list[str]]:
    """One row per comparison: run, [vs,] direction, metric, difference [CI], p, corrected p."""
    names = _names(result, short)
    out = []
    for c in result["comparisons"]:
        m = c["metric"]
        ci = (f"{fmt_value(c['difference'], m, result, digits)} "
              f"[{fmt_value(c['ci_low'], m, result, digits)}, "
              f"{fmt_value(c['ci_high'], m, result, digits)}]")
        vs = [names[c["baseline"]]] if result.get("all_pairs") else []
        out.append([names[c["run"]], *vs, c["direction"], m, ci, fmt_p(c["p_value"]),
                    fmt_p(c["p_corrected"]) + mark(c)])
    return out


def detail_head(result: dict) -> list[str]:
    """Column names of :func:`details`."""
    vs = ["vs"] if result.get("all_pairs") else []
    return ["run", *vs, "direction", "metric", f"difference [{result['confidence']:.0%} CI]", "p",
            "corrected p"]


def _notes(result: dict) -> list[str]:
    cov = result.get("coverage") or {}
    out = []
    if cov.get("partial"):
        out.append(f"Ran on a partial copy of {cov['benchmark']}: " + "; ".join(cov["missing"])
                   + ".")
    if result.get("notes"):
        out.append(f"Protocol: {result['notes']}")
    return out


def to_markdown(result: dict, digits: int = 1, short: bool = False) -> str:
    t = table(result, digits, short)
    head = ["Run"] + [f"{d} {m}".strip() for d, m in t["columns"]]
    lines = [f"**{title(result)}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t["rows"]:
        name = f"{r['run']} (baseline)" if r["baseline"] else r["run"]
        lines.append("| " + " | ".join([name] + [v + m for v, m in r["cells"]]) + " |")
    lines += ["", legend(result)]
    if short:
        lines += ["", "Runs: " + label_legend(result) + "."]
    lines += [""] + [f"{n}\n" for n in _notes(result)]
    dh = detail_head(result)
    lines += ["| " + " | ".join(dh) + " |", "|" + "---|" * len(dh)]
    lines += ["| " + " | ".join(row) + " |" for row in details(result, digits, short)]
    return "\n".join(lines) + "\n"


def to_html(result: dict, digits: int = 1, short: bool = False) -> str:
    """A self-contained HTML fragment: the means table (marks as superscripts, the title as
    caption), the legend, and the comparisons with CIs and p-values."""
    from html import escape

    t = table(result, digits, short)
    out = ['<table class="xmodal-compare">', f"<caption>{escape(title(result))}</caption>",
           "<thead><tr><th>Run</th>"
           + "".join(f"<th>{escape(f'{d} {m}'.strip())}</th>" for d, m in t["columns"])
           + "</tr></thead>", "<tbody>"]
    for r in t["rows"]:
        name = escape(r["run"]) + (" (baseline)" if r["baseline"] else "")
        cells = "".join(f"<td>{escape(v)}" + (f"<sup>{escape(m)}</sup>" if m else "") + "</td>"
                        for v, m in r["cells"])
        out.append(f"<tr><th>{name}</th>{cells}</tr>")
    out += ["</tbody>", "</table>", f"<p>{escape(legend(result))}</p>"]
    if short:
        out.append(f"<p>Runs: {escape(label_legend(result))}.</p>")
    out += [f"<p>{escape(n)}</p>" for n in _notes(result)]
    out += ['<table class="xmodal-compare-details">', "<thead><tr>"
            + "".join(f"<th>{escape(h)}</th>" for h in detail_head(result)) + "</tr></thead>",
            "<tbody>"]
    out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
            for row in details(result, digits, short)]
    out += ["</tbody>", "</table>"]
    return "\n".join(out) + "\n"


CSV_COLUMNS = ["protocol", "coverage", "run", "vs", "direction", "metric", "run_mean", "vs_mean",
               "difference", "ci_low", "ci_high", "p_value", "p_corrected", "significant",
               "better"]


def to_csv(result: dict) -> str:
    """One row per comparison (values as fractions, ranks as numbers; ``vs`` is the baseline or,
    with all pairs, the other run), then one ``RSUM`` row per run (in percent)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    cov = (result.get("coverage") or {}).get("label", "")
    for c in result["comparisons"]:
        w.writerow([result.get("protocol"), cov, c["run"], c["baseline"], c["direction"],
                    c["metric"], repr(c["run_mean"]), repr(c["baseline_mean"]),
                    repr(c["difference"]), repr(c["ci_low"]), repr(c["ci_high"]),
                    repr(c["p_value"]), repr(c["p_corrected"]), c["significant"], c["better"]])
    for run, value in (result.get("rsum") or {}).items():
        w.writerow([result.get("protocol"), cov, run, "", "both", "RSUM",
                    "" if value is None else repr(value)] + [""] * 8)
    return buf.getvalue()


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "·": r"$\cdot$", "×": r"$\times$", "–": "--", "†": r"$\dagger$", "→": r"$\rightarrow$",
        "≤": r"$\le$", "≥": r"$\ge$"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(result: dict, digits: int = 1, short: bool = False) -> str:
    """Two booktabs tables (``\\usepackage{booktabs}``), ready to ``\\input``: the means with
    significance marks as superscripts (and RSUM), then every comparison's difference with its
    confidence interval, p-value and corrected p-value. The legend, the labels and any partial
    coverage follow as a footnote-size paragraph."""
    t = table(result, digits, short)
    dirs = result["directions"]
    n = len(result["metrics"])

    def sup(m: str) -> str:
        if not m:
            return ""
        if m in (BETTER, WORSE):
            return {BETTER: r"$^{*}$", WORSE: r"$^{\dagger}$"}[m]
        return rf"$^{{\mathrm{{{_tex(m)}}}}}$"

    def cell(v: str) -> str:
        return "--" if v == "–" else v.replace("-", "$-$") if v.startswith("-") else v

    ncols = len(t["columns"])
    lines = [f"% xmodal compare: {_tex(title(result))}",
             r"\begin{tabular}{l" + "r" * ncols + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{n}}}{{c}}{{{_tex(d)}}}" for d in dirs)
             + (" & " if result.get("rsum") else "") + r" \\",
             "".join(rf"\cmidrule(lr){{{2 + i * n}-{1 + (i + 1) * n}}}" for i in range(len(dirs))),
             "Run & " + " & ".join(_tex(m) for _, m in t["columns"]) + r" \\", r"\midrule"]
    for r in t["rows"]:
        cells = [cell(v) + sup(m) for v, m in r["cells"]]
        name = _tex(r["run"]) + (" (baseline)" if r["baseline"] else "")
        lines.append(name + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "", r"\medskip", ""]
    dh = detail_head(result)
    lines += [r"\begin{tabular}{" + "l" * (len(dh) - 3) + "rrr}", r"\toprule",
              " & ".join(_tex(h) for h in dh) + r" \\", r"\midrule"]
    for row in details(result, digits, short):
        *head, ci, p, pc = row
        mk = pc[-1] if pc and pc[-1] in (BETTER, WORSE) else ""
        pc = pc[:-1] if mk else pc
        ci = ci.replace("-", "$-$")
        lines.append(" & ".join(_tex(h) for h in head) + f" & {ci} & {tex_p(p)} & "
                     f"{tex_p(pc)}{sup(mk)}" + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", "", r"\medskip", ""]
    foot = [legend(result)]
    if short:
        foot.append("Runs: " + label_legend(result) + ".")
    foot += _notes(result)
    text = _tex(" ".join(foot)).replace("†", r"$\dagger$").replace("<=", r"$\le$")
    lines += [r"{\footnotesize " + text + "}"]
    return "\n".join(lines) + "\n"


def tex_p(p: str) -> str:
    """``2.0e-04`` as ``$2.0\\times10^{-4}$``."""
    if "e" not in p:
        return p
    mant, exp = p.split("e")
    return rf"${mant}\times10^{{{int(exp)}}}$"
