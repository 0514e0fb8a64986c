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
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.describe import caption_offsets, rank_pool
from xmodal.errors import XmodalError
from xmodal.index import calibration
from xmodal.index.ann import AnnIndex
from xmodal.index.filters import PhotoFilter
from xmodal.index.metadata import PhotoMeta, read_metadata
from xmodal.index.query import Term
from xmodal.index.scan import BAD_NAME, load_checked, read_bytes, walk_images
from xmodal.index.searcher import SearchAnswer, SearchResult, Searcher
from xmodal.index.store import Store
from xmodal.index.threads import (  # one_thread: imported from here by benchmarks
    blas_single_thread,
    indexing_threads,
    one_thread,  # noqa: F401
    torch_threads,
)
from xmodal.migrations import file_lock
from xmodal.models.embedding import EmbeddingModel

LOADERS = 2  # threads reading, hashing and decoding files while the model embeds
AHEAD = 2  # batches read and decoded ahead of the one being embedded
BATCH = 16  # images embedded and committed per transaction


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


@dataclass
class UpdateStats:
    folder: str
    seen: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)
    captions_unmatched: int = 0  # caption-file image names that match no indexed photo
    reused: int = 0  # new paths whose content was indexed already (moved, renamed, copied)
    metadata_read: int = 0  # indexed photos whose metadata was (re)read without re-embedding
    elapsed_s: float = 0.0  # the whole update (the encoders a model loads lazily included)
    embed_s: float = 0.0  # reading, decoding, embedding and writing the new and changed images

    @property
    def images_per_s(self) -> float:
        """Throughput of the embedding phase (new and changed images per second)."""
        done = self.added + self.updated
        return done / self.embed_s if self.embed_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["images_per_s"] = round(self.images_per_s, 2)
        return d


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

    def _check_model(self) -> None:
        """Queries must be embedded by the model that embedded the collection."""
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
            return self._update(root, captions, progress, on_batch)

    def _update(self, root: Path, captions, progress: bool, on_batch) -> UpdateStats:
        from tqdm.auto import tqdm

        root = root.resolve()
        t0 = time.perf_counter()
        stats = UpdateStats(str(root))
        mid = self.model_id
        files, others = walk_images(root)
        own = str(self.db_path.resolve())  # the database may live inside the folder it indexes
        files = [f for f in files if not f.path.startswith(own)]
        others = [(p, r) for p, r in others if not p.startswith(own)]
        known = self.store.files_under(str(root))
        stats.seen = len(files)
        caption_map = _resolve_captions(captions or {}, root)

        todo = []  # (FileInfo, existing record or None): read, hash, maybe embed
        seen_paths = set()
        with self.store.transaction() as conn:
            for path, reason in others:
                if reason == BAD_NAME:
                    _count_skip(stats, reason)
                    continue
                seen_paths.add(path)
                rec = known.get(path)
                if rec is None or rec.reason != reason:
                    self.store.upsert_file(conn, path, 0, 0, None, None, None, "skipped", reason)
                _count_skip(stats, reason)
            for info in files:
                seen_paths.add(info.path)
                rec = known.get(info.path)
                if rec is not None and rec.size == info.size and rec.mtime_ns == info.mtime_ns:
                    if rec.status == "skipped":
                        _count_skip(stats, rec.reason or "skipped")
                        continue
                    if rec.vector_model == mid:
                        stats.unchanged += 1
                        continue
                todo.append((info, rec))
            roots = json.loads(self.store.get_meta("roots", "[]") or "[]")
            if str(root) not in roots:
                self.store.set_meta(conn, "roots", json.dumps(sorted([*roots, str(root)])))
            if not todo:
                self._record_model(conn, mid)
        # records of vanished files go last: a file moved or renamed inside the folder finds
        # its old vector (same SHA-1) and is not embedded again
        gone = [rec.id for path, rec in known.items() if path not in seen_paths]
        indexed = self.store.hashes_with_vector(mid) if todo else set()

        bar = tqdm(total=len(todo), desc="indexing", unit="img", disable=not progress or not todo)
        batches = [todo[i : i + BATCH] for i in range(0, len(todo), BATCH)]
        # read, hash and decode the next batch in a thread while the model embeds this one
        # (file reads, hashing and PIL decoding release the GIL)
        threads = torch_threads(indexing_threads(), self.model)
        square = getattr(self.model, "image_input_size", None)

        def start(batch):  # the loaders work through a batch file by file, in any order
            return [pool.submit(_load_file, info, rec, mid, indexed, square)
                    for info, rec in batch]

        t_embed = time.perf_counter()
        with ThreadPoolExecutor(max_workers=LOADERS) as pool, threads, blas_single_thread():
            # two batches queued ahead: the loaders never idle at the end of a batch while
            # the model waits (one batch ahead left a core idle a quarter of the time on 12 MP
            # JPEGs)
            pending = [start(b) for b in batches[:AHEAD]]
            for n, batch in enumerate(batches):
                loaded = _gather(f.result() for f in pending.pop(0))
                if n + AHEAD < len(batches):
                    pending.append(start(batches[n + AHEAD]))
                self._embed_and_commit(stats, mid, loaded)
                bar.update(len(batch))
                stats.embed_s = time.perf_counter() - t_embed
                stats.elapsed_s = time.perf_counter() - t0
                if on_batch is not None:
                    on_batch(stats)
        bar.close()
        if gone:
            with self.store.transaction() as conn:
                stats.deleted = self.store.delete_files(conn, gone)
        self._refresh_metadata(root, stats, progress)

        if caption_map:
            with self.store.transaction() as conn:
                for path, texts in caption_map.items():
                    fid = self.store.file_id(path)
                    if fid is not None:
                        self.store.set_captions(conn, fid, texts)
                    else:
                        stats.captions_unmatched += 1
        self.ann.rebuild()
        prepare = getattr(self.model, "prepare_queries", None)
        if callable(prepare):  # the first search after indexing must not export the text tower
            prepare()
        stats.elapsed_s = time.perf_counter() - t0
        return stats

    def _refresh_metadata(self, root: Path, stats: UpdateStats, progress: bool) -> None:
        """Read the metadata of indexed photos that lack it (an index built before metadata
        existed, or by an older extractor): no re-embedding."""
        from tqdm.auto import tqdm

        prefix = str(root).rstrip(os.sep) + os.sep
        rows = [r for r in self.store.without_metadata() if r[1].startswith(prefix)]
        if not rows:
            return
        bar = tqdm(total=len(rows), desc="reading metadata", unit="img",
                   disable=not progress or len(rows) < 50)
        with ThreadPoolExecutor(max_workers=2) as pool:
            for start in range(0, len(rows), 256):
                part = rows[start:start + 256]
                metas = list(pool.map(lambda r: read_metadata(r[1], mtime_ns=r[2]), part))
                with self.store.transaction() as conn:
                    for (fid, _, _), meta in zip(part, metas):
                        self.store.put_metadata(conn, fid, meta)
                stats.metadata_read += len(part)
                bar.update(len(part))
        bar.close()

    def _embed_and_commit(self, stats: UpdateStats, mid: str, loaded: _Loaded) -> None:
        """Embed one decoded batch and write it, with its skipped files, in one transaction."""
        good, bad = loaded.good, list(loaded.bad)
        images = [item[3] for item in good]
        try:
            vectors = self._embed(images) if images else np.zeros((0, 0), np.float32)
            if len(vectors) != len(images):
                raise XmodalError(f"got {len(vectors)} vectors for {len(images)} images")
        except Exception:  # one bad image must not stop the run: embed them one at a time
            vectors, kept = [], []
            for item in good:
                try:
                    vectors.append(self._embed([item[3]])[0])
                    kept.append(item)
                except Exception as exc:  # noqa: BLE001 - any model failure skips the file
                    bad.append((*item[:3], f"the model failed: {type(exc).__name__}"))
            good = kept
        reused = []
        for info, sha1, rec in loaded.known:  # content indexed under another path already
            vec = self.store.vector_by_hash(sha1, mid)
            if vec is None:  # its copy was re-embedded by another model meanwhile: embed it
                image, reason = load_checked(info.path)
                if image is None:
                    bad.append((info, sha1, rec, reason))
                    continue
                vec = self._embed([image])[0]
            reused.append((info, sha1, rec, vec))
        with self.store.transaction() as conn:
            for info, rec in loaded.same:  # touched, content unchanged: keep the vector
                self.store.touch_file(conn, rec.id, info.size, info.mtime_ns)
                self.store.put_metadata(conn, rec.id, loaded.meta[info.path])
                stats.unchanged += 1
            for info, sha1, rec, reason in bad:
                fid = self.store.upsert_file(
                    conn, info.path, info.size, info.mtime_ns, sha1, None, None, "skipped", reason
                )
                self.store.drop_vector(conn, fid)
                _count_skip(stats, reason)
            for info, sha1, rec, vec in reused:
                w, h = self.store.size_by_hash(sha1)
                fid = self.store.upsert_file(
                    conn, info.path, info.size, info.mtime_ns, sha1, w, h, "ok", None
                )
                self.store.put_vector(conn, fid, mid, vec)
                self.store.put_metadata(conn, fid, loaded.meta[info.path])
                stats.reused += 1
                if rec is None:
                    stats.added += 1
                else:
                    stats.updated += 1
            for (info, sha1, rec, image), vec in zip(good, vectors):
                w, h = image.info.get("original_size", image.size)
                if not np.all(np.isfinite(vec)) or not np.any(vec):
                    reason = "the model could not embed it"  # e.g. a zero row
                    fid = self.store.upsert_file(
                        conn, info.path, info.size, info.mtime_ns, sha1, w, h, "skipped", reason
                    )
                    self.store.drop_vector(conn, fid)
                    _count_skip(stats, reason)
                    continue
                fid = self.store.upsert_file(
                    conn, info.path, info.size, info.mtime_ns, sha1, w, h, "ok", None
                )
                self.store.put_vector(conn, fid, mid, vec)
                self.store.put_metadata(conn, fid, loaded.meta[info.path])
                if rec is None:
                    stats.added += 1
                else:
                    stats.updated += 1
            self._record_model(conn, mid)

    def _record_model(self, conn, mid: str) -> None:
        self.store.set_meta(conn, "model", mid)
        self.store.set_meta(conn, "model_spec", self.model_spec or "")
        self.store.set_meta(conn, "dim", str(int(self.model.dim)))

    def _embed(self, images: list[Any]) -> np.ndarray:
        return _embed_images(self.model, images)

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


