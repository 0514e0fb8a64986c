"""Evaluation protocol records: for each direction, the images, the texts and which pairs match.

Orientation is always images x texts: ``relevance[i, j]`` is True when image i and text j match.
``i2t`` (annotation) ranks the texts for each image; ``t2i`` (search) ranks the images for each
text. A direction's queries are its rows (i2t) or columns (t2i) of ``S``. The built-in protocols
that fill these records are in :mod:`xmodal.eval.protocol_builders`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse


@dataclass
class Direction:
    name: str  # "i2t" or "t2i"
    image_ids: list[str]
    text_ids: list[str]
    texts: list[str]  # caption / document / keyword-query strings, aligned with text_ids
    relevance: sparse.csr_matrix  # bool, (n_images, n_texts)

    @property
    def query_relevance(self) -> sparse.csr_matrix:
        """Relevance with queries as rows: itself for i2t, transposed for t2i."""
        return self.relevance if self.name == "i2t" else self.relevance.T.tocsr()

    def query_scores(self, scores: np.ndarray) -> np.ndarray:
        """``S`` (images x texts) oriented with queries as rows."""
        return scores if self.name == "i2t" else scores.T


@dataclass
class Protocol:
    name: str
    directions: dict[str, Direction]
    dataset: Any = None  # the loaded dataset, for models that need training data
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # the source paper's own metrics, computed from the direction score matrices
    # ({"i2t": S, "t2i": S}); their dict goes to the report's "paper_metrics"
    paper_metrics: Callable[[dict[str, np.ndarray]], dict[str, Any]] | None = None


def pairs_to_relevance(
    image_ids: list[str], text_ids: list[str], pairs: list[tuple[str, str]]
) -> sparse.csr_matrix:
    """A boolean (n_images, n_texts) matrix from (image id, text id) pairs; unknown ids ignored."""
    ii = {k: n for n, k in enumerate(image_ids)}
    tt = {k: n for n, k in enumerate(text_ids)}
    rows, cols = [], []
    for image_id, text_id in pairs:
        if image_id in ii and text_id in tt:
            rows.append(ii[image_id])
            cols.append(tt[text_id])
    m = sparse.csr_matrix(
        (np.ones(len(rows), dtype=bool), (rows, cols)), shape=(len(image_ids), len(text_ids))
    )
    m.sum_duplicates()
    return m
