"""xmodal.eval.selection (folds, grids, best-of rules) and xmodal.eval.compare (paired tests),
checked by hand-computed examples."""

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.eval.compare import compare, paired_test, stars, summarize
from xmodal.eval.selection import (
    argbest,
    best_row,
    fold_average,
    fold_mean_rows,
    grid,
    group_folds,
    holdout,
    kfold,
    select,
    stratified_kfold,
)
from xmodal.eval.stats import mcnemar, paired_randomization


def test_kfold_partitions_every_item_once_and_is_seeded():
    folds = kfold(10, 3, seed=4)
    held = np.concatenate([va for _, va in folds])
    assert sorted(held.tolist()) == list(range(10))
    assert [len(va) for _, va in folds] == [4, 3, 3]  # np.array_split sizes
    for tr, va in folds:
        assert np.all(np.diff(va) > 0) and not set(tr) & set(va) and len(tr) + len(va) == 10
    perm = np.random.default_rng(4).permutation(10)
    assert folds[0][1].tolist() == sorted(perm[:4].tolist())
    assert [va.tolist() for _, va in kfold(10, 3, seed=4)] == [va.tolist() for _, va in folds]


def test_holdout_and_group_folds():
    tr, va = holdout(8, 3, seed=1)
    perm = np.random.default_rng(1).permutation(8)
    assert va.tolist() == sorted(perm[:3].tolist()) and tr.tolist() == sorted(perm[3:].tolist())
    g = group_folds(7, 3, seed=2)
    assert g.tolist() == (np.random.default_rng(2).permutation(7) % 3).tolist()


def test_stratified_kfold_keeps_class_proportions():
    y = np.array([0] * 6 + [1] * 3)
    for tr, va in stratified_kfold(y, 3):
        assert sorted(y[va].tolist()) == [0, 0, 1]


def test_grid_order_and_fixed_values():
    g = grid({"a": [1, 2], "b": ["x", "y"]}, smoothing="jm")
    assert g == [{"a": 1, "b": "x", "smoothing": "jm"}, {"a": 1, "b": "y", "smoothing": "jm"},
                 {"a": 2, "b": "x", "smoothing": "jm"}, {"a": 2, "b": "y", "smoothing": "jm"}]


def test_best_row_breaks_ties_by_the_second_key_then_by_order():
    rows = [{"p": 1, "mean_F1": 0.5, "n_words_recall_gt0": 3},
            {"p": 2, "mean_F1": 0.5, "n_words_recall_gt0": 4},
            {"p": 3, "mean_F1": 0.5, "n_words_recall_gt0": 4}]
    assert best_row(rows, keys=("p",)) == {"p": 2}
    assert best_row(rows, by=("mean_F1",))["p"] == 1
    assert argbest({"a": 2.0, "b": 1.0, "c": 1.0}, "min") == "b"
    assert argbest({"a": 2.0, "b": 3.0}) == "b"


def test_fold_average_and_fold_mean_rows_by_hand():
    splits = [(np.arange(2), np.arange(2, 4))] * 4
    avg = fold_average(splits, ["c1", "c2"],
                       lambda f, tr, va: {"c1": float(f), "c2": 1.0})
    assert avg == {"c1": pytest.approx(1.5), "c2": pytest.approx(1.0)}
    rows = fold_mean_rows({(0.5, "x"): [[3, 0.12344], [4, 0.12346]]}, ("t", "s"),
                          {"n": 1, "r": 4})
    assert rows == [{"t": 0.5, "s": "x", "n": 3.5, "r": 0.1235}]


def test_select_rounds_and_picks_the_best():
    settings = grid({"a": [1, 2, 3]})
    scores = {1: 0.2, 2: 0.31234, 3: 0.3}
    best, rows = select(settings, lambda p: {"mean_P": 0.1, "mean_R": 0.2,
                                             "mean_F1": scores[p["a"]], "n_words_recall_gt0": 5})
    assert best == {"a": 2}
    assert rows[1] == {"a": 2, "mean_P": 0.1, "mean_R": 0.2, "mean_F1": 0.3123,
                       "n_words_recall_gt0": 5}


def test_compare_uses_the_named_tests_and_is_symmetric():
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50) + 0.2
    hits_a, hits_b = a > 0.5, b > 0.5
    per_query = {"ref": {"AP": b, "R@1": hits_b.astype(float)},
                 "sys": {"AP": a, "R@1": hits_a.astype(float)}}
    p = compare(per_query, "ref", {"AP": "randomization", "R@1": "mcnemar"}, n_resamples=2000)
    assert set(p) == {"sys"}
    assert p["sys"]["AP"] == paired_randomization(a, b, 2000, 0)
    assert p["sys"]["AP"] == paired_randomization(b, a, 2000, 0)  # symmetric
    assert p["sys"]["R@1"] == mcnemar(hits_a, hits_b)["p_value"]
    assert summarize(per_query)["sys"]["AP"] == pytest.approx(a.mean())
    with pytest.raises(XmodalError, match="unknown test"):
        paired_test(a, b, "t-test")
    with pytest.raises(XmodalError, match="reference"):
        compare(per_query, "nobody", {"AP": "randomization"})
    assert [stars(p) for p in (0.005, 0.05, 0.07, 0.5, None)] == ["***", "**", "*", "", ""]
