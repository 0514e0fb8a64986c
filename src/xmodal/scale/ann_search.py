"""Search an index built by ``xmodal ann build``: memory-mapped, nprobe as a setting, paths from
the shards.

    index = ShardIndex("photos.ann")                 # ann.json + index.faiss (+ index.ivfdata)
    scores, ids = index.search_ids(queries, k=10)    # nprobe: $XMODAL_NPROBE or the measured one
    index.paths(ids[0])                               # image paths, read from the shards
    search_text("photos.ann", "a red bus", k=10)     # [SearchResult], as PhotoIndex.search

The inverted lists stay on disk (``OnDiskInvertedLists``, memory-mapped): only the pages a query
touches are read, so the resident memory is the coarse quantizer plus what the page cache keeps.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.searcher import SearchResult
from xmodal.models.embedding import EmbeddingModel
from xmodal.scale import shards as sh

_CWD_LOCK = threading.Lock()


def default_nprobe(meta: dict) -> int | None:
    env = os.environ.get("XMODAL_NPROBE")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise XmodalError(f"XMODAL_NPROBE must be a number, not {env!r}") from None
    return meta.get("nprobe") or 16


def _open_index(folder: Path, on_disk_lists: bool):
    """Read ``index.faiss``: an IVF index maps its on-disk lists (named relative to the folder)
    by itself; a flat one is memory-mapped whole (FAISS's IO_FLAG_MMAP must not be used with
    on-disk lists: it crashes)."""
    import faiss

    path = folder / "index.faiss"
    if not path.is_file():
        raise XmodalError(f"{folder} has no index.faiss: finish 'xmodal ann build' first")
    flags = faiss.IO_FLAG_READ_ONLY | (0 if on_disk_lists else faiss.IO_FLAG_MMAP)
    with _CWD_LOCK:  # FAISS opens index.ivfdata relative to the working directory
        before = os.getcwd()
        os.chdir(folder)
        try:
            return faiss.read_index("index.faiss", flags)
        except RuntimeError as exc:
            raise XmodalError(f"cannot read the index in {folder}: "
                              f"{str(exc).splitlines()[0]}") from None
        finally:
            os.chdir(before)


class ShardIndex:
    """An index folder: FAISS search plus id -> path through the shards' metadata."""

    def __init__(self, folder: str | os.PathLike, nprobe: int | None = None):
        self.folder = Path(folder).expanduser()
        self.meta = sh.read_ann_meta(self.folder)
        self.model_id = self.meta["model"]
        self.dim = int(self.meta["dim"])
        self.index = _open_index(self.folder, bool(self.meta.get("nlist")))
        self.offsets = np.asarray(self.meta["offsets"], np.int64)
        self.shards = [Path(p) for p in self.meta["shards"]]
        import faiss

        self._ivf = faiss.try_extract_index_ivf(self.index)
        self.nprobe = nprobe if nprobe is not None else default_nprobe(self.meta)
        self._paths: OrderedDict[int, np.ndarray] = OrderedDict()

    @property
    def is_ivf(self) -> bool:
        return self._ivf is not None

    @property
    def nlist(self) -> int:
        return int(self._ivf.nlist) if self._ivf is not None else 0

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def _set(self, nprobe: int | None) -> None:
        import faiss

        if self._ivf is None or nprobe is None:
            return
        self._ivf.nprobe = int(nprobe)
        quant = faiss.downcast_index(self._ivf.quantizer)
        if hasattr(quant, "hnsw"):  # the coarse search must see at least nprobe lists
            quant.hnsw.efSearch = max(2 * int(nprobe), 64)

    def search_ids(self, queries: np.ndarray, k: int = 10, nprobe: int | None = None):
        """(scores, ids) of the ``k`` best rows per query (ids index all shards' ok rows)."""
        q = np.ascontiguousarray(np.atleast_2d(queries), np.float32)
        if q.shape[1] != self.dim:
            raise XmodalError(f"queries have {q.shape[1]} dimensions, the index {self.dim}")
        self._set(nprobe if nprobe is not None else self.nprobe)
        return self.index.search(q, k)

    def _shard_paths(self, s: int) -> np.ndarray:
        if s not in self._paths:
            t = sh.read_shard(self.shards[s], self.model_id, ["path", "ok"])
            ok = t["ok"].to_numpy(zero_copy_only=False)
            self._paths[s] = np.asarray(t["path"].to_pylist(), object)[ok]
            if len(self._paths) > 64:  # keep the path columns of the last 64 shards
                self._paths.popitem(last=False)
        self._paths.move_to_end(s)
        return self._paths[s]

    def paths(self, ids: np.ndarray) -> list[str | None]:
        """The image path of each id (None for -1, FAISS's 'no result')."""
        out: list[str | None] = []
        for i in np.asarray(ids, np.int64).ravel():
            if i < 0 or i >= self.offsets[-1]:
                out.append(None)
                continue
            s = int(np.searchsorted(self.offsets, i, side="right") - 1)
            out.append(str(self._shard_paths(s)[i - self.offsets[s]]))
        return out


