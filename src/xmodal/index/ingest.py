"""Indexing a folder into a photo index: walk, diff, embed, commit.

:class:`Ingest` is one ``PhotoIndex.update``: it walks the folder, compares each file with the
store's record (size and time; then content), reads, hashes and decodes the new and changed
files in loader threads while the model embeds the batch before (``AHEAD`` batches ahead),
commits each batch in one transaction, forgets vanished files last (a moved file finds its old
vector by content), reads missing metadata without embedding, stores captions and rebuilds the
FAISS index. Safe to interrupt at any moment: every batch is whole in SQLite or absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.metadata import PhotoMeta, read_metadata
from xmodal.index.scan import BAD_NAME, load_checked, read_bytes, walk_images
from xmodal.index.threads import blas_single_thread, indexing_threads, torch_threads

LOADERS = 2  # threads reading, hashing and decoding files while the model embeds
AHEAD = 2  # batches read and decoded ahead of the one being embedded
BATCH = 16  # images embedded and committed per transaction


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

    def skip(self, reason: str) -> None:
        key = reason.split(":")[0]
        self.skip_reasons[key] = self.skip_reasons.get(key, 0) + 1
        self.skipped += 1

    def count(self, rec: Any) -> None:
        """One file embedded or re-used: new, or an update of record ``rec``."""
        if rec is None:
            self.added += 1
        else:
            self.updated += 1


@dataclass
class Loaded:
    """One batch, read and decoded: what to embed, what to skip, what only moved in time, what
    is indexed already under another path, and every readable file's metadata."""

    good: list[tuple[Any, str, Any, Any]] = field(default_factory=list)  # info, sha1, rec, image
    bad: list[tuple[Any, str | None, Any, str]] = field(default_factory=list)  # ..., reason
    same: list[tuple[Any, Any]] = field(default_factory=list)  # info, rec: same content
    known: list[tuple[Any, str, Any]] = field(default_factory=list)  # info, sha1, rec
    meta: dict[str, PhotoMeta] = field(default_factory=dict)  # by path


def load_file(info, rec, mid: str, indexed: set[str], square: int | None):
    """Read a file once: hash its bytes, read its metadata, then decode them unless the content
    is unchanged or indexed already (``indexed``: SHA-1s with a vector of ``mid``); decoded to
    ``square`` x ``square`` when the model says what its image tower reads. Returns (which list
    of :class:`Loaded`, its entry, the metadata or None)."""
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


def gather(outcomes) -> Loaded:
    """One batch's :func:`load_file` outcomes, in file order, as a :class:`Loaded`."""
    out = Loaded()
    for kind, entry, meta in outcomes:
        getattr(out, kind).append(entry)
        if meta is not None:
            out.meta[entry[0].path] = meta
    return out


def embed_images(model: Any, images: list[Any]) -> np.ndarray:
    # no feature cache: the photo index is its own cache
    return np.asarray(model.embed_images(images, progress=False, cache=False), np.float32)


