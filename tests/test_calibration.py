"""The calibrated "no good match" cutoff (issue 31 item 4): the Calibrator the search reads,
the fitting recipe on synthetic data with a known answer, hand-computed metrics, the Flickr8K
judgments' split and the shipped calibrator."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from xmodal.data.flickr8k import CrowdJudgment, ExpertJudgment
from xmodal.errors import XmodalError
from xmodal.index.calibration import ASSETS, Calibrator, asset_path, load_calibrator
from xmodal.recipes import calibration as R


def _cal(**kw):
    args = {"model_id": "m@1", "scores": [0.0, 0.5, 1.0], "probabilities": [0.1, 0.1, 0.5],
            "threshold": 0.3, "provenance": {"note": "test"}}
    return Calibrator(**{**args, **kw})


# ----- Calibrator ---------------------------------------------------------------------------------
def test_probability_interpolates_between_breakpoints_and_clips_outside():
    cal = _cal()
    got = cal.probability(np.array([-5.0, 0.0, 0.25, 0.5, 0.75, 1.0, 9.0]))
    assert np.allclose(got, [0.1, 0.1, 0.1, 0.1, 0.3, 0.5, 0.5])
    assert cal.probability(np.array([[0.75]])).shape == (1, 1)


def test_probability_is_monotone_in_the_score():
    rng = np.random.default_rng(3)
    s = np.sort(rng.uniform(-0.3, 0.8, 40))
    p = np.sort(rng.uniform(0, 1, 40))
    cal = _cal(scores=s.tolist(), probabilities=p.tolist())
    x = np.sort(rng.uniform(-1, 1, 5000))
    assert np.all(np.diff(cal.probability(x)) >= 0)


def test_min_raw_score_is_where_the_probability_reaches_the_threshold():
    cal = _cal()
    assert cal.min_raw_score() == pytest.approx(0.75)  # p = 0.3 halfway from 0.5 to 1.0
    assert cal.min_raw_score(0.1) == pytest.approx(0.0)
    assert cal.min_raw_score(0.6) == float("inf")
    assert cal.probability(np.array([cal.min_raw_score()]))[0] == pytest.approx(cal.threshold)


def test_json_round_trip_keeps_everything():
    cal = _cal(scores=[-0.1, 0.2, 0.4], probabilities=[0.0, 0.123456789012, 0.9])
    back = Calibrator.from_json(cal.to_json())
    assert back == cal
    x = np.linspace(-1, 1, 101)
    assert np.array_equal(back.probability(x), cal.probability(x))


@pytest.mark.parametrize("bad", [
    {"scores": [0.0, 0.0, 1.0]},  # not strictly increasing
    {"probabilities": [0.5, 0.2, 0.6]},  # decreasing
    {"probabilities": [0.1, 0.2, 1.5]},  # above 1
    {"scores": [0.0, 1.0]},  # lengths differ
    {"threshold": 1.2},
    {"scores": [0.0, float("nan"), 1.0]},
])
def test_malformed_breakpoints_are_refused(bad):
    with pytest.raises(XmodalError):
        _cal(**bad)


def test_from_json_refuses_a_file_without_breakpoints():
    with pytest.raises(XmodalError):
        Calibrator.from_json(json.dumps({"model_id": "m", "threshold": 0.5}))


def test_load_calibrator_only_for_its_model(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text(_cal().to_json())
    assert load_calibrator("m@1", path) == _cal()
    assert load_calibrator("m@2", path) is None
    assert load_calibrator("m@1", tmp_path / "missing.json") is None
    assert load_calibrator("openclip:ViT-B-32:x") is None  # the shipped file is for "dual"
    assert load_calibrator("dual@000000000000") is None  # the shipped file is for another id


def test_each_model_name_has_its_own_calibration_file_and_odd_ids_have_none():
    assert asset_path("dual@a32d706e77a1") == ASSETS / "dual" / "calibration.json"
    assert asset_path("fast@b58b9eae49be") == ASSETS / "fast" / "calibration.json"
    for odd in ("../dual@1", "openclip:ViT-B-32:x", "a/b@1", "", "Dual@1"):
        assert asset_path(odd) is None, odd
        assert load_calibrator(odd) is None


# ----- metrics by hand ----------------------------------------------------------------------------
def test_ece_matches_a_hand_computed_example():
    prob = np.array([0.1, 0.1, 0.2, 0.2, 0.8, 0.9])
    labels = np.array([0, 0, 1, 0, 1, 0])
    # equal width (10 bins): |0.1-0|*2 + |0.2-0.5|*2 + |0.8-1| + |0.9-0| = 1.9, over 6 pairs
    assert R.expected_calibration_error(prob, labels, "width") == pytest.approx(1.9 / 6)
    # equal mass (3 bins): quantile edges 0.1667 and 0.4 give {0.1,0.1} {0.2,0.2} {0.8,0.9};
    # the last bin predicts 0.85 and sees 0.5: 0.2 + 0.6 + 2 * 0.35 = 1.5, over 6 pairs
    assert R.expected_calibration_error(prob, labels, "mass", n_bins=3) == pytest.approx(1.5 / 6)
    bins = R.equal_mass_bins(prob, 3)
    assert bins.tolist() == [0, 0, 1, 1, 2, 2]


def test_equal_predictions_share_an_equal_mass_bin():
    prob = np.array([0.0] * 7 + [0.3, 0.6, 0.9])
    bins = R.equal_mass_bins(prob, 5)
    assert len(set(bins[:7].tolist())) == 1
    assert sum(r["n"] for r in R.reliability(prob, np.zeros(10), bins)) == 10


def test_shown_metrics_and_threshold_rule_by_hand():
    prob = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    labels = np.array([1, 1, 0, 1, 0])
    m = R.shown_metrics(prob, labels, 0.6)
    assert (m["shown"], m["shown_matches"], m["matches"]) == (4, 3, 3)
    assert m["precision"] == pytest.approx(0.75) and m["recall"] == pytest.approx(1.0)
    # margins min(P - 0.8, R - 0.7): 0.9 -> -0.367, 0.8 -> -0.033, 0.7 -> -0.133,
    # 0.6 -> -0.05, 0.5 -> -0.2
    assert R.choose_threshold(prob, labels) == pytest.approx(0.8)
    # recall first: 0.6 and 0.5 both show every match (margin 0); 0.6 has the larger
    # precision margin (0.25 against 0.1)
    assert R.choose_threshold(prob, labels, precision=0.5, recall=1.0) == pytest.approx(0.6)
    # keep a share of the matches (0.9, 0.8, 0.6 are the matches): 1/3 -> 0.9, 2/3 -> 0.8,
    # any share above 2/3 -> 0.6
    assert R.keep_recall_threshold(prob, labels, keep=0.3) == pytest.approx(0.9)
    assert R.keep_recall_threshold(prob, labels, keep=0.6) == pytest.approx(0.8)
    assert R.keep_recall_threshold(prob, labels, keep=0.95) == pytest.approx(0.6)
    assert R.shown_metrics(prob, labels, 0.6)["recall"] >= 0.95


# ----- fitting recovers a known calibration -------------------------------------------------------
def _synthetic(n, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(-0.2, 0.6, n)
    truth = 1 / (1 + np.exp(-12 * (s - 0.35)))
    return s, (rng.uniform(size=n) < truth).astype(int), truth


@pytest.mark.parametrize("method", ["isotonic", "platt"])
def test_fit_recovers_a_known_calibration(method):
    s, y, _ = _synthetic(20000, 0)
    cal = Calibrator("m", *R.FITTERS[method](s, y), 0.5)
    grid = np.linspace(-0.15, 0.55, 71)
    truth = 1 / (1 + np.exp(-12 * (grid - 0.35)))
    err = np.abs(cal.probability(grid) - truth)
    assert err.mean() < (0.02 if method == "isotonic" else 0.01), err.mean()
    # fresh pairs from the same truth: calibrated; shifted predictions: not
    s2, y2, _ = _synthetic(20000, 1)
    p2 = cal.probability(s2)
    assert R.expected_calibration_error(p2, y2) < 0.02
    assert R.expected_calibration_error(np.clip(p2 + 0.2, 0, 1), y2) > 0.15


def test_fit_calibrator_chooses_on_grouped_cv_and_sets_the_threshold():
    s, y, _ = _synthetic(6000, 2)
    groups = np.repeat(np.arange(600), 10)
    cal, choice = R.fit_calibrator(s, y, groups, "m@1")
    assert choice["method"] in R.FITTERS and set(choice["cv_brier"]) == set(R.FITTERS)
    assert choice["method"] == min(choice["cv_brier"], key=choice["cv_brier"].get)
    prob = cal.probability(s)
    assert cal.threshold == pytest.approx(R.keep_recall_threshold(prob, y, R.KEEP_RECALL))
    assert R.shown_metrics(prob, y, cal.threshold)["recall"] >= R.KEEP_RECALL
    assert choice["compromise"]["threshold"] == pytest.approx(R.choose_threshold(prob, y))


# ----- judgments and split ------------------------------------------------------------------------
def test_judged_pairs_combine_crowd_and_expert_with_expert_precedence():
    crowd = [CrowdJudgment("a.jpg", "x.jpg#2", 0.5, 1, 1),  # yes fraction 0.5: a match
             CrowdJudgment("a.jpg", "y.jpg#2", 1 / 3, 1, 2),
             CrowdJudgment("b.jpg", "x.jpg#2", 1.0, 3, 0)]
    expert = [ExpertJudgment("a.jpg", "y.jpg#2", (3, 3, 3)),  # mean 3: a match
              ExpertJudgment("b.jpg", "x.jpg#2", (3, 3, 2)),  # mean 2.67: not, crowd said yes
              ExpertJudgment("b.jpg", "z.jpg#2", (4, 4, 4))]
    got = {(p.image_id, p.caption_id): (p.label, p.source) for p in R.judged_pairs(expert, crowd)}
    assert got == {("a.jpg", "x.jpg#2"): (1, "crowd"), ("a.jpg", "y.jpg#2"): (1, "both"),
                   ("b.jpg", "x.jpg#2"): (0, "both"), ("b.jpg", "z.jpg#2"): (1, "expert")}


def test_split_is_by_image_and_fixed_by_the_seed():
    ids = [f"{i:04d}.jpg" for i in range(101)] * 3
    fit, ev = R.split_images(ids, seed=5)
    assert not set(fit) & set(ev) and set(fit) | set(ev) == set(ids)
    assert (len(fit), len(ev)) == (50, 51)
    assert R.split_images(list(reversed(ids)), seed=5) == (fit, ev)
    assert R.split_images(ids, seed=6) != (fit, ev)


# ----- Flickr8K and the shipped calibrator --------------------------------------------------------
@pytest.fixture(scope="module")
def judged(flickr8k):
    return R.judged_pairs(flickr8k.expert, flickr8k.crowd)


def test_flickr8k_pairs_split_by_photo(judged, flickr8k):
    assert len(judged) == len(flickr8k.crowd) + len(flickr8k.expert) - sum(
        p.source == "both" for p in judged)
    images = {p.image_id for p in judged}
    assert images <= set(flickr8k.split("test"))
    fit, ev = R.split_images([p.image_id for p in judged], R.SEED)
    assert not set(fit) & set(ev) and set(fit) | set(ev) == images
    assert R.split_images(sorted(images, reverse=True), R.SEED) == (fit, ev)
    halves = {}
    for p in judged:  # every pair of a photo falls in that photo's half
        halves.setdefault(p.image_id, set()).add(p.image_id in set(fit))
    assert all(len(h) == 1 for h in halves.values())


@pytest.fixture(scope="module", params=R.MODELS)
def shipped(request):
    asset = R.outputs(request.param)[2]
    if not asset.is_file():
        pytest.skip(f"no shipped calibrator at {asset} (python -m xmodal.recipes.calibration "
                    f"--model {request.param})")
    return Calibrator.from_json(asset.read_text())


def test_shipped_calibrator_is_for_its_model_and_well_formed(shipped):
    """Each shipped model (the default and ``fast``) finds its own calibrator, and its
    provenance matches the results file it names."""
    from xmodal.factory import load_embedding_model
    from xmodal.index.photo_index import model_id

    name = shipped.model_id.split("@")[0]
    spec = None if name == "dual" else name
    mid = model_id(load_embedding_model(spec), spec)
    assert load_calibrator(mid) == shipped
    assert shipped.model_id == mid
    p = shipped.probability(np.linspace(-1, 1, 201))
    assert 0 <= p[0] < shipped.threshold < p[-1] <= 1  # the cutoff hides and shows something
    prov = shipped.provenance
    for key in ("command", "git_commit", "method", "fitting_half", "evaluation_half"):
        assert key in prov, key
    results = json.loads((R.REPO / prov["results"]).read_text())["results"]
    assert prov["results"] == f"benchmarks/results/{R.outputs(name)[0]}.json"
    assert results["model_id"] == mid
    assert results["calibrator"]["threshold"] == pytest.approx(shipped.threshold)
    ev = results["evaluation_half"]
    assert prov["evaluation_half"]["ece_equal_mass"] == pytest.approx(ev["ece_equal_mass"])
    assert prov["evaluation_half"]["recall"] == pytest.approx(ev["at_threshold"]["recall"])


def test_shipped_calibration_error_meets_the_target(shipped):
    ev = shipped.provenance["evaluation_half"]
    assert ev["ece_equal_mass"] <= R.TARGET_ECE
    assert ev["pairs"] > 20000


@pytest.mark.xfail(strict=True, reason="issue 31 item 4 is not met: no shipped model's score "
                   "reaches precision >= 0.8 and recall >= 0.7 of shown pairs at any threshold, "
                   "not even on the fitting half (best precision at recall 0.7: 0.30 default, "
                   "0.28 fast), and the crowd predicts the experts' label with recall 0.64 "
                   "(benchmarks/results/calibration_ceiling.json)")
def test_shipped_cutoff_meets_the_precision_and_recall_targets(shipped):
    ev = shipped.provenance["evaluation_half"]
    assert ev["precision"] >= R.TARGET_PRECISION and ev["recall"] >= R.TARGET_RECALL


@pytest.mark.reproduce  # embeds the 1,000 test photos and their captions unless cached (2 min)
def test_shipped_calibrator_refits_from_the_cached_scores(shipped, judged, flickr8k_root):
    """A refit on the fitting half gives the shipped calibrator; the score matrix is computed
    (fitting half only, as the recipe does) when $XMODAL_CACHE/calibration lacks it."""
    from xmodal.paths import cache_dir

    cache = cache_dir() / "calibration"
    if R.cached_scores(shipped.model_id, cache) is None:
        R.compute(flickr8k_root, cache=cache, fit_only=True,
                  model_name=shipped.model_id.split("@")[0])
    saved = R.cached_scores(shipped.model_id, cache)
    s, image_ids, caption_ids = saved
    scores, labels, _, groups = R.pair_arrays(judged, s, image_ids, caption_ids)
    fit, _ = R.split_images(groups, R.SEED)
    m = np.isin(groups, fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal, choice = R.fit_calibrator(scores[m], labels[m], groups[m], shipped.model_id)
    assert choice["method"] == shipped.provenance["method"]
    x = np.linspace(-1, 1, 401)
    assert np.allclose(cal.probability(x), shipped.probability(x), atol=1e-9)
    # the shipped threshold is chosen on the short-query dev benchmark (issue 40), from the
    # recall-first one this refit gives
    results = json.loads((R.REPO / shipped.provenance["results"]).read_text())["results"]
    assert results["short_queries"]["recall_first"]["threshold"] == pytest.approx(
        cal.threshold, abs=1e-9)


def test_shipped_threshold_is_the_f1_best_of_the_short_query_dev_curve(shipped):
    """Issue 40 item 2: the shipped cutoff is the recorded dev curve's best F1 among the
    cutoffs that show sentences' right photo at least as often as the recall-first one, and it
    shows more right photos of short queries than the recall-first one."""
    from xmodal.eval.short_queries import choose_by_f1

    results = json.loads((R.REPO / shipped.provenance["results"]).read_text())["results"]
    sq = results["short_queries"]
    first = sq["recall_first"]
    best = choose_by_f1(sq["curve"], first["sentence_right_photo_shown_share"])
    assert shipped.threshold == pytest.approx(best["threshold"]) == pytest.approx(
        sq["chosen"]["threshold"])
    assert best["f1_mean"] > first["f1_mean"]
    assert best["right_shown_share"] > first["right_shown_share"]
    assert best["sentence_right_photo_shown_share"] >= first["sentence_right_photo_shown_share"]
    assert sq["benchmark"]["short_queries"] >= 50 and sq["benchmark"]["absent_queries"] >= 10


def test_the_ceiling_benchmark_reads_the_best_cutoffs_off_a_hand_computed_example():
    from benchmarks.calibration_ceiling import best_precision_and_recall, precision_at_recall

    scores, labels = np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([1, 0, 1, 0, 1])
    # cutoffs from the top: (P, R) = (1, 1/3), (1/2, 1/3), (2/3, 2/3), (1/2, 2/3), (3/5, 1)
    got = best_precision_and_recall(scores, labels, precision=0.8, recall=0.7)
    assert got["best_precision_at_recall_0.7"] == pytest.approx(0.6)
    assert got["best_recall_at_precision_0.8"] == pytest.approx(1 / 3)
    assert got["auc"] == pytest.approx(0.5)  # 3 of the 6 (match, non-match) pairs in order
    assert precision_at_recall(scores, labels, 0.5) == pytest.approx(2 / 3)


def test_the_figure_plots_the_short_query_trade_off_when_the_results_have_it(tmp_path):
    """docs/calibration.png gets a fourth panel (issue 40: show the trade-off curve on dev)."""
    import matplotlib.image as mpimg

    from xmodal.recipes.calibration import render_figure

    src = Path(__file__).resolve().parents[1] / "benchmarks/results/calibration.json"
    res = json.loads(src.read_text())
    with_curve = render_figure(src, tmp_path / "with.png")
    del res["results"]["short_queries"]
    (tmp_path / "r.json").write_text(json.dumps(res))
    without = render_figure(tmp_path / "r.json", tmp_path / "without.png")
    assert mpimg.imread(with_curve).shape[1] > 1.25 * mpimg.imread(without).shape[1]
