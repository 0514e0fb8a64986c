"""Load any knowledge graph given as TSV files (e.g. a Wikipedia or DBpedia category graph).

A graph folder holds two UTF-8 files, each with a header line:

``nodes.tsv``: ``id<TAB>label<TAB>text[<TAB>aliases[<TAB>prior]]``
    ``aliases`` are extra surface strings separated by ``|`` (redirects, synonyms); ``prior`` is an
    optional prominence score (e.g. log in-degree). Missing trailing columns may be left out.
``edges.tsv``: ``source<TAB>relation<TAB>target``
    Directed, typed edges such as ``Orangutan  member_of  Apes`` or ``Apes  broader  Primates``.
    Relations named ``hypernym``, ``broader``, ``subcategory_of``, ``member_of`` or ``is_a`` are
    treated as "more general than" links (used to lift specific image tags to general concepts).

Example: ``load_tsv_graph("tests/data/gist")``.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.gist.graph import KnowledgeGraph


def _rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise XmodalError(
            f"graph file not found: {path} (a TSV graph folder needs nodes.tsv and edges.tsv)"
        )
    with open(path, encoding="utf-8", newline="") as f:
        rows = [r for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    rows = [r for r in rows if r and not r[0].startswith("#")]
    return rows[1:]  # header


def load_tsv_graph(folder: str | os.PathLike, alpha: float = 0.5) -> KnowledgeGraph:
    """Read ``nodes.tsv`` and ``edges.tsv`` from ``folder`` into a :class:`KnowledgeGraph`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise XmodalError(f"graph folder not found: {folder}")
    ids, labels, texts, prior = [], [], [], []
    lexicon: dict[str, list[str]] = {}
    for n, row in enumerate(_rows(folder / "nodes.tsv"), start=2):
        if len(row) < 3:
            raise XmodalError(
                f"{folder / 'nodes.tsv'} line {n}: expected id, label, text (tab-separated), "
                f"got {len(row)} column(s)"
            )
        node, label, text = row[0].strip(), row[1].strip(), row[2].strip()
        ids.append(node)
        labels.append(label)
        texts.append(text)
        if len(row) > 3 and row[3].strip():
            for alias in row[3].split("|"):
                lexicon.setdefault(alias.strip(), []).append(node)
        try:
            prior.append(float(row[4]) if len(row) > 4 and row[4].strip() else 0.0)
        except ValueError:
            raise XmodalError(f"{folder / 'nodes.tsv'} line {n}: prior must be a number") from None
    edges = []
    for n, row in enumerate(_rows(folder / "edges.tsv"), start=2):
        if len(row) < 3:
            raise XmodalError(
                f"{folder / 'edges.tsv'} line {n}: expected source, relation, target "
                "(tab-separated)"
            )
        edges.append((row[0].strip(), row[1].strip(), row[2].strip()))
    if not ids:
        raise XmodalError(f"{folder / 'nodes.tsv'} has no nodes")
    return KnowledgeGraph(ids, labels, texts, edges, lexicon=lexicon, prior=prior, alpha=alpha)
