"""Describe an image: rank a pool of captions by a joint-space model.

One ranking rule for every caller: ``xmodal describe`` and ``PhotoIndex.describe`` (through
:func:`xmodal.index.photo_index.rank_captions`) and the server's ``POST /api/describe`` all
order a pool by :func:`rank_pool`, with the model's own caption offsets
(:func:`caption_offsets`; the default model's querybank).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def rank_pool(
    image_vector: np.ndarray, text_vectors: np.ndarray, k: int,
    offsets: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(caption index, score)`` pairs of a pool, by the dot product of the
    image's embedding with each caption's (both unit vectors: cosine) minus the caption's
    ``offsets`` (:func:`caption_offsets`); ties keep pool order."""
    scores = np.asarray(text_vectors) @ np.asarray(image_vector)
    if offsets is not None:
        scores = scores - np.asarray(offsets, scores.dtype)
    order = np.argsort(-scores, kind="stable")[: max(k, 0)]
    return [(int(i), float(scores[i])) for i in order]


def caption_offsets(model: Any, text_vectors: np.ndarray) -> np.ndarray | None:
    """What ``model`` subtracts from each caption's scores (its querybank offsets, see
    :meth:`xmodal.models.dual.DualEncoder.caption_offsets`), or None for a model without."""
    method = getattr(model, "caption_offsets", None)
    return None if method is None else method(text_vectors)
