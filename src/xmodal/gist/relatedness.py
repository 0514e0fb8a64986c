"""Exclusivity-based path relatedness (after Hulpuş et al. 2015) on a :class:`KnowledgeGraph`.

Each hop over an edge ``x -r-> y`` costs ``c = out_r(x) + in_r(y) - 1`` (see
:mod:`xmodal.gist.graph`). The relatedness of two nodes is that of their best path:

    rel(x, y) = max over paths p of  prod_{e in p} alpha / c_e  =  exp(-d(x, y)),
    d = shortest-path distance with hop weight  log(1/alpha) + log(c_e).

So a path is down-weighted by ``alpha`` per hop (the length decay) and by how non-exclusive its
edges are. This is a single-best-path simplification of Hulpuş et al.'s top-k path sum, which makes
relatedness to every node one Dijkstra run per source (scipy, bounded by ``limit``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse.csgraph import dijkstra

from xmodal.gist.graph import KnowledgeGraph

DEFAULT_LIMIT = 14.0  # distances beyond this count as unrelated (relatedness < 1e-6)


def path_distances(
    graph: KnowledgeGraph, sources: Sequence[int], limit: float = DEFAULT_LIMIT
) -> np.ndarray:
    """(len(sources), n_nodes) distances ``d``; ``inf`` where farther than ``limit``."""
    if len(sources) == 0:
        return np.zeros((0, len(graph)))
    return dijkstra(graph.adj, directed=True, indices=np.asarray(sources), limit=limit)


def relatedness_from_distance(d: np.ndarray) -> np.ndarray:
    return np.exp(-np.asarray(d, dtype=np.float64))


def hop_distances(graph: KnowledgeGraph, sources: Sequence[int], max_hops: int) -> np.ndarray:
    """(len(sources), n_nodes) unweighted hop counts, ``inf`` beyond ``max_hops``."""
    if len(sources) == 0:
        return np.zeros((0, len(graph)))
    return dijkstra(
        graph.adj, directed=True, unweighted=True, indices=np.asarray(sources), limit=max_hops
    )


def relatedness(graph: KnowledgeGraph, a: str, b: str, limit: float = DEFAULT_LIMIT) -> float:
    """Relatedness of two nodes by id (1 for a node and itself, 0 when unconnected)."""
    d = path_distances(graph, [graph.idx(a)], limit)[0, graph.idx(b)]
    return float(np.exp(-d))
