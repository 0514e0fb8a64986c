"""Significance tests, rank correlation and rank aggregation (Hodosh et al. 2013, §4.1.3)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as _st

from xmodal.errors import XmodalError


def mcnemar(a, b) -> dict:
    """McNemar's exact test for paired binary outcomes (e.g. per-query R@1 hits of two systems).

    Returns the discordant counts ``b01`` (a wrong, b right) and ``b10`` and the two-sided p-value
    of the exact binomial test on the discordant pairs.
    """
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise XmodalError("McNemar's test needs two outcome arrays of the same length")
    b10 = int(np.sum(a & ~b))
    b01 = int(np.sum(~a & b))
    n = b10 + b01
    p = 1.0 if n == 0 else float(_st.binomtest(min(b10, b01), n, 0.5).pvalue)
    return {"b10": b10, "b01": b01, "p_value": p}


def paired_randomization(a, b, n_resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip) test of the mean difference; returns the p-value.

    NaNs (queries undefined for a metric) are dropped pairwise. The p-value counts the observed
    assignment, so it is never 0: ``(1 + #(|mean*| >= |mean|)) / (1 + n_resamples)``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise XmodalError("the randomization test needs two score arrays of the same length")
    keep = ~(np.isnan(a) | np.isnan(b))
    d = a[keep] - b[keep]
    if len(d) == 0:
        raise XmodalError("no query has a value for both systems")
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    batch = 1000
    for start in range(0, n_resamples, batch):
        n = min(batch, n_resamples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(n, len(d)))
        extreme += int(np.sum(np.abs(signs @ d) / len(d) >= observed - 1e-12))
    return (1 + extreme) / (1 + n_resamples)


def paired_values(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Two systems' per-query values as float arrays with the NaN pairs (queries a metric leaves
    undefined, e.g. without positives) dropped; XmodalError when lengths differ or nothing is left."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise XmodalError(f"paired tests need the same queries: {len(a)} values against {len(b)}")
    keep = ~(np.isnan(a) | np.isnan(b))
    if not keep.any():
        raise XmodalError("no query has a value for both systems")
    return a[keep], b[keep]


def permutation_test(a, b, n_resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided paired randomization test of the mean difference, by
    ``scipy.stats.permutation_test`` on the per-query differences ``b - a`` (one sample with
    ``permutation_type="samples"``: each difference's sign flipped independently), statistic the
    mean, ``rng = numpy.random.default_rng(seed)``. Exact when ``2 ** n <= n_resamples``.

    scipy's two-sided p doubles the smaller one-sided p, so its floor is ``2 / (n_resamples + 1)``;
    :func:`paired_randomization` (what the reports used) counts ``|mean|`` instead.
    """
    a, b = paired_values(a, b)
    d = b - a
    if not d.any():
        return 1.0
    res = _st.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                               n_resamples=n_resamples, alternative="two-sided", batch=1000,
                               rng=np.random.default_rng(seed))
    return float(res.pvalue)


def paired_t(a, b) -> float:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``); 1.0 when every difference is 0."""
    a, b = paired_values(a, b)
    if not (b - a).any():
        return 1.0
    return float(_st.ttest_rel(b, a).pvalue)


def bootstrap_ci(a, b, n_resamples: int = 10000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean difference ``b - a`` over queries
    (``scipy.stats.bootstrap``, queries resampled with replacement, NaN pairs dropped)."""
    a, b = paired_values(a, b)
    d = b - a
    if len(d) < 2 or np.all(d == d[0]):
        return float(d[0]), float(d[0])
    res = _st.bootstrap((d,), np.mean, n_resamples=n_resamples, vectorized=True,
                        confidence_level=confidence, method="percentile",
                        rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


CORRECTIONS = ("holm", "bh", "none")


def adjust_pvalues(p, method: str = "holm") -> np.ndarray:
    """p-values corrected for multiple comparisons: ``"holm"`` (Holm's step-down, family-wise
    error), ``"bh"`` (Benjamini-Hochberg false discovery rate, ``scipy.stats.false_discovery_control``)
    or ``"none"``. Same order as ``p``."""
    p = np.asarray(p, dtype=np.float64)
    if method == "none" or p.size == 0:
        return p.copy()
    if method == "bh":
        return np.asarray(_st.false_discovery_control(p, method="bh"), dtype=np.float64)
    if method == "holm":
        order = np.argsort(p, kind="stable")
        m = len(p)
        stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
        out = np.empty(m)
        out[order] = np.minimum(stepped, 1.0)
        return out
    raise XmodalError(f"unknown correction {method!r}; choose from {', '.join(CORRECTIONS)}")


def spearman(x, y) -> float:
    """Spearman's rank correlation between two systems' scores (or two metric columns)."""
    return float(_st.spearmanr(x, y).statistic)


def kendall(x, y) -> float:
    """Kendall's tau-b between two rankings."""
    return float(_st.kendalltau(x, y).statistic)


def _ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every gallery item per query row (ties by index, like a stable sort)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[1] + 1)[None, :], axis=1)
    return ranks


def borda(score_matrices: Sequence[np.ndarray]) -> np.ndarray:
    """Borda-count aggregation of several systems' rankings (rows = queries, cols = items).

    Each system gives an item ``n_items - rank + 1`` points per query; items are ordered by their
    total points, and ties are broken by the item's median rank across the systems (lower first),
    then by index (Hodosh et al. 2013, §4.1.3). Returns a score matrix whose descending order is
    the aggregate ranking (strictly decreasing, so no ties remain).
    """
    if not score_matrices:
        raise XmodalError("Borda aggregation needs at least one system")
    shape = np.shape(score_matrices[0])
    if any(np.shape(s) != shape for s in score_matrices):
        raise XmodalError("all systems must score the same queries and items")
    ranks = np.stack([_ranks_from_scores(np.asarray(s, dtype=np.float64)) for s in score_matrices])
    n_items = shape[1]
    points = (n_items + 1 - ranks).sum(axis=0)
    median_rank = np.median(ranks, axis=0)
    cols = np.broadcast_to(np.arange(n_items), shape)
    order = np.lexsort((cols, median_rank, -points), axis=1)
    out = np.empty(shape, dtype=np.float64)
    np.put_along_axis(out, order, np.arange(n_items, 0, -1, dtype=np.float64)[None, :], axis=1)
    return out
