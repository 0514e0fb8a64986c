"""The seeded random baseline: i.i.d. uniform scores, for sanity checks on every protocol."""

from __future__ import annotations

import numpy as np


class RandomScorer:
    """Scores every pair uniformly at random; the same seed gives the same matrix."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def score(self, n_images: int, n_texts: int, seed: int | None = None) -> np.ndarray:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return rng.random((n_images, n_texts), dtype=np.float32)
