"""``reports/wikipedia.md`` is rendered from the stored JSON; its numbers follow the JSON, and a
result that contradicts one of its sentences stops the rendering with the claim to rewrite."""

import copy
import json
from pathlib import Path

import pytest
from stored_results import stored
from typer.testing import CliRunner

from xmodal.errors import XmodalError
from xmodal.reproduce.render import ClaimFailed
from xmodal.reproduce.wikipedia_report import markdown, tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture
def res() -> dict:
    return copy.deepcopy(stored("wikipedia_reproduction.json"))


@pytest.fixture
def eval_res() -> dict:
    return copy.deepcopy(stored("wikipedia_eval.json"))


def test_stored_report_is_what_the_stored_json_renders(res, eval_res):
    assert markdown(res, eval_res) == (ROOT / "reports" / "wikipedia.md").read_text()
    assert tables(res) == (RESULTS / "wikipedia_tables.md").read_text()


def _flat(text: str) -> str:
    """The report with its line wrapping undone."""
    return " ".join(text.split())


def _set(res: dict, eval_res: dict, name: str, i2t: float, t2i: float) -> None:
    """A model's Table 4 MAP, and its timed eval's."""
    res["table4"][name] = {"i2t": i2t, "t2i": t2i, "avg": (i2t + t2i) / 2}
    eval_res["results"][name].update(MAP_i2t=i2t, MAP_t2i=t2i, MAP_avg=(i2t + t2i) / 2)


def test_changed_numbers_are_rendered(res, eval_res):
    _set(res, eval_res, "ksm", 0.3412, 0.2701)
    res["git_commit"], res["elapsed_s"] = "0123456789abcdef", 120.0
    res["ksmqe_image_256"] = [0.3311, 0.2777]
    res["exploration"]["test_map"]["ksm_256"] = [0.3123, 0.2601]
    md = _flat(markdown(res, eval_res))
    assert "| KSM (ours) | 0.341 | 0.270 | 0.306 | - | - |" in md
    assert "Average MAP **0.306**, against 0.240 for the CV-selected SCM" in md
    assert "at commit `0123456`" in md and "the recorded run took 2 min" in md
    assert "KSM-QE gives 0.331 / 0.278, average 0.3044, still above 0.30" in md
    assert "gives test MAP 0.312 / 0.260 (average 0.286). Seeing that it fell short" in md


@pytest.mark.parametrize("change, claim", [
    (lambda r, e: _set(r, e, "ksm", 0.25, 0.2), "KSM is better than SCM in both directions"),
    (lambda r, e: _set(r, e, "sm", 0.23, 0.2249), "the only Table 4 miss is SM's image query"),
    (lambda r, e: r.update(ksmqe_image_256=[0.3, 0.28]), "KSM-QE stays above 0.30"),
    (lambda r, e: r["exploration"]["cv_map"].update({"power/2.0/0.5": 0.31}), "need no tempering"),
    (lambda r, e: r["exploration"]["test_map"].update(ksm_256=[0.35, 0.27]), "fell short of 0.30"),
    (lambda r, e: r["cca_reg_cv_beyond_grid"].update({"10.0": 0.24}), "interior optimum"),
])
def test_a_result_that_flips_a_sentence_stops_the_rendering(res, eval_res, change, claim):
    change(res, eval_res)
    with pytest.raises(ClaimFailed, match=claim) as err:
        markdown(res, eval_res)
    assert "templates/wikipedia.md" in str(err.value)


def test_timings_that_flip_the_speed_sentence_stop_the_rendering(res, eval_res):
    timed = copy.deepcopy(eval_res)
    timed["results"]["cm"]["wall_s"] = 100.0
    with pytest.raises(ClaimFailed, match="KSM and KSM-QE are the slowest"):
        markdown(res, timed)


def test_report_only_rewrites_the_report_from_the_json(tmp_path, res, eval_res):
    from xmodal.cli import app

    _set(res, eval_res, "ksm-qe", 0.3512, 0.2758)
    (tmp_path / "wikipedia_reproduction.json").write_text(json.dumps(res))
    (tmp_path / "wikipedia_eval.json").write_text(json.dumps(eval_res))
    report = tmp_path / "wikipedia.md"
    result = CliRunner().invoke(app, ["reproduce", "wikipedia", "--report-only", "--out",
                                      str(tmp_path), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert report.read_text() == markdown(res, eval_res)
    assert "gives MAP **0.351**" in report.read_text()
    assert (tmp_path / "wikipedia_tables.md").read_text() == tables(res)


def test_report_only_without_the_timings_names_the_command_that_records_them(tmp_path, res):
    from xmodal.reproduce.wikipedia_report import write_report

    (tmp_path / "wikipedia_reproduction.json").write_text(json.dumps(res))
    with pytest.raises(XmodalError, match="benchmarks.wikipedia_eval"):
        write_report(tmp_path, tmp_path / "wikipedia.md")


def test_numbers_of_the_diagnostics_and_the_exploration_follow_the_json(res, eval_res):
    res["paper_setting"]["scm"]["centered_nc"] = [0.311, 0.229]
    res["cca_reg_cv_beyond_grid"]["10.0"] = 0.2101
    res["ksmqe_vs_ksm_p"] = {"i2t": 0.0004, "t2i": 0.012, "both": 0.0001}
    cv = res["exploration"]["cv_map"]
    cv.update({"rank/512": 0.2941, "svm+scm": 0.2001, "prf/10/0.5": 0.3001})
    md = _flat(markdown(res, eval_res))
    assert "The centered (Pearson) form gives 0.311 / 0.229 with" in md
    assert "0.2295 at 3, 0.2101 at 10, 0.2182 at 100." in md
    assert "(+0.010 / +0.003) p = 0.0004 / 0.012 (paired" in md
    assert "| 0.2948 / 0.2941 / 0.2907 |" in md
    assert "| 0.200-0.290 (no gain over the SVM alone) |" in md
    assert "| 0.287-0.300 (+0.0043 over KSM) |" in md


def test_a_json_without_the_exploration_is_refused_with_the_command_that_recomputes_it(
        res, eval_res):
    del res["exploration"]
    with pytest.raises(XmodalError, match="rerun `xmodal reproduce wikipedia`"):
        markdown(res, eval_res)


def test_the_stored_report_has_no_historical_number():
    assert "†" not in (ROOT / "reports" / "wikipedia.md").read_text()
