"""The literal-gist benchmark built from Flickr8K, and the project-made example set.

Literal gist (measures *literal* gist only): the query is (image, caption #2); the relevant
concepts are the graph nodes linked from the image's other four captions, graded by how many of
those captions mention the node (1-4). People describe what they see, so this rewards finding the
depicted objects and scenes, not abstract messages.

The example set (``xmodal/assets/gist/examples.jsonl``) holds a few dozen Flickr8K images (by id,
no pixels) each with a literal and a non-literal caption written for this project, with the gist
concepts (WordNet synsets) we judged right for each. It is for tests and demonstration only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.link import link
from xmodal.gist.mentions import Mention, extract_mentions

EXAMPLES_PATH = Path(__file__).resolve().parents[1] / "assets" / "gist" / "examples.jsonl"


@dataclass
class GistQuery:
    image_id: str
    caption: str
    mentions: list[Mention]
    grades: dict[str, int]  # relevant node id -> grade (>= 1)
    label: str = "literal"  # "literal" | "non-literal"


def reference_grades(
    graph: KnowledgeGraph, caption_mentions: Sequence[Sequence[Mention]], max_senses: int = 3
) -> dict[str, int]:
    """Nodes linked from reference captions, graded by how many captions mention each.

    All captions' mentions are linked together (each disambiguates the others), without image
    tags, so the reference does not depend on the system's image side.
    """
    flat = [m for ms in caption_mentions for m in ms]
    owner = [i for i, ms in enumerate(caption_mentions) for _ in ms]
    if not flat:
        return {}
    grades: dict[str, set[int]] = {}
    chosen: list[str | None] = []
    link(graph, flat, (), max_senses, lift_tags=False, choices=chosen)
    for node, who in zip(chosen, owner):
        if node is not None:
            grades.setdefault(node, set()).add(who)
    return {n: len(c) for n, c in grades.items()}


def literal_gist_queries(
    dataset,
    graph: KnowledgeGraph,
    nlp=None,
    split: str = "test",
    query_index: int = 2,
    progress: Callable | None = None,
) -> list[GistQuery]:
    """One query per image of ``split``: caption #``query_index`` and the others' grades."""
    from xmodal.gist.mentions import load_nlp

    nlp = nlp or load_nlp()
    known = concept_predicate(graph)
    out = []
    images = dataset.split(split)
    it = progress(images) if progress else images
    for image_id in it:
        caps = sorted(dataset.captions_of(image_id), key=lambda c: c.index)
        query = [c for c in caps if c.index == query_index]
        refs = [c for c in caps if c.index != query_index]
        if not query or not refs:
            continue
        q_mentions = extract_mentions(query[0].text, known, nlp)
        grades = reference_grades(graph, [extract_mentions(c.text, known, nlp) for c in refs])
        out.append(GistQuery(image_id, query[0].text, q_mentions, grades))
    return out


def concept_predicate(graph: KnowledgeGraph) -> Callable[[str], bool]:
    """``known(phrase)``: whether the graph has a (noun) concept for the phrase."""

    def known(phrase: str) -> bool:
        try:
            return bool(graph.lookup(phrase, pos="n"))
        except TypeError:
            return bool(graph.lookup(phrase))

    return known


def load_examples(path: str | Path | None = None) -> list[dict]:
    """The project-made example set: dicts with image_id, label, caption, gists (node ids)."""
    p = Path(path) if path else EXAMPLES_PATH
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
