"""Side-by-side comparison of systems with paired significance tests (in the spirit of ranx's
``compare``): one implementation for every reproduction.

Input: per-query values of each system (``{system: {metric: array over the same queries}}``).
Each metric names its test: ``"mcnemar"`` (exact McNemar on per-query success, value > 0, e.g. a
hit at rank K), ``"randomization"`` (two-sided paired sign-flip test of the mean, e.g. AP or a
rank; the reports' convention, :func:`~xmodal.eval.stats.paired_randomization`), ``"permutation"``
(the same test by ``scipy.stats.permutation_test``, what ``xmodal compare`` calls randomization)
or ``"t"`` (paired t-test). All are from :mod:`xmodal.eval.stats` and symmetric in the two
systems. :mod:`xmodal.eval.significance` compares saved runs with these tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.stats import mcnemar, paired_randomization, paired_t, permutation_test

TESTS = ("mcnemar", "randomization", "permutation", "t")


def paired_test(a, b, test: str = "randomization", n_resamples: int = 10000,
                seed: int = 0) -> float:
    """The p-value of one paired test between two systems' per-query values."""
    if test == "mcnemar":
        return mcnemar(np.asarray(a) > 0, np.asarray(b) > 0)["p_value"]
    if test == "randomization":
        return paired_randomization(a, b, n_resamples, seed)
    if test == "permutation":
        return permutation_test(a, b, n_resamples, seed)
    if test == "t":
        return paired_t(a, b)
    raise XmodalError(f"unknown test {test!r}; choose from {TESTS}")


def compare(per_query: Mapping[str, Mapping[str, np.ndarray]], reference: str,
            tests: Mapping[str, str], systems: Iterable[str] | None = None,
            n_resamples: int = 10000, seed: int = 0) -> dict[str, dict[str, float]]:
    """``{system: {metric: p-value against reference}}`` for every system but the reference."""
    if reference not in per_query:
        raise XmodalError(f"reference system {reference!r} has no per-query values")
    ref = per_query[reference]
    out = {}
    for s in (per_query if systems is None else systems):
        if s == reference:
            continue
        out[s] = {m: paired_test(per_query[s][m], ref[m], t, n_resamples, seed)
                  for m, t in tests.items()}
    return out


def summarize(per_query: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, dict[str, float]]:
    """Mean of each metric per system (NaN queries left out)."""
    return {s: {m: float(np.nanmean(v)) for m, v in pq.items()} for s, pq in per_query.items()}


def stars(p: float | None) -> str:
    """``***`` p <= 0.01, ``**`` p <= 0.05, ``*`` p <= 0.1 (the reports' convention)."""
    if p is None:
        return ""
    return "***" if p <= 0.01 else "**" if p <= 0.05 else "*" if p <= 0.1 else ""
