"""PhotoIndex: index a folder of photos and search it by sentence or by example image.

The CLI (``xmodal index / search / similar / describe / demo``) and the HTTP server both call
this. Public surface::

    index = PhotoIndex(db_path=None, model=None, model_spec=None, create=True)
    # model: an EmbeddingModel (xmodal.factory.load_embedding_model(spec) builds one)
    index.update(folder, captions=None, progress=True, on_batch=None) -> UpdateStats
    index.search(sentence, k=10, offset=0) -> list[SearchResult]      # SearchResult(path, score)
    index.similar(image_path, k=10) -> list[SearchResult]             # the image itself excluded
    index.find(query, k, offset, filters=PhotoFilter(...), sort=..., min_relevance=...,
               like=[images], unlike=[sentences]) -> SearchAnswer    # everything, see find()
    index.facets() -> {"years", "places", "cameras"}                 # with photo counts
    index.describe(image, captions, k=5) -> list[tuple[str, float]]   # rank a caption pool
    index.stats() -> dict; index.skipped() -> [(path, reason)]; index.captions() -> [(path, text)]
    index.rebuild_ann() -> int; index.close()

Searching is :class:`~xmodal.index.searcher.Searcher`'s pipeline (``index.searcher``) over this
index's store and FAISS index; the same pipeline searches an ``xmodal ann build`` folder.
``find`` without any query term, with a filter or a date order, lists the photos that pass by
date (browsing).

The index receives its model (an :class:`~xmodal.models.embedding.EmbeddingModel`); it never
builds one from a name. It records the model's id and ``model_spec`` (the spec the caller built
it from) in the database: ``index.model_spec`` of an index opened without a spec is the recorded
one, so a caller can build the same model again; searching with a different model raises
XmodalError saying to re-index. Without a model the index still lists, forgets, prunes and
rebuilds its ANN structure (with the recorded model id); embedding needs one.

Not thread-safe: use one PhotoIndex per thread (SQLite connections belong to the thread that
opened them); several processes may share a database (WAL), one of them indexing while the
others search.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.describe import caption_offsets, rank_pool
from xmodal.errors import XmodalError
from xmodal.index import calibration
from xmodal.index.ann import AnnIndex
from xmodal.index.filters import PhotoFilter
from xmodal.index.ingest import AHEAD, BATCH, LOADERS, Ingest, UpdateStats, embed_images
from xmodal.index.query import Term
from xmodal.index.scan import load_checked
from xmodal.index.searcher import SearchAnswer, SearchResult, Searcher
from xmodal.index.store import Store
from xmodal.index.threads import (  # noqa: F401 - imported from here by benchmarks
    blas_single_thread,
    indexing_threads,
    one_thread,
    torch_threads,
)
from xmodal.migrations import file_lock
from xmodal.models.embedding import EmbeddingModel

__all__ = ["AHEAD", "BATCH", "LOADERS", "PhotoIndex", "SearchAnswer", "SearchResult",
           "UpdateStats", "default_db_path", "model_id", "rank_captions", "writer_lock"]


def default_db_path() -> Path:
    """``$XMODAL_DB``, else ``$XDG_DATA_HOME/xmodal/photos.db``, else
    ``~/.local/share/xmodal/photos.db``."""
    env = os.environ.get("XMODAL_DB")
    if env:
        return Path(env).expanduser()
    base = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share"))
    return base / "xmodal" / "photos.db"


def model_id(model: Any, spec: str | None) -> str:
    """A stable identifier of a model's embedding space (vectors of other models are stale)."""
    explicit = getattr(model, "model_id", None)
    if isinstance(explicit, str):
        return explicit
    params: dict[str, Any] = {"spec": spec or "dual", "dim": int(model.dim)}
    if hasattr(model, "get_params"):
        params["params"] = model.get_params()
    meta = getattr(model, "meta_", None)
    if isinstance(meta, dict):
        params["meta"] = meta
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
    return f"{spec or 'dual'}@{digest[:12]}"


