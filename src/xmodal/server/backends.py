"""The library objects behind the server: photo index, embedding model and tagger.

They are loaded lazily (the first request that needs one pays for it) and every call into them runs
on ONE worker thread, so library objects that are not thread-safe (SQLite connections, torch
modules) are only ever touched from the thread that created them. Tests inject fakes through
:func:`xmodal.server.create_app`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from xmodal.describe import caption_offsets
from xmodal.errors import XmodalError
from xmodal.server.errors import ApiError

T = TypeVar("T")


class Backends:
    """Lazily built library objects plus the single worker thread that calls them."""

    def __init__(
        self,
        db_path: str | os.PathLike | None,
        *,
        index: Any = None,
        model: Any = None,
        tagger: Any = None,
        model_spec: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.db_path = Path(db_path) if db_path is not None else None
        self.model_spec = model_spec
        self.threads = threads
        self._threads_set: set[str] = set()
        self._index = index
        self._owns_index = index is None  # opened here, on the library thread, when needed
        self._model = model
        self._tagger = tagger
        self._tagger_error: str | None = None
        self._caption_cache: tuple[str, Any] | None = None
        # created on first use (and again after close(): an app may see several lifespans)
        self._executor: ThreadPoolExecutor | None = None
        # long model-only work (describe against an uploaded caption file) runs on its own
        # thread, so that searches on the library thread are never queued behind it
        self._heavy: ThreadPoolExecutor | None = None

    def _pool(self, heavy: bool = False) -> ThreadPoolExecutor:
        if heavy:
            if self._heavy is None:
                self._heavy = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xmodal-heavy",
                                                 initializer=_one_inference_thread)
            return self._heavy
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="xmodal-lib")
        return self._executor

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the library thread without blocking the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self._call, fn, args)

    async def run_heavy(self, fn: Callable[..., T], *args: Any) -> T:
        """Run long model-only work (no index, no SQLite) on its own thread. Call
        ``await run(model)`` first so the model is resolved on the library thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(heavy=True), self._call, fn, args)

    def _call(self, fn: Callable[..., T], args: tuple) -> T:
        try:
            return fn(*args)
        finally:  # torch / faiss may have been imported lazily by this call
            if self.threads is not None and len(self._threads_set) < 2:
                _limit_threads(self.threads, self._threads_set)

    def close(self) -> None:
        if self._index is not None and self._owns_index and self._executor is not None:
            # an index this backend opened belongs to the library thread, which goes with its
            # pool: close it there, so that the next lifespan's thread opens its own
            self._executor.submit(self._index.close)
            self._index = None
        for pool in (self._executor, self._heavy):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._executor = self._heavy = None

    def warm_up(self) -> str:
        """Load the index, the model, the text tower and the FAISS index now (on the library
        thread), so the first request does not pay for them; returns what was loaded."""
        import time

        t0 = time.perf_counter()
        parts = []
        if self.db_path is not None and self.db_path.exists():
            index = self.index()
            parts.append(f"photo index {self.db_path} ({index.ann.ntotal} photos)")
        model = self.model()
        self.embed_texts(["warm up"])
        parts.append(f"model {getattr(model, 'name', type(model).__name__)}")
        return f"loaded {' and '.join(parts)} in {time.perf_counter() - t0:.1f} s"

    # -- lazily loaded objects (call these on the library thread) ---------------------------------
    @property
    def index_loaded(self) -> bool:
        return self._index is not None

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    def index(self) -> Any:
        """The photo index (``xmodal.index.PhotoIndex``) opened on this thread; 503 without one."""
        if self._index is None:
            if self.db_path is None:
                raise ApiError(503, "no photo index: start the server with --db PATH")
            if not self.db_path.exists():
                raise ApiError(
                    503,
                    f"photo index {self.db_path} does not exist: build it with "
                    f"'xmodal index FOLDER --db {self.db_path}'",
                )
            from xmodal.factory import open_photo_index

            self._index = open_photo_index(self.db_path, self.model_spec, model=self._model)
        return self._index

    def model(self) -> Any:
        """The embedding model: the index's own model when there is an index (same space)."""
        if self._model is None:
            if self._index is not None or (self.db_path is not None and self.db_path.exists()):
                self._model = self.index().model
            else:
                from xmodal.factory import load_embedding_model

                self._model = load_embedding_model(self.model_spec)
        return self._model

    def tagger(self) -> Any:
        """The default keyword tagger; 503 with the reason when it cannot be loaded."""
        if self._tagger is None:
            if self._tagger_error is not None:
                raise ApiError(503, self._tagger_error)
            try:
                from xmodal.models.tagger import load_default_tagger

                self._tagger = load_default_tagger()
            except (ImportError, XmodalError) as exc:
                self._tagger_error = (
                    f"tagging is not available in this installation ({exc}); "
                    "search and describe still work"
                )
                raise ApiError(503, self._tagger_error) from None
        return self._tagger

    def indexed_path(self, item_id: str) -> Path:
        """The file of an indexed image; 404 for anything the index does not hold, so clients
        can never make the server read arbitrary files."""
        if not self.index().contains(item_id):
            raise ApiError(404, f"no indexed image with id {item_id!r}")
        return Path(item_id)

    # -- embeddings --------------------------------------------------------------------------------
    def embed_texts(self, texts: list[str]) -> np.ndarray:
        return _quiet(self.model().embed_texts, texts)

    def embed_images(self, images: list[Any]) -> np.ndarray:
        return _quiet(self.model().embed_images, images)

    def caption_vectors(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """(embeddings, the model's offsets or None) of a caption pool, as describe ranks it."""
        vecs = self.embed_texts(texts)
        return vecs, caption_offsets(self.model(), vecs)

    def collection_captions(self) -> tuple[list[str], list[str], np.ndarray, np.ndarray | None]:
        """(image ids, texts, text embeddings, offsets) of the index's captions, embedded once
        and cached (keyed by a digest of the texts, so re-indexing with new captions refreshes
        it)."""
        index = self.index()
        pairs = list(index.captions()) if hasattr(index, "captions") else []
        if not pairs:
            raise XmodalError(
                "the indexed collection has no captions: upload a caption file "
                "(one caption per line) with the image"
            )
        ids, texts = _split_caption_pairs(pairs)
        digest = hashlib.sha1("\n".join(texts).encode()).hexdigest()
        if self._caption_cache is None or self._caption_cache[0] != digest:
            self._caption_cache = (digest, *self.caption_vectors(texts))
        return ids, texts, *self._caption_cache[1:]


def _one_inference_thread() -> None:
    """Long describes run their encoders on one thread, leaving the other cores to searches."""
    from xmodal.features.onnx_engine import set_inference_threads

    set_inference_threads(1)


def _limit_threads(threads: int | None, done: set[str]) -> None:
    """Run torch and FAISS on ``threads`` threads (None: leave them alone).

    The server computes one request at a time on its library thread; splitting one query over
    OpenMP threads costs more in synchronisation than it saves on a busy machine. Measured on the
    2-core machine under load (load average ~16): one sentence through the default text encoder
    took 790-2,800 ms with 2 torch threads and 87-100 ms with 1; one FAISS search over 10,000
    vectors 30-48 ms with 2 threads and 4-5 ms with 1.
    """
    if threads is None:
        return
    if "torch" in sys.modules and "torch" not in done:
        sys.modules["torch"].set_num_threads(threads)
        done.add("torch")
    if "faiss" in sys.modules and "faiss" not in done:
        sys.modules["faiss"].omp_set_num_threads(threads)
        done.add("faiss")


def _quiet(embed: Callable[..., Any], items: list[Any]) -> np.ndarray:
    """Call an embedding method without its progress bar (xmodal.models.embedding)."""
    return np.asarray(embed(items, progress=False), dtype=np.float32)


def _split_caption_pairs(pairs: list[Any]) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for n, item in enumerate(pairs):
        if isinstance(item, str):
            ids.append(str(n))
            texts.append(item)
        elif isinstance(item, dict):
            ids.append(str(item.get("id", item.get("image_id", n))))
            texts.append(str(item.get("text", item.get("caption", ""))))
        else:
            ids.append(str(item[0]))
            texts.append(str(item[1]))
    return ids, texts
