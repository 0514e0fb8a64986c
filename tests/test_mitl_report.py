"""``reports/mitl_flickr8k.md`` is rendered from the stored study results, and its Findings
follow the numbers (changed results change the prose)."""

import copy
import json
from pathlib import Path

import pytest

from xmodal.reproduce.mitl import MARK, render
from xmodal.reproduce.mitl_findings import findings

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _stored() -> dict:
    out = {}
    for s in ("crowd", "expert"):
        path = RESULTS / f"mitl_flickr8k_{s}.json"
        if not path.is_file():
            pytest.skip(f"{path} is not in this checkout")
        out[s] = json.loads(path.read_text())
    return out


def test_stored_report_is_what_the_stored_json_renders():
    report = (ROOT / "reports" / "mitl_flickr8k.md").read_text()
    assert MARK in report and report.index(MARK) < report.index("## Findings")
    assert render(report, _stored()) == report


def test_findings_follow_the_numbers():
    res = _stored()
    text = findings(res["crowd"], res["expert"])
    v = res["crowd"]["aggregate"]["verdicts"]["candidate"]["positive"]
    assert f"**Verified positives: {v:,} new pairs (crowd)" in text
    changed = copy.deepcopy(res)
    cov = changed["crowd"]["coverage"]
    cov["hodosh-nn"]["precision"], cov["dual"]["precision"] = 0.9, 0.01
    changed["crowd"]["aggregate"]["verdicts"]["candidate"]["positive"] = 4321
    new = findings(changed["crowd"], changed["expert"])
    assert "NN5's candidates are the most often right when judged by the crowd (90%" in new
    assert "the dual encoder's the least (1%" in new
    assert "**Verified positives: 4,321 new pairs (crowd)" in new
    y = changed["crowd"]["yield"]["round 2 deeper"]
    y["positives"][-1] = 10_000  # deeper now wins per answered judgment
    assert "per answered judgment it does not win" in findings(changed["crowd"],
                                                                changed["expert"])
