"""End-to-end gist detection for one image and caption: the library behind ``xmodal gist``.

from xmodal.gist import GistDetector
det = GistDetector()                       # WordNet + the shipped ranker
for c in det.detect("photo.jpg", "A dog runs on the beach", k=5):
    print(c.rank, c.name, c.definition)
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.link import ImageTag
from xmodal.gist.pipeline import FEATURES, GistConfig, build_candidates
from xmodal.gist.rank import CoordinateAscentRanker


@dataclass
class GistConcept:
    rank: int
    id: str
    name: str
    definition: str
    kind: str  # seed | intermediate | border
    score: float


def default_ranker_path() -> Path:
    return Path(str(resources.files("xmodal") / "assets" / "gist" / "ranker"))


def load_default_ranker() -> CoordinateAscentRanker:
    path = default_ranker_path()
    if not (path / "config.json").is_file():
        raise XmodalError(
            f"the shipped gist ranker is missing ({path}); reinstall xmodal or pass --model"
        )
    r = CoordinateAscentRanker.load(path)
    if r.feature_names_ != FEATURES:
        raise XmodalError(f"gist ranker {path} was trained on other features; retrain it")
    return r


class GistDetector:
    """Rank knowledge-graph concepts for image-caption pairs (graph and models loaded once)."""

    def __init__(
        self,
        graph: KnowledgeGraph | None = None,
        ranker: CoordinateAscentRanker | None = None,
        config: GistConfig | None = None,
        use_image: bool = True,
        use_keywords: bool = False,
    ) -> None:
        if graph is None:
            from xmodal.gist.wordnet import load_wordnet_graph

            graph = load_wordnet_graph()
        self.graph = graph
        self.ranker = ranker or load_default_ranker()
        self.config = config or GistConfig()
        self.use_image = use_image
        self.use_keywords = use_keywords
        self.last_tags: list[ImageTag] = []
        self.last_seeds: dict = {}

    def image_tags(self, image: str | os.PathLike) -> list[ImageTag]:
        from xmodal.gist.image_tags import image_logits, tags_from_logits

        tags = tags_from_logits(image_logits([image])[0], self.graph)
        if self.use_keywords:
            tags += keyword_tags(image)
        return tags

    def detect(
        self,
        image: str | os.PathLike | None,
        caption: str = "",
        k: int = 10,
        tags: list[ImageTag] | None = None,
    ) -> list[GistConcept]:
        """The top ``k`` concepts for ``image`` (path; None = caption only) and ``caption``."""
        from xmodal.gist.benchmark import concept_predicate
        from xmodal.gist.mentions import extract_mentions

        if k < 1:
            raise XmodalError("k must be at least 1")
        if image is None and not caption.strip() and not tags:
            raise XmodalError("give an image, a caption, or both")
        if tags is None:
            tags = self.image_tags(image) if (image is not None and self.use_image) else []
        known = concept_predicate(self.graph)
        mentions = extract_mentions(caption, known) if caption.strip() else []
        cands = build_candidates(self.graph, mentions, tags, self.config)
        self.last_tags, self.last_seeds = tags, cands.seeds
        if len(cands.nodes) == 0:
            return []
        scores = self.ranker.decision_function(cands.X)
        order = np.argsort(-scores, kind="stable")[:k]
        out = []
        for r, j in enumerate(order, start=1):
            node = self.graph.ids[cands.nodes[j]]
            definition = short_definition(self.graph.text(node))
            out.append(
                GistConcept(
                    r,
                    node,
                    self.graph.display_name(node),
                    definition,
                    cands.kind[j],
                    float(scores[j]),
                )
            )
        return out


def keyword_tags(image: str | os.PathLike, n: int = 5) -> list[ImageTag]:
    """``xmodal tag`` keywords of the image (the shipped keyword tagger) as extra image tags,
    linked by looking the word up in the graph. The shipped gist ranker was trained without them."""
    from xmodal.models.tagger import load_default_tagger

    return [
        ImageTag(word, float(min(max(score, 0.0), 1.0)))
        for word, score in load_default_tagger().tag(image, n=n)
    ]


def short_definition(text: str) -> str:
    """The definition part of a node text: after ``lemmas: `` and without quoted examples."""
    definition = text.split(": ", 1)[1] if ": " in text else text
    definition = re.sub(r';\s*"[^"]*"', "", definition).strip()
    return definition or text


def concepts_as_dicts(concepts: list[GistConcept]) -> list[dict]:
    return [asdict(c) for c in concepts]
