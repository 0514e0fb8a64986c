"""Kernel CCA with a low-rank (pivoted incomplete Cholesky) solver.

Hodosh et al. (2013, §3.2) use Hardoon et al.'s regularised KCCA,

    max  a'Kx Ky b / sqrt((a'Kx^2 a + kappa a'Kx a) (b'Ky^2 b + kappa b'Ky b)),

i.e. the generalised eigenproblem ``(Kx + kI)^-1 Ky (Ky + kI)^-1 Kx a = rho^2 a``. It needs both
n x n kernel matrices, which the paper says limits it to ~6,000 items. Here each kernel is
factorised as ``K ~ G G'`` by pivoted incomplete Cholesky (m pivots, columns computed on demand,
so K is never materialised). With ``w = G'a`` the two denominators become ``w'(G'G + kappa I) w``
and the numerator ``wx' Gx'Gy wy``: the problem is exactly a ridge-regularised linear CCA on the
m-dimensional features G, solved by one Cholesky whitening and one SVD. With m = n it is the exact
KCCA; with m < n it is the Nystrom approximation on the chosen pivots. Time is O(n m^2), memory
O(n m), so all 30,000 Flickr8K training captions fit easily.

A new point's features are ``L^-1 k(x, pivots)`` with L the (lower-triangular) pivot rows of G.
The text-kernel *diagonal factor* d of the paper multiplies the diagonal of the training kernel
only (a regulariser); here it is applied to the kernel columns during the factorisation.
Similarity in the induced space is the cosine of the first ``n`` canonical projections.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
from scipy import linalg, sparse

from xmodal.errors import XmodalError
from xmodal.models.modeldir import read_model_dir, write_model_dir


class KernelSource(Protocol):
    """A training kernel matrix that is only read by columns."""

    n: int

    def diagonal(self) -> np.ndarray: ...

    def columns(self, idx: np.ndarray) -> np.ndarray: ...  # (n, len(idx))


class PrecomputedKernel:
    """A kernel held as an (n, n) array."""

    def __init__(self, k: np.ndarray):
        k = np.asarray(k)
        if k.ndim != 2 or k.shape[0] != k.shape[1]:
            raise XmodalError(f"a training kernel must be square, got shape {k.shape}")
        self.k = k
        self.n = k.shape[0]

    def diagonal(self) -> np.ndarray:
        return np.asarray(np.diagonal(self.k), dtype=np.float64)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        return np.asarray(self.k[:, idx], dtype=np.float64)


class IndexedKernel:
    """Training items that repeat underlying objects: ``K[a, b] = base[index[a], index[b]]``.

    E.g. 30,000 (image, caption) pairs whose image side is a 6,000 x 6,000 image kernel.
    """

    def __init__(self, base: np.ndarray, index: np.ndarray):
        self.base = base
        self.index = np.asarray(index, dtype=np.int64)
        self.n = len(self.index)

    def diagonal(self) -> np.ndarray:
        d = np.asarray(np.diagonal(self.base), dtype=np.float64)
        return d[self.index]

    def columns(self, idx: np.ndarray) -> np.ndarray:
        cols = np.asarray(self.base[:, self.index[np.asarray(idx)]], dtype=np.float64)
        return cols[self.index]


class LinearKernel:
    """``K = X X'`` for a dense or sparse feature matrix X (e.g. L2-normalised bags of words)."""

    def __init__(self, x):
        self.x = sparse.csr_matrix(x) if sparse.issparse(x) else np.asarray(x, dtype=np.float64)
        self.n = self.x.shape[0]

    def diagonal(self) -> np.ndarray:
        if sparse.issparse(self.x):
            return np.asarray(self.x.multiply(self.x).sum(1)).ravel()
        return (self.x * self.x).sum(1)

    def columns(self, idx: np.ndarray) -> np.ndarray:
        out = self.x @ self.x[np.asarray(idx)].T
        return out.toarray() if sparse.issparse(out) else np.asarray(out)


class LandmarkKernel:
    """A kernel known only against landmark items: ``k_landmarks[a, j] = K[a, landmarks[j]]``.

    Pivots of the incomplete Cholesky must then be chosen among the landmarks (pass
    ``candidates=source.landmarks``); this is how the image side avoids the full n x n matrix.
    """

    def __init__(self, k_landmarks: np.ndarray, landmarks: np.ndarray, diagonal: np.ndarray):
        self.k = k_landmarks
        self.landmarks = np.asarray(landmarks, dtype=np.int64)
        self._diag = np.asarray(diagonal, dtype=np.float64)
        self.n = self.k.shape[0]
        self._col = {int(item): j for j, item in enumerate(self.landmarks)}

    def diagonal(self) -> np.ndarray:
        return self._diag

    def columns(self, idx: np.ndarray) -> np.ndarray:
        try:
            cols = [self._col[int(i)] for i in np.asarray(idx)]
        except KeyError as exc:
            raise XmodalError(f"item {exc.args[0]} is not a landmark of this kernel") from None
        return np.asarray(self.k[:, cols], dtype=np.float64)


