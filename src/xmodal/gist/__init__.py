"""Gist detection (Weiland et al.): rank knowledge-graph concepts for an image-caption pair.

Pipeline, one module per step: :mod:`~xmodal.gist.mentions` (caption mentions),
:mod:`~xmodal.gist.link` (seed nodes), :mod:`~xmodal.gist.expand` (intermediate and border
nodes), :mod:`~xmodal.gist.cluster` (Louvain + border selection), :mod:`~xmodal.gist.pipeline`
(candidate features), :mod:`~xmodal.gist.rank` (coordinate-ascent ranker and metrics).
Graphs: :mod:`~xmodal.gist.wordnet` (WordNet 3.0) and :mod:`~xmodal.gist.tsv` (any TSV graph).
"""

from xmodal.gist.detect import GistConcept, GistDetector
from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.link import ImageTag, link
from xmodal.gist.pipeline import FEATURES, Candidates, GistConfig, build_candidates
from xmodal.gist.rank import CoordinateAscentRanker
from xmodal.gist.tsv import load_tsv_graph
from xmodal.gist.wordnet import WordNetGraph, load_wordnet_graph

__all__ = [
    "FEATURES",
    "Candidates",
    "CoordinateAscentRanker",
    "GistConcept",
    "GistConfig",
    "GistDetector",
    "ImageTag",
    "KnowledgeGraph",
    "WordNetGraph",
    "build_candidates",
    "link",
    "load_tsv_graph",
    "load_wordnet_graph",
]
