"""The knowledge-graph interface of gist detection: typed directed edges, node labels and texts.

A :class:`KnowledgeGraph` holds nodes (string ids, a display label, a descriptive text and an
optional prominence prior), typed directed edges (``source -relation-> target``) and a lexicon
from surface strings to candidate nodes in preference order. Traversal is undirected, as in
Weiland et al.; each undirected hop is weighted by the *exclusivity* cost of Hulpuş et al. (2015):
for an edge ``x -r-> y`` the cost is ``out_r(x) + in_r(y) - 1`` (how many same-type alternatives
the edge competes with). Implementations: :mod:`xmodal.gist.wordnet` (WordNet 3.0) and
:mod:`xmodal.gist.tsv` (any graph given as TSV files, e.g. a Wikipedia category graph).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from xmodal.errors import XmodalError

_SPACES = re.compile(r"[\s_]+")


def normalize_key(text: str) -> str:
    """Lexicon key of a surface string: lower case, underscores and runs of spaces as one space."""
    return _SPACES.sub(" ", text.strip().lower()).strip()


class KnowledgeGraph:
    """A typed, directed multigraph with node labels, texts and a lexicon; traversed undirected.

    Parameters
    ----------
    ids, labels, texts:
        One entry per node. ``labels`` is a short display name, ``texts`` a description (a gloss,
        an abstract) used for query likelihood.
    edges:
        ``(source id, relation, target id)`` triples.
    lexicon:
        Surface string -> node ids, most likely sense first. Node labels are always added.
    prior:
        Optional per-node prominence (e.g. log sense frequency, log in-degree); zeros if omitted.
    alpha:
        Length decay of path relatedness: each hop multiplies relatedness by ``alpha``.
    """

    def __init__(
        self,
        ids: Sequence[str],
        labels: Sequence[str],
        texts: Sequence[str],
        edges: Iterable[tuple[str, str, str]],
        lexicon: dict[str, list[str]] | None = None,
        prior: Sequence[float] | None = None,
        alpha: float = 0.5,
    ) -> None:
        if not (len(ids) == len(labels) == len(texts)):
            raise XmodalError("knowledge graph: ids, labels and texts must have the same length")
        self.ids = list(ids)
        self.labels = list(labels)
        self.texts = list(texts)
        self.index = {n: i for i, n in enumerate(self.ids)}
        if len(self.index) != len(self.ids):
            raise XmodalError("knowledge graph: node ids must be unique")
        self.alpha = float(alpha)
        self.prior = (
            np.zeros(len(self.ids)) if prior is None else np.asarray(prior, dtype=np.float64)
        )
        rel_names: dict[str, int] = {}
        src, dst, rel = [], [], []
        for s, r, t in edges:
            try:
                si, ti = self.index[s], self.index[t]
            except KeyError as exc:
                raise XmodalError(
                    f"knowledge graph: edge {s} -{r}-> {t} names an unknown node {exc}"
                )
            if si == ti:
                continue
            src.append(si)
            dst.append(ti)
            rel.append(rel_names.setdefault(r, len(rel_names)))
        self.relations = list(rel_names)
        self._set_edges(
            np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(rel, np.int64)
        )
        self.lexicon: dict[str, list[int]] = {}
        for key, nodes in (lexicon or {}).items():
            for n in nodes:
                if n in self.index:
                    self._add_lex(key, self.index[n])
        for i, label in enumerate(self.labels):
            self._add_lex(label, i)

    # ------------------------------------------------------------------ construction helpers
    def _add_lex(self, key: str, node: int) -> None:
        k = normalize_key(key)
        if not k:
            return
        lst = self.lexicon.setdefault(k, [])
        if node not in lst:
            lst.append(node)

    def _set_edges(self, src: np.ndarray, dst: np.ndarray, rel: np.ndarray) -> None:
        n = len(self.ids)
        self.edge_src, self.edge_dst, self.edge_rel = src, dst, rel
        n_rel = max(len(self.relations), 1)
        out_r = np.zeros((n, n_rel), np.int64)
        in_r = np.zeros((n, n_rel), np.int64)
        np.add.at(out_r, (src, rel), 1)
        np.add.at(in_r, (dst, rel), 1)
        self.edge_cost = (out_r[src, rel] + in_r[dst, rel] - 1).astype(np.float64)
        # Undirected hop weight: -log(alpha) + log(cost); parallel edges keep the cheapest.
        w = math.log(1.0 / self.alpha) + np.log(np.maximum(self.edge_cost, 1.0))
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        ww = np.concatenate([w, w])
        order = np.lexsort((ww, cols, rows))
        rows, cols, ww = rows[order], cols[order], ww[order]
        keep = np.ones(len(rows), bool)
        keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        self.adj = sp.csr_matrix((ww[keep], (rows[keep], cols[keep])), shape=(n, n))
        self.adj.sort_indices()
        self.degree = np.diff(self.adj.indptr)

    # ------------------------------------------------------------------ persistence
    def save_state(self, folder: str | Path) -> None:
        """Write the graph as ``graph.npz`` + ``graph.json`` (no pickle) for fast reloading."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(
            folder / "graph.npz",
            src=self.edge_src,
            dst=self.edge_dst,
            rel=self.edge_rel,
            prior=self.prior,
        )
        meta = {
            "ids": self.ids,
            "labels": self.labels,
            "texts": self.texts,
            "relations": self.relations,
            "alpha": self.alpha,
            "lexicon": self.lexicon,
            "extra": self._extra_state(),
        }
        stats = getattr(self, "_ql_stats", None)
        if stats is not None:
            meta["ql_stats"] = [dict(stats[0]), stats[1]]
        tmp = folder / "graph.json.tmp"
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        tmp.replace(folder / "graph.json")

    def _extra_state(self) -> dict:
        return {}

    @classmethod
    def load_state(cls, folder: str | Path) -> KnowledgeGraph:
        folder = Path(folder)
        meta = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
        arr = np.load(folder / "graph.npz")
        g = cls.__new__(cls)
        g.ids, g.labels, g.texts = meta["ids"], meta["labels"], meta["texts"]
        g.index = {n: i for i, n in enumerate(g.ids)}
        g.alpha = float(meta["alpha"])
        g.prior = arr["prior"]
        g.relations = meta["relations"]
        g._set_edges(arr["src"], arr["dst"], arr["rel"])
        g.lexicon = meta["lexicon"]
        g._restore_extra(meta["extra"])
        if "ql_stats" in meta:
            from collections import Counter

            g._ql_stats = (Counter(meta["ql_stats"][0]), int(meta["ql_stats"][1]))
        return g

    def _restore_extra(self, extra: dict) -> None:
        pass

    # ------------------------------------------------------------------ public interface
    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, node: str) -> bool:
        return node in self.index

    @property
    def n_edges(self) -> int:
        return int(len(self.edge_src))

    def node(self, i: int) -> str:
        return self.ids[i]

    def idx(self, node: str) -> int:
        try:
            return self.index[node]
        except KeyError:
            raise XmodalError(f"unknown knowledge-graph node: {node}") from None

    def label(self, node: str) -> str:
        return self.labels[self.idx(node)]

    def text(self, node: str) -> str:
        return self.texts[self.idx(node)]

    def neighbors(self, node: str) -> list[str]:
        i = self.idx(node)
        return [self.ids[j] for j in self.adj.indices[self.adj.indptr[i] : self.adj.indptr[i + 1]]]

    def edges_of(self, node: str) -> list[tuple[str, str, str]]:
        """Typed directed edges touching ``node`` as ``(source, relation, target)``."""
        i = self.idx(node)
        mask = (self.edge_src == i) | (self.edge_dst == i)
        return [
            (self.ids[s], self.relations[r], self.ids[t])
            for s, r, t in zip(self.edge_src[mask], self.edge_rel[mask], self.edge_dst[mask])
        ]

    def lemmas(self, text: str) -> list[str]:
        """Lexicon keys to try for a surface string (implementations add morphology)."""
        return [normalize_key(text)]

    def lookup(self, text: str, max_senses: int | None = None) -> list[str]:
        """Candidate nodes for a surface string, preferred sense first; [] when unknown."""
        out: list[int] = []
        for key in self.lemmas(text):
            for i in self.lexicon.get(key, []):
                if i not in out:
                    out.append(i)
        if max_senses is not None:
            out = out[:max_senses]
        return [self.ids[i] for i in out]

    def display_name(self, node: str) -> str:
        return self.label(node)

    @property
    def candidate_mask(self) -> np.ndarray:
        """Which nodes may be returned as gist concepts (all, unless an implementation narrows it;
        other nodes still connect and relate concepts)."""
        return np.ones(len(self.ids), dtype=bool)
