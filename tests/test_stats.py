"""Significance tests, rank correlations and Borda aggregation against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from xmodal.errors import XmodalError
from xmodal.eval.stats import borda, kendall, mcnemar, paired_randomization, spearman


def test_mcnemar_exact_binomial():
    a = np.array([1, 1, 1, 1, 1, 0, 0, 1], bool)
    b = np.array([0, 0, 0, 0, 1, 0, 1, 1], bool)
    out = mcnemar(a, b)
    assert (out["b10"], out["b01"]) == (4, 1)
    # two-sided exact: P(X <= 1) * 2 for X ~ Bin(5, 0.5) = 2 * 6/32
    assert out["p_value"] == pytest.approx(12 / 32)


def test_mcnemar_identical_systems():
    a = np.array([1, 0, 1], bool)
    assert mcnemar(a, a)["p_value"] == 1.0


def test_randomization_exact_small_case():
    # 3 pairs, differences (1, 1, 1): of 8 sign patterns only 2 reach |mean| >= 1
    a, b = np.array([2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0])
    p = paired_randomization(a, b, n_resamples=20000, seed=1)
    assert p == pytest.approx(2 / 8, abs=0.02)


def test_randomization_detects_real_difference_and_not_noise():
    rng = np.random.default_rng(0)
    a = rng.random(300)
    assert paired_randomization(a + 0.2, a, n_resamples=2000) < 0.01
    assert paired_randomization(a, rng.permutation(a), n_resamples=2000) > 0.01


def test_randomization_drops_nan_pairs():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([1.0, 2.0, np.nan])
    assert paired_randomization(a, b, n_resamples=100) == 1.0
    with pytest.raises(XmodalError):
        paired_randomization(np.array([np.nan]), np.array([1.0]))


def test_rank_correlations_match_definitions():
    x = [1, 2, 3, 4, 5]
    assert spearman(x, [5, 6, 7, 8, 7]) == pytest.approx(st.spearmanr(x, [5, 6, 7, 8, 7])[0])
    # one discordant pair out of 10: tau = (9 - 1) / 10
    assert kendall(x, [1, 2, 3, 5, 4]) == pytest.approx(0.8)
    assert spearman(x, x[::-1]) == pytest.approx(-1)


def test_borda_counts_points():
    # three systems rank items (a, b, c); points = n - rank + 1
    s1 = np.array([[3.0, 2.0, 1.0]])  # a > b > c
    s2 = np.array([[3.0, 1.0, 2.0]])  # a > c > b
    s3 = np.array([[1.0, 3.0, 2.0]])  # b > c > a
    agg = borda([s1, s2, s3])
    # points: a = 3 + 3 + 1 = 7, b = 2 + 1 + 3 = 6, c = 1 + 2 + 2 = 5
    assert np.argsort(-agg[0]).tolist() == [0, 1, 2]


def test_borda_ties_broken_by_median_rank():
    # item 0 ranks (1, 1, 3) -> 6 points, median 1; item 1 ranks (2, 2, 2) -> 6 points, median 2
    # item 2 ranks (3, 3, 1) -> 6 points, median 3: all tie on points
    s1 = np.array([[3.0, 2.0, 1.0]])
    s2 = np.array([[3.0, 2.0, 1.0]])
    s3 = np.array([[1.0, 2.0, 3.0]])
    agg = borda([s1, s2, s3])
    assert np.argsort(-agg[0]).tolist() == [0, 1, 2]
    # reversing the majority reverses the tie-break
    agg2 = borda([s3, s3, s1])
    assert np.argsort(-agg2[0]).tolist() == [2, 1, 0]


def test_borda_rejects_mismatched_shapes():
    with pytest.raises(XmodalError):
        borda([np.zeros((1, 3)), np.zeros((1, 4))])
    with pytest.raises(XmodalError):
        borda([])


def test_randomization_p_value_never_zero():
    a = np.ones(50)
    p = paired_randomization(a, np.zeros(50), n_resamples=99)
    assert math.isclose(p, 1 / 100)
