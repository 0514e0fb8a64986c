"""Describe an image: rank a pool of captions by a joint-space model.

One ranking rule for every caller: ``xmodal describe`` and ``PhotoIndex.describe`` (through
:func:`xmodal.index.photo_index.rank_captions`) and the server's ``POST /api/describe`` all
order a pool by :func:`rank_pool`.
"""

from __future__ import annotations

import numpy as np


def rank_pool(
    image_vector: np.ndarray, text_vectors: np.ndarray, k: int
) -> list[tuple[int, float]]:
    """The ``k`` best ``(caption index, score)`` pairs of a pool, by the dot product of the
    image's embedding with each caption's (both unit vectors: cosine); ties keep pool order."""
    scores = np.asarray(text_vectors) @ np.asarray(image_vector)
    order = np.argsort(-scores, kind="stable")[: max(k, 0)]
    return [(int(i), float(scores[i])) for i in order]