class PhotoIndex:
    """A photo collection in one SQLite file (plus a rebuildable ``.faiss`` beside it)."""

    def __init__(
        self,
        db_path: str | os.PathLike | None = None,
        model: EmbeddingModel | None = None,
        model_spec: str | None = None,
        create: bool = True,
    ):
        self.db_path = Path(db_path).expanduser() if db_path else default_db_path()
        self.store = Store(self.db_path, create=create)
        if model is None and model_spec is None:
            # the spec the collection was indexed with ("" = the default model)
            model_spec = self.store.get_meta("model_spec") or None
        self.model_spec = model_spec
        self._model = model
        self._model_id: str | None = None
        self._ann: AnnIndex | None = None

    # ----- model ----------------------------------------------------------------------------
    @property
    def model(self) -> EmbeddingModel:
        if self._model is None:
            raise XmodalError(
                f"{self.db_path} was opened without a model: pass one, e.g. "
                f"PhotoIndex(db, xmodal.factory.load_embedding_model({self.model_spec!r}))")
        return self._model

    def use_model(self, model: EmbeddingModel) -> PhotoIndex:
        """Give an index opened without a model its model (e.g. one built from the recorded
        ``model_spec``); returns the index."""
        self._model, self._model_id, self._ann = model, None, None
        return self

    @property
    def model_id(self) -> str:
        """The id of the model's embedding space; without a model, the recorded one."""
        if self._model_id is None:
            self._model_id = (model_id(self._model, self.model_spec) if self._model is not None
                              else self.store.get_meta("model") or "")
        return self._model_id

    @property
    def dim(self) -> int:
        if self._model is not None:
            return int(self._model.dim)
        return int(self.store.get_meta("dim", "0") or 0)

    def _adopt_vectors(self) -> None:
        """A model whose image side is another model's (a tuning of its text side only names
        that model's id as ``image_space_id``) takes over the vectors it stored: relabelled in
        place, nothing re-embedded."""
        same = getattr(self._model, "image_space_id", None) if self._model is not None else None
        if same and same != self.model_id and self.store.get_meta("model") == same:
            with self.store.transaction() as conn:
                self.store.relabel_vectors(conn, same, self.model_id)

    def _check_model(self) -> None:
        """Queries must be embedded by the model that embedded the collection."""
        self._adopt_vectors()
        indexed = self.store.get_meta("model")
        if indexed and indexed != self.model_id:
            roots = json.loads(self.store.get_meta("roots", "[]") or "[]")
            folder = roots[0] if len(roots) == 1 else "FOLDER"
            raise XmodalError(
                f"{self.db_path} was indexed with model {indexed}, not {self.model_id}: "
                f"run 'xmodal index {folder} --db {self.db_path}' (with the same --model) "
                "to re-embed the photos"
            )

    @property
    def ann(self) -> AnnIndex:
        if self._ann is None or self._ann.model_id != self.model_id:
            self._ann = AnnIndex(self.store, self.model_id, self.dim)
        return self._ann

    def close(self) -> None:
        self.store.close()

    # ----- indexing ---------------------------------------------------------------------------
    def update(
        self,
        folder: str | os.PathLike,
        captions: dict[str, list[str]] | None = None,
        progress: bool = True,
        on_batch: Callable[[UpdateStats], None] | None = None,
    ) -> UpdateStats:
        """Bring the index in line with ``folder``: embed new and changed images, forget deleted
        ones, record unreadable files with a reason. Safe to interrupt at any moment; running it
        again finishes the job. ``captions`` maps image paths (absolute, or relative to the
        folder) to caption texts to store with them. One writer at a time: a second ``update``
        on the same database fails at once with a clear error."""
        root = Path(folder).expanduser()
        if not root.is_dir():
            known = os.path.abspath(root) in json.loads(self.store.get_meta("roots", "[]") or "[]")
            hint = (f"; it was indexed before: 'xmodal forget {root}' removes its photos"
                    if known else "")
            raise XmodalError(f"not a folder: {root}{hint}")
        with writer_lock(self.db_path):
            self._adopt_vectors()
            return Ingest(self, root, captions, progress, on_batch).run()

    # ----- housekeeping -----------------------------------------------------------------------
    def roots(self) -> list[dict[str, Any]]:
        """The indexed folders with how many files each holds, whether it still exists and the
        indexed folder it lies inside, if any (its files are counted there too)."""
        roots = json.loads(self.store.get_meta("roots", "[]") or "[]")

        def inside(r: str) -> str | None:
            outer = [o for o in roots if o != r and r.startswith(o.rstrip(os.sep) + os.sep)]
            return max(outer, key=len) if outer else None

        return [{"folder": r, "files": len(self.store.ids_under(r)), "exists": Path(r).is_dir(),
                 "inside": inside(r)} for r in roots]

    def forget(self, folder: str | os.PathLike) -> int:
        """Remove every file under ``folder`` (which may be gone) from the index; returns how
        many records were removed."""
        root = os.path.abspath(Path(folder).expanduser())
        ids = self.store.ids_under(root)
        roots = json.loads(self.store.get_meta("roots", "[]") or "[]")
        if not len(ids) and root not in roots:
            raise XmodalError(f"nothing under {root} is indexed (indexed folders: "
                              f"{', '.join(roots) or 'none'})")
        with writer_lock(self.db_path), self.store.transaction() as conn:
            n = self.store.delete_files(conn, ids.tolist())
            self.store.set_meta(conn, "roots", json.dumps([r for r in roots if r != root]))
        self.ann.rebuild()
        return n

    def prune(self) -> int:
        """Remove the records of files that no longer exist; returns how many."""
        return self._drop([i for i, path in self.store.all_paths()
                           if not os.path.lexists(path)])

    def remove(self, paths: Iterable[str | os.PathLike], keep_vectors: bool = False) -> int:
        """Remove the records of these files (moved away or deleted by the caller); returns
        how many were indexed. Unlike :meth:`prune`, nothing else is looked at. With
        ``keep_vectors``, their vectors stay by content (``Store.retire_vectors``): a file
        moved back is indexed again without embedding."""
        return self._drop([i for i in (self.store.file_id(os.path.abspath(p)) for p in paths)
                           if i is not None], keep_vectors)

    def _drop(self, ids: list[int], keep_vectors: bool = False) -> int:
        """Delete these files' records under the writer lock and rebuild the ANN index."""
        if ids:
            with writer_lock(self.db_path), self.store.transaction() as conn:
                if keep_vectors:
                    self.store.retire_vectors(conn, ids)
                self.store.delete_files(conn, ids)
            self.ann.rebuild()
        return len(ids)

    def rebuild_ann(self) -> int:
        """Rebuild the FAISS index from SQLite (e.g. after deleting the .faiss file)."""
        return self.ann.rebuild()

    # ----- querying ---------------------------------------------------------------------------
    @property
    def searcher(self) -> Searcher:
        """The search pipeline over this index: its store, its FAISS index, its model."""
        return Searcher(self.store, self.ann, lambda: self.model, self.model_id,
                        self._calibrator)

    def search(
        self, text: str, k: int = 10, offset: int = 0, under: str | os.PathLike | None = None,
        **options: Any,
    ) -> list[SearchResult]:
        """The ``k`` photos best matching a sentence (after skipping ``offset``); with ``under``,
        only photos inside that folder (at any depth) are ranked. ``options`` are those of
        :meth:`find` (filters, sort, cutoff); without them no result is hidden."""
        if not isinstance(text, str) or not text.strip():
            raise XmodalError(
                "the search query is empty: give a sentence such as 'a dog on a beach'"
            )
        options.setdefault("min_relevance", 0.0)
        if under is not None:
            options["filters"] = (options.get("filters") or PhotoFilter()).replace(
                under=str(under))
        return self.find([Term(text.strip())], k, offset, **options).results

    def similar(self, image: str | os.PathLike, k: int = 10, **options: Any
                ) -> list[SearchResult]:
        """Photos like ``image``: an indexed path (its stored vector) or any image file."""
        return self.find([Term(str(image), "image")], k, **options).results

    def find(
        self,
        query: str | list[str] | list[Term],
        k: int = 10,
        offset: int = 0,
        *,
        filters: PhotoFilter | None = None,
        sort: str = "relevance",
        min_relevance: float | None = None,
        like: list[Any] = (),
        unlike: list[str] = (),
    ) -> SearchAnswer:
        """Search with everything: a query expression (see :mod:`xmodal.index.query`) or terms,
        ``like`` images (paths or PIL images) and ``unlike`` sentences added to it, a filter,
        a sort order ("relevance", "date": newest first, "oldest") and a cutoff. Without any
        query term, with a filter or a date order: the photos that pass, by date (browsing).

        ``min_relevance``: results whose calibrated relevance is below it are hidden; None uses
        the model's calibrated default (none for a query with an example image: relevance is
        the sentence's, the ranking follows the image too), 0 shows everything. A model without
        a calibration compares it with the raw score instead (and hides nothing by default)."""
        if query or like or any(t.strip() for t in unlike):
            self._check_model()
        return self.searcher.find(query, k, offset, filters=filters, sort=sort,
                                  min_relevance=min_relevance, like=like, unlike=unlike)

    def _calibrator(self):
        return calibration.load_calibrator(self.model_id)

    def facets(self) -> dict[str, list[dict]]:
        """Years, places and cameras of the searchable photos, with counts."""
        from xmodal.index.filters import facets

        return facets(self.store)

    def describe(self, image: Any, captions: list[str], k: int = 5) -> list[tuple[str, float]]:
        """Rank a pool of captions for one image (image annotation, Hodosh style)."""
        return rank_captions(self.model, image, captions, k)

    # ----- inspection -------------------------------------------------------------------------
    def contains(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` (as stored: absolute) is an indexed, searchable photo."""
        row = self.store.conn.execute(
            "SELECT 1 FROM files f JOIN vectors v ON v.file_id = f.id "
            "WHERE f.path = ? AND f.status = 'ok'",
            (str(path),),
        ).fetchone()
        return row is not None

    def captions(self) -> list[tuple[str, str]]:
        """(image path, caption) pairs stored with the collection."""
        return self.store.captions()

    def skipped(self) -> list[tuple[str, str]]:
        return self.store.skipped()

    def stats(self) -> dict[str, Any]:
        counts = self.store.counts(self.store.get_meta("model", "") or "")
        return {
            "db": str(self.db_path),
            "model": self.store.get_meta("model"),
            "dim": int(self.store.get_meta("dim", "0") or 0),
            "generation": self.store.generation,
            **counts,
            "db_bytes": self.db_path.stat().st_size if self.db_path.exists() else 0,
        }


def _embed_images(model: EmbeddingModel, images: list[Any]) -> np.ndarray:
    return embed_images(model, images)


def _embed_texts(model: EmbeddingModel, texts: list[str]) -> np.ndarray:
    return np.asarray(model.embed_texts(texts, progress=False), np.float32)


def rank_captions(
    model: EmbeddingModel, image: Any, captions: list[str], k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` captions of a pool that best describe ``image`` (a path or a PIL image)."""
    texts = [c.strip() for c in captions if isinstance(c, str) and c.strip()]
    if not texts:
        raise XmodalError("the caption pool is empty")
    if isinstance(image, (str, os.PathLike)):
        img, reason = (
            load_checked(str(image)) if Path(image).is_file() else (None, "file not found")
        )
        if img is None:
            raise XmodalError(f"cannot describe {image}: {reason}")
        image = img
    text_vecs = _embed_texts(model, texts)
    ranked = rank_pool(_embed_images(model, [image])[0], text_vecs, k,
                       caption_offsets(model, text_vecs))
    return [(texts[i], score) for i, score in ranked]


def writer_lock(db_path: Path):
    """An exclusive lock on ``<db>.lock`` for the time of a write (indexing, forget, prune; a
    schema upgrade takes it too); a second writer fails at once instead of embedding everything
    again beside the first."""
    return file_lock(Path(str(db_path) + ".lock"),
                     f"another 'xmodal index' (or forget/prune) is updating {db_path}; "
                     "wait for it to finish and run this again")
