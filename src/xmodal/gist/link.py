"""Step 1: link caption mentions and image tags to knowledge-graph nodes (the seed nodes).

Every mention gets up to ``max_senses`` candidate nodes from the graph's lexicon (most likely
sense first). Ambiguous mentions are disambiguated by relatedness to the candidates of the other
mentions and tags (the "graph connections to contextual mentions" heuristic of Weiland et al.):

    score(c) = (sum_{other mentions m'} w(m') max_{c' of m'} rel(c, c') + eps) / (1 + rank(c)/2)

so with no related context the preferred (first) sense wins. Image tags that name a node (an
ImageNet class is a WordNet synset) are linked directly; optionally each tag is also *lifted* to
its most prominent ancestor within a few "broader" hops (``golden retriever`` -> ``dog``), because
classifier labels are more specific than the basic-level words people use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.mentions import Mention
from xmodal.gist.relatedness import DEFAULT_LIMIT, path_distances

BROADER = {"hypernym", "instance_hypernym", "broader", "subcategory_of", "member_of", "is_a"}
CONTEXT_EPS = 1e-3


@dataclass(frozen=True)
class ImageTag:
    """An automatic (or manual) image label: a node id when known, else a label to look up."""

    label: str
    confidence: float = 1.0
    node: str | None = None


@dataclass
class SeedInfo:
    caption_count: int = 0  # how many caption mentions link here
    image_confidence: float = 0.0  # max confidence of image tags linking here
    mentions: list[str] = field(default_factory=list)
    lifted: bool = False  # reached only by lifting an image tag to an ancestor

    @property
    def is_caption(self) -> bool:
        return self.caption_count > 0

    @property
    def is_image(self) -> bool:
        return self.image_confidence > 0


def _lookup(graph: KnowledgeGraph, text: str, max_senses: int) -> list[str]:
    try:
        return graph.lookup(text, max_senses=max_senses, pos="n")  # WordNet: nouns only
    except TypeError:
        return graph.lookup(text, max_senses=max_senses)


def broader_nodes(graph: KnowledgeGraph, node: int) -> list[int]:
    """Targets of "more general than" edges leaving ``node`` (hypernym, broader, ...)."""
    csr = getattr(graph, "_broader_csr", None)
    if csr is None:
        import scipy.sparse as sp

        rels = [i for i, r in enumerate(graph.relations) if r in BROADER]
        mask = np.isin(graph.edge_rel, rels)
        n = len(graph)
        csr = sp.csr_matrix(
            (np.ones(int(mask.sum())), (graph.edge_src[mask], graph.edge_dst[mask])), shape=(n, n)
        )
        graph._broader_csr = csr
    return [int(t) for t in csr.indices[csr.indptr[node] : csr.indptr[node + 1]]]


def lift(graph: KnowledgeGraph, node: int, max_hops: int = 4, min_prior: float = 2.5) -> int | None:
    """The nearest "broader" ancestor (within ``max_hops``) that is prominent: its prior is at
    least ``min_prior`` and above the node's own prior + 1 (a basic-level concept such as ``dog``
    for ``golden retriever``); None when there is none."""
    threshold = max(min_prior, graph.prior[node] + 1.0)
    frontier = [node]
    seen = {node}
    for _ in range(max_hops):
        nxt = []
        for n in frontier:
            for a in broader_nodes(graph, n):
                if a not in seen:
                    seen.add(a)
                    nxt.append(a)
        best = [a for a in nxt if graph.prior[a] >= threshold]
        if best:
            return max(best, key=lambda a: graph.prior[a])
        frontier = nxt
    return None


def link(
    graph: KnowledgeGraph,
    mentions: Sequence[Mention],
    tags: Sequence[ImageTag] = (),
    max_senses: int = 3,
    lift_tags: bool = True,
    limit: float = DEFAULT_LIMIT,
    choices: list | None = None,
) -> dict[str, SeedInfo]:
    """Seed nodes ``{node id: SeedInfo}`` for a caption's mentions and an image's tags.

    If ``choices`` is a list, it receives the chosen node id (or None) of each mention, in order.
    """
    groups: list[tuple[str, float, list[int], str]] = []  # (kind, weight, candidates, surface)
    mention_group: list[int | None] = []
    for m in mentions:
        cands = [graph.idx(c) for c in _lookup(graph, m.lemma, max_senses)]
        mention_group.append(len(groups) if cands else None)
        if cands:
            groups.append(("caption", 1.0, cands, m.text))
    for t in tags:
        if t.node is not None and t.node in graph:
            cands = [graph.idx(t.node)]
        else:
            cands = [graph.idx(c) for c in _lookup(graph, t.label, max_senses)]
        if cands:
            groups.append(("image", float(t.confidence), cands, t.label))
    chosen: list[int] = [g[2][0] for g in groups]
    ambiguous = [i for i, g in enumerate(groups) if len(g[2]) > 1]
    if ambiguous and len(groups) > 1:
        all_c = sorted({c for g in groups for c in g[2]})
        pos = {c: i for i, c in enumerate(all_c)}
        D = path_distances(graph, all_c, limit)[:, all_c]
        R = np.exp(-np.minimum(D, D.T))
        for gi in ambiguous:
            best, best_score = None, -1.0
            for rank, c in enumerate(groups[gi][2]):
                ctx = 0.0
                for gj, other in enumerate(groups):
                    if gj == gi:
                        continue
                    ctx += other[1] * max((R[pos[c], pos[o]] if o != c else 0.0) for o in other[2])
                score = (ctx + CONTEXT_EPS) / (1.0 + rank / 2.0)
                if score > best_score:
                    best, best_score = c, score
            chosen[gi] = best
    if choices is not None:
        choices.extend(None if g is None else graph.ids[chosen[g]] for g in mention_group)
    seeds: dict[str, SeedInfo] = {}
    for (kind, weight, _, surface), c in zip(groups, chosen):
        info = seeds.setdefault(graph.ids[c], SeedInfo())
        info.mentions.append(surface)
        if kind == "caption":
            info.caption_count += 1
            info.lifted = False
        else:
            info.image_confidence = max(info.image_confidence, weight)
            info.lifted = False
            if lift_tags:
                a = lift(graph, c)
                if a is not None:
                    ainfo = seeds.setdefault(graph.ids[a], SeedInfo(lifted=True))
                    ainfo.mentions.append(surface)
                    ainfo.image_confidence = max(ainfo.image_confidence, weight)
    return seeds
