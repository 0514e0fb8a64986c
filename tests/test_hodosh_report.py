"""``reports/hodosh.md`` is rendered from the stored JSON: numbers follow the results, and a
conclusion of the template that the results no longer support stops the rendering."""

import copy
import json
from pathlib import Path

import pytest
from stored_results import stored

from xmodal.reproduce.hodosh_report import report_text
from xmodal.reproduce.hodosh_summary import full_scale_reference, originals, with_full_scale
from xmodal.reproduce.render import ClaimFailed

ROOT = Path(__file__).resolve().parents[1]


def test_stored_report_is_what_the_stored_json_renders():
    stored("hodosh_reproduction.json")
    assert report_text() == (ROOT / "reports" / "hodosh.md").read_text()


def _render(tmp_path: Path, name: str, edit) -> str:
    """The report with one stored result file edited (the others are the stored ones)."""
    record = copy.deepcopy(stored(f"{name}.json"))
    edit(record["results"])
    (tmp_path / f"{name}.json").write_text(json.dumps(record))
    return report_text(tmp_path)


def _metrics(res: dict, protocol: str = "flickr8k-hodosh", d: str = "i2t") -> dict:
    return res["metrics"][protocol][d]


def test_numbers_follow_the_results(tmp_path):
    def edit(res):
        _metrics(res)["tri5sem-448"]["R@10"] = 0.251
        _metrics(res, d="t2i")["bow5-112"]["R@5"] = 0.099

    text = _render(tmp_path, "hodosh_reproduction", edit)
    assert "gives Tri5Sem R@10 25.1 / 24.0 and median rank" in text
    assert "13.0 -> 9.9 search" in text and "13.0 -> 10.6 search" not in text


@pytest.mark.parametrize("edit, claim", [
    (lambda res: _metrics(res)["bow5"].update({"R@1": 0.05}),  # BoW5 now leads R@1
     "annotation leader: Tri5Sem on R@1, R@10, median rank and R-P"),
    (lambda res: _metrics(res, "flickr8k-hodosh-crowd")["tri5sem-full"].update({"R@10": 0.49}),
     "exact kernels close under half of every Tri5Sem gap"),
    (lambda res: _metrics(res, d="t2i")["nn"].update({"R@10": 0.9}),
     "NN is below every KCCA model on every R@K and median rank"),
    (lambda res: res["significance"]["flickr8k-hodosh-crowd"]["t2i"]["tagrank"].update(
        {"R-P": 0.01}), "search: TagRank's R-P lead over Tri5Sem is not significant"),
])
def test_a_flipped_conclusion_names_its_claim(tmp_path, edit, claim):
    with pytest.raises(ClaimFailed) as err:
        _render(tmp_path, "hodosh_reproduction", edit)
    assert err.value.claim == claim and "templates/hodosh.md" in str(err.value)


def test_cost_claim_checks_that_the_benchmark_reproduces_the_row(tmp_path):
    def edit(res):
        res["flickr8k_hodosh"]["i2t"]["R@1"] += 0.001

    with pytest.raises(ClaimFailed, match="kcca_exact reproduces the -full row"):
        _render(tmp_path, "kcca_exact", edit)


def test_originals_claims_are_checked_too(tmp_path):
    def edit(res):  # the originals shrunk to 224 px now differ from our copies in one pair
        res["significance"]["cv"]["gold"]["i2t"]["bow5"]["originals@224"]["R@10"] = 0.01

    with pytest.raises(ClaimFailed, match="shrunk to 224 px differ from our copies in no pair"):
        _render(tmp_path, "hodosh_originals", edit)


def test_originals_section_is_compared_with_the_reports_own_8k_numbers():
    payload = stored("hodosh_originals.json")
    main = stored("hodosh_reproduction.json")
    moved = copy.deepcopy(main)
    moved["results"]["metrics"]["flickr8k-hodosh"]["i2t"]["tri5sem"]["R@1"] = 0.077
    claims = with_full_scale(payload, moved)["results"]["full_scale"]["claims"]
    row = next(c for c in claims if c["claim"] == "Annotation R@1, Tri5Sem")
    assert row["ours"] == pytest.approx(7.7)
    assert full_scale_reference(moved)["claims"] == claims
    before = originals(with_full_scale(payload, main)["results"])[0]["close"]
    after = originals(with_full_scale(payload, moved)["results"])[0]["close"]
    assert before["R@1"] == "-4 to 10" and after["R@1"] != before["R@1"]
    assert after["R@10"] == before["R@10"]


def test_numbers_no_rerun_records_come_from_the_historical_file(tmp_path):
    assert stored("hodosh_historical.json")["historical"] is True

    def edit(res):
        res["tri5sem_d1_pivots"]["value"] = 813

    assert "the factorisation stops at 813 pivots" in _render(tmp_path, "hodosh_historical", edit)