class ShardBackend:
    """A :class:`ShardIndex` as the :class:`~xmodal.index.searcher.VectorBackend` of a search:
    ids are the index's row ids (the catalog's file ids). A filtered search (``among``) probes
    every inverted list with an ID selector, so it ranks all the photos that pass (exactly, up
    to the codes' precision) instead of those in the ``nprobe`` nearest lists."""

    def __init__(self, index: ShardIndex):
        self.index = index

    def search(self, queries: np.ndarray, k: int, among: np.ndarray | None = None):
        if among is None:
            return self.index.search_ids(queries, k)
        import faiss

        q = np.ascontiguousarray(np.atleast_2d(queries), np.float32)
        if not len(among):
            return np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64)
        sel = faiss.IDSelectorBatch(np.asarray(among, np.int64))
        if self.index.is_ivf:
            self.index._set(self.index.nlist)
            params = faiss.SearchParametersIVF(sel=sel, nprobe=self.index.nlist)
        else:
            params = faiss.SearchParameters(sel=sel)
        try:
            return self.index.index.search(q, max(1, min(k, len(among))), params=params)
        finally:
            self.index._set(self.index.nprobe)


def open_search(folder: str | os.PathLike, nprobe: int | None = None,
                model: EmbeddingModel | None = None):
    """The :class:`~xmodal.index.searcher.Searcher` of an index folder: its catalog, its FAISS
    index and the model it was built with (loaded when a query is first embedded); ``find``
    answers as :meth:`xmodal.index.PhotoIndex.find` does."""
    from xmodal.index.calibration import load_calibrator
    from xmodal.index.searcher import Searcher
    from xmodal.scale.ann_catalog import open_catalog

    index = ShardIndex(folder, nprobe)
    store = open_catalog(folder)
    loaded: list[EmbeddingModel] = []

    def the_model() -> EmbeddingModel:
        if not loaded:
            loaded.append(index_model(index, model))
        return loaded[0]

    return Searcher(store, ShardBackend(index), the_model, index.model_id,
                    lambda: load_calibrator(calibration_id(index, the_model())))


def calibration_id(index: ShardIndex, model: EmbeddingModel) -> str:
    """The id whose calibration the answers use: the query model's own (it may share the
    index's photo vectors without being the model that embedded them, see
    :func:`index_model`)."""
    from xmodal.index.photo_index import model_id

    return model_id(model, index.meta.get("model_spec") or None)


def index_model(index: ShardIndex, model: EmbeddingModel | None = None) -> EmbeddingModel:
    """``model``, else the model the index was built with (its ``model_spec``, through
    :mod:`xmodal.factory`); XmodalError when its embedding space is not the index's (a model
    whose ``image_space_id`` is the index's model shares its photo vectors)."""
    from xmodal.factory import load_embedding_model
    from xmodal.index.photo_index import model_id

    spec = index.meta.get("model_spec") or None
    model = model if model is not None else load_embedding_model(spec)
    if index.model_id not in (model_id(model, spec), getattr(model, "image_space_id", None)):
        raise XmodalError(f"{index.folder} was built with model {index.model_id}, not "
                          f"{model_id(model, spec)}: embed and index again with this model")
    return model


def query_vector(model: EmbeddingModel, text: str) -> np.ndarray:
    if not isinstance(text, str) or not text.strip():
        raise XmodalError("the search query is empty: give a sentence such as 'a dog on a beach'")
    from xmodal.index.phrasing import search_text

    return np.asarray(model.embed_texts([search_text(text)], progress=False), np.float32)


def search_text(folder: str | os.PathLike, text: str, k: int = 10, nprobe: int | None = None,
                model: EmbeddingModel | None = None) -> list[SearchResult]:
    """The ``k`` images best matching a sentence, as :meth:`PhotoIndex.search` returns them."""
    index = ShardIndex(folder, nprobe)
    scores, ids = index.search_ids(query_vector(index_model(index, model), text), k)
    return [SearchResult(p, float(s)) for p, s in zip(index.paths(ids[0]), scores[0])
            if p is not None]


