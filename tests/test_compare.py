"""``xmodal compare`` (xmodal.eval.significance): p-values equal scipy's on the same per-query
numbers, corrections equal the library's, the Wikipedia report's significance statements come
back from its stored runs, the CLI's JSON, clear errors, and the web API."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st
from typer.testing import CliRunner

from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.eval.compare import compare
from xmodal.eval.significance import compare_runs, load_run
from xmodal.eval.significance_render import to_latex, to_markdown
from xmodal.eval.stats import adjust_pvalues

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "reports" / "json" / "per-query"
SYSTEMS = ("scm", "cm", "sm", "ksm", "ksm-qe")


def run(name: str, per_query: dict, protocol: str = "toy") -> dict:
    return {"name": name, "protocol": protocol, "model": name, "directions": {"i2t": {}},
            "n_queries": {d: len(v[next(iter(v))]) for d, v in per_query.items()},
            "per_query": per_query}


@pytest.fixture(scope="module")
def toy():
    """Three systems on 60 queries: AP-like values with two NaNs, and R@1 hits."""
    rng = np.random.default_rng(3)
    base = rng.random(60)
    out = []
    for i, shift in enumerate((0.0, 0.08, -0.02)):
        ap = np.clip(base + shift + rng.normal(0, 0.1, 60), 0, 1)
        ap[[5, 17]] = np.nan
        hits = (rng.random(60) < 0.4 + shift).astype(float)
        out.append(run(f"s{i}", {"i2t": {"AP": [None if np.isnan(x) else float(x) for x in ap],
                                         "R@1": hits.tolist()}}))
    return out


def pairs(runs, i, metric="AP"):
    a = np.array([np.nan if x is None else x for x in runs[0]["per_query"]["i2t"][metric]])
    b = np.array([np.nan if x is None else x for x in runs[i]["per_query"]["i2t"][metric]])
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def comparisons(result, metric):
    return [c for c in result["comparisons"] if c["metric"] == metric]


def test_randomization_p_values_and_ci_equal_scipy(toy):
    res = compare_runs(toy, metrics=["AP"], correction="none", n_resamples=999, seed=7)
    for i, c in enumerate(comparisons(res, "AP"), start=1):
        a, b = pairs(toy, i)
        ref = st.permutation_test((b - a,), np.mean, permutation_type="samples", vectorized=True,
                                  n_resamples=999, rng=np.random.default_rng(7))
        assert c["p_value"] == ref.pvalue
        assert c["p_corrected"] == c["p_value"]
        ci = st.bootstrap((b - a,), np.mean, n_resamples=999, method="percentile",
                          rng=np.random.default_rng(7)).confidence_interval
        assert (c["ci_low"], c["ci_high"]) == pytest.approx((ci.low, ci.high))
        assert c["difference"] == pytest.approx(np.mean(b) - np.mean(a))
        assert c["n_pairs"] == 58  # the two NaN queries are dropped
    assert res["means"]["s1"]["i2t"]["AP"] == pytest.approx(np.mean(pairs(toy, 1)[1]))


def test_randomization_is_exact_on_few_queries():
    # 3 differences of +1: of the 8 sign patterns, 1 reaches mean >= 1 and 1 mean <= -1
    runs = [run("a", {"i2t": {"AP": [1.0, 2.0, 3.0]}}), run("b", {"i2t": {"AP": [2.0, 3.0, 4.0]}})]
    c = compare_runs(runs, metrics=["AP"], n_resamples=1000)["comparisons"][0]
    assert c["p_value"] == pytest.approx(2 / 8)


def test_paired_t_equals_ttest_rel(toy):
    res = compare_runs(toy, metrics=["AP"], test="t", correction="none")
    for i, c in enumerate(comparisons(res, "AP"), start=1):
        a, b = pairs(toy, i)
        assert c["p_value"] == pytest.approx(st.ttest_rel(a, b).pvalue, rel=1e-12)


def test_mcnemar_equals_exact_binomial(toy):
    res = compare_runs(toy, metrics=["R@1"], test="mcnemar", correction="none")
    for i, c in enumerate(comparisons(res, "R@1"), start=1):
        a, b = pairs(toy, i, "R@1")
        b01, b10 = int(np.sum((a == 0) & (b == 1))), int(np.sum((a == 1) & (b == 0)))
        assert c["p_value"] == pytest.approx(st.binomtest(b01, b01 + b10, 0.5).pvalue, rel=1e-12)


def test_corrections_equal_the_library():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    assert adjust_pvalues(p, "bh") == pytest.approx(st.false_discovery_control(p, method="bh"))
    # Holm by hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04,
    # made monotone (0.06, 0.06) and put back in the original order
    assert adjust_pvalues(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_pvalues([0.5, 0.9], "holm") == pytest.approx([1.0, 1.0])  # 2 x 0.5, then >=
    assert adjust_pvalues(p, "none") == pytest.approx(p)


def test_corrections_equal_statsmodels():
    from statsmodels.stats.multitest import multipletests  # a test dependency (pyproject)
    p = np.random.default_rng(0).random(12) ** 3
    for ours, theirs in (("holm", "holm"), ("bh", "fdr_bh")):
        assert adjust_pvalues(p, ours) == pytest.approx(multipletests(p, method=theirs)[1])


def test_compare_runs_corrects_each_direction_and_metric_over_the_runs(toy):
    for correction in ("holm", "bh"):
        res = compare_runs(toy, metrics=["AP", "R@1"], correction=correction, n_resamples=499)
        for metric in ("AP", "R@1"):
            cs = comparisons(res, metric)
            expected = adjust_pvalues([c["p_value"] for c in cs], correction)
            assert [c["p_corrected"] for c in cs] == pytest.approx(expected)
            assert all(c["significant"] == (c["p_corrected"] <= 0.05) for c in cs)


# -- the Wikipedia report (reports/wikipedia.md, Table 4 and the KSM-QE section) ----------------
def _table4_p_values() -> dict[str, list[float]]:
    """``{system: [p image, p text, p both]}`` from the report's 'p vs SCM' column."""
    text = (ROOT / "reports" / "wikipedia.md").read_text()
    names = {"CM": "cm", "SM": "sm", "KSM (ours)": "ksm", "KSM-QE (ours": "ksm-qe"}
    out = {}
    for line in text.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        for label, system in names.items():
            if cells[0].startswith(label) and re.fullmatch(r"[\d.]+ / [\d.]+ / [\d.]+", cells[-1]):
                out.setdefault(system, [float(x) for x in cells[-1].split(" / ")])
    return out


