"""xmodal.eval.selection.ranked: dev scores equal but for float rounding tie, and ties keep the
candidates' (grid) order, whatever order the scores were summed in."""

import pytest

from xmodal.eval.selection import ranked, snapped


def _dev_row(kappa, r5, r10, med):
    return {"kappa": kappa, "R@5": r5 / 1000, "R@10": r10 / 1000, "medR": med}


def test_snapped_keeps_seven_significant_digits():
    assert snapped(0.1 + 0.2) == snapped(0.3) == 0.3
    assert snapped(123456.78) == 123456.8
    assert snapped(-0.32399999999999995) == -0.324
    assert snapped(0.0) == 0.0 and snapped(float("inf")) == float("inf")


def test_equal_sums_in_float_noise_fall_to_the_next_key():
    # 120 + 204 and 121 + 203 hits are the same R@5 + R@10 (0.324), but the first float sum is
    # one ulp below the second; the tie must go to the lower median rank, here the first row
    first, second = _dev_row(0.1, 120, 204, 50.0), _dev_row(0.5, 121, 203, 52.0)
    assert first["R@5"] + first["R@10"] < second["R@5"] + second["R@10"]  # the float noise
    best = ranked([first, second], lambda r: (r["R@5"] + r["R@10"], -r["medR"]))[0]
    assert best is first


def test_summation_order_does_not_change_the_choice():
    rows = [{"name": "a", "scores": [0.1, 0.2, 0.3]}, {"name": "b", "scores": [0.3, 0.2, 0.1]}]
    forward = ranked(rows, lambda r: (sum(r["scores"]),))
    backward = ranked(rows, lambda r: (sum(reversed(r["scores"])),))
    assert [r["name"] for r in forward] == [r["name"] for r in backward] == ["a", "b"]


def test_exact_ties_keep_the_candidates_order_and_real_gaps_count():
    rows = [_dev_row(k, 140, 220, 55.0) for k in (0.1, 0.5, 1.0)] + [_dev_row(5.0, 141, 220, 60.0)]
    order = ranked(rows, lambda r: (r["R@5"] + r["R@10"], -r["medR"]))
    assert [r["kappa"] for r in order] == [5.0, 0.1, 0.5, 1.0]


@pytest.mark.parametrize("gap", [1e-5, 1e-4])
def test_differences_above_the_precision_decide(gap):
    rows = [{"s": 0.5}, {"s": 0.5 * (1 + gap)}]
    assert ranked(rows, lambda r: (r["s"],))[0] is rows[1]
