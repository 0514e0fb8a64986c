"""Image kernels of Hodosh et al. (2013, §3.3): histogram intersection and spatial pyramid.

* ``histogram_intersection(A, B)`` – ``K[i, j] = sum_v min(A[i, v], B[j, v])``.
* ``pyramid_histograms(words, n_words)`` – levels l = 0, 1, 2 (1, 4 and 16 cells); every level is
  normalised by the number of points in the image (so each level sums to 1) and multiplied by the
  standard pyramid-match weights of Lazebnik et al. (2006) for L = 2: 1/4 (l = 0), 1/4 (l = 1),
  1/2 (l = 2), i.e. ``1/2^L`` for level 0 and ``1/2^(L-l+1)`` otherwise. Because
  ``min(w a, w b) = w min(a, b)``, the intersection of the weighted, concatenated histograms *is*
  the pyramid kernel ``sum_l w_l I^l`` (the "new matches" form ``I^L + sum_l (I^l - I^{l+1}) /
  2^(L-l)`` is algebraically the same). A histogram (level-0 only) kernel is ``levels=(0,)``.
* ``combine_kernels(kernels, p)`` – the average of the colour, texture and SIFT kernels, raised to
  the power p (the paper squares or cubes it).

Kernel values for a whole collection are cached on disk by :class:`ImageKernelCache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError


def pyramid_weights(levels: int = 3) -> np.ndarray:
    """Pyramid-match weights for levels 0..L (L = levels - 1); they sum to 1."""
    top = levels - 1
    if top == 0:
        return np.ones(1)
    w = np.array([1.0 / 2 ** (top - lv + 1) for lv in range(levels)])
    w[0] = 1.0 / 2**top
    return w


def pyramid_histograms(
    words: np.ndarray, n_words: int, levels: int = 3, weighted: bool = True
) -> np.ndarray:
    """Weighted spatial-pyramid histograms of word-id grids.

    ``words``: (n_images, H, W) integer word ids, one (H, W) grid, or a list of grids of
    different shapes (images kept at their own resolution). Returns
    (n_images, n_words * sum_l 4^l) float32; cells are ordered level by level, row-major.
    """
    if isinstance(words, (list, tuple)):
        if not words:
            return np.zeros((0, n_words * sum(4**lv for lv in range(levels))), np.float32)
        return np.concatenate([pyramid_histograms(g, n_words, levels, weighted) for g in words])
    grids = np.asarray(words)
    if grids.ndim == 2:
        grids = grids[None]
    n, h, w = grids.shape
    if grids.size and (grids.min() < 0 or grids.max() >= n_words):
        raise XmodalError(f"word ids must lie in [0, {n_words})")
    weights = pyramid_weights(levels) if weighted else np.ones(levels)
    rows = np.arange(h)[:, None]
    cols = np.arange(w)[None, :]
    blocks = []
    for lv in range(levels):
        side = 2**lv
        cell = (rows * side // h) * side + (cols * side // w)  # (h, w) cell index
        flat = (cell[None] * n_words + grids).reshape(n, -1)
        hist = np.zeros((n, side * side * n_words), np.float32)
        np.add.at(hist, (np.repeat(np.arange(n), h * w), flat.ravel()), 1.0)
        blocks.append(hist * (weights[lv] / (h * w)))
    return np.concatenate(blocks, axis=1)


def histogram_intersection(
    a: np.ndarray, b: np.ndarray | None = None, chunk: int = 64
) -> np.ndarray:
    """``K[i, j] = sum_v min(a[i, v], b[j, v])`` for non-negative rows (float32 output).

    Only the dimensions where a row of ``a`` is non-zero can contribute, so each row is compared
    on its support; rows are processed in chunks sharing the union of their supports.
    """
    a = np.asarray(a, dtype=np.float32)
    b = a if b is None else np.asarray(b, dtype=np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise XmodalError("histogram_intersection needs two 2-d arrays with equal columns")
    if (a < 0).any() or (b < 0).any():
        raise XmodalError("histogram intersection is defined for non-negative histograms")
    bt = np.ascontiguousarray(b.T)  # (dims, n_b)
    out = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for start in range(0, a.shape[0], chunk):
        block = a[start : start + chunk]
        for r, row in enumerate(block):
            support = np.flatnonzero(row)
            if support.size:
                out[start + r] = np.minimum(row[support, None], bt[support]).sum(0)
    return out


def combine_kernels(kernels: Sequence[np.ndarray], power: float = 2.0) -> np.ndarray:
    """``(mean of the kernels) ** power`` (Hodosh et al.'s eq. 6 as we read it)."""
    if not kernels:
        raise XmodalError("combine_kernels needs at least one kernel")
    mean = sum(np.asarray(k, dtype=np.float64) for k in kernels) / len(kernels)
    return (mean**power).astype(np.float32)


def cosine_kernel(a: np.ndarray, b: np.ndarray | None = None, power: float = 1.0) -> np.ndarray:
    """Cosine similarity of feature rows, clipped at 0 and raised to ``power`` (for CNN features)."""
    a = np.asarray(a, dtype=np.float32)
    b = a if b is None else np.asarray(b, dtype=np.float32)
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    bn = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.clip(an @ bn.T, 0.0, None) ** power


class ImageKernelCache:
    """Per-feature pyramid kernels (rows x columns image ids) cached as ``.npy`` files."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def get(
        self,
        name: str,
        row_ids: Sequence[str],
        col_ids: Sequence[str],
        compute,
    ) -> np.ndarray:
        """The cached kernel ``name`` for these ids, computing it with ``compute()`` if absent."""
        import hashlib

        h = hashlib.sha1(("\n".join(row_ids) + "|" + "\n".join(col_ids)).encode()).hexdigest()
        path = self.root / f"{name}-{h[:12]}.npy"
        if path.is_file():
            return np.load(path, mmap_mode="r")
        k = np.asarray(compute(), dtype=np.float32)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, k)
        tmp.replace(path)
        return k