def _pooled(r: dict) -> dict:
    """The report's "both": the queries of the two directions as one set (mean = average MAP)."""
    both = r["per_query"]["i2t"]["MAP"] + r["per_query"]["t2i"]["MAP"]
    return {**r, "per_query": {**r["per_query"], "both": {"MAP": both}},
            "n_queries": {**r["n_queries"], "both": len(both)}}


@pytest.fixture(scope="module")
def wikipedia_runs():
    return {s: _pooled(load_run(RUNS / f"wikipedia-{s}.json")) for s in SYSTEMS}


def test_stored_runs_are_the_reports_runs(wikipedia_runs):
    """The reproduction's own test (paired_randomization, seed 0) on the stored per-query AP
    gives exactly the p-values of benchmarks/results/wikipedia_reproduction.json."""
    stored = json.loads((ROOT / "benchmarks/results/wikipedia_reproduction.json").read_text())
    per_q = {s: {d: np.array(r["per_query"][d]["MAP"]) for d in ("i2t", "t2i", "both")}
             for s, r in wikipedia_runs.items()}
    tests = dict.fromkeys(("i2t", "t2i", "both"), "randomization")
    assert compare(per_q, "scm", tests, systems=("cm", "sm", "ksm", "ksm-qe")) == \
        stored["significance_vs_scm"]
    assert compare(per_q, "ksm", tests, systems=("ksm-qe",))["ksm-qe"] == stored["ksmqe_vs_ksm_p"]


def _close(p: float, reported: float, n: int = 10000) -> bool:
    """Same p up to the Monte Carlo error of two randomization tests of n resamples (the report
    counts |mean|, scipy doubles the smaller one-sided p: both floors differ by 1 / (n + 1))."""
    return abs(p - reported) <= 4 * np.sqrt(reported * (1 - reported) / n) + 2 / (n + 1)


def test_xmodal_compare_reproduces_the_wikipedia_reports_significance(wikipedia_runs):
    reported = _table4_p_values()
    assert set(reported) == {"cm", "sm", "ksm", "ksm-qe"}
    runs = [wikipedia_runs[s] for s in SYSTEMS]
    res = compare_runs(runs, metrics=["MAP"], correction="none")
    assert res["baseline"] == "wikipedia-scm"
    got = {(c["run"].removeprefix("wikipedia-"), c["direction"]): c for c in res["comparisons"]}
    for system, ps in reported.items():
        for direction, p in zip(("i2t", "t2i", "both"), ps, strict=True):
            c = got[(system, direction)]
            assert _close(c["p_value"], p), (system, direction, c["p_value"], p)
            assert c["significant"] == (p < 0.05), (system, direction)
    # the statements: CM's image query is the one difference not significant at 0.05; KSM and
    # KSM-QE beat SCM in both directions (p = 0.0001, the smallest 10,000 resamples give)
    assert [k for k, c in got.items() if not c["significant"]] == [("cm", "i2t")]
    for system in ("ksm", "ksm-qe"):
        for d in ("i2t", "t2i"):
            assert got[(system, d)]["better"] and got[(system, d)]["p_value"] <= 2 / 10001
    # "Against KSM (+0.010 / +0.003) p = 0.0002 / 0.003"
    vs_ksm = compare_runs([wikipedia_runs["ksm"], wikipedia_runs["ksm-qe"]], metrics=["MAP"],
                          correction="none")["comparisons"]
    by_dir = {c["direction"]: c for c in vs_ksm}
    assert round(by_dir["i2t"]["difference"], 3) == 0.010
    assert round(by_dir["t2i"]["difference"], 3) == 0.003
    assert _close(by_dir["i2t"]["p_value"], 0.0002) and _close(by_dir["t2i"]["p_value"], 0.003)
    assert by_dir["i2t"]["significant"] and by_dir["t2i"]["significant"]


