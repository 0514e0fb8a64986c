"""The Corel keyword query set (Jeon et al. 2003; Lavrenko et al. 2003) and its relevance.

Used by the ``corel5k`` protocol and by keyword retrieval on any labelled image set.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy import sparse


def word_combination_queries(
    labels: np.ndarray, max_len: int = 4, min_count: int = 2
) -> list[tuple[int, ...]]:
    """All 1..max_len word combinations that occur (all words together) in at least
    ``min_count`` rows of the boolean ``labels`` matrix, as sorted word-index tuples, ordered
    by length then index. This is the Jeon et al. / Lavrenko et al. Corel query set."""
    labels = np.asarray(labels, dtype=bool)
    counts: dict[tuple[int, ...], int] = {}
    for row in labels:
        words = np.flatnonzero(row)
        for k in range(1, min(max_len, len(words)) + 1):
            for combo in combinations(words.tolist(), k):
                counts[combo] = counts.get(combo, 0) + 1
    keep = [c for c, n in counts.items() if n >= min_count]
    return sorted(keep, key=lambda c: (len(c), c))


def query_relevance(queries: Sequence[Sequence[int]], labels: np.ndarray) -> sparse.csr_matrix:
    """(n_queries, n_images) bool: the image's annotation contains every query word."""
    labels = np.asarray(labels, dtype=bool)
    rows = []
    for q in queries:
        rows.append(np.all(labels[:, list(q)], axis=1))
    return sparse.csr_matrix(np.array(rows, dtype=bool).reshape(len(queries), len(labels)))
