"""KCCA: planted correlation, exact-eigenproblem agreement, low-rank vs exact, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.models.kcca import (
    KCCA,
    IndexedKernel,
    LandmarkKernel,
    LinearKernel,
    PrecomputedKernel,
    incomplete_cholesky,
)


def _planted(n=300, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = rng.normal(size=(n, 5))
    y = rng.normal(size=(n, 4))
    x[:, 0] = z + noise * rng.normal(size=n)
    y[:, 2] = -z + noise * rng.normal(size=n)
    return x, y, z


def _centred(k):
    n = len(k)
    h = np.eye(n) - 1.0 / n
    return h @ k @ h


def test_incomplete_cholesky_full_rank_is_exact():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(30, 8))
    k = a @ a.T
    g, piv = incomplete_cholesky(PrecomputedKernel(k), 30)
    assert g.shape[1] == 8  # rank 8 detected: residual vanishes after 8 pivots
    np.testing.assert_allclose(g @ g.T, k, atol=1e-8)
    # The pivot rows of G are lower triangular (what features of new points rely on).
    lpp = g[piv]
    np.testing.assert_allclose(np.triu(lpp, 1), 0, atol=1e-12)


def test_kcca_recovers_planted_correlation():
    x, y, z = _planted()
    model = KCCA(kappa=1e-3, rank=50).fit(x @ x.T, y @ y.T)
    # true correlation between x0 and -y2 is 1 / (1 + 0.09) ~ 0.917
    assert model.correlations_[0] == pytest.approx(1 / 1.09, abs=0.04)
    assert model.correlations_[1] < 0.3  # nothing else is correlated
    px = model.transform_x(x @ x[model.pivots_x_].T, 1)[:, 0]
    py = model.transform_y(y @ y[model.pivots_y_].T, 1)[:, 0]
    assert abs(np.corrcoef(px, z)[0, 1]) > 0.9
    assert np.corrcoef(px, py)[0, 1] > 0.85


def test_kcca_matches_exact_generalised_eigenproblem():
    rng = np.random.default_rng(2)
    n = 40
    x, y, _ = _planted(n, seed=3)
    kx = np.exp(-0.2 * ((x[:, None] - x[None]) ** 2).sum(-1))
    ky = np.exp(-0.2 * ((y[:, None] - y[None]) ** 2).sum(-1))
    kappa = 0.5
    model = KCCA(kappa=kappa, rank=n, center=True).fit(kx, ky)
    # Hardoon et al.: (Kx + kI)^-1 Ky (Ky + kI)^-1 Kx a = rho^2 a, on centred kernels
    cx, cy = _centred(kx), _centred(ky)
    eye = np.eye(n)
    mat = np.linalg.solve(cx + kappa * eye, cy) @ np.linalg.solve(cy + kappa * eye, cx)
    eig = np.sort(np.linalg.eigvals(mat).real)[::-1]
    np.testing.assert_allclose(model.correlations_[:5] ** 2, eig[:5], rtol=1e-5, atol=1e-8)
    del rng


def test_low_rank_agrees_with_exact_on_small_data():
    x, y, _ = _planted(200, seed=4)
    kx = np.exp(-0.1 * ((x[:, None] - x[None]) ** 2).sum(-1))
    ky = np.exp(-0.1 * ((y[:, None] - y[None]) ** 2).sum(-1))
    exact = KCCA(kappa=1.0, rank=200).fit(kx, ky)
    low = KCCA(kappa=1.0, rank=60).fit(kx, ky)
    assert low.correlations_[0] == pytest.approx(exact.correlations_[0], abs=0.02)
    # and the induced similarities of held-out style queries agree (first 3 dimensions)
    se = exact.score(kx[:, exact.pivots_x_][:50], ky[:, exact.pivots_y_][:50], n=3)
    sl = low.score(kx[:, low.pivots_x_][:50], ky[:, low.pivots_y_][:50], n=3)
    assert np.corrcoef(se.ravel(), sl.ravel())[0, 1] > 0.95


def test_indexed_and_linear_sources_match_dense():
    rng = np.random.default_rng(5)
    base = rng.normal(size=(6, 3))
    kb = base @ base.T
    index = np.array([0, 0, 1, 2, 2, 5, 4, 3])
    src = IndexedKernel(kb, index)
    dense = kb[np.ix_(index, index)]
    np.testing.assert_allclose(src.columns(np.array([1, 6])), dense[:, [1, 6]])
    np.testing.assert_allclose(src.diagonal(), np.diag(dense))
    feats = rng.normal(size=(7, 4))
    lin = LinearKernel(feats)
    np.testing.assert_allclose(lin.columns(np.array([2])), (feats @ feats.T)[:, [2]])


def test_diag_factor_scales_training_diagonal_only():
    x, y, _ = _planted(80, seed=6)
    ky = y @ y.T + np.eye(80) * 1e-6
    a = KCCA(kappa=0.1, rank=80, diag_factor=3.0, center=False).fit(x @ x.T, ky)
    b = KCCA(kappa=0.1, rank=80, center=False).fit(x @ x.T, ky + 2.0 * np.diag(np.diag(ky)))
    np.testing.assert_allclose(a.correlations_[:3], b.correlations_[:3], rtol=1e-6)


def test_save_load_roundtrip(tmp_path):
    x, y, _ = _planted(60, seed=7)
    m = KCCA(kappa=0.5, rank=20, n_components=3).fit(x @ x.T, y @ y.T)
    m.save(tmp_path / "m")
    m2 = KCCA.load(tmp_path / "m")
    kx = x[:10] @ x[m.pivots_x_].T
    ky = y[:10] @ y[m.pivots_y_].T
    np.testing.assert_allclose(m.score(kx, ky), m2.score(kx, ky))
    with pytest.raises(XmodalError):
        KCCA.load(tmp_path / "missing")
    with pytest.raises(XmodalError):
        KCCA().fit(np.eye(3), np.eye(4))


def test_landmark_kernel_restricts_pivots():
    x, y, _ = _planted(100, seed=8)
    k = np.exp(-0.1 * ((x[:, None] - x[None]) ** 2).sum(-1))
    landmarks = np.arange(0, 100, 3)
    src = LandmarkKernel(k[:, landmarks], landmarks, np.ones(100))
    g, piv = incomplete_cholesky(src, 20, candidates=landmarks)
    assert set(piv) <= set(landmarks)
    # Nystrom identity: G G' equals K on the pivot columns
    np.testing.assert_allclose((g @ g.T)[:, piv], k[:, piv], atol=1e-8)
    model = KCCA(kappa=0.5, rank=20).fit(src, y @ y.T)
    assert set(model.pivots_x_) <= set(landmarks)
    with pytest.raises(XmodalError):
        src.columns(np.array([1]))
