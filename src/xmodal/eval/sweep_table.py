"""The tables of a sweep, rendered from its cell files only (:mod:`xmodal.eval.sweep`).

``tidy_rows(out)`` reads ``out/cells/*.json`` into one row per model x protocol x direction x
metric (``model, protocol, direction, metric, value, n_queries, seed``; values are fractions,
ranks for ``medR`` / ``meanR``; COCO 1K's fold means appear as ``fold-mean <metric>``).
``write_tables(out)`` writes that long table as ``results.csv`` and ``results.parquet`` and a
wide Markdown view (``results.md``: one row per model x protocol x direction, the headline
metrics as percentages) listing the cells that could not run below it.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from xmodal.eval.sweep import CELLS, read_cell, write_atomic

COLUMNS = ["model", "protocol", "direction", "metric", "value", "n_queries", "seed"]
SHOWN = ["R@1", "R@5", "R@10", "medR", "R-P", "mAP@R", "MAP"]


def tidy_rows(out: str | os.PathLike, models: list[str] | None = None,
              protocols: list[str] | None = None) -> list[dict[str, Any]]:
    """The long table of every finished cell (optionally only the given models / protocols),
    sorted by protocol, model, direction, metric."""
    rows: list[dict[str, Any]] = []
    for path in sorted((Path(out) / CELLS).glob("*.json")):
        report = read_cell(path)
        if report is None:
            continue
        model, protocol = report.get("model", ""), report.get("protocol", "")
        if (models and model not in models) or (protocols and protocol not in protocols):
            continue
        sections = [(d, "", v) for d, v in report["directions"].items()]
        folds = (report.get("paper_metrics") or {}).get("folds", {}).get("mean", {})
        sections += [(d, "fold-mean ", v) for d, v in folds.items()]
        for direction, prefix, values in sections:
            for metric, value in values.items():
                if isinstance(value, int | float) and metric != "n_queries":
                    rows.append({"model": model, "protocol": protocol, "direction": direction,
                                 "metric": prefix + metric, "value": float(value),
                                 "n_queries": int(report["n_queries"].get(direction, 0)),
                                 "seed": int(report.get("seed", 0))})
    order = {m: n for n, m in enumerate(models or [])}
    porder = {p: n for n, p in enumerate(protocols or [])}
    rows.sort(key=lambda r: (porder.get(r["protocol"], len(porder)), r["protocol"],
                             order.get(r["model"], len(order)), r["model"], r["direction"],
                             r["metric"]))
    return rows


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**r, "value": repr(r["value"])})
    return buf.getvalue()


def to_markdown(rows: list[dict[str, Any]], errors: list[dict[str, str]] | None = None) -> str:
    """Wide view: one line per model x protocol x direction, metrics as percentages."""
    wide: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        wide.setdefault((r["protocol"], r["model"], r["direction"]),
                        {"n": r["n_queries"]})[r["metric"]] = r["value"]
    head = ["protocol", "model", "direction", *SHOWN, "queries"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 3 + ["---:"] * (len(SHOWN) + 1)) + "|"]
    for (p, m, d), v in wide.items():
        cells = []
        for k in SHOWN:
            x = v.get(k)
            cells.append("–" if x is None else f"{x:.1f}" if k.startswith("med")
                         else f"{100 * x:.1f}")
        lines.append(f"| {p} | `{m}` | {d} | " + " | ".join(cells) + f" | {v['n']:,} |")
    text = "\n".join(lines) + "\n\nMetrics in percent; medR is a rank (1 = first).\n"
    if errors:
        text += "\nCells that did not run:\n\n" + "".join(
            f"- {e['protocol']} × `{e['model']}`: {e['error']}\n" for e in errors)
    return text


def _order(out: Path, first: list[str] | None, key: str) -> list[str]:
    """``first``, then the rest of the sweep's ``key`` (sweep.json) in its order."""
    try:
        known = json.loads((out / "sweep.json").read_text()).get(key, [])
    except (OSError, json.JSONDecodeError):
        known = []
    return list(dict.fromkeys([*(first or []), *known]))


def _partial_note(out: Path) -> str:
    """A line per protocol that ran on a partial copy of its benchmark."""
    seen: dict[str, str] = {}
    for path in sorted((out / CELLS).glob("*.json")):
        report = read_cell(path) or {}
        cov = report.get("coverage") or {}
        if cov.get("partial"):
            seen.setdefault(report.get("protocol", ""), f"{cov['label']}: "
                            + "; ".join(cov["missing"]))
    return "".join(f"- {p}: {v}\n" for p, v in seen.items())


def write_tables(out: str | os.PathLike, models: list[str] | None = None,
                 protocols: list[str] | None = None) -> list[dict[str, Any]]:
    """Write ``results.csv``, ``results.parquet`` and ``results.md`` under ``out``: every
    finished cell of the folder (also those of earlier runs into the same ``--out`` with other
    models or protocols), ``models`` and ``protocols`` first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    rows = tidy_rows(out)
    mo, po = _order(out, models, "models"), _order(out, protocols, "protocols")
    mrank, prank = {m: n for n, m in enumerate(mo)}, {p: n for n, p in enumerate(po)}
    rows.sort(key=lambda r: (prank.get(r["protocol"], len(prank)), r["protocol"],
                             mrank.get(r["model"], len(mrank)), r["model"], r["direction"],
                             r["metric"]))
    try:
        errors = json.loads((out / "errors.json").read_text())
    except (OSError, json.JSONDecodeError):
        errors = []
    write_atomic(out / "results.csv", to_csv(rows).encode())
    md = to_markdown(rows, errors)
    partial = _partial_note(out)
    if partial:
        md += "\nPartial benchmark copies (fewer images, captions or queries than official):\n\n" \
            + partial
    write_atomic(out / "results.md", md.encode())
    table = pa.Table.from_pylist(rows, schema=pa.schema([
        ("model", pa.string()), ("protocol", pa.string()), ("direction", pa.string()),
        ("metric", pa.string()), ("value", pa.float64()), ("n_queries", pa.int64()),
        ("seed", pa.int64())]))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(out / "results.parquet", sink.getvalue().to_pybytes())
    return rows
