"""Step 4: cluster seeds + intermediate nodes, and keep the border nodes closest to each cluster.

Clustering is Louvain modularity optimisation (networkx ``louvain_communities``) over the complete
graph of the core nodes weighted by pairwise relatedness (an affinity: the inverse of the paper's
distance). A border node's relatedness to a cluster is its mean relatedness to the members
(Eq. 6 of Weiland et al., with relatedness in place of distance); each cluster keeps its ``k``
closest border nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np


def louvain_clusters(
    nodes: Sequence[int], R: np.ndarray, seed: int = 0, min_rel: float = 1e-6
) -> list[list[int]]:
    """Clusters of ``nodes`` (lists of node indices) from the symmetric relatedness matrix ``R``.

    Pairs with relatedness below ``min_rel`` get no edge; isolated nodes are singletons. Clusters
    are sorted by size (largest first), members ascending.
    """
    nodes = [int(n) for n in nodes]
    G = nx.Graph()
    G.add_nodes_from(nodes)
    for i in range(len(nodes)):
        for j in range(i + 1, len(nodes)):
            w = float(R[i, j])
            if w >= min_rel:
                G.add_edge(nodes[i], nodes[j], weight=w)
    if G.number_of_edges() == 0:
        comms = [{n} for n in nodes]
    else:
        comms = nx.community.louvain_communities(G, weight="weight", seed=seed)
    out = [sorted(c) for c in comms]
    out.sort(key=lambda c: (-len(c), c[0]))
    return out


def cluster_relatedness(R_to: np.ndarray, members: Sequence[Sequence[int]]) -> np.ndarray:
    """(n_clusters, n_targets) mean relatedness of each target to each cluster.

    ``R_to`` is (n_core, n_targets): row i = relatedness of core node i to each target;
    ``members`` lists the core *row positions* of each cluster.
    """
    out = np.zeros((len(members), R_to.shape[1]))
    for c, rows in enumerate(members):
        out[c] = R_to[list(rows)].mean(axis=0)
    return out


def select_border(
    border: np.ndarray, cluster_rel: np.ndarray, k: int = 10, min_rel: float = 0.0
) -> np.ndarray:
    """Union over clusters of the ``k`` border nodes most related to that cluster (sorted).

    ``cluster_rel`` is (n_clusters, len(border)); nodes with relatedness <= ``min_rel`` are skipped.
    """
    keep: set[int] = set()
    for row in cluster_rel:
        order = np.argsort(-row, kind="stable")[:k]
        keep.update(int(border[i]) for i in order if row[i] > min_rel)
    return np.asarray(sorted(keep), dtype=np.int64)
