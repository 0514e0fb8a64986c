"""Linear canonical correlation analysis (CCA), solved exactly, with ridge regularisation.

Rasiwasia et al. (2010, eq. 1) maximise ``wi' S_it wt / sqrt(wi' S_ii wi * wt' S_tt wt)``. Here
each covariance gets a ridge ``reg * trace(S)/dim * I`` (relative to its mean eigenvalue, so
``reg`` does not depend on the feature scale), both views are whitened by the inverse square root
of their regularised covariance, and the SVD of the whitened cross-covariance gives the canonical
pairs in decreasing order of correlation. The regularisation matters on the Wikipedia features:
10-topic LDA proportions sum to one, so the text covariance has rank 9.

Unlike :class:`sklearn.cross_decomposition.CCA` (an iterative NIPALS/PLS solver that deflates each
view separately) this is the closed-form generalised-eigenvalue solution of the paper.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from xmodal.errors import XmodalError


def _inv_sqrt(c: np.ndarray) -> np.ndarray:
    w, v = linalg.eigh(c)
    w = np.maximum(w, 1e-12 * max(float(w.max()), 1e-300))
    return (v / np.sqrt(w)) @ v.T


class LinearCCA:
    """Regularised linear CCA between paired views X (n, p) and Y (n, q).

    ``n_components``: kept canonical pairs (at most min(p, q)); ``reg``: ridge added to each
    covariance, as a fraction of its mean eigenvalue. Learned: ``mean_x_``, ``mean_y_``,
    ``wx_`` (p, d), ``wy_`` (q, d), ``correlations_`` (d,) on the training data.
    """

    def __init__(self, n_components: int = 9, reg: float = 1e-3):
        self.n_components = n_components
        self.reg = reg

    def fit(self, x: np.ndarray, y: np.ndarray) -> LinearCCA:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
            raise XmodalError(
                f"CCA needs two 2-D arrays with the same number of rows, got {x.shape} and {y.shape}"
            )
        if len(x) < 2:
            raise XmodalError("CCA needs at least two training pairs")
        if self.reg < 0:
            raise XmodalError("reg must be >= 0")
        d = int(self.n_components)
        if not 1 <= d <= min(x.shape[1], y.shape[1]):
            raise XmodalError(
                f"n_components must be between 1 and {min(x.shape[1], y.shape[1])}, got {d}"
            )
        self.mean_x_ = x.mean(0)
        self.mean_y_ = y.mean(0)
        xc, yc = x - self.mean_x_, y - self.mean_y_
        n = len(x) - 1
        cxx, cyy, cxy = xc.T @ xc / n, yc.T @ yc / n, xc.T @ yc / n
        cxx += self.reg * max(np.trace(cxx) / len(cxx), 1e-12) * np.eye(len(cxx))
        cyy += self.reg * max(np.trace(cyy) / len(cyy), 1e-12) * np.eye(len(cyy))
        wx, wy = _inv_sqrt(cxx), _inv_sqrt(cyy)
        u, s, vt = linalg.svd(wx @ cxy @ wy)
        self.wx_ = wx @ u[:, :d]
        self.wy_ = wy @ vt.T[:, :d]
        self.correlations_ = s[:d]
        return self

    def _check(self) -> None:
        if not hasattr(self, "wx_"):
            raise XmodalError("this CCA is not fitted yet: call fit() first")

    def transform_x(self, x: np.ndarray) -> np.ndarray:
        self._check()
        return (np.asarray(x, dtype=np.float64) - self.mean_x_) @ self.wx_

    def transform_y(self, y: np.ndarray) -> np.ndarray:
        self._check()
        return (np.asarray(y, dtype=np.float64) - self.mean_y_) @ self.wy_

    def state(self) -> dict[str, np.ndarray]:
        """Learned arrays, for saving."""
        self._check()
        return {
            "mean_x": self.mean_x_,
            "mean_y": self.mean_y_,
            "wx": self.wx_,
            "wy": self.wy_,
            "correlations": self.correlations_,
        }

    def set_state(self, arrays: dict[str, np.ndarray]) -> LinearCCA:
        self.mean_x_ = np.asarray(arrays["mean_x"], dtype=np.float64)
        self.mean_y_ = np.asarray(arrays["mean_y"], dtype=np.float64)
        self.wx_ = np.asarray(arrays["wx"], dtype=np.float64)
        self.wy_ = np.asarray(arrays["wy"], dtype=np.float64)
        self.correlations_ = np.asarray(arrays["correlations"], dtype=np.float64)
        return self
