"""Gist ranking metrics (hand-computed, and against the lead's xmodal.eval.metrics) and the
coordinate-ascent learning-to-rank model (synthetic queries with a known informative feature)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.gist.rank import (
    CoordinateAscentRanker,
    average_precision,
    ndcg_at,
    precision_at,
    query_metrics,
)


def test_metrics_by_hand():
    ranked = ["a", "b", "c", "d"]
    grades = {"a": 2, "c": 1, "e": 3}  # "e" is never retrieved: counts as a miss
    assert average_precision(ranked, grades) == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert precision_at(ranked, grades, 10) == pytest.approx(2 / 10)
    dcg = 3 / math.log2(2) + 1 / math.log2(4)
    idcg = 7 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, grades, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at(ranked, grades, 10, binary=True) == pytest.approx(
        (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3) + 1 / math.log2(4))
    )
    assert math.isnan(query_metrics(ranked, {})["AP"])


def test_metrics_agree_with_lead_metrics():
    metrics = pytest.importorskip("xmodal.eval.metrics")
    rng = np.random.default_rng(3)
    S = rng.normal(size=(6, 15))
    relevant = [rng.choice(15, size=rng.integers(1, 5), replace=False) for _ in range(6)]
    summary = metrics.retrieval_metrics(S, relevant)
    aps, p10 = [], []
    for q in range(6):
        ranked = list(np.argsort(-S[q]))
        grades = {int(i): 1 for i in relevant[q]}
        aps.append(average_precision(ranked, grades))
        p10.append(precision_at(ranked, grades, 10))
    assert summary["MAP"] == pytest.approx(np.mean(aps))
    assert summary["P@10"] == pytest.approx(np.mean(p10))


def _synthetic(n_q=40, n_c=12, seed=0):
    rng = np.random.default_rng(seed)
    X, y, qid = [], [], []
    for q in range(n_q):
        rel = rng.random(n_c) < 0.25
        rel[rng.integers(n_c)] = True
        signal = rel * 1.0 + rng.normal(scale=0.6, size=n_c)  # informative
        noise = rng.normal(size=n_c)
        anti = -signal + rng.normal(scale=0.3, size=n_c)  # informative, with a negative sign
        X.append(np.c_[noise, signal, anti])
        y.append(rel)
        qid += [q] * n_c
    return np.vstack(X), np.concatenate(y).astype(float), np.asarray(qid)


def _map(scores, y, qid):
    aps = []
    for q in np.unique(qid):
        r = qid == q
        order = np.argsort(-scores[r], kind="stable")
        rel = {i for i in np.flatnonzero(y[r])}
        aps.append(average_precision(list(order), rel))
    return float(np.mean(aps))


def test_coordinate_ascent_learns_signs_and_beats_single_features(tmp_path):
    X, y, qid = _synthetic()
    m = CoordinateAscentRanker(seed=0).fit(X, y, qid, ["noise", "signal", "anti"])
    w = dict(zip(m.feature_names_, m.weights_))
    assert w["signal"] > 0 and w["anti"] < 0
    assert abs(w["noise"]) < max(abs(w["signal"]), abs(w["anti"]))
    assert np.abs(m.weights_).sum() == pytest.approx(1.0)
    learned = _map(m.decision_function(X), y, qid)
    assert learned >= _map(X[:, 1], y, qid) - 1e-9
    assert learned > _map(X[:, 0], y, qid) + 0.1
    # Held-out queries from the same distribution
    Xt, yt, qt = _synthetic(seed=1)
    assert _map(m.decision_function(Xt), yt, qt) > _map(Xt[:, 0], yt, qt) + 0.1
    # Save / load round trip (the one model-dir format, no pickle), also through models.load
    path = m.save(tmp_path / "ranker")
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "config.json"]
    m2 = CoordinateAscentRanker.load(path)
    np.testing.assert_array_equal(m2.decision_function(Xt), m.decision_function(Xt))
    assert m2.feature_names_ == m.feature_names_ and m2.get_params() == m.get_params()
    from xmodal.factory import load_saved_model as load

    m3 = load(path)
    assert type(m3) is CoordinateAscentRanker
    np.testing.assert_array_equal(m3.decision_function(Xt), m.decision_function(Xt))


def test_ranker_errors(tmp_path):
    with pytest.raises(XmodalError, match="not fitted"):
        CoordinateAscentRanker().decision_function(np.zeros((2, 3)))
    with pytest.raises(XmodalError, match="no training query"):
        CoordinateAscentRanker().fit(np.zeros((4, 2)), np.zeros(4), np.array([0, 0, 1, 1]))
    with pytest.raises(XmodalError, match="not fitted"):
        CoordinateAscentRanker().save(tmp_path / "unfitted")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text('{"type": "kcca", "version": 1, "params": {}}')
    with pytest.raises(XmodalError, match="holds a 'kcca' model, not 'gist-coordinate-ascent'"):
        CoordinateAscentRanker.load(bad)
    old = tmp_path / "ranker.json"  # the former single-JSON format
    old.write_text('{"type": "gist-coordinate-ascent"}')
    with pytest.raises(XmodalError, match="model directory"):
        CoordinateAscentRanker.load(old)
    with pytest.raises(XmodalError, match="not found"):
        CoordinateAscentRanker.load(tmp_path / "missing")


def test_shipped_ranker_is_a_model_dir_read_by_models_load():
    from xmodal.gist.detect import default_ranker_path, load_default_ranker
    from xmodal.gist.pipeline import FEATURES
    from xmodal.factory import load_saved_model as load
    from xmodal.models.modeldir import read_model_dir

    saved = read_model_dir(default_ranker_path(), "gist-coordinate-ascent")
    assert saved.provenance["benchmark"].startswith("flickr8k literal gist")
    r = load(default_ranker_path())
    assert isinstance(r, CoordinateAscentRanker) and r.feature_names_ == FEATURES
    assert r.weights_.dtype == np.float64 and np.abs(r.weights_).sum() == pytest.approx(1.0)
    assert np.array_equal(load_default_ranker().weights_, r.weights_)