@dataclass
class _Loaded:
    """One batch, read and decoded: what to embed, what to skip, what only moved in time, what
    is indexed already under another path, and every readable file's metadata."""

    good: list[tuple[Any, str, Any, Any]] = field(default_factory=list)  # info, sha1, rec, image
    bad: list[tuple[Any, str | None, Any, str]] = field(default_factory=list)  # ..., reason
    same: list[tuple[Any, Any]] = field(default_factory=list)  # info, rec: same content
    known: list[tuple[Any, str, Any]] = field(default_factory=list)  # info, sha1, rec
    meta: dict[str, PhotoMeta] = field(default_factory=dict)  # by path


def _load_file(info, rec, mid: str, indexed: set[str], square: int | None):
    """Read a file once: hash its bytes, read its metadata, then decode them unless the content
    is unchanged or indexed already (``indexed``: SHA-1s with a vector of ``mid``); decoded to
    ``square`` x ``square`` when the model says what its image tower reads. Returns (which list
    of :class:`_Loaded`, its entry, the metadata or None)."""
    data, reason = read_bytes(info.path)
    if data is None:
        return "bad", (info, None, rec, reason), None
    sha1 = hashlib.sha1(data).hexdigest()
    if rec is not None and rec.sha1 == sha1 and rec.vector_model == mid:
        kind, entry = "same", (info, rec)
    elif sha1 in indexed:
        kind, entry = "known", (info, sha1, rec)
    else:
        image, reason = load_checked(info.path, data, square)
        if image is None:
            return "bad", (info, sha1, rec, reason), None
        kind, entry = "good", (info, sha1, rec, image)
    return kind, entry, read_metadata(info.path, data, info.mtime_ns)


