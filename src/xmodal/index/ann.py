"""The FAISS index derived from the store: rebuilt whenever the store's generation moved.

Exact inner-product search (``IndexFlatIP``) on unit vectors: cosine similarity, no training,
fast enough on a CPU up to a few hundred thousand photos. The file is written to a temporary
name and renamed, so a crash never leaves a half-written index; a missing, unreadable or stale
file is simply rebuilt from SQLite.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from xmodal.index.store import Store


class AnnIndex:
    def __init__(self, store: Store, model_id: str, dim: int):
        self.store = store
        self.model_id = model_id
        self.dim = dim
        self.base = Path(str(store.path) + ".faiss")
        self._index = None
        self._ids: np.ndarray | None = None
        self._generation = -1

    @property
    def _sidecar(self) -> Path:
        return Path(str(self.base) + ".json")

    @property
    def _ids_path(self) -> Path:
        return Path(str(self.base) + ".ids.npy")

    def _fresh_on_disk(self, generation: int) -> bool:
        try:
            info = json.loads(self._sidecar.read_text())
        except (OSError, ValueError):
            return False
        return (
            info.get("generation") == generation
            and info.get("model") == self.model_id
            and self.base.is_file()
            and self._ids_path.is_file()
        )

    def ensure(self) -> None:
        """Load the index from disk or rebuild it, unless the in-memory one is current."""
        import faiss

        generation = self.store.generation
        if self._index is not None and self._generation == generation:
            return
        if self._fresh_on_disk(generation):
            try:
                self._index = faiss.read_index(str(self.base))
                self._ids = np.load(self._ids_path)
                self._generation = generation
                return
            except (RuntimeError, OSError, ValueError):
                pass  # unreadable: rebuild below
        self.rebuild()

    def rebuild(self) -> int:
        """Build from the store's vectors and save atomically; returns the number of vectors."""
        import faiss

        generation = self.store.generation
        ids, vecs = self.store.vectors(self.model_id, self.dim)
        index = faiss.IndexFlatIP(self.dim)
        if len(vecs):
            index.add(vecs)
        tmp = Path(str(self.base) + f".tmp{os.getpid()}")
        faiss.write_index(index, str(tmp))
        os.replace(tmp, self.base)
        with open(str(self._ids_path) + f".tmp{os.getpid()}", "wb") as f:
            np.save(f, ids)
        os.replace(str(self._ids_path) + f".tmp{os.getpid()}", self._ids_path)
        self._sidecar.write_text(
            json.dumps({"generation": generation, "model": self.model_id, "n": len(ids)})
        )
        self._index, self._ids, self._generation = index, ids, generation
        return len(ids)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, file ids) of the k best matches per query row; ids are -1 past the end."""
        self.ensure()
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = max(1, min(k, self._index.ntotal)) if self._index.ntotal else 1
        if self._index.ntotal == 0:
            return np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64)
        import faiss

        threads = faiss.omp_get_max_threads()
        if len(q) == 1:  # one query: threads only add overhead (and stalls on a busy machine)
            faiss.omp_set_num_threads(1)
        try:
            scores, pos = self._index.search(q, k)
        finally:
            faiss.omp_set_num_threads(threads)
        ids = np.where(pos >= 0, self._ids[np.maximum(pos, 0)], -1)
        return scores, ids
