"""xmodal: associate images with sentences.

Retrieval, annotation, keyword tagging, gist detection, photo search and evaluation, all built on
one contract: a score matrix ``S[n_images, n_texts]`` where higher means a better match.

The public API is re-exported here and imported lazily (``import xmodal`` stays fast):

    from xmodal import get_protocol, retrieval_metrics, load_embedding_model, PhotoIndex
"""

from __future__ import annotations

import importlib
from typing import Any

from xmodal.errors import XmodalError

__version__ = "0.1.0"

_PUBLIC = {
    "get_protocol": "xmodal.eval.protocols",
    "list_protocols": "xmodal.eval.protocols",
    "retrieval_metrics": "xmodal.eval.metrics",
    "annotation_metrics": "xmodal.eval.metrics",
    "run_eval": "xmodal.eval.runner",
    "get_scorer": "xmodal.factory",
    "list_models": "xmodal.factory",
    "load_embedding_model": "xmodal.factory",
    "load_default_tagger": "xmodal.models.tagger",
    "PhotoIndex": "xmodal.index",
    "load_flickr8k": "xmodal.data",
    "load_wikipedia": "xmodal.data",
    "load_corel5k": "xmodal.data",
    "load_image_folder": "xmodal.data",
}

__all__ = ["XmodalError", "__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'xmodal' has no attribute {name!r}")