def _gather(outcomes) -> _Loaded:
    """One batch's :func:`_load_file` outcomes, in file order, as a :class:`_Loaded`."""
    out = _Loaded()
    for kind, entry, meta in outcomes:
        getattr(out, kind).append(entry)
        if meta is not None:
            out.meta[entry[0].path] = meta
    return out


def _embed_images(model: EmbeddingModel, images: list[Any]) -> np.ndarray:
    # no feature cache: the photo index is its own cache
    return np.asarray(model.embed_images(images, progress=False, cache=False), np.float32)


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


def _count_skip(stats: UpdateStats, reason: str, count_total: bool = True) -> None:
    key = reason.split(":")[0]
    stats.skip_reasons[key] = stats.skip_reasons.get(key, 0) + 1
    if count_total:
        stats.skipped += 1


def _resolve_captions(captions: dict[str, list[str]], root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, texts in captions.items():
        p = Path(key)
        p = p if p.is_absolute() else root / p
        # the same spelling as the folder walk (absolute, symlinks kept), so linked files match
        out.setdefault(os.path.abspath(p), []).extend(texts if isinstance(texts, list) else [texts])
    return out


def writer_lock(db_path: Path):
    """An exclusive lock on ``<db>.lock`` for the time of a write (indexing, forget, prune; a
    schema upgrade takes it too); a second writer fails at once instead of embedding everything
    again beside the first."""
    return file_lock(Path(str(db_path) + ".lock"),
                     f"another 'xmodal index' (or forget/prune) is updating {db_path}; "
                     "wait for it to finish and run this again")
