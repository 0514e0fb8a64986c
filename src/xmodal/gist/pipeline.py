"""The gist-candidate pipeline: link -> connect -> expand -> cluster -> select -> features.

:func:`build_candidates` runs steps 1-4 of Weiland et al. for one image-caption pair and returns
the candidate nodes (seeds, intermediate nodes, and the border nodes closest to each cluster) with
one feature vector each (:data:`FEATURES`). A ranker (:mod:`xmodal.gist.rank`) orders them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from xmodal.gist.cluster import cluster_relatedness, louvain_clusters, select_border
from xmodal.gist.expand import connect, expand
from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.link import ImageTag, SeedInfo, link
from xmodal.gist.mentions import Mention
from xmodal.gist.ql import query_likelihood
from xmodal.gist.relatedness import DEFAULT_LIMIT, path_distances

LOG_EPS = 1e-6

FEATURES = [
    "is_seed",  # 1  (paper feature numbers in comments)
    "is_caption_seed",
    "is_image_seed",
    "is_lifted_tag",  # image tag lifted to a prominent ancestor (link step)
    "is_intermediate",  # 2
    "is_border",  # 5
    "pagerank_intermediate",  # 3
    "betweenness_intermediate",  # 4
    "max_cluster_rel",  # 6 (log)
    "mean_cluster_rel",  # 7 (log)
    "sum_cluster_rel",  # 8 (log)
    "in_top_seed_cluster",  # 9
    "in_top_core_cluster",  # 10
    "seeds_in_cluster",  # 11 (count, as the text describes)
    "core_in_cluster",  # 12
    "ql_reciprocal_rank",  # 13
    "log_degree",  # 14 (degree in the knowledge graph)
    "clustering_coefficient",  # 15
    "prior",  # prominence prior (WordNet: log tagged sense count)
    "caption_rel",  # log sum over caption seeds of mentions * relatedness
    "image_rel",  # log sum over image seeds of confidence * relatedness
    "caption_mentions",
    "image_confidence",
]


@dataclass
class GistConfig:
    """Hyperparameters of the candidate pipeline."""

    max_senses: int = 3
    lift_tags: bool = True
    max_path_len: int = 3
    border_hops: int = 2
    k_border: int = 10
    limit: float = DEFAULT_LIMIT
    louvain_seed: int = 0
    mu: float = 50.0


@dataclass
class Candidates:
    """The candidates of one image-caption pair: node indices, kinds and features."""

    nodes: np.ndarray  # (n,) node indices into the graph
    kind: list[str]  # "seed" | "intermediate" | "border"
    X: np.ndarray  # (n, len(FEATURES)) float64
    seeds: dict[str, SeedInfo] = field(default_factory=dict)
    clusters: list[list[int]] = field(default_factory=list)  # node indices per cluster

    def ids(self, graph: KnowledgeGraph) -> list[str]:
        return [graph.ids[i] for i in self.nodes]

    def feature(self, name: str) -> np.ndarray:
        return self.X[:, FEATURES.index(name)]


def _log(x: np.ndarray) -> np.ndarray:
    return np.log(np.asarray(x, dtype=np.float64) + LOG_EPS)


def clustering_coefficient(graph: KnowledgeGraph, i: int) -> float:
    """Local clustering coefficient of node ``i`` in the (undirected) knowledge graph."""
    cache = graph.__dict__.setdefault("_cc_cache", {})
    if i not in cache:
        nb = graph.adj.indices[graph.adj.indptr[i] : graph.adj.indptr[i + 1]]
        k = len(nb)
        if k < 2:
            cache[i] = 0.0
        else:
            links = graph.adj[nb][:, nb].nnz  # each undirected link counted twice
            cache[i] = links / (k * (k - 1))
    return cache[i]


def build_candidates(
    graph: KnowledgeGraph,
    mentions: Sequence[Mention],
    tags: Sequence[ImageTag] = (),
    config: GistConfig | None = None,
) -> Candidates:
    """Run link, connect, expand, cluster and select for one pair; compute candidate features."""
    cfg = config or GistConfig()
    seeds = link(
        graph, mentions, tags, max_senses=cfg.max_senses, lift_tags=cfg.lift_tags, limit=cfg.limit
    )
    seed_idx = sorted(graph.idx(s) for s in seeds)
    if not seed_idx:
        return Candidates(np.zeros(0, np.int64), [], np.zeros((0, len(FEATURES))), seeds, [])
    inter, path_edges = connect(graph, seed_idx, cfg.max_path_len)
    core = seed_idx + inter
    core_pos = {n: p for p, n in enumerate(core)}
    D = path_distances(graph, core, cfg.limit)  # (n_core, n_nodes)
    R_all = np.exp(-D)
    R_core = R_all[:, core]
    R_core = np.maximum(R_core, R_core.T)
    clusters = louvain_clusters(core, R_core, seed=cfg.louvain_seed)
    cl_rows = [[core_pos[n] for n in c] for c in clusters]
    border = expand(graph, core, cfg.border_hops)
    border = border[graph.candidate_mask[border]]
    if len(border):
        crel_border = cluster_relatedness(R_all[:, border], cl_rows)
        top_border = select_border(border, crel_border, k=cfg.k_border)
    else:
        top_border = np.zeros(0, np.int64)
    nodes = np.asarray(core + top_border.tolist(), dtype=np.int64)
    kind = ["seed"] * len(seed_idx) + ["intermediate"] * len(inter) + ["border"] * len(top_border)
    n = len(nodes)

    # Relatedness of every candidate to every cluster; core nodes leave themselves out.
    R_c = R_all[:, nodes].copy()  # (n_core, n)
    for j, node in enumerate(nodes):
        if node in core_pos:
            R_c[core_pos[node], j] = 0.0
    crel = np.zeros((len(clusters), n))
    for c, rows in enumerate(cl_rows):
        denom = np.array(
            [
                len(rows) - (1 if (nodes[j] in core_pos and core_pos[nodes[j]] in rows) else 0)
                for j in range(n)
            ],
            dtype=np.float64,
        )
        crel[c] = np.where(denom > 0, R_c[rows].sum(axis=0) / np.maximum(denom, 1), 0.0)

    # Membership features (cluster of a core node; the nearest cluster of a border node).
    member = np.full(n, -1)
    for c, members in enumerate(clusters):
        for m in members:
            member[np.flatnonzero(nodes == m)] = c
    nearest = np.where(member >= 0, member, np.argmax(crel, axis=0) if len(clusters) else -1)
    seed_set = set(seed_idx)
    seeds_per = np.array([sum(1 for m in c if m in seed_set) for c in clusters])
    core_per = np.array([len(c) for c in clusters])
    top_seed_c = int(np.argmax(seeds_per)) if len(clusters) else -1
    top_core_c = int(np.argmax(core_per)) if len(clusters) else -1

    # PageRank and betweenness on the intermediate graph (core nodes + path and induced edges).
    G = nx.Graph()
    G.add_nodes_from(core)
    G.add_edges_from(path_edges)
    sub = graph.adj[core][:, core].tocoo()
    G.add_edges_from((core[r], core[c]) for r, c in zip(sub.row, sub.col) if r < c)
    pr = nx.pagerank(G) if G.number_of_edges() else {v: 1.0 / len(core) for v in core}
    bc = nx.betweenness_centrality(G) if len(core) > 2 else {v: 0.0 for v in core}

    # Query likelihood of node text given caption mentions + tag labels; reciprocal rank.
    query = [m.text for m in mentions] + [t.label for t in tags]
    ql = query_likelihood(graph, query, nodes, mu=cfg.mu)
    order = np.argsort(-ql, kind="stable")
    ql_rr = np.zeros(n)
    ql_rr[order] = 1.0 / (np.arange(n) + 1)
    if not any(query):
        ql_rr[:] = 0.0

    seed_list = list(seeds.items())
    cap_w = np.zeros(len(core))
    img_w = np.zeros(len(core))
    for sid, info in seed_list:
        p = core_pos[graph.idx(sid)]
        cap_w[p] = info.caption_count
        img_w[p] = info.image_confidence
    R_self = R_all[:, nodes]  # includes rel(node, node) = 1 for seeds

    X = np.zeros((n, len(FEATURES)))
    col = {f: i for i, f in enumerate(FEATURES)}
    for j, node in enumerate(nodes):
        nid = graph.ids[node]
        info = seeds.get(nid)
        X[j, col["is_seed"]] = kind[j] == "seed"
        X[j, col["is_caption_seed"]] = bool(info and info.is_caption)
        X[j, col["is_image_seed"]] = bool(info and info.is_image and not info.lifted)
        X[j, col["is_lifted_tag"]] = bool(info and info.lifted)
        X[j, col["is_intermediate"]] = kind[j] == "intermediate"
        X[j, col["is_border"]] = kind[j] == "border"
        X[j, col["pagerank_intermediate"]] = pr.get(int(node), 0.0)
        X[j, col["betweenness_intermediate"]] = bc.get(int(node), 0.0)
        c = nearest[j]
        X[j, col["in_top_seed_cluster"]] = c == top_seed_c
        X[j, col["in_top_core_cluster"]] = c == top_core_c
        X[j, col["seeds_in_cluster"]] = seeds_per[c] if c >= 0 else 0
        X[j, col["core_in_cluster"]] = core_per[c] if c >= 0 else 0
        X[j, col["log_degree"]] = math.log1p(graph.degree[node])
        X[j, col["clustering_coefficient"]] = clustering_coefficient(graph, int(node))
        X[j, col["prior"]] = graph.prior[node]
        X[j, col["caption_mentions"]] = info.caption_count if info else 0
        X[j, col["image_confidence"]] = info.image_confidence if info else 0.0
    if len(clusters):
        X[:, col["max_cluster_rel"]] = _log(crel.max(axis=0))
        X[:, col["mean_cluster_rel"]] = _log(crel.mean(axis=0))
        X[:, col["sum_cluster_rel"]] = _log(crel.sum(axis=0))
    X[:, col["ql_reciprocal_rank"]] = ql_rr
    X[:, col["caption_rel"]] = _log(cap_w @ R_self)
    X[:, col["image_rel"]] = _log(img_w @ R_self)
    keep = graph.candidate_mask[nodes]
    return Candidates(nodes[keep], [k for k, ok in zip(kind, keep) if ok], X[keep], seeds, clusters)
