"""Metrics against a brute-force oracle (explicit sorting), hand-computed cases and tie rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from xmodal.errors import XmodalError
from xmodal.eval.metrics import annotation_metrics, curves, relevant_ranks, retrieval_metrics


def brute_force(scores, relevant, ks=(1, 5, 10)):
    """Naive per-query metrics from an explicit total order: -score, relevant last, index."""
    per = {}
    for q, row in enumerate(scores):
        rel = set(relevant[q])
        if not rel:
            continue
        order = sorted(range(len(row)), key=lambda j: (-row[j], j in rel, j))
        flags = [j in rel for j in order]
        ranks = [i + 1 for i, f in enumerate(flags) if f]
        m = len(rel)
        vals = {}
        for k in ks:
            vals[f"R@{k}"] = float(any(flags[:k]))
            vals[f"recall@{k}"] = sum(flags[:k]) / m
            vals[f"P@{k}"] = sum(flags[:k]) / k
        vals["R-P"] = sum(flags[:m]) / m
        precs = [sum(flags[: i + 1]) / (i + 1) for i in range(len(flags))]
        vals["mAP@R"] = sum(precs[i] for i in range(m) if flags[i]) / m
        vals["MAP"] = sum(precs[i] for i in range(len(flags)) if flags[i]) / m
        dcg = sum(1 / math.log2(i + 2) for i in range(min(10, len(flags))) if flags[i])
        idcg = sum(1 / math.log2(i + 2) for i in range(min(10, m)))
        vals["nDCG@10"] = dcg / idcg
        vals["rank"] = ranks[0]
        per[q] = vals
    return per


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("with_ties", [False, True])
@pytest.mark.parametrize("max_rel", [3, 12])
def test_matches_brute_force(seed, with_ties, max_rel):
    rng = np.random.default_rng(seed)
    n_q, n_g = 40, 60
    scores = rng.integers(0, 5, (n_q, n_g)).astype(float) if with_ties else rng.random((n_q, n_g))
    relevant = [rng.choice(n_g, rng.integers(0, max_rel + 1), replace=False) for _ in range(n_q)]
    summary, pq = retrieval_metrics(scores, relevant, per_query=True)
    oracle = brute_force(scores, relevant)
    assert summary["n_queries"] == len(oracle)
    for q, vals in oracle.items():
        for key, value in vals.items():
            assert pq[key][q] == pytest.approx(value, abs=1e-12), (q, key)
    for key in oracle[next(iter(oracle))]:
        if key == "rank":
            continue
        assert summary[key] == pytest.approx(np.mean([v[key] for v in oracle.values()]), abs=1e-12)
    first = [v["rank"] for v in oracle.values()]
    assert summary["medR"] == np.median(first)
    assert summary["meanR"] == pytest.approx(np.mean(first))


def test_hand_computed_example():
    # one query, gallery of 5; relevant items 1 and 3; order by score: 0, 1, 2, 3, 4
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5]])
    s = retrieval_metrics(scores, [[1, 3]], ks=(1, 2, 5))
    assert s["R@1"] == 0 and s["R@2"] == 1 and s["recall@2"] == 0.5 and s["P@2"] == 0.5
    assert s["medR"] == 2
    assert s["R-P"] == 0.5  # top 2 holds one of 2 relevant
    assert s["mAP@R"] == pytest.approx((1 / 2) / 2)  # only rank 2 lies within R=2
    assert s["MAP"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert s["nDCG@10"] == pytest.approx(dcg / (1 + 1 / math.log2(3)))


def test_ties_are_pessimistic():
    # a constant scorer gets the worst ranks: relevant items after every tied non-relevant one
    scores = np.zeros((1, 6))
    rr = relevant_ranks(scores, [[0, 2]])
    assert rr.of(0).tolist() == [5, 6]
    assert retrieval_metrics(scores, [[0, 2]], ks=(1,))["R@1"] == 0


def test_relevance_forms_agree():
    rng = np.random.default_rng(3)
    scores = rng.random((10, 20))
    dense = rng.random((10, 20)) < 0.2
    lists = [np.flatnonzero(r) for r in dense]
    a = retrieval_metrics(scores, dense)
    b = retrieval_metrics(scores, sparse.csr_matrix(dense))
    c = retrieval_metrics(scores, lists)
    assert a == b == c


def test_large_chunked_matches_small(monkeypatch):
    import xmodal.eval.metrics as m

    rng = np.random.default_rng(4)
    scores = rng.random((300, 200)).astype(np.float32)
    rel = [rng.choice(200, 7, replace=False) for _ in range(300)]
    full = retrieval_metrics(scores, rel)
    monkeypatch.setattr(m, "_CHUNK_ELEMENTS", 1000)  # forces many chunks
    assert retrieval_metrics(scores, rel) == full


def test_bad_input_raises():
    with pytest.raises(XmodalError):
        retrieval_metrics(np.array([[np.nan, 1.0]]), [[0]])
    with pytest.raises(XmodalError):
        retrieval_metrics(np.zeros((2, 3)), [[0]])
    with pytest.raises(XmodalError):
        retrieval_metrics(np.zeros((1, 3)), [[5]])


def test_annotation_metrics_hand_computed():
    # 3 images, 4 words; top-1 annotation
    truth = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]], bool)
    scores = np.array([[0.9, 0.1, 0.0, 0.5], [0.2, 0.8, 0.1, 0.0], [0.9, 0.0, 0.3, 0.0]])
    out = annotation_metrics(scores, truth, n=1, best=2)
    # predictions: img0 -> w0 (correct), img1 -> w1 (correct), img2 -> w0 (wrong)
    # vocabulary: w0 (2 true), w1 (1), w2 (1); w3 never true
    # w0: R = 1/2, P = 1/2; w1: R = 1, P = 1; w2: R = 0, P = 0
    assert out["n_words"] == 3
    assert out["mean_R"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert out["mean_P"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert out["mean_F1"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert out["n_words_recall_gt0"] == 2
    assert out["best2_mean_R"] == pytest.approx(0.75)


def test_annotation_ties_pessimistic():
    truth = np.array([[0, 1, 0]], bool)
    out = annotation_metrics(np.zeros((1, 3)), truth, n=1, best=None)
    assert out["mean_R"] == 0  # tied words: the true one goes last


def test_annotation_word_mask_restricts_vocabulary():
    truth = np.array([[1, 1], [0, 1]], bool)
    scores = np.array([[1.0, 0.0], [0.0, 1.0]])
    full = annotation_metrics(scores, truth, n=1, best=None)
    masked = annotation_metrics(scores, truth, n=1, best=None, word_mask=np.array([False, True]))
    assert full["n_words"] == 2 and masked["n_words"] == 1
    assert masked["mean_R"] == pytest.approx(0.5)  # word 1: true on 2 images, predicted on 1


def test_curves_hand_computed():
    # relevant at ranks 2 and 4 of 5: precision 1/2 at recall 0.5, 2/4 at recall 1
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5]])
    c = curves(scores, [[1, 3]], ks=(1, 2, 5))
    assert c["recall_at_k"] == {"1": 0.0, "2": 1.0, "5": 1.0}
    assert c["pr"]["precision"] == pytest.approx([0.5] * 11)
    # a perfect ranking has precision 1 at every recall level
    perfect = curves(np.array([[0.1, 0.9, 0.2, 0.8]]), [[1, 3]])
    assert perfect["pr"]["precision"] == pytest.approx([1.0] * 11)
    # interpolation: ranks 1 and 4 -> precision 1 up to recall 0.5, then 2/4
    c2 = curves(np.array([[0.9, 0.8, 0.7, 0.6]]), [[0, 3]])
    assert c2["pr"]["precision"] == pytest.approx([1.0] * 6 + [0.5] * 5)


def test_transposed_and_fancy_gathers_agree(monkeypatch):
    import xmodal.eval.metrics as m

    rng = np.random.default_rng(5)
    base = rng.random((70, 90))
    rel = [rng.choice(70, rng.integers(0, 4), replace=False) for _ in range(90)]
    expected = retrieval_metrics(np.ascontiguousarray(base.T), rel)
    monkeypatch.setattr(m, "_CHUNK_ELEMENTS", 200)
    monkeypatch.setattr(m, "_GATHER_ELEMENTS", 900)
    assert retrieval_metrics(base.T, rel) == expected  # F-ordered view, rows grouped by count
