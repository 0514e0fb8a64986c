"""Steps 2-3: connect the seeds through the graph (intermediate nodes), then expand (border nodes).

* :func:`connect`: every node on a simple path of at most 3 edges between two distinct seeds is an
  *intermediate* node (Weiland et al.: "all paths with length shorter than 4"). Paths of length 2
  are ``s1 - a - s2``; of length 3 ``s1 - a - b - s2``; both found with sparse adjacency look-ups.
* :func:`expand`: every node within ``hops`` (default 2) of a seed or intermediate node that is
  neither is a *border* node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.relatedness import hop_distances


def _nbrs(graph: KnowledgeGraph, i: int) -> np.ndarray:
    return graph.adj.indices[graph.adj.indptr[i] : graph.adj.indptr[i + 1]]


def connect(
    graph: KnowledgeGraph, seeds: Sequence[int], max_len: int = 3
) -> tuple[list[int], set[tuple[int, int]]]:
    """Intermediate nodes (sorted node indices) and the undirected path edges ``(min, max)``."""
    if max_len not in (1, 2, 3):
        raise ValueError("max_len must be 1, 2 or 3")
    seeds = sorted(set(int(s) for s in seeds))
    seed_set = set(seeds)
    inter: set[int] = set()
    edges: set[tuple[int, int]] = set()

    def add_path(path: list[int]) -> None:
        for a, b in zip(path[:-1], path[1:]):
            edges.add((min(a, b), max(a, b)))
        inter.update(p for p in path[1:-1])

    nb = {s: _nbrs(graph, s) for s in seeds}
    for x, s1 in enumerate(seeds):
        n1 = nb[s1]
        for s2 in seeds[x + 1 :]:
            n2 = nb[s2]
            if s2 in set(n1.tolist()):
                add_path([s1, s2])
            if max_len >= 2:
                for a in np.intersect1d(n1, n2):
                    add_path([s1, int(a), s2])
            if max_len >= 3 and len(n1) and len(n2):
                sub = graph.adj[n1][:, n2].tocoo()
                for r, c in zip(sub.row, sub.col):
                    a, b = int(n1[r]), int(n2[c])
                    if a != s2 and b != s1 and a != b:
                        add_path([s1, a, b, s2])
    inter -= seed_set
    return sorted(inter), edges


def expand(graph: KnowledgeGraph, nodes: Sequence[int], hops: int = 2) -> np.ndarray:
    """Border nodes: within ``hops`` of any of ``nodes`` but not among them (sorted indices)."""
    nodes = np.asarray(sorted(set(int(n) for n in nodes)), dtype=np.int64)
    if len(nodes) == 0:
        return nodes
    H = hop_distances(graph, nodes, hops)
    reach = np.isfinite(H).any(axis=0)
    reach[nodes] = False
    return np.flatnonzero(reach)