class AnnCollection:
    """An index folder behind the photo-index interface the server uses (``xmodal serve
    --ann``): ``search``, ``similar``, ``contains``, ``stats``, ``captions``, ``model``.

    ``contains`` answers True only for paths this object returned from a search (the last
    100,000): the server serves thumbnails of results, never of arbitrary files, without holding
    every path of a 100-million-image collection in memory."""

    def __init__(self, folder: str | os.PathLike, nprobe: int | None = None,
                 model: EmbeddingModel | None = None):
        self.index = ShardIndex(folder, nprobe)
        self._model = model
        self._returned: OrderedDict[str, None] = OrderedDict()

    @property
    def ann(self) -> ShardIndex:
        return self.index

    @property
    def model(self) -> EmbeddingModel:
        if self._model is None:
            self._model = index_model(self.index)
        return self._model

    def _hits(self, q: np.ndarray, k: int, skip: str | None = None) -> list[SearchResult]:
        scores, ids = self.index.search_ids(q, k)
        out = []
        for path, score in zip(self.index.paths(ids[0]), scores[0]):
            if path is None or path == skip:
                continue
            out.append(SearchResult(path, float(score)))
            self._returned[path] = None
            self._returned.move_to_end(path)
        while len(self._returned) > 100_000:
            self._returned.popitem(last=False)
        return out

    def search(self, text: str, k: int = 10, offset: int = 0, under=None) -> list[SearchResult]:
        if under is not None:
            raise XmodalError("searching inside a folder (under) is not available with --ann")
        return self._hits(query_vector(self.model, text), k + offset)[offset:offset + k]

    def similar(self, image: str | os.PathLike, k: int = 10) -> list[SearchResult]:
        from xmodal.index.scan import load_checked
        from xmodal.scale.embed import embed_images

        img, reason = load_checked(str(image))
        if img is None:
            raise XmodalError(f"cannot use {image} as an example: {reason}")
        q = embed_images(self.model, [img])
        return self._hits(q, k + 1, skip=str(image))[:k]

    def contains(self, path: str | os.PathLike) -> bool:
        return str(path) in self._returned

    def captions(self) -> list:
        return []

    def stats(self) -> dict:
        m = self.index.meta
        return {"ann": self.index.folder.name, "model": m["model"], "dim": m["dim"],
                "vectors": m["vectors"], "factory": m["factory"], "nprobe": self.index.nprobe,
                "shards": len(m["shards"])}


class AnnPhotos(AnnCollection):
    """An index folder with its catalog (``catalog.db``) behind the server: searches run the
    photo search's own pipeline (``find``: filters, the calibrated cutoff, sort orders,
    browsing, the same answer), ``facets`` count the catalog's photos, and every catalogued
    photo may be shown (its path is in the catalog, not in memory)."""

    def __init__(self, folder: str | os.PathLike, nprobe: int | None = None,
                 model: EmbeddingModel | None = None):
        from xmodal.scale.ann_catalog import open_catalog

        super().__init__(folder, nprobe, model)
        open_catalog(folder).close()  # a folder without its catalog fails here, at start-up
        self._searcher = None

    @property
    def searcher(self):
        """The search pipeline over the catalog, opened on first use: on the thread that uses
        it (the server's library thread), as SQLite connections require."""
        if self._searcher is None:
            from xmodal.index.calibration import load_calibrator
            from xmodal.index.searcher import Searcher
            from xmodal.scale.ann_catalog import open_catalog

            self._searcher = Searcher(open_catalog(self.index.folder), ShardBackend(self.index),
                                      lambda: self.model, self.index.model_id,
                                      lambda: load_calibrator(calibration_id(self.index,
                                                                             self.model)))
        return self._searcher

    @property
    def store(self):
        return self.searcher.store

    def find(self, *args, **options):
        return self.searcher.find(*args, **options)

    def facets(self) -> dict[str, list[dict]]:
        from xmodal.index.filters import facets

        return facets(self.store)

    def contains(self, path: str | os.PathLike) -> bool:
        return super().contains(path) or self.store.file_id(str(path)) is not None


def ann_collection(folder: str | os.PathLike, nprobe: int | None = None,
                   model: EmbeddingModel | None = None) -> AnnCollection:
    """What ``xmodal serve --ann`` serves: :class:`AnnPhotos` when the folder has its catalog,
    else the plain :class:`AnnCollection` (sentence searches only)."""
    from xmodal.scale.ann_catalog import catalog_path

    if catalog_path(folder).is_file():
        return AnnPhotos(folder, nprobe, model)
    return AnnCollection(folder, nprobe, model)

