"""The Hodosh dev selection (select_settings, best_single) under float noise: dev scores that are
equal but for the rounding of a float sum must fall to the documented tie-breaks (median rank,
then grid order), as :func:`xmodal.eval.selection.ranked` does."""

from __future__ import annotations

import numpy as np


def _row(n, r1, r5, r10, med):
    task = {"R@1": r1 / 1000, "R@5": r5 / 1000, "R@10": r10 / 1000, "medR": med}
    return {"kappa": 0.5, "n": n, "i2t": task, "t2i": task}


def test_select_settings_breaks_an_equal_sum_by_grid_order():
    from xmodal.models.hodosh import select_settings

    better = [_row(n, 50, 90, 180, 70.0) for n in (10, 15, 20, 25)]
    # the fifth place by R@1: same R@1 and medR, R@1 + R@5 + R@10 = 0.344 for both, but the
    # float sum of the later row is one ulp larger
    first, later = _row(30, 40, 100, 204, 60.0), _row(40, 40, 101, 203, 60.0)
    assert sum(later["t2i"][m] for m in ("R@1", "R@5", "R@10")) > \
        sum(first["t2i"][m] for m in ("R@1", "R@5", "R@10"))
    by_r1 = [s["n"] for s in select_settings(better + [first, later], "t2i") if s["by"] == "R@1"]
    assert by_r1 == [10, 15, 20, 25, 30]


def test_best_single_breaks_an_equal_sum_by_median_rank():
    from xmodal.models.hodosh import HodoshKCCA

    system = HodoshKCCA("bow5", "pyramid")
    # R@5 + R@10 = 0.324 for both; the float sum of the second is one ulp larger
    system.dev_grid_ = [_row(10, 30, 120, 204, 50.0), _row(20, 30, 121, 203, 52.0)]
    system.weights_ = {0.5: (np.zeros((3, 20)), np.zeros((3, 20)))}
    assert system.best_single("t2i")["n"] == 10