class _ScaledDiagonal:
    def __init__(self, source: KernelSource, factor: float):
        self.source, self.factor, self.n = source, float(factor), source.n

    def diagonal(self) -> np.ndarray:
        return self.source.diagonal() * self.factor

    def columns(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx)
        cols = self.source.columns(idx)
        if self.factor != 1.0:
            diag = self.source.diagonal()[idx]
            cols[idx, np.arange(len(idx))] += (self.factor - 1.0) * diag
        return cols


def as_source(k) -> KernelSource:
    if hasattr(k, "columns") and hasattr(k, "diagonal"):
        return k
    return PrecomputedKernel(k)


def incomplete_cholesky(
    source: KernelSource, max_rank: int, tol: float = 1e-9, candidates: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pivoted incomplete Cholesky: ``K ~ G G'`` with G (n, m), m <= max_rank; returns (G, pivots).

    At each step the item with the largest residual diagonal becomes a pivot (Fine & Scheinberg
    2001; Bach & Jordan 2002); it stops early when the residual trace falls below ``tol`` times the
    initial trace. ``candidates`` restricts the pivots to those items (e.g. landmarks).
    """
    n = source.n
    cand = np.arange(n) if candidates is None else np.asarray(candidates, dtype=np.int64)
    m = min(int(max_rank), len(cand))
    resid = source.diagonal().astype(np.float64).copy()
    start_trace = max(resid.sum(), 1e-300)
    gt = np.zeros((m, n))  # G transposed: row k is the k-th column of G
    pivots: list[int] = []
    for k in range(m):
        j = int(cand[np.argmax(resid[cand])])
        if resid[j] <= 1e-12 or resid.sum() <= tol * start_trace:
            break
        col = source.columns(np.array([j]))[:, 0]
        if k:
            col = col - gt[:k, j] @ gt[:k]
        g = col / np.sqrt(resid[j])
        gt[k] = g
        resid -= g * g
        resid[j] = 0.0
        np.maximum(resid, 0.0, out=resid)
        pivots.append(j)
    return np.ascontiguousarray(gt[: len(pivots)].T), np.array(pivots, dtype=np.int64)


def cca_from_features(
    gx: np.ndarray, gy: np.ndarray, kappa: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Regularised linear CCA: ``(Wx, Wy, correlations)`` maximising wx'Gx'Gy wy under
    ``w'(G'G + kappa I)w = 1``, in decreasing order of correlation."""
    if kappa < 0:
        raise XmodalError("kappa must be >= 0")
    cxx = gx.T @ gx + kappa * np.eye(gx.shape[1])
    cyy = gy.T @ gy + kappa * np.eye(gy.shape[1])
    jitter = 1e-10 * max(np.trace(cxx) / len(cxx), np.trace(cyy) / len(cyy), 1.0)
    rx = linalg.cholesky(cxx + jitter * np.eye(len(cxx)), lower=False)
    ry = linalg.cholesky(cyy + jitter * np.eye(len(cyy)), lower=False)
    cxy = gx.T @ gy
    m = linalg.solve_triangular(rx, cxy, trans="T", lower=False)  # rx^-T cxy
    m = linalg.solve_triangular(ry, m.T, trans="T", lower=False).T  # ... ry^-1
    u, s, vt = linalg.svd(m, full_matrices=False)
    wx = linalg.solve_triangular(rx, u, lower=False)
    wy = linalg.solve_triangular(ry, vt.T, lower=False)
    return wx, wy, s


def _normalise_rows(z: np.ndarray) -> np.ndarray:
    return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)


