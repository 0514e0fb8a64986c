"""Score protocols with any embedding model, and with precomputed embeddings (``.npz``), so a
model from any framework can be evaluated. :mod:`xmodal.factory` builds these scorers.

- :class:`EmbeddingScorer`: cosines of an :class:`~xmodal.models.embedding.EmbeddingModel`'s
  image and text embeddings (minus the model's caption offsets when it has them); ``model`` is
  exposed so the sweep (:mod:`xmodal.eval.sweep`) can cache the embeddings per dataset.
- :class:`PrecomputedEmbeddings`: ``FILE.npz`` with ``image_ids``, ``image_emb`` (n x d),
  ``text_ids``, ``text_emb`` (m x d): embeddings computed elsewhere; rows are matched to the
  protocol's ids (a missing id is an error naming it), scores are cosines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.embedding import EmbeddingModel, empty_rows


def embed_images(model: EmbeddingModel, paths: list) -> np.ndarray:
    if not paths:
        return empty_rows(model)
    return np.asarray(model.embed_images(list(paths), progress=False), np.float32)


def embed_texts(model: EmbeddingModel, texts: list[str]) -> np.ndarray:
    if not texts:
        return empty_rows(model)
    return np.asarray(model.embed_texts(list(texts), progress=False), np.float32)


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

    def __init__(self, model: EmbeddingModel, spec: str) -> None:
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
        for what in ("image", "text"):
            ids = [str(k) for k in np.asarray(arrays[f"{what}_ids"]).reshape(-1)]
            seen: dict[str, int] = {}
            for k in ids:
                seen[k] = seen.get(k, 0) + 1
            twice = [k for k, c in seen.items() if c > 1]
            if twice:
                raise XmodalError(f"{self.path}: {len(twice)} {what} id(s) occur more than once in "
                                  f"{what}_ids (e.g. {twice[0]!r}, {seen[twice[0]]} times); give "
                                  "each id one embedding row")
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
