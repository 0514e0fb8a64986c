"""The raw answers of a campaign, as every judging tool gives them: one row per judgment.

:func:`answer_rows` lists every answer of every submitted assignment (HITs judged here and those
imported from MTurk, Label Studio or Prolific): who (the worker and their platform), what (the
pair, its image and text ids, its role in the HIT: a pair to judge or a check), the answer (1-4,
or none: "can't tell", or no recorded judgment), the reason, when and how long the HIT took,
and whether the assignment counts (accepted) or not. :func:`write_answers` writes them as CSV,
JSON Lines or Parquet. :func:`disagreements` lists the pairs whose counted answers disagree.
The Python API is :class:`xmodal.mitl.api.Campaign` (``Campaign.open(path)`` and its ``hits``,
``answers`` and ``aggregate``), which the command line uses.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.mitl.answers import ANSWERS, SKIP_LABEL, is_positive

FIELDS = ("worker", "platform", "platform_worker", "hit", "entry_test", "assignment",
          "platform_assignment", "pair", "image_id", "text_id", "role", "kind", "answer",
          "answer_label", "reason", "started_at", "submitted_at", "seconds", "status",
          "accepted")
FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet"}


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(
        timespec="seconds")


def _has(campaign, table: str) -> bool:
    return bool(campaign.q("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (table,)))


def answer_rows(campaign) -> list[dict[str, Any]]:
    """Every answer of every submitted assignment, in assignment order then HIT position.

    ``answer`` is 1-4, or None (the worker answered "can't tell", or a simulated worker had no
    recorded judgment): such a row is no judgment. ``seconds`` is the platform's work time where
    it reported one, else submit minus start (per HIT, the same on each of its rows).
    ``accepted`` says whether the assignment counts for the verdicts."""
    ext_w = ("LEFT JOIN external_workers ew ON ew.worker_id = w.id"
             if _has(campaign, "external_workers") else "")
    ext_a = ("LEFT JOIN external_assignments ea ON ea.assignment_id = a.id"
             if _has(campaign, "external_assignments") else "")
    cols = ("ew.platform, ew.external_id" if ext_w else "NULL, NULL") + ", " + (
        "ea.external_id, ea.work_s" if ext_a else "NULL, NULL")
    q = campaign.meta("qualify") or {}
    rows = campaign.q(
        f"SELECT w.name, {cols}, a.hit_id, a.id, j.pair_id, p.image_id, p.text_id, hi.role, "
        f"p.kind, j.answer, j.reason, a.started_at, a.submitted_at, a.status FROM judgments j "
        f"JOIN assignments a ON a.id = j.assignment_id JOIN workers w ON w.id = a.worker_id "
        f"JOIN pairs p ON p.id = j.pair_id JOIN hit_items hi ON hi.hit_id = a.hit_id AND "
        f"hi.pair_id = j.pair_id {ext_w} {ext_a} WHERE a.submitted_at IS NOT NULL "
        f"ORDER BY a.id, hi.position")
    out = []
    for (worker, platform, ext_worker, ext_assignment, work_s, hit, aid, pid, image_id, text_id,
         role, kind, answer, reason, started, submitted, status) in rows:
        seconds = work_s if work_s is not None else (
            submitted - started if started is not None and submitted is not None else None)
        out.append({
            "worker": worker, "platform": platform or "here", "platform_worker": ext_worker,
            "hit": hit, "entry_test": hit == q.get("hit"), "assignment": aid,
            "platform_assignment": ext_assignment, "pair": pid, "image_id": image_id,
            "text_id": text_id, "role": role, "kind": kind, "answer": answer,
            "answer_label": ANSWERS.get(answer, SKIP_LABEL if answer is None else None),
            "reason": reason, "started_at": _iso(started), "submitted_at": _iso(submitted),
            "seconds": None if seconds is None else round(float(seconds), 3),
            "status": status, "accepted": status == "accepted"})
    return out


def write_answers(rows: list[dict[str, Any]], path: str | Path) -> dict[str, Any]:
    """Write the rows to ``path``; its suffix picks the format (.csv, .jsonl, .parquet)."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise XmodalError(f"{path}: name the output .csv, .jsonl or .parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if fmt == "csv":
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    elif fmt == "jsonl":
        with open(tmp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    else:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise XmodalError("Parquet needs pyarrow: pip install pyarrow (or write .csv / "
                              ".jsonl)") from None
        types = {"hit": pa.int64(), "assignment": pa.int64(), "pair": pa.int64(),
                 "answer": pa.int64(), "seconds": pa.float64(), "entry_test": pa.bool_(),
                 "accepted": pa.bool_()}
        schema = pa.schema([(k, types.get(k, pa.string())) for k in FIELDS])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    tmp.replace(path)
    return {"path": str(path), "format": fmt, "rows": len(rows),
            "judgments": sum(r["answer"] is not None for r in rows),
            "workers": len({r["worker"] for r in rows})}


def disagreements(campaign, rule: str = "eccv") -> list[dict[str, Any]]:
    """Pairs to judge whose counted answers (accepted assignments, "can't tell" left out)
    disagree once binarised: some workers said yes, some no. Most split first."""
    by_pair: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in answer_rows(campaign):
        if r["accepted"] and r["role"] == "judge" and r["answer"] is not None:
            by_pair[r["pair"]].append(r)
    out = []
    for pid, rows in by_pair.items():
        yes = sum(is_positive(r["answer"], rule) for r in rows)
        if 0 < yes < len(rows):
            out.append({"pair": pid, "image_id": rows[0]["image_id"],
                        "text_id": rows[0]["text_id"], "kind": rows[0]["kind"], "yes": yes,
                        "no": len(rows) - yes,
                        "answers": [{"worker": r["worker"], "assignment": r["assignment"],
                                     "answer": r["answer"], "label": r["answer_label"],
                                     "reason": r["reason"]} for r in rows]})
    out.sort(key=lambda d: (-min(d["yes"], d["no"]) / (d["yes"] + d["no"]), d["pair"]))
    return out


def hit_rows(campaign) -> list[dict[str, Any]]:
    """Every HIT: id, replication, whether it is the entry test, its items (pair, role, image
    and text ids) in the order shown, and its assignments by status."""
    q = campaign.meta("qualify") or {}
    hits: dict[int, dict[str, Any]] = {}
    for hit, repl in campaign.q("SELECT id, replication FROM hits ORDER BY id"):
        hits[hit] = {"hit": hit, "replication": repl, "entry_test": hit == q.get("hit"),
                     "items": [], "assignments": {}}
    for hit, pid, role, image_id, text_id in campaign.q(
            "SELECT hi.hit_id, hi.pair_id, hi.role, p.image_id, p.text_id FROM hit_items hi "
            "JOIN pairs p ON p.id = hi.pair_id ORDER BY hi.hit_id, hi.position"):
        hits[hit]["items"].append({"pair": pid, "role": role, "image_id": image_id,
                                   "text_id": text_id})
    for hit, status, n in campaign.q("SELECT hit_id, status, COUNT(*) FROM assignments "
                                     "GROUP BY hit_id, status"):
        hits[hit]["assignments"][status] = n
    return list(hits.values())
