"""Issue 15 check: does ``xmodal reproduce hodosh`` give the numbers stored in the repository?

Compares one or more fresh runs (each ``hodosh_reproduction.json`` + its rendered report, e.g.
subsets of systems run with ``--out DIR``, which render no report) with the stored
``benchmarks/results/hodosh_reproduction.json`` and ``reports/hodosh.md``, number by number:
every metric and expert score of every system the runs hold (and significance, correlations or
the dev selection, i.e. every candidate's dev scores and the chosen settings, where the stored
file has them), and every line of the report's tables 1-4 that the runs render.
Records which numbers differ, by how much, and whether a difference shows at the report's
precision.

    xmodal reproduce hodosh --systems nn,bow1 --out /tmp/h --figures /tmp/h
    python -m benchmarks.hodosh_rerun_check /tmp/h  # -> benchmarks/results/hodosh_rerun_check.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from benchmarks._record import RESULTS, record

REPORT = Path(__file__).resolve().parents[1] / "reports" / "hodosh.md"
TABLE_HEADS = ("| System", "| Metric", "| Claim", "| Setting", "|---")


def _walk(new, old, path: list, out: dict) -> None:
    if isinstance(new, dict):
        for k, v in new.items():
            if k not in old:
                out["not_stored"].append("/".join(map(str, path + [k])))
            else:
                _walk(v, old[k], path + [k], out)
    elif isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        for i, (a, b) in enumerate(zip(new, old)):
            _walk(a, b, path + [i], out)
    else:
        same = new == old or (isinstance(new, float) and isinstance(old, float)
                              and math.isnan(new) and math.isnan(old))
        if same:
            out["identical"] += 1
        else:
            out["different"].append({"where": "/".join(map(str, path)), "new": new, "stored": old})


def compare_results(new: dict, old: dict) -> dict:
    """Number-by-number comparison of the systems in ``new`` (results parts of two files)."""
    out: dict = {"identical": 0, "different": [], "not_stored": []}
    for pname, dirs in new["metrics"].items():
        for d, per in dirs.items():
            for s, m in per.items():
                _walk(m, old["metrics"][pname][d][s], ["metrics", pname, d, s], out)
    for s, e in new["expert"].items():
        _walk(e, old["expert"][s], ["expert", s], out)
    for key in ("significance", "expert_significance", "selection"):
        if key not in new:
            continue  # a run of a subset without that part (e.g. no Tri5Sem to test against)
        if key in old:
            _walk(new[key], old[key], [key], out)
        else:
            out["not_stored"].append(f"{key} (the stored file predates it)")
    return out


def _dev_scores(rec: dict, task: str, setting: dict) -> dict:
    """The dev R@1/R@5/R@10/medR of one (kappa, n) candidate in a run's selection record."""
    cand = rec["candidates"]
    i = next(j for j, (k, n) in enumerate(zip(cand["kappa"], cand["n"]))
             if (k, n) == (setting["kappa"], setting["n"]))
    return {m: v[i] for m, v in rec[task]["dev"].items()}


def selection_changes(new: dict, old: dict) -> list[dict]:
    """Per system and task whose dev choice differs between two runs: the ensemble settings only
    one run chose, the two single best settings, and each such candidate's dev scores in both."""
    out = []
    for system, rec in new.get("selection", {}).items():
        prev = old.get("selection", {}).get(system)
        for task in ("i2t", "t2i") if prev else ():
            a, b = rec[task], prev[task]
            only_new = [e for e in a["ensemble"] if e not in b["ensemble"]]
            only_old = [e for e in b["ensemble"] if e not in a["ensemble"]]
            if not (only_new or only_old) and a["single"] == b["single"]:
                continue
            involved = {(e["kappa"], e["n"]): e
                        for e in only_new + only_old + [a["single"], b["single"]]}
            out.append({"system": system, "task": task, "ensemble_only_new": only_new,
                        "ensemble_only_stored": only_old,
                        "single": {"new": a["single"], "stored": b["single"]},
                        "dev": [{"kappa": e["kappa"], "n": e["n"],
                                 "new": _dev_scores(rec, task, e),
                                 "stored": _dev_scores(prev, task, e)}
                                for e in involved.values()]})
    return out


def table_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines()
            if ln.startswith("| ") and not ln.startswith(TABLE_HEADS)]


def compare_reports(new: Path, stored: Path) -> dict:
    """Table lines of the fresh report that are not in the stored one. Rows that depend on the
    whole set of systems (the paper comparison's variant columns, the correlations) are
    reported apart when the run holds only some systems."""
    have = set(table_lines(stored))
    lines = table_lines(new) if new.is_file() else []  # a subset run renders no report
    missing = [ln for ln in lines if ln not in have]
    return {"lines": len(lines), "in_stored_report": len(lines) - len(missing),
            "not_in_stored_report": missing}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="folders holding a fresh "
                    "hodosh_reproduction.json and hodosh.md")
    ap.add_argument("--stored", type=Path, default=RESULTS / "hodosh_reproduction.json")
    ap.add_argument("--report", type=Path, default=REPORT)
    ap.add_argument("--no-record", action="store_true", help="print only")
    ap.add_argument("--note", default="", help="what explains the differences (recorded)")
    args = ap.parse_args(argv)
    stored = json.loads(args.stored.read_text())
    res: dict = {"stored": {k: stored.get(k) for k in ("command", "commit", "date")}, "runs": [],
                 "note": args.note}
    for run in args.runs:
        fresh = json.loads((run / "hodosh_reproduction.json").read_text())
        num = compare_results(fresh["results"], stored["results"])
        rep = compare_reports(run / "hodosh.md", args.report)
        res["runs"].append({"command": fresh["command"], "commit": fresh["commit"],
                            "date": fresh["date"], "systems": fresh["results"]["systems"],
                            "numbers_identical": num["identical"],
                            "numbers_different": num["different"],
                            "not_stored": num["not_stored"], "report": rep,
                            "selection_changes": selection_changes(fresh["results"],
                                                                   stored["results"])})
        print(f"{fresh['command']}: {num['identical']} numbers identical, "
              f"{len(num['different'])} different; report lines {rep['in_stored_report']} of "
              f"{rep['lines']} found verbatim in {args.report.name}")
        for d in num["different"]:
            print(f"  {d['where']}: {d['new']} (stored {d['stored']})")
        for c in res["runs"][-1]["selection_changes"]:
            print(f"  dev selection of {c['system']} {c['task']} differs: {json.dumps(c)}")
        for ln in rep["not_in_stored_report"]:
            print(f"  report line not in the stored report: {ln}")
    if not args.no_record:
        print(f"wrote {record('hodosh_rerun_check', res)}")
    return res


if __name__ == "__main__":
    main()
