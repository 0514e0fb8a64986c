"""Model selection: folds, grids, fold means and best-of rules, shared by every reproduction.

The fitting inside a fold is the caller's (it knows the model); this module decides which items
go where and which setting wins, so that every report selects the same way:

- :func:`kfold` / :func:`holdout` / :func:`stratified_kfold` / :func:`group_folds`: seeded splits
  of the training items (never the test set);
- :func:`grid`: the settings of a grid, in a fixed order;
- :func:`fold_average` and :func:`fold_mean_rows`: average a criterion over folds;
- :func:`best_row` / :func:`argbest`: the winner, the first one on ties;
- :func:`ranked`: candidates best first by a score tuple compared at a fixed relative precision
  (:data:`SCORE_REL_PRECISION`), so that scores equal but for float rounding tie, and ties keep the
  candidates' order (the grid's);
- :func:`select`: evaluate a grid on held-out data and pick its best row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Split = tuple[np.ndarray, np.ndarray]  # (training part, held-out part), sorted item indices

# annotation metrics rounded into selection tables, and the usual criterion on them
ANNOTATION_COLUMNS: dict[str, int | None] = {"mean_P": 4, "mean_R": 4, "mean_F1": 4,
                                             "n_words_recall_gt0": None}  # None: as is
BEST_F1 = ("mean_F1", "n_words_recall_gt0")
# the relative precision at which :func:`ranked` compares scores (each rounded to it first)
SCORE_REL_PRECISION = 1e-6


def kfold(n: int, k: int, seed: int = 0) -> list[Split]:
    """``k`` folds of a seeded permutation of ``n`` items (``np.array_split`` sizes)."""
    parts = np.array_split(np.random.default_rng(seed).permutation(n), k)
    return [(np.setdiff1d(np.arange(n), np.sort(p)), np.sort(p)) for p in parts]


def holdout(n: int, n_heldout: int, seed: int = 0) -> Split:
    """A seeded held-out part of ``n_heldout`` items and the rest for training."""
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_heldout:]), np.sort(perm[:n_heldout])


def stratified_kfold(y: np.ndarray, k: int, seed: int = 0) -> list[Split]:
    """scikit-learn's shuffled ``StratifiedKFold`` (class proportions kept in every fold)."""
    from sklearn.model_selection import StratifiedKFold

    return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(np.zeros(len(y)), y))


def group_folds(n_groups: int, k: int, seed: int = 0) -> np.ndarray:
    """The fold of each group (e.g. each query and its candidates): a seeded permutation mod k."""
    return np.random.default_rng(seed).permutation(n_groups) % k


def grid(spec: Mapping[str, Iterable], **fixed: Any) -> list[dict]:
    """Every combination of ``spec``'s values (last key varies fastest), plus ``fixed``."""
    keys = list(spec)
    return [{**dict(zip(keys, values)), **fixed}
            for values in itertools.product(*(spec[k] for k in keys))]


def fold_average(splits: Sequence[Split], candidates: Iterable[Hashable],
                 score: Callable[[int, np.ndarray, np.ndarray], Mapping]) -> dict:
    """Mean over folds of ``score(fold, train, heldout) -> {candidate: value}``, accumulated
    fold by fold (``value / n_folds``)."""
    out = {c: 0.0 for c in candidates}
    for f, (tr, va) in enumerate(splits):
        for c, v in score(f, tr, va).items():
            out[c] += v / len(splits)
    return out


def fold_mean_rows(per_fold: Mapping[tuple, list], keys: Sequence[str],
                   columns: Mapping[str, int]) -> list[dict]:
    """Table rows from ``{setting tuple: [metric vector of each fold]}``: the setting's ``keys``
    and the fold means of ``columns`` (in order), rounded to the given digits."""
    rows = []
    for setting, values in per_fold.items():
        mean = np.mean(values, axis=0)
        rows.append({**dict(zip(keys, setting)),
                     **{c: round(float(v), d) for (c, d), v in zip(columns.items(), mean)}})
    return rows


def best_row(rows: Sequence[Mapping], by: Sequence[str] = BEST_F1,
             keys: Sequence[str] | None = None) -> dict:
    """The row with the largest ``by`` tuple (the first on ties); only ``keys`` if given."""
    best = max(rows, key=lambda r: tuple(r[b] for b in by))
    return dict(best) if keys is None else {k: best[k] for k in keys}


def argbest(scores: Mapping, mode: str = "max"):
    """The key with the largest (``mode="max"``) or smallest score (the first on ties)."""
    return (max if mode == "max" else min)(scores, key=scores.get)


def snapped(value: float, rel: float = SCORE_REL_PRECISION) -> float:
    """``value`` rounded to the relative precision ``rel`` (1e-6: 7 significant digits)."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{max(0, round(-math.log10(rel)))}e}")


def ranked(candidates: Sequence, key: Callable[[Any], Sequence[float]],
           rel: float = SCORE_REL_PRECISION) -> list:
    """``candidates`` best first by ``key(c)``, a tuple of scores (larger better) compared
    element by element after :func:`snapped`; ties keep the candidates' order."""
    return sorted(candidates, key=lambda c: tuple(-snapped(float(v), rel) for v in key(c)))


def select(settings: Sequence[Mapping], evaluate: Callable[[Mapping], Mapping],
           columns: Mapping[str, int | None] = ANNOTATION_COLUMNS, by: Sequence[str] = BEST_F1,
           log: Callable[[str], None] | None = None) -> tuple[dict, list[dict]]:
    """Evaluate every setting on held-out data; ``(best setting, all rows)``."""
    rows = []
    for params in settings:
        m = evaluate(params)
        rows.append({**params, **{c: m[c] if d is None else round(m[c], d)
                                  for c, d in columns.items()}})
        if log:
            log(f"  {rows[-1]}")
    return best_row(rows, by, keys=list(settings[0])), rows
