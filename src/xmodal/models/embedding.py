"""The embedding contract: what a model with a joint image-sentence space offers.

Every model that can back a photo index, an ANN index or a cached evaluation sweep satisfies
:class:`EmbeddingModel`: ``dim`` and two methods that take the keyword options by name, so
callers pass them without asking the model what it accepts::

    E = model.embed_images(images, progress=False, cache=False)  # (n, dim) float32, unit rows
    T = model.embed_texts(texts, progress=False)                 # (m, dim) float32, unit rows

``progress`` shows a progress bar (on stderr); ``cache=False`` tells a model with a feature cache
not to use it (the photo index and the embedding shards are caches themselves). A model that has
no progress bar or cache accepts the keywords and ignores them. An image the model cannot read
embeds as a zero row. Models built by :mod:`xmodal.factory` are checked against this contract.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from xmodal.errors import XmodalError


@runtime_checkable
class EmbeddingModel(Protocol):
    """Images and sentences as unit vectors of one ``dim``-dimensional space."""

    dim: int

    def embed_images(self, images: Sequence[Any], *, progress: bool = True,
                     cache: bool = True) -> np.ndarray: ...

    def embed_texts(self, texts: Sequence[str], *, progress: bool = True) -> np.ndarray: ...


# the keyword options each method must accept (by name, or through **kwargs)
KEYWORDS = {"embed_images": ("progress", "cache"), "embed_texts": ("progress",)}


def check_embedding_model(model: Any, spec: str) -> Any:
    """``model`` itself when it satisfies :class:`EmbeddingModel`, else an XmodalError that says
    what it lacks (checked once, when the model is built, not on every call)."""
    if not isinstance(model, EmbeddingModel):
        lacks = [n for n in ("dim", "embed_images", "embed_texts") if not hasattr(model, n)]
        raise XmodalError(f"model {spec!r} ({type(model).__name__}) is not an embedding model: "
                          f"it lacks {', '.join(lacks)} (see xmodal.models.embedding)")
    for method, names in KEYWORDS.items():
        params = inspect.signature(getattr(model, method)).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        missing = [n for n in names if n not in params]
        if missing:
            raise XmodalError(f"model {spec!r}: {type(model).__name__}.{method} must accept the "
                              f"keyword options {', '.join(names)} (missing: "
                              f"{', '.join(missing)}; see xmodal.models.embedding)")
    return model


def empty_rows(model: Any) -> np.ndarray:
    """(0, dim) float32: what embedding an empty list gives."""
    return np.zeros((0, int(getattr(model, "dim", 0))), np.float32)
