"""Step 5: learning to rank gist candidates, and the ranking metrics the benchmark reports.

:class:`CoordinateAscentRanker` is a linear list-wise ranker trained by coordinate ascent on MAP
(Metzler & Croft 2007, as RankLib's "Coordinate Ascent" the paper used): features are z-scored
with training statistics, weights start uniform, each coordinate is line-searched over a geometric
grid of steps, the weight vector is L1-normalised, and the best of a few random restarts is kept.
It saves as a model directory of :mod:`xmodal.models.modeldir` (feature names in
``config.json``; mean, scale and weights in ``arrays.npz``).

Metrics are per query, from a ranked list and graded relevance ``{node: grade}``:
AP (normalised by *all* relevant nodes, so a relevant node missing from the candidates counts as a
miss), P@10 and nDCG@10 (graded gains ``2^g - 1``; ``binary=True`` uses 0/1 gains).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.modeldir import read_model_dir, write_model_dir


# ---------------------------------------------------------------------- metrics
def average_precision(
    ranked: Sequence, relevant: set | dict, n_relevant: int | None = None
) -> float:
    """AP of a ranked list; ``n_relevant`` defaults to ``len(relevant)`` (NaN when 0)."""
    total = len(relevant) if n_relevant is None else n_relevant
    if total == 0:
        return float("nan")
    hits, s = 0, 0.0
    for k, item in enumerate(ranked, start=1):
        if item in relevant:
            hits += 1
            s += hits / k
    return s / total


def precision_at(ranked: Sequence, relevant: set | dict, k: int = 10) -> float:
    if len(relevant) == 0:
        return float("nan")
    return sum(1 for item in list(ranked)[:k] if item in relevant) / k


def ndcg_at(ranked: Sequence, grades: dict, k: int = 10, binary: bool = False) -> float:
    """nDCG@k with gains ``2^grade - 1`` (or 1 per relevant item) and log2(rank + 1) discounts."""
    if not grades:
        return float("nan")
    gain = (lambda g: 1.0) if binary else (lambda g: 2.0**g - 1.0)
    dcg = sum(
        gain(grades[x]) / np.log2(r + 2) for r, x in enumerate(list(ranked)[:k]) if x in grades
    )
    ideal = sorted((gain(g) for g in grades.values()), reverse=True)[:k]
    idcg = sum(g / np.log2(r + 2) for r, g in enumerate(ideal))
    return float(dcg / idcg) if idcg > 0 else float("nan")


def query_metrics(ranked: Sequence, grades: dict) -> dict[str, float]:
    return {
        "AP": average_precision(ranked, grades),
        "P@10": precision_at(ranked, grades, 10),
        "nDCG@10": ndcg_at(ranked, grades, 10),
    }


# ---------------------------------------------------------------------- padded AP (training)
def _pad(groups: Sequence[np.ndarray], values: np.ndarray, fill: float) -> np.ndarray:
    L = max((len(g) for g in groups), default=0)
    out = np.full((len(groups), max(L, 1)), fill, dtype=np.float64)
    for q, g in enumerate(groups):
        out[q, : len(g)] = values[g]
    return out


def _map_padded(S: np.ndarray, Y: np.ndarray, n_rel: np.ndarray) -> float:
    """Mean AP over rows; pads hold score -inf and label 0; ties broken by position."""
    order = np.argsort(-S, axis=1, kind="stable")
    y = np.take_along_axis(Y, order, axis=1)
    hits = np.cumsum(y, axis=1)
    ranks = np.arange(1, S.shape[1] + 1)
    ap = (y * hits / ranks).sum(axis=1) / np.maximum(n_rel, 1)
    return float(ap.mean())


class CoordinateAscentRanker:
    """Linear ranker trained by coordinate ascent on MAP (in-candidate AP)."""

    def __init__(
        self,
        n_restarts: int = 2,
        n_passes: int = 6,
        tol: float = 1e-4,
        steps: Sequence[float] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
        seed: int = 0,
    ) -> None:
        self.n_restarts = n_restarts
        self.n_passes = n_passes
        self.tol = tol
        self.steps = tuple(steps)
        self.seed = seed

    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        qid: np.ndarray,
        feature_names: Sequence[str] | None = None,
    ) -> CoordinateAscentRanker:
        """Fit on rows ``X`` (candidates) with binary labels ``y`` and query ids ``qid``."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        qid = np.asarray(qid)
        if X.ndim != 2 or len(X) != len(y) or len(y) != len(qid):
            raise XmodalError("ranker: X, y and qid must have matching lengths")
        self.feature_names_ = (
            list(feature_names) if feature_names else [f"f{i}" for i in range(X.shape[1])]
        )
        self.mean_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.scale_ = np.where(sd > 1e-12, sd, 1.0)
        Z = (X - self.mean_) / self.scale_
        groups = [np.flatnonzero(qid == q) for q in np.unique(qid)]
        groups = [g for g in groups if y[g].sum() > 0]  # queries with nothing to learn are skipped
        if not groups:
            raise XmodalError("ranker: no training query has a relevant candidate")
        Y = _pad(groups, y, 0.0)
        n_rel = Y.sum(axis=1)
        Zp = [_pad(groups, Z[:, f], 0.0) for f in range(Z.shape[1])]
        valid = _pad(groups, np.ones(len(y)), 0.0) > 0
        d = Z.shape[1]
        rng = np.random.default_rng(self.seed)

        def score(w: np.ndarray) -> np.ndarray:
            S = sum(w[f] * Zp[f] for f in range(d) if w[f] != 0.0)
            S = np.zeros_like(Y) + S
            return np.where(valid, S, -np.inf)

        best_w, best_map = None, -1.0
        for restart in range(self.n_restarts):
            w = np.full(d, 1.0 / d) if restart == 0 else rng.normal(size=d)
            w /= np.abs(w).sum()
            S = score(w)
            cur = _map_padded(S, Y, n_rel)
            for _ in range(self.n_passes):
                start = cur
                for f in rng.permutation(d):
                    base = S - w[f] * np.where(valid, Zp[f], 0.0)
                    cand = [w[f] + s * sgn for s in self.steps for sgn in (1, -1)] + [0.0]
                    best_v = w[f]
                    for v in cand:
                        m = _map_padded(base + v * Zp[f], Y, n_rel)
                        if m > cur + 1e-12:
                            cur, best_v = m, v
                    if best_v != w[f]:
                        w[f] = best_v
                        S = base + best_v * Zp[f]
                if cur - start < self.tol:
                    break
            norm = np.abs(w).sum()
            if norm > 0:
                w = w / norm
            if cur > best_map:
                best_map, best_w = cur, w.copy()
        self.weights_ = best_w
        self.train_map_ = best_map
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "weights_"):
            raise XmodalError("ranker is not fitted: call fit() or load()")
        X = np.asarray(X, dtype=np.float64)
        if X.shape[1] != len(self.weights_):
            raise XmodalError(f"ranker expects {len(self.weights_)} features, got {X.shape[1]}")
        return ((X - self.mean_) / self.scale_) @ self.weights_

    # ------------------------------------------------------------------ persistence
    SAVE_TYPE = "gist-coordinate-ascent"
    SAVE_VERSION = 1

    def get_params(self) -> dict:
        return {"n_restarts": self.n_restarts, "n_passes": self.n_passes, "tol": self.tol,
                "steps": list(self.steps), "seed": self.seed}

    def save(self, path: str | Path, provenance: dict | None = None) -> Path:
        """Write a model directory (:mod:`xmodal.models.modeldir`): z-scoring statistics and
        weights in ``arrays.npz`` (float64), feature names in ``config.json``."""
        if not hasattr(self, "weights_"):
            raise XmodalError("ranker is not fitted: nothing to save")
        arrays = {"mean": self.mean_, "scale": self.scale_, "weights": self.weights_}
        state = {"features": list(self.feature_names_), "train_map": float(self.train_map_)}
        return write_model_dir(path, type=self.SAVE_TYPE, version=self.SAVE_VERSION,
                               params=self.get_params(), arrays=arrays, state=state,
                               provenance=provenance)

    @classmethod
    def load(cls, path: str | Path) -> CoordinateAscentRanker:
        p = Path(path)
        if p.is_file():
            raise XmodalError(f"{p} is a file; a gist ranker is a model directory (config.json "
                              "+ arrays.npz), e.g. src/xmodal/assets/gist/ranker")
        if not p.exists():
            raise XmodalError(f"gist ranker not found: {p}")
        saved = read_model_dir(p, cls.SAVE_TYPE, cls.SAVE_VERSION, "gist ranker")
        r = cls(**saved.params)
        r.feature_names_ = list(saved.state["features"])
        r.mean_ = saved.arrays["mean"].astype(np.float64)
        r.scale_ = saved.arrays["scale"].astype(np.float64)
        r.weights_ = saved.arrays["weights"].astype(np.float64)
        r.train_map_ = float(saved.state.get("train_map", float("nan")))
        r.provenance_ = saved.provenance
        return r
