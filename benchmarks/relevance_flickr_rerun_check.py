"""Issue 15 check: does ``xmodal reproduce corel5k --part flickr`` give the Flickr8K keyword
numbers stored in the repository?

Compares a fresh run's ``relevance_models.json`` (written with ``--out DIR``) with the stored
``benchmarks/results/relevance_models.json``, number by number over the Flickr8K part (every
row's annotation and retrieval metrics and the selection tables; timings excluded), and the
report it rendered with ``reports/relevance_models.md``, line by line (the line naming the run's
commit and date excluded).

    cp benchmarks/results/relevance_models.json benchmarks/results/corel_nested_cv.json /tmp/r/
    xmodal reproduce corel5k --part flickr --out /tmp/r --report /tmp/r/r.md --figures /tmp/r
    python -m benchmarks.relevance_flickr_rerun_check /tmp/r   # -> ..._rerun_check.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks._record import RESULTS, record
from benchmarks.hodosh_rerun_check import _walk

REPORT = Path(__file__).resolve().parents[1] / "reports" / "relevance_models.md"


def compare(new: dict, old: dict) -> dict:
    """Number-by-number comparison of the Flickr8K parts of two ``relevance_models.json``."""
    out: dict = {"identical": 0, "different": [], "not_stored": []}
    for name, row in new["models"].items():
        if name not in old["models"]:
            out["not_stored"].append(name)
            continue
        for part, value in row.items():
            if part != "seconds":
                _walk(value, old["models"][name].get(part), ["models", name, part], out)
    _walk(new.get("selection", {}), old.get("selection", {}), ["selection"], out)
    return out


def report_lines(new_report: Path) -> dict:
    """Lines of the rendered report that differ from the stored one (the stamp line aside)."""
    def body(path: Path) -> list[str]:
        return [line for line in path.read_text().splitlines()
                if not line.startswith("Regenerate: ")]

    new, old = body(new_report), body(REPORT)
    return {"lines": len(new), "only_in_new": [x for x in new if x not in old],
            "only_in_stored": [x for x in old if x not in new]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the --out folder of the fresh run")
    ap.add_argument("--report", type=Path, default=None,
                    help="the report the run rendered (default: RUN/r.md)")
    ap.add_argument("--commands", nargs="*", default=[],
                    help="the reproduce commands that filled RUN (recorded as given)")
    args = ap.parse_args()
    fresh = json.loads((args.run / "relevance_models.json").read_text())
    stored = json.loads((RESULTS / "relevance_models.json").read_text())
    numbers = compare(fresh["flickr"], stored["flickr"])
    lines = report_lines(args.report or args.run / "r.md")
    big = [d for d in numbers["different"] if isinstance(d["new"], float)
           and abs(d["new"] - d["stored"]) > 1e-4]
    record("relevance_flickr_rerun_check", {
        "stored": {k: stored.get(k) for k in ("command", "commit", "date")},
        "rerun": {k: fresh.get(k) for k in ("command", "commit", "date")},
        "rerun_commands": args.commands,
        "numbers_identical": numbers["identical"],
        "numbers_different": numbers["different"],
        "differences_above_1e-4": len(big),
        "not_stored": numbers["not_stored"],
        "report": lines,
    })
    print(f"{numbers['identical']} identical, {len(numbers['different'])} different "
          f"({len(big)} by more than 1e-4); report lines differing: "
          f"{len(lines['only_in_new'])} new, {len(lines['only_in_stored'])} stored")


if __name__ == "__main__":
    main()
