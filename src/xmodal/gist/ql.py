"""Query likelihood with Dirichlet smoothing (Zhai & Lafferty 2004) over node texts.

    log P(q | d) = sum_{w in q} log( (tf(w, d) + mu * P(w | C)) / (|d| + mu) )

``C`` is the concatenation of all node texts of the graph (computed once per graph and kept on
it). Query words unseen in the whole collection are skipped. Node text = label + text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from xmodal.gist.graph import KnowledgeGraph

_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in into is it its of on or that the their them "
    "they this to was were which with while who whom his her he she him one two some".split()
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def node_tokens(graph: KnowledgeGraph, i: int) -> list[str]:
    return tokenize(graph.labels[i] + " " + graph.texts[i])


def collection_stats(graph: KnowledgeGraph) -> tuple[Counter, int]:
    stats = getattr(graph, "_ql_stats", None)
    if stats is None:
        counts: Counter = Counter()
        for i in range(len(graph)):
            counts.update(_TOKEN.findall((graph.labels[i] + " " + graph.texts[i]).lower()))
        for w in STOPWORDS:
            counts.pop(w, None)
        stats = (counts, sum(counts.values()))
        graph._ql_stats = stats
    return stats


def query_likelihood(
    graph: KnowledgeGraph, query: str | Sequence[str], nodes: Sequence[int], mu: float = 50.0
) -> np.ndarray:
    """Dirichlet-smoothed log query likelihood of each node's text (higher = better).

    ``mu`` defaults to 50 because node texts (glosses, short abstracts) are short.
    """
    words = tokenize(query) if isinstance(query, str) else [w for q in query for w in tokenize(q)]
    counts, total = collection_stats(graph)
    words = [w for w in words if counts.get(w, 0) > 0]
    out = np.zeros(len(nodes))
    if not words or total == 0:
        return out
    pc = {w: counts[w] / total for w in set(words)}
    for k, i in enumerate(nodes):
        toks = node_tokens(graph, int(i))
        tf = Counter(toks)
        dl = len(toks)
        out[k] = sum(math.log((tf.get(w, 0) + mu * pc[w]) / (dl + mu)) for w in words)
    return out
