"""The FAISS index derived from the store: rebuilt whenever the store's generation moved.

Up to ``HNSW_ABOVE`` photos (50,000; ``$XMODAL_HNSW_ABOVE``) the index is exact inner-product
search (``IndexFlatIP``) on unit vectors: cosine similarity, no training. It is saved beside the
database as one file, ``<db>.faiss.npz``: the vectors, the file ids of its rows, the store
generation and the model (loading it is one read and one copy). Above that size it is an HNSW
graph (``IndexHNSWFlat``, M = 32; efSearch grows with the size, see :func:`ef_search`; recall@10
against exact search is measured in ``benchmarks/ann_scale.py``), saved with FAISS's own writer as
``<db>.faiss`` and memory-mapped when opened, with ``<db>.faiss.npz`` holding the ids and
metadata. Every file is written to a temporary name and renamed, so a crash never leaves a
half-written file; a missing, unreadable or stale file is simply rebuilt from SQLite. A database
in a read-only folder still works (the index then lives in memory only).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from xmodal.index.store import Store

FORMAT_VERSION = 3
HNSW_M = 32


def hnsw_above() -> int:
    """Collections larger than this are searched through an HNSW graph instead of exactly."""
    return int(os.environ.get("XMODAL_HNSW_ABOVE", 50_000))


def ef_search(n: int) -> int:
    """HNSW search depth for ``n`` vectors: ``$XMODAL_EF_SEARCH``, else deeper for larger
    graphs (measured on 1,000,000 vectors with the structure of real embeddings: recall@10
    0.65 at 128, 0.88 at 512, 0.97 at 1,024, still 2.6 ms a query; 0.999 at 128 on 100,000)."""
    if os.environ.get("XMODAL_EF_SEARCH"):
        return int(os.environ["XMODAL_EF_SEARCH"])
    return 128 if n <= 200_000 else 512 if n <= 500_000 else 1024


class AnnIndex:
    def __init__(self, store: Store, model_id: str, dim: int):
        self.store = store
        self.model_id = model_id
        self.dim = dim
        self.path = Path(str(store.path) + ".faiss.npz")
        self.graph_path = Path(str(store.path) + ".faiss")
        self._index = None
        self._ids: np.ndarray | None = None
        self._generation = -1

    @property
    def ntotal(self) -> int:
        self.ensure()
        return int(self._index.ntotal)

    @property
    def ef_search(self) -> int | None:
        """The HNSW search depth in use (None for the exact index)."""
        self.ensure()
        return int(self._index.hnsw.efSearch) if hasattr(self._index, "hnsw") else None

    @property
    def kind(self) -> str:
        """"flat" (exact) or "hnsw" (approximate), as built."""
        self.ensure()
        return "hnsw" if hasattr(self._index, "hnsw") else "flat"

    def _load_saved(self, generation: int) -> bool:
        import faiss

        try:
            with np.load(self.path, allow_pickle=False) as z:
                if (
                    int(z["version"]) != FORMAT_VERSION
                    or int(z["generation"]) != generation
                    or str(z["model"]) != self.model_id
                ):
                    return False
                ids = z["ids"].astype(np.int64)
                if str(z["kind"]) == "hnsw":
                    flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY
                    index = faiss.read_index(str(self.graph_path), flags)
                    if index.d != self.dim or index.ntotal != len(ids):
                        return False
                    index.hnsw.efSearch = ef_search(index.ntotal)
                else:
                    vecs = z["vectors"]
                    if vecs.dtype != np.float32 or vecs.shape != (len(ids), self.dim):
                        return False
                    index = faiss.IndexFlatIP(self.dim)
                    if len(ids):
                        index.add(np.ascontiguousarray(vecs))
        except (OSError, ValueError, KeyError, RuntimeError, EOFError):
            return False  # missing, partial or foreign: rebuild
        self._index, self._ids, self._generation = index, ids, generation
        return True

    def ensure(self) -> None:
        """Load the index from disk or rebuild it, unless the in-memory one is current."""
        generation = self.store.generation
        if self._index is not None and self._generation == generation:
            return
        if not self._load_saved(generation):
            self.rebuild()

    def rebuild(self) -> int:
        """Build from the store's vectors and save atomically; returns the number of vectors."""
        import faiss

        generation = self.store.generation
        ids, vecs = self.store.vectors(self.model_id, self.dim)
        hnsw = len(ids) > hnsw_above()
        if hnsw:
            index = faiss.IndexHNSWFlat(self.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = ef_search(len(ids))
        else:
            index = faiss.IndexFlatIP(self.dim)
        if len(vecs):
            index.add(vecs)
        self._index, self._ids, self._generation = index, ids, generation
        meta = {"version": np.int64(FORMAT_VERSION), "generation": np.int64(generation),
                "model": np.str_(self.model_id), "ids": ids,
                "kind": np.str_("hnsw" if hnsw else "flat")}
        tmp = Path(str(self.path) + f".tmp{os.getpid()}")
        graph_tmp = Path(str(self.graph_path) + f".tmp{os.getpid()}")
        try:
            if hnsw:  # the graph first: the metadata file names a complete graph file only
                faiss.write_index(index, str(graph_tmp))
                os.replace(graph_tmp, self.graph_path)
            with open(tmp, "wb") as f:
                np.savez(f, **meta, **({} if hnsw else {"vectors": vecs}))
            os.replace(tmp, self.path)
        except OSError:  # read-only folder or full disk: keep it in memory only
            tmp.unlink(missing_ok=True)
            graph_tmp.unlink(missing_ok=True)
        return len(ids)

    def search(
        self, queries: np.ndarray, k: int, among: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(scores, file ids) of the k best matches per query row; ids are -1 past the end.
        ``among``: only these file ids are ranked (FAISS ID selector, still exact)."""
        import faiss

        self.ensure()
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        params = None
        n = self._index.ntotal
        if among is not None:
            positions = np.flatnonzero(np.isin(self._ids, np.asarray(among, dtype=np.int64)))
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(positions.astype(np.int64)))
            n = len(positions)
        if n == 0:
            return np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64)
        k = max(1, min(k, n))
        if among is not None and hasattr(self._index, "hnsw"):
            # a filtered search over part of a graph loses recall: rank that part exactly
            part = self._index.reconstruct_batch(positions)
            s = q @ part.T
            top = np.argsort(-s, axis=1, kind="stable")[:, :k]
            return np.take_along_axis(s, top, 1), self._ids[positions[top]]
        threads = faiss.omp_get_max_threads()
        if len(q) == 1:  # one query: threads only add overhead (and stalls on a busy machine)
            faiss.omp_set_num_threads(1)
        try:
            scores, pos = self._index.search(q, k, params=params)
        finally:
            faiss.omp_set_num_threads(threads)
        ids = np.where(pos >= 0, self._ids[np.maximum(pos, 0)], -1)
        return scores, ids