def resolve_captions(captions: dict[str, list[str]], root: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, texts in captions.items():
        p = Path(key)
        p = p if p.is_absolute() else root / p
        # the same spelling as the folder walk (absolute, symlinks kept), so linked files match
        out.setdefault(os.path.abspath(p), []).extend(texts if isinstance(texts, list) else [texts])
    return out


class Ingest:
    """One update of ``index`` (a :class:`~xmodal.index.PhotoIndex`) from folder ``root``."""

    def __init__(self, index: Any, root: Path, captions: dict | None, progress: bool,
                 on_batch: Callable[[UpdateStats], None] | None):
        self.index, self.store, self.root = index, index.store, root.resolve()
        self.captions, self.progress, self.on_batch = captions or {}, progress, on_batch
        self.stats = UpdateStats(str(self.root))
        self.mid = index.model_id
        self.t0 = time.perf_counter()

    @property
    def model(self) -> Any:
        return self.index.model

    def run(self) -> UpdateStats:
        todo, gone = self.diff()
        self.embed_all(todo)
        if gone:
            with self.store.transaction() as conn:
                self.stats.deleted = self.store.delete_files(conn, gone)
        self.refresh_metadata()
        self.store_captions()
        self.index.ann.rebuild()
        prepare = getattr(self.model, "prepare_queries", None)
        if callable(prepare):  # the first search after indexing must not export the text tower
            prepare()
        self.stats.elapsed_s = time.perf_counter() - self.t0
        return self.stats

    # ----- walk and diff --------------------------------------------------------------------
    def walk(self) -> tuple[list, list]:
        """The folder's image files and its other files (with why they are skipped), the
        database itself left out (it may live inside the folder it indexes)."""
        files, others = walk_images(self.root)
        own = str(self.index.db_path.resolve())
        return ([f for f in files if not f.path.startswith(own)],
                [(p, r) for p, r in others if not p.startswith(own)])

    def diff(self) -> tuple[list, list[int]]:
        """(files to read: (info, record or None), ids of records whose file vanished);
        records the skipped files and the folder on the way."""
        files, others = self.walk()
        known = self.store.files_under(str(self.root))
        self.stats.seen = len(files)
        seen: set[str] = set()
        with self.store.transaction() as conn:
            self.record_skipped(conn, others, known, seen)
            todo = self.changed(files, known, seen)
            roots = json.loads(self.store.get_meta("roots", "[]") or "[]")
            if str(self.root) not in roots:
                self.store.set_meta(conn, "roots", json.dumps(sorted([*roots, str(self.root)])))
            if not todo:
                self.record_model(conn)
        # records of vanished files go last: a file moved or renamed inside the folder finds
        # its old vector (same SHA-1) and is not embedded again
        return todo, [rec.id for path, rec in known.items() if path not in seen]

    def record_skipped(self, conn, others: list, known: dict, seen: set[str]) -> None:
        for path, reason in others:
            if reason == BAD_NAME:
                self.stats.skip(reason)
                continue
            seen.add(path)
            rec = known.get(path)
            if rec is None or rec.reason != reason:
                self.store.upsert_file(conn, path, 0, 0, None, None, None, "skipped", reason)
            self.stats.skip(reason)

    def changed(self, files: list, known: dict, seen: set[str]) -> list:
        """The files that are new, or whose size, time or model changed."""
        todo = []
        for info in files:
            seen.add(info.path)
            rec = known.get(info.path)
            if rec is not None and rec.size == info.size and rec.mtime_ns == info.mtime_ns:
                if rec.status == "skipped":
                    self.stats.skip(rec.reason or "skipped")
                    continue
                if rec.vector_model == self.mid:
                    self.stats.unchanged += 1
                    continue
            todo.append((info, rec))
        return todo

    # ----- embed and commit -----------------------------------------------------------------
    def embed_all(self, todo: list) -> None:
        """Read, hash and decode the next batches in loader threads while the model embeds
        this one (file reads, hashing and PIL decoding release the GIL); commit each."""
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="indexing", unit="img",
                   disable=not self.progress or not todo)
        batches = [todo[i : i + BATCH] for i in range(0, len(todo), BATCH)]
        indexed = self.store.hashes_with_vector(self.mid) if todo else set()
        square = getattr(self.model, "image_input_size", None)
        threads = torch_threads(indexing_threads(), self.model)
        t_embed = time.perf_counter()
        with ThreadPoolExecutor(max_workers=LOADERS) as pool, threads, blas_single_thread():
            def start(batch):  # the loaders work through a batch file by file, in any order
                return [pool.submit(load_file, info, rec, self.mid, indexed, square)
                        for info, rec in batch]

            # two batches queued ahead: the loaders never idle at the end of a batch while
            # the model waits (one batch ahead left a core idle a quarter of the time on 12 MP
            # JPEGs)
            pending = [start(b) for b in batches[:AHEAD]]
            for n, batch in enumerate(batches):
                loaded = gather(f.result() for f in pending.pop(0))
                if n + AHEAD < len(batches):
                    pending.append(start(batches[n + AHEAD]))
                self.commit(loaded)
                bar.update(len(batch))
                self.stats.embed_s = time.perf_counter() - t_embed
                self.stats.elapsed_s = time.perf_counter() - self.t0
                if self.on_batch is not None:
                    self.on_batch(self.stats)
        bar.close()

    def embed(self, images: list[Any]) -> np.ndarray:
        return embed_images(self.model, images)

    def embed_batch(self, loaded: Loaded) -> tuple[list, list, list]:
        """(embedded entries, their vectors, skipped entries): one bad image must not stop the
        run, so a failing batch is embedded again one image at a time."""
        good, bad = loaded.good, list(loaded.bad)
        images = [item[3] for item in good]
        try:
            vectors = self.embed(images) if images else np.zeros((0, 0), np.float32)
            if len(vectors) != len(images):
                raise XmodalError(f"got {len(vectors)} vectors for {len(images)} images")
            return good, list(vectors), bad
        except Exception:  # noqa: BLE001 - embedded one at a time below
            vectors, kept = [], []
            for item in good:
                try:
                    vectors.append(self.embed([item[3]])[0])
                    kept.append(item)
                except Exception as exc:  # noqa: BLE001 - any model failure skips the file
                    bad.append((*item[:3], f"the model failed: {type(exc).__name__}"))
            return kept, vectors, bad

    def reuse(self, loaded: Loaded, bad: list) -> list:
        """Files whose content is indexed under another path already: its vector."""
        reused = []
        for info, sha1, rec in loaded.known:
            vec = self.store.vector_by_hash(sha1, self.mid)
            if vec is None:  # its copy was re-embedded by another model meanwhile: embed it
                image, reason = load_checked(info.path)
                if image is None:
                    bad.append((info, sha1, rec, reason))
                    continue
                vec = self.embed([image])[0]
            reused.append((info, sha1, rec, vec))
        return reused

    def commit(self, loaded: Loaded) -> None:
        """Embed one decoded batch and write it, with its skipped files, in one transaction."""
        good, vectors, bad = self.embed_batch(loaded)
        reused = self.reuse(loaded, bad)
        with self.store.transaction() as conn:
            for info, rec in loaded.same:  # touched, content unchanged: keep the vector
                self.store.touch_file(conn, rec.id, info.size, info.mtime_ns)
                self.store.put_metadata(conn, rec.id, loaded.meta[info.path])
                self.stats.unchanged += 1
            for info, sha1, _, reason in bad:
                self.write_skipped(conn, info, sha1, None, None, reason)
            for info, sha1, rec, vec in reused:
                w, h = self.store.size_by_hash(sha1)
                self.write(conn, info, sha1, (w, h), vec, loaded.meta[info.path])
                self.stats.reused += 1
                self.stats.count(rec)
            for (info, sha1, rec, image), vec in zip(good, vectors):
                w, h = image.info.get("original_size", image.size)
                if not np.all(np.isfinite(vec)) or not np.any(vec):  # e.g. a zero row
                    self.write_skipped(conn, info, sha1, w, h, "the model could not embed it")
                    continue
                self.write(conn, info, sha1, (w, h), vec, loaded.meta[info.path])
                self.stats.count(rec)
            self.record_model(conn)

    def write(self, conn, info, sha1: str, size: tuple, vec: np.ndarray, meta: PhotoMeta) -> None:
        fid = self.store.upsert_file(conn, info.path, info.size, info.mtime_ns, sha1, *size,
                                     "ok", None)
        self.store.put_vector(conn, fid, self.mid, vec)
        self.store.put_metadata(conn, fid, meta)

    def write_skipped(self, conn, info, sha1, w, h, reason: str) -> None:
        fid = self.store.upsert_file(conn, info.path, info.size, info.mtime_ns, sha1, w, h,
                                     "skipped", reason)
        self.store.drop_vector(conn, fid)
        self.stats.skip(reason)

    def record_model(self, conn) -> None:
        self.store.set_meta(conn, "model", self.mid)
        self.store.set_meta(conn, "model_spec", self.index.model_spec or "")
        self.store.set_meta(conn, "dim", str(int(self.model.dim)))

    # ----- what else an update brings in line -----------------------------------------------
    def refresh_metadata(self) -> None:
        """Read the metadata of indexed photos that lack it (an index built before metadata
        existed, or by an older extractor): no re-embedding."""
        from tqdm.auto import tqdm

        prefix = str(self.root).rstrip(os.sep) + os.sep
        rows = [r for r in self.store.without_metadata() if r[1].startswith(prefix)]
        if not rows:
            return
        bar = tqdm(total=len(rows), desc="reading metadata", unit="img",
                   disable=not self.progress or len(rows) < 50)
        with ThreadPoolExecutor(max_workers=2) as pool:
            for start in range(0, len(rows), 256):
                part = rows[start:start + 256]
                metas = list(pool.map(lambda r: read_metadata(r[1], mtime_ns=r[2]), part))
                with self.store.transaction() as conn:
                    for (fid, _, _), meta in zip(part, metas):
                        self.store.put_metadata(conn, fid, meta)
                self.stats.metadata_read += len(part)
                bar.update(len(part))
        bar.close()

    def store_captions(self) -> None:
        caption_map = resolve_captions(self.captions, self.root)
        if not caption_map:
            return
        with self.store.transaction() as conn:
            for path, texts in caption_map.items():
                fid = self.store.file_id(path)
                if fid is not None:
                    self.store.set_captions(conn, fid, texts)
                else:
                    self.stats.captions_unmatched += 1
