"""Score protocols with any embedding model: ``python:module:factory`` objects and precomputed
embeddings (``.npz``), so a model from any framework can be evaluated.

- ``python:MODULE:FACTORY``: ``FACTORY()`` returns an object with ``embed_images(paths)`` and
  ``embed_texts(texts)`` (resolved by :func:`xmodal.index.photo_index.load_model`, the same spec
  ``xmodal index --model`` takes). Scores are cosines.
- ``FILE.npz`` with ``image_ids``, ``image_emb`` (n x d), ``text_ids``, ``text_emb`` (m x d):
  embeddings computed elsewhere; rows are matched to the protocol's ids (a missing id is an
  error naming it), scores are cosines.

:func:`embedding_model` tells the sweep (:mod:`xmodal.eval.sweep`) which model specs embed, so it
can cache their image and text embeddings per dataset.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError


def _call(fn, items: list) -> np.ndarray:
    try:
        takes_progress = "progress" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_progress = False
    return np.asarray(fn(items, progress=False) if takes_progress else fn(items), np.float32)


def embed_images(model: Any, paths: list) -> np.ndarray:
    if not paths:
        return np.zeros((0, int(getattr(model, "dim", 0))), np.float32)
    return _call(model.embed_images, list(paths))


def embed_texts(model: Any, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, int(getattr(model, "dim", 0))), np.float32)
    return _call(model.embed_texts, list(texts))


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def scores_from_embeddings(model: Any, image_emb: np.ndarray, text_emb: np.ndarray
                           ) -> np.ndarray:
    """Cosines, minus the model's per-caption offsets when it has them (as ``model.score``)."""
    text_emb = _unit(text_emb)
    s = _unit(image_emb) @ text_emb.T
    offsets = getattr(model, "caption_offsets", None)
    if callable(offsets):
        s = s - np.asarray(offsets(text_emb), np.float32)[None, :]
    return s.astype(np.float32)


def image_files(protocol, direction) -> list:
    ds = protocol.dataset
    if ds is None or not hasattr(ds, "image_path"):
        raise XmodalError(f"protocol {protocol.name!r} has no image files; embedding models "
                          "need images (use --scores, or precomputed embeddings: -m FILE.npz)")
    return [ds.image_path(i) for i in direction.image_ids]


class EmbeddingScorer:
    """``scorer(protocol, direction, seed) -> S`` for a model with ``embed_images`` /
    ``embed_texts``; ``model`` is exposed so callers can cache embeddings."""

    per_direction = False

    def __init__(self, model: Any, spec: str) -> None:
        self.model, self.spec = model, spec

    def __call__(self, protocol, direction, seed: int = 0) -> np.ndarray:
        return scores_from_embeddings(self.model,
                                      embed_images(self.model, image_files(protocol, direction)),
                                      embed_texts(self.model, list(direction.texts)))


class PrecomputedEmbeddings:
    """Scores from an ``.npz`` of image and text embeddings keyed by the dataset's ids."""

    per_direction = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise XmodalError(f"embeddings file not found: {self.path}")
        try:
            with np.load(self.path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise XmodalError(f"{self.path}: cannot read the .npz ({exc})") from exc
        need = ("image_ids", "image_emb", "text_ids", "text_emb")
        absent = [k for k in need if k not in arrays]
        if absent:
            raise XmodalError(f"{self.path}: missing arrays {absent}; expected {list(need)} "
                              "(ids as strings, embeddings as rows)")
        self.image_index = {str(k): n for n, k in enumerate(arrays["image_ids"])}
        self.text_index = {str(k): n for n, k in enumerate(arrays["text_ids"])}
        self.image_emb, self.text_emb = arrays["image_emb"], arrays["text_emb"]
        for what, ids, emb in (("image", self.image_index, self.image_emb),
                               ("text", self.text_index, self.text_emb)):
            if emb.ndim != 2 or len(emb) != len(ids):
                raise XmodalError(f"{self.path}: {what}_emb has shape {emb.shape}, expected "
                                  f"({len(ids)}, dim) rows for the {what}_ids")
        if self.image_emb.shape[1] != self.text_emb.shape[1]:
            raise XmodalError(f"{self.path}: image and text embeddings differ in dimension "
                              f"({self.image_emb.shape[1]} vs {self.text_emb.shape[1]})")

    def _rows(self, what: str, index: dict[str, int], ids: list[str], protocol) -> np.ndarray:
        missing = [i for i in ids if i not in index]
        if missing:
            raise XmodalError(f"{self.path}: {len(missing)} of the {len(ids)} {what} ids of "
                              f"protocol {protocol.name!r} have no embedding, e.g. "
                              f"{missing[:3]}")
        return np.array([index[i] for i in ids], dtype=np.int64)

    def __call__(self, protocol, direction, seed: int = 0) -> np.ndarray:
        ii = self._rows("image", self.image_index, list(direction.image_ids), protocol)
        tt = self._rows("text", self.text_index, list(direction.text_ids), protocol)
        return _unit(self.image_emb[ii]) @ _unit(self.text_emb[tt]).T


def spec_scorer(spec: str) -> EmbeddingScorer | PrecomputedEmbeddings:
    """The scorer of a ``python:`` spec or an ``.npz`` of embeddings."""
    if spec.startswith("python:"):
        from xmodal.index.photo_index import load_model

        return EmbeddingScorer(load_model(spec), spec)
    return PrecomputedEmbeddings(spec)


def embedding_model(spec: str, protocol_name: str = "") -> Any | None:
    """The embedding model behind ``spec`` when it is one (``python:``, ``openclip:``, a saved
    dual-encoder directory, a registered dual-encoder setting), else None."""
    if spec.startswith("python:"):
        from xmodal.index.photo_index import load_model

        return load_model(spec)
    from xmodal.models.dual import load_embedding_model

    if spec.startswith("openclip:"):
        return load_embedding_model(spec)
    path = Path(spec).expanduser()
    if path.is_dir():
        from xmodal.models.modeldir import read_config

        return load_embedding_model(path) if read_config(path).get("type") == "dual-encoder" \
            else None
    from xmodal.recipes.settings import all_settings

    s = all_settings().get(spec)
    if (s is None or s.estimator != "xmodal.models.dual:DualEncoder"
            or "spec" not in s.feature_params):
        return None
    if s.protocols and protocol_name and protocol_name not in s.protocols:
        raise XmodalError(f"model {s.name!r} scores the protocol(s) {', '.join(s.protocols)}, "
                          f"not {protocol_name!r}")
    return load_embedding_model(s.feature_params["spec"])