class KCCA:
    """Regularised kernel CCA (low-rank solver); similarity = cosine in the canonical space.

    Parameters: ``kappa`` regularisation; ``n_components`` kept dimensions (None: all);
    ``rank`` maximum number of incomplete-Cholesky pivots per view (>= n gives the exact KCCA);
    ``diag_factor`` multiplies the diagonal of the y (text) training kernel; ``center`` centres
    the features in the reduced space (= kernel centring).
    """

    def __init__(
        self,
        kappa: float = 0.5,
        n_components: int | None = None,
        rank: int = 2000,
        diag_factor: float = 1.0,
        center: bool = True,
        tol: float = 1e-9,
    ):
        self.kappa = kappa
        self.n_components = n_components
        self.rank = rank
        self.diag_factor = diag_factor
        self.center = center
        self.tol = tol

    # -- fitting ---------------------------------------------------------------------------
    def fit(self, kx, ky) -> KCCA:
        """Fit on two training kernels (arrays or :class:`KernelSource` objects) over the same
        n paired items. A :class:`LandmarkKernel` restricts its view's pivots to its landmarks."""
        sx, sy = as_source(kx), as_source(ky)
        if sx.n != sy.n:
            raise XmodalError(f"the two kernels must cover the same items ({sx.n} vs {sy.n})")
        if self.diag_factor != 1.0:
            sy = _ScaledDiagonal(sy, self.diag_factor)
        gx, self.pivots_x_ = incomplete_cholesky(
            sx, self.rank, self.tol, getattr(sx, "landmarks", None)
        )
        gy, self.pivots_y_ = incomplete_cholesky(
            sy, self.rank, self.tol, getattr(getattr(sy, "source", sy), "landmarks", None)
        )
        self.lx_ = gx[self.pivots_x_]
        self.ly_ = gy[self.pivots_y_]
        self.mean_x_ = gx.mean(0) if self.center else np.zeros(gx.shape[1])
        self.mean_y_ = gy.mean(0) if self.center else np.zeros(gy.shape[1])
        self._gx, self._gy = gx - self.mean_x_, gy - self.mean_y_
        self.solve(self.kappa)
        return self

    def solve(self, kappa: float) -> KCCA:
        """Re-solve for another kappa, reusing the factorisation (needs a fitted model)."""
        if not hasattr(self, "_gx"):
            raise XmodalError("solve() needs the training factors: call fit() first")
        self.kappa = kappa
        self.wx_, self.wy_, self.correlations_ = cca_from_features(self._gx, self._gy, kappa)
        return self

    def release_training_factors(self) -> None:
        for name in ("_gx", "_gy"):
            if hasattr(self, name):
                delattr(self, name)

    # -- projection and scoring --------------------------------------------------------------
    def _n(self, n: int | None) -> int:
        n = n or self.n_components or self.wx_.shape[1]
        return min(int(n), self.wx_.shape[1], self.wy_.shape[1])

    def features_x(self, k_pivots: np.ndarray) -> np.ndarray:
        """Reduced features of new x items from their kernel values against ``pivots_x_``."""
        k = np.atleast_2d(np.asarray(k_pivots, dtype=np.float64))
        return linalg.solve_triangular(self.lx_, k.T, lower=True).T - self.mean_x_

    def features_y(self, k_pivots: np.ndarray) -> np.ndarray:
        k = np.atleast_2d(np.asarray(k_pivots, dtype=np.float64))
        return linalg.solve_triangular(self.ly_, k.T, lower=True).T - self.mean_y_

    def transform_x(self, k_pivots: np.ndarray, n: int | None = None) -> np.ndarray:
        return self.features_x(k_pivots) @ self.wx_[:, : self._n(n)]

    def transform_y(self, k_pivots: np.ndarray, n: int | None = None) -> np.ndarray:
        return self.features_y(k_pivots) @ self.wy_[:, : self._n(n)]

    def score(self, kx_pivots: np.ndarray, ky_pivots: np.ndarray, n: int | None = None):
        """Cosine similarities (n_x, n_y) of new items in the first ``n`` canonical dimensions."""
        zx = _normalise_rows(self.transform_x(kx_pivots, n))
        zy = _normalise_rows(self.transform_y(ky_pivots, n))
        return zx @ zy.T

    # -- persistence -------------------------------------------------------------------------
    SAVE_TYPE, SAVE_VERSION = "kcca", 1
    _ARRAYS = ("pivots_x", "pivots_y", "lx", "ly", "mean_x", "mean_y", "wx", "wy", "correlations")

    def get_params(self) -> dict:
        return {"kappa": self.kappa, "n_components": self.n_components, "rank": self.rank,
                "diag_factor": self.diag_factor, "center": self.center}

    def save(self, directory: str | Path, provenance: dict | None = None) -> Path:
        arrays = {k: getattr(self, k + "_") for k in self._ARRAYS}
        return write_model_dir(directory, type=self.SAVE_TYPE, version=self.SAVE_VERSION,
                               params=self.get_params(), arrays=arrays, provenance=provenance)

    @classmethod
    def load(cls, directory: str | Path) -> KCCA:
        saved = read_model_dir(directory, cls.SAVE_TYPE, cls.SAVE_VERSION, "KCCA")
        model = cls(**saved.params)
        for k in cls._ARRAYS:
            setattr(model, k + "_", saved.arrays[k])
        return model
