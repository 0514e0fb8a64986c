"""``reports/mitl_flickr8k.md`` is rendered from the stored study results; its numbers follow
the results, and a result that contradicts one of its Findings stops the rendering with the
claim to rewrite."""

import copy
import json
from pathlib import Path

import pytest

from xmodal.errors import XmodalError
from xmodal.reproduce.mitl_findings import markdown, write_report
from xmodal.reproduce.render import ClaimFailed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture
def res() -> dict:
    out = {}
    for s in ("crowd", "expert"):
        path = RESULTS / f"mitl_flickr8k_{s}.json"
        if not path.is_file():
            pytest.skip(f"{path} is not in this checkout")
        out[s] = json.loads(path.read_text())
    return copy.deepcopy(out)


def test_stored_report_is_what_the_stored_json_renders(res):
    assert markdown(**res) == (ROOT / "reports" / "mitl_flickr8k.md").read_text()


def test_write_report_reads_the_results_folder(res, tmp_path):
    with pytest.raises(XmodalError, match="xmodal reproduce mitl"):
        write_report(tmp_path, tmp_path / "r.md")
    for s, r in res.items():
        (tmp_path / f"mitl_flickr8k_{s}.json").write_text(json.dumps(r))
    write_report(tmp_path, tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text() == markdown(**res)


def test_changed_numbers_are_rendered(res):
    res["crowd"]["aggregate"]["verdicts"]["candidate"]["positive"] = 4321
    res["crowd"]["coverage"]["dual"]["precision"] = 0.31
    res["expert"]["simulation"]["review"] = 17
    text = markdown(**res)
    assert "**Verified positives: 4,321 new pairs (crowd)" in text
    assert "judged by the crowd (31%; experts 59%)" in text
    assert "original pair used as the known positive; 17 expert)" in text


def _deeper(r: dict) -> dict:
    return r["yield"]["round 2 deeper"]


@pytest.mark.parametrize("change, claim", [
    (lambda r: r["crowd"]["coverage"]["hodosh-nn"].update(precision=0.9), "most often right"),
    (lambda r: _deeper(r["crowd"])["positives"].__setitem__(-1, 10_000),
     "per answered judgment the targeted round still wins"),
    (lambda r: _deeper(r["crowd"]).update(positives_per_100_judgments=5.0),
     "targeted round finds more positives"),
    (lambda r: r["crowd"]["table2"]["i2t"].update(precision=0.8), "precise"),
])
def test_a_result_that_flips_a_finding_stops_the_rendering(res, change, claim):
    change(res)
    with pytest.raises(ClaimFailed, match=claim) as err:
        markdown(**res)
    assert "templates/mitl_flickr8k.md" in str(err.value)
