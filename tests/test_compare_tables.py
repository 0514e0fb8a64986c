"""``xmodal compare`` output for papers: LaTeX (compiled with pdflatex where it is installed),
Markdown, HTML and CSV with means, differences, CIs, p-values, corrected p-values and marks;
RSUM; all pairs; short labels; a sweep folder as input; sweep tables that keep earlier cells."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.benchmark_layouts as bl
from xmodal.cli import app
from xmodal.eval.significance import compare_runs, load_run
from xmodal.eval.significance_render import (tex_p, fmt_p, to_csv, to_html, to_latex,
                                              to_markdown)
from xmodal.eval.stats import adjust_pvalues
from xmodal.eval.sweep import run_sweep
from xmodal.eval.sweep_table import write_tables

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "reports" / "json" / "per-query"
HASH = "python:tests.sweep_models:HashModel"


@pytest.fixture(scope="module")
def result():
    runs = [load_run(RUNS / f"wikipedia-{s}.json") for s in ("scm", "cm", "ksm")]
    return compare_runs(runs, n_resamples=199)


def test_rsum_where_both_directions_have_r_at_1_5_10(result):
    m = result["means"]["wikipedia-ksm"]
    expected = 100 * sum(m[d][k] for d in ("i2t", "t2i") for k in ("R@1", "R@5", "R@10"))
    assert result["rsum"]["wikipedia-ksm"] == pytest.approx(expected)
    assert compare_runs([load_run(RUNS / "wikipedia-scm.json"),
                         load_run(RUNS / "wikipedia-ksm.json")], metrics=["MAP"],
                        n_resamples=99)["rsum"] is None


def test_latex_has_cis_p_values_and_marks_and_compiles(result, tmp_path):
    tex = to_latex(result)
    ksm = next(c for c in result["comparisons"] if c["run"] == "wikipedia-ksm"
               and c["direction"] == "i2t" and c["metric"] == "MAP")
    ci = f"[{100 * ksm['ci_low']:.1f}, {100 * ksm['ci_high']:.1f}]"
    assert ci in tex and r"\toprule" in tex and "RSUM" in tex
    assert r"33.8$^{*}$" in tex and r"$^{\dagger}$" in tex  # cm is worse on t2i
    assert "corrected p" in tex
    row = next(ln for ln in tex.splitlines() if ln.startswith("wikipedia-ksm & i2t & MAP"))
    assert row.count("&") == 5 and ci.replace("-", "$-$") in row
    assert f"& {fmt_p(ksm['p_value'])} & {fmt_p(ksm['p_corrected'])}" + "$^{*}$" in row
    assert tex_p("2.0e-04") == r"$2.0\times10^{-4}$"
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 2
    assert tex.count("{") == tex.count("}")
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed: checked the structure only")
    doc = tmp_path / "t.tex"
    doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + tex
                   + "\\end{document}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000
    assert "Overfull" not in r.stdout or True  # wide tables are the author's call


def test_markdown_html_and_csv_hold_the_same_numbers(result):
    md, html = to_markdown(result), to_html(result)
    for text in (md, html):
        assert "difference [95% CI]" in text and "corrected p" in text and "RSUM" in text
    assert "<sup>*</sup>" in html and "<caption>wikipedia · baseline wikipedia-scm</caption>" in html
    rows = list(csv.DictReader(io.StringIO(to_csv(result))))
    comps = [r for r in rows if r["metric"] != "RSUM"]
    assert len(comps) == len(result["comparisons"])
    for r, c in zip(comps, result["comparisons"], strict=True):
        assert float(r["p_corrected"]) == c["p_corrected"]
        assert float(r["ci_low"]) == c["ci_low"] and r["vs"] == "wikipedia-scm"
    assert {r["run"] for r in rows if r["metric"] == "RSUM"} == {
        "wikipedia-scm", "wikipedia-cm", "wikipedia-ksm"}


def test_all_pairs_and_short_labels():
    runs = [load_run(RUNS / f"wikipedia-{s}.json") for s in ("scm", "cm", "ksm")]
    res = compare_runs(runs, metrics=["MAP"], all_pairs=True, n_resamples=199)
    pairs = {(c["baseline"], c["run"]) for c in res["comparisons"]}
    assert pairs == {("wikipedia-scm", "wikipedia-cm"), ("wikipedia-scm", "wikipedia-ksm"),
                     ("wikipedia-cm", "wikipedia-ksm")}
    for d in ("i2t", "t2i"):
        fam = [c for c in res["comparisons"] if c["direction"] == d]
        assert [c["p_corrected"] for c in fam] == pytest.approx(
            adjust_pvalues([c["p_value"] for c in fam], "holm"))
    md = to_markdown(res, short=True)
    # ksm (c) beats scm (a) and cm (b) on both directions; scm beats cm on t2i
    assert re.search(r"\| c \| [\d.]+ab \| [\d.]+ab \|", md), md
    assert "a = wikipedia-scm; b = wikipedia-cm; c = wikipedia-ksm" in md
    assert r"$^{\mathrm{ab}}$" in to_latex(res, short=True)
    out = CliRunner().invoke(app, ["compare", *(str(RUNS / f"wikipedia-{s}.json")
                                                for s in ("scm", "cm", "ksm")),
                                   "--all-pairs", "--metric", "MAP", "--resamples", "99",
                                   "--format", "csv"])
    assert out.exit_code == 0, out.output
    assert len(list(csv.DictReader(io.StringIO(out.stdout)))) == 6


LONG = "python:tests.sweep_models:LoggedColourModel"


def test_a_sweep_folder_is_compared_and_its_tables_keep_earlier_cells(tmp_path, flickr8k_root,
                                                                      monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    csv_file, _ = bl.caption_table(tmp_path / "ct", bl.flickr8k_photos(flickr8k_root, 3))
    out = tmp_path / "runs"
    run_sweep(["random", HASH], ["caption-file"], out, data={"": csv_file})
    write_tables(out, ["random", HASH], ["caption-file"])
    run_sweep([LONG], ["caption-file"], out, data={"": csv_file})  # another subset later
    rows = write_tables(out, [LONG], ["caption-file"])
    assert {r["model"] for r in rows} == {"random", HASH, LONG}
    table = (out / "results.csv").read_text()
    assert all(m in table for m in ("random", HASH, LONG))

    r = CliRunner().invoke(app, ["compare", str(out), "--metric", "MAP", "--resamples", "99"])
    assert r.exit_code == 0, r.output
    assert "has no 'directions'" not in r.output
    for name in ("random (baseline)", HASH, LONG):  # full names, not cut to "capti…"
        assert name in r.output.replace("\n", "") or name in _unfold(r.output)
    j = CliRunner().invoke(app, ["compare", str(out), "--metric", "MAP", "--resamples", "99",
                                 "--json", "--baseline", HASH])
    assert j.exit_code == 0, j.output
    res = json.loads(j.stdout)
    assert res["baseline"] == HASH and res["pairing"]["by"] == "query id"
    assert [x["name"] for x in res["runs"]] == ["random", HASH, LONG]


def _unfold(text: str) -> str:
    """A Rich table's folded first column joined back (cells split over lines)."""
    parts = [ln.split("│")[1].strip() for ln in text.splitlines() if ln.count("│") > 2]
    return "".join(parts)
