"""Image-text similarity functions for retrieval in a shared space (higher = closer).

Rasiwasia et al. (2010, Table 3) compare normalized correlation (NC), L1, L2 and the KL
divergence. The paper does not define NC; on its own features the uncentered form
``x.y / (|x| |y|)`` (the cosine) reproduces its NC numbers exactly (SCM 0.277 / 0.226), while the
centered (Pearson) form does not (0.303 / 0.226), so ``"nc"`` is the uncentered one and
``"cosine"`` is the same function under its other name. ``"centered_nc"`` is the Pearson form.
Distances are negated so that every function here is a similarity. ``"kl"`` is
``-KL(text || image)`` (the text SMN is the reference distribution; this direction matches the
paper's KL row, the other one is ``"kl_image_text"``), with ``eps`` smoothing. ``"dot"`` is the
inner product; on two semantic multinomials it is the probability that the image and the text
belong to the same class when their classes are drawn independently from the two multinomials.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xmodal.errors import XmodalError

EPS = 1e-10


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)


def normalized_correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a_i . b_j / (|a_i| |b_j|)``: the paper's NC (= cosine similarity)."""
    return _unit(a) @ _unit(b).T


def centered_normalized_correlation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation between the coordinates of ``a_i`` and ``b_j``."""
    return normalized_correlation(a - a.mean(1, keepdims=True), b - b.mean(1, keepdims=True))


def neg_l1(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty((len(a), len(b)))
    for start in range(0, len(a), 256):  # bounded memory: (256, len(b), dim) at a time
        out[start : start + 256] = -np.abs(a[start : start + 256, None] - b[None]).sum(-1)
    return out


def neg_l2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None] - 2.0 * a @ b.T
    return -np.sqrt(np.maximum(sq, 0.0))


def _check_distributions(*arrays: np.ndarray) -> None:
    for x in arrays:
        if (x < 0).any():
            raise XmodalError("the KL divergence needs non-negative vectors (probabilities)")


def neg_kl_text_image(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``-KL(b_j || a_i)`` for image distributions ``a`` and text distributions ``b``."""
    _check_distributions(a, b)
    p = b / b.sum(1, keepdims=True) + EPS
    q = a / a.sum(1, keepdims=True) + EPS
    return -((p * np.log(p)).sum(1)[None, :] - np.log(q) @ p.T)


def neg_kl_image_text(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``-KL(a_i || b_j)``."""
    return neg_kl_text_image(b, a).T


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b.T


SIMILARITIES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "nc": normalized_correlation,
    "cosine": normalized_correlation,
    "centered_nc": centered_normalized_correlation,
    "l1": neg_l1,
    "l2": neg_l2,
    "kl": neg_kl_text_image,
    "kl_image_text": neg_kl_image_text,
    "dot": dot,
}


def check_metric(metric: str) -> str:
    if metric not in SIMILARITIES:
        raise XmodalError(f"unknown distance {metric!r}; choose from {sorted(SIMILARITIES)}")
    return metric


def similarity(images: np.ndarray, texts: np.ndarray, metric: str = "nc") -> np.ndarray:
    """Similarity matrix (n_images, n_texts) between two sets of points of one shared space."""
    a = np.atleast_2d(np.asarray(images, dtype=np.float64))
    b = np.atleast_2d(np.asarray(texts, dtype=np.float64))
    if a.shape[1] != b.shape[1]:
        raise XmodalError(f"image and text points differ in dimension ({a.shape[1]} vs {b.shape[1]})")
    return SIMILARITIES[check_metric(metric)](a, b)