# -- CLI and renderers --------------------------------------------------------------------------
def test_cli_json_shape_and_formats(tmp_path):
    files = [str(RUNS / f"wikipedia-{s}.json") for s in ("scm", "ksm")]
    out = CliRunner().invoke(app, ["compare", *files, "--metric", "MAP", "--metric", "R@1",
                                   "--resamples", "999", "--json"])
    assert out.exit_code == 0, out.output
    res = json.loads(out.stdout)
    assert {"runs", "baseline", "directions", "metrics", "means", "comparisons", "test",
            "correction", "alpha", "n_resamples", "seed"} <= set(res)
    assert res["metrics"] == ["MAP", "R@1"] and res["directions"] == ["i2t", "t2i"]
    assert len(res["comparisons"]) == 4
    assert {"run", "direction", "metric", "baseline_mean", "run_mean", "difference", "ci_low",
            "ci_high", "p_value", "p_corrected", "significant", "better"} <= set(
        res["comparisons"][0])
    md = to_markdown(res)
    assert "| wikipedia-ksm | 33.8* |" in md and "Holm correction" in md
    assert r"\toprule" in to_latex(res) and r"33.8$^{*}$" in to_latex(res)
    tex = tmp_path / "t.tex"
    out = CliRunner().invoke(app, ["compare", *files, "--metric", "MAP", "--resamples", "99",
                                   "--out", str(tex)])
    assert out.exit_code == 0, out.output
    assert tex.read_text().splitlines()[1] == r"\begin{tabular}{lrr}"  # after a % title line


def test_clear_errors_for_runs_that_do_not_match(toy, tmp_path):
    no_pq = {k: v for k, v in toy[1].items() if k != "per_query"}
    with pytest.raises(XmodalError, match="'s1' has no per-query values: re-run"):
        compare_runs([toy[0], no_pq])
    with pytest.raises(XmodalError, match="same protocol"):
        compare_runs([toy[0], {**toy[1], "protocol": "other"}])
    short = run("short", {"i2t": {"AP": [0.5] * 10, "R@1": [1.0] * 10}})
    with pytest.raises(XmodalError, match="same queries"):
        compare_runs([toy[0], short])
    with pytest.raises(XmodalError, match="McNemar"):
        compare_runs(toy, metrics=["AP"], test="mcnemar")
    with pytest.raises(XmodalError, match="no per-query 'P@5'"):
        compare_runs(toy, metrics=["P@5"])
    with pytest.raises(XmodalError, match="unknown correction"):
        compare_runs(toy, correction="bonferroni")
    with pytest.raises(XmodalError, match="at least two"):
        compare_runs(toy[:1])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    out = CliRunner().invoke(app, ["compare", str(bad), str(bad)])
    assert out.exit_code != 0 and "not an `xmodal eval` report" in str(out.exception)


def test_web_api_compares_two_saved_reports(tmp_path):
    from fastapi.testclient import TestClient

    from xmodal.server import create_app

    reports = tmp_path / "reports"
    reports.mkdir()
    for s in ("scm", "ksm"):
        shutil.copy(RUNS / f"wikipedia-{s}.json", reports / f"{s}.json")
    (reports / "plain.json").write_text(json.dumps({"protocol": "wikipedia", "directions": {}}))
    client = TestClient(create_app(tmp_path / "none.db", reports_dir=reports,
                                   thumbnail_dir=tmp_path / "thumbs"))
    got = client.get("/api/reports/compare", params={"a": "scm", "b": "ksm", "metric": "MAP"})
    assert got.status_code == 200, got.text
    body = got.json()
    expected = compare_runs([load_run(reports / "scm.json"), load_run(reports / "ksm.json")],
                            metrics=["MAP"])
    assert [c["p_corrected"] for c in body["comparisons"]] == \
        [c["p_corrected"] for c in expected["comparisons"]]
    assert body["baseline"] == "scm" and "Holm" in body["legend"]
    missing = client.get("/api/reports/compare", params={"a": "scm", "b": "nope"})
    assert missing.status_code == 404
    plain = client.get("/api/reports/compare", params={"a": "scm", "b": "plain"})
    assert plain.status_code == 400 and "per-query" in plain.json()["error"]["message"]
    assert client.get("/api/reports/scm").json()["model"] == "scm"  # still served
