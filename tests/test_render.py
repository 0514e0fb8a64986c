"""The rendering layer of the reports: claims stop a report whose conclusion flipped, templates
are filled from named values, tables and number helpers print what the reports print."""

import pytest

from xmodal.errors import XmodalError
from xmodal.reproduce.render import (ClaimFailed, and_list, check_claims, fill, gain_span,
                                     load_results, markdown_table, metric_cell, minutes, pct,
                                     records_table,
                                     render_template, saved_figure, span, wrap)


def test_a_claim_that_flips_stops_the_rendering_and_names_itself():
    res = {"lite2": 0.31, "lite0": 0.29}
    check_claims("dual_encoder", {"lite2_beats_lite0": res["lite2"] > res["lite0"]})
    res["lite2"] = 0.27
    with pytest.raises(ClaimFailed, match="lite2_beats_lite0") as err:
        check_claims("dual_encoder", {"held": True,
                                      "lite2_beats_lite0": res["lite2"] > res["lite0"]})
    assert err.value.claim == "lite2_beats_lite0" and err.value.template == "dual_encoder"
    assert "templates/dual_encoder.md" in str(err.value)


def test_fill_uses_the_named_values_and_names_a_missing_one():
    text = "Lite2 reaches {r1} R@1 ({gain:+.1f} points), {{literal braces}}."
    assert fill(text, {"r1": "31.0", "gain": 2.04}) == \
        "Lite2 reaches 31.0 R@1 (+2.0 points), {literal braces}."
    with pytest.raises(XmodalError, match="gain"):
        fill(text, {"r1": "31.0"})


def test_an_unknown_template_is_a_clear_error():
    with pytest.raises(XmodalError, match="no report template"):
        render_template("no_such_report", {})


def test_numbers_print_as_the_reports_print_them():
    assert pct(0.2534) == "25.3" and pct(0.2534, 2) == "25.34" and pct(None) == "–"
    assert pct(None, missing="-") == "-"
    assert span([0.2701, 0.2783], "{:.3f}") == "0.270-0.278"
    assert span([1.04, 1.01]) == "1.0"
    assert span([-1.2, 0.5]) == "-1.2 to 0.5"
    assert span([3, 12], "{:.0f}", sep="–") == "3–12"
    assert gain_span([2.3, 2.6]) == "+2 to 3" and gain_span([2.0, 2.0]) == "+2"
    assert minutes(1310.4) == "22 minutes" and minutes(50) == "1 minute"
    assert and_list(["a"]) == "a" and and_list(["a", "b", "c"]) == "a, b and c"


def test_a_metric_cell_prints_percentages_or_ranks_with_significance_stars():
    assert metric_cell("R@1", 0.2534) == "25.3" and metric_cell("medR", 12.4) == "12"
    assert metric_cell("R@10", 0.5, p=0.004) == "50.0***"  # p <= 0.01: eval.compare.stars
    assert metric_cell("R@10", 0.5, p=0.2, note=" (*49.1*)") == "50.0 (*49.1*)"


def test_wrap_keeps_list_markers_off_the_start_of_a_line():
    text = "word " * 18 + "- dash and >= 9 " + "more " * 20
    lines = wrap(text, "* ")
    assert all(len(line) <= 96 for line in lines) and lines[0].startswith("* word")
    assert all(not line.lstrip().startswith(("-", ">")) for line in lines[1:])
    assert " ".join(line.strip() for line in lines).replace("* ", "", 1) == " ".join(text.split())


def test_markdown_table_and_a_table_of_records():
    assert markdown_table(["a", "b"], [[1, "x"]]) == "| a | b |\n|---|---|\n| 1 | x |"
    records = [{"name": "lite0", "dev": {"R@1": 0.2534}, "medR": 4.0, "|J|": 7},
               {"name": "lite2", "dev": {"R@1": 0.31}, "medR": 3.0, "|J|": None}]
    table = records_table({"model": "{name}", "dev R@1": "{dev.R@1!p:.1f}%",
                           "medR / \\|J\\|": "{medR:g} / {|J|}"}, records)
    assert table.split("\n") == ["| model | dev R@1 | medR / \\|J\\| |", "|---|---|---|",
                                  "| lite0 | 25.3% | 4 / 7 |", "| lite2 | 31.0% | 3 / None |"]
    with pytest.raises(XmodalError, match="'dev' is missing"):
        records_table({"R@1": "{dev.R@1}"}, [{"R@1": 0.3}])


def test_load_results_reads_each_file_and_names_every_missing_one(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "also").mkdir()
    (tmp_path / "also" / "b.json").write_text('{"y": 2}')
    assert load_results(tmp_path, ["a", "b"], "r.md", "run it", also=tmp_path / "also") == {
        "a": {"x": 1}, "b": {"y": 2}}
    with pytest.raises(XmodalError, match=r"^r.md needs b.json and c.json, not in .*; run it$"):
        load_results(tmp_path, ["a", "b", "c"], "r.md", "run it")


def test_fields_are_paths_into_dicts_lists_and_attributes():
    from types import SimpleNamespace

    values = {"res": {"test": {"cc-heldout": [{"R@1": 0.3374}]}}, "hp": SimpleNamespace(C=2.0)}
    assert fill("{res.test.cc-heldout.0.R@1!p:.1f} {hp.C:g}", values) == "33.7 2"
    with pytest.raises(XmodalError, match="'R@5' is missing"):
        fill("{res.test.cc-heldout.0.R@5}", values)


def test_saved_figure_draws_in_the_block_and_saves_after_it(tmp_path):
    path = tmp_path / "figures" / "f.png"
    with saved_figure(path, 1, 2, figsize=(2, 1)) as (fig, axes):
        assert len(axes) == 2 and not path.exists()
        axes[0].plot([0, 1], [1, 0])
    assert path.read_bytes()[:4] == b"\x89PNG"
