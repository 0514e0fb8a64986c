"""The catalog beside an ``xmodal ann build`` index: what a photo search needs besides vectors.

``catalog.db`` is a photo-index database (:class:`~xmodal.index.store.Store`, same schema and
migrations) without vectors: one ``files`` row per indexed vector, whose id is the vector's row
id in the FAISS index (the shards' ok rows, in order), with its path and SHA-1 from the shards,
and each photo's metadata (date taken, camera, GPS, sizes) as ``xmodal embed`` stored it in the
shards' ``meta`` column, place names looked up here (shards written before that column existed:
read from the files). With it a search of the index folder runs
:class:`~xmodal.index.searcher.Searcher`'s pipeline as a photo database does: the same filters
(selected in SQLite, then ranked among), copies shown once, date orders, browsing, the
calibrated cutoff and the same answer.

The ``catalog`` stage of ``xmodal ann build`` writes it (under a temporary name, renamed when
complete); a folder built before the stage existed gets it from ``xmodal ann build --stage
catalog`` (``xmodal ann build SHARDS OUT --stage catalog``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.scale import shards as sh

CATALOG = "catalog.db"


def catalog_path(folder: str | os.PathLike) -> Path:
    return Path(folder).expanduser() / CATALOG


def _shard_rows(shard: Path, model_id: str) -> tuple[list[str], list, list]:
    """Paths, SHA-1s and metadata JSON (None where the shard has none: written before it
    kept metadata) of a shard's ok rows, in row order (the index's order)."""
    import pyarrow.parquet as pq

    has_meta = "meta" in pq.read_schema(shard).names
    t = sh.read_shard(shard, model_id, ["path", "sha1", "ok", *(["meta"] if has_meta else [])])
    ok = t["ok"].to_numpy(zero_copy_only=False)
    keep = lambda column: [x for x, good in zip(column, ok) if good]  # noqa: E731
    metas = keep(t["meta"].to_pylist()) if has_meta else [None] * int(ok.sum())
    return keep(t["path"].to_pylist()), keep(t["sha1"].to_pylist()), metas


def _from_json(text: str) -> tuple[Any, tuple]:
    """:func:`_file_metadata`'s answer from the metadata ``xmodal embed`` stored in a shard
    (place names looked up here: the embedding workers skip the gazetteer)."""
    from dataclasses import fields

    from xmodal.index.metadata import PhotoMeta, place_of

    d = json.loads(text)
    stat = (d.pop("bytes", 0), d.pop("mtime_ns", 0), d.pop("width", None), d.pop("height", None))
    known = {f.name for f in fields(PhotoMeta)} - {"extra"}
    meta = PhotoMeta(**{k: v for k, v in d.items() if k in known},
                     extra={k: v for k, v in d.items() if k not in known})
    if meta.lat is not None and meta.lon is not None and meta.country is None:
        meta.city, meta.region, meta.country, meta.country_code = place_of(meta.lat, meta.lon)
    return meta, stat


def _file_metadata(path: str) -> tuple[Any, tuple]:
    """(the photo's metadata or None, (size, mtime_ns, width, height)) of one file; its size in
    pixels as the photo index records it: from the header, upright (EXIF orientation 5-8
    turns it)."""
    from xmodal.data.image_files import open_image
    from xmodal.index.metadata import read_metadata

    try:
        st = os.stat(path)
        data = Path(path).read_bytes()
    except OSError:
        return None, (0, 0, None, None)
    meta = read_metadata(path, data, st.st_mtime_ns)
    try:
        with open_image(data) as im:
            width, height = im.size
    except Exception:  # noqa: BLE001 - a size is a bonus, as metadata is
        width = height = None
    if width and meta.orientation in (5, 6, 7, 8):
        width, height = height, width
    return meta, (st.st_size, st.st_mtime_ns, width, height)


def build_catalog(folder: str | os.PathLike, threads: int = 4,
                  progress: Callable[[int, int], None] | None = None) -> Path:
    """Write ``catalog.db`` for the index in ``folder``; returns its path."""
    from xmodal.index.store import Store

    folder = Path(folder).expanduser()
    meta = sh.read_ann_meta(folder)
    out, tmp = catalog_path(folder), folder / (CATALOG + ".tmp")
    for stale in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        stale.unlink(missing_ok=True)
    store = Store(tmp)
    offsets, done = meta["offsets"], 0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for s, shard in enumerate(meta["shards"]):
            paths, hashes, stored = _shard_rows(Path(shard), meta["model"])
            read = list(pool.map(lambda ps: _from_json(ps[1]) if ps[1] else _file_metadata(ps[0]),
                                 zip(paths, stored)))
            with store.transaction() as conn:
                for n, (path, sha1, (info, stat)) in enumerate(zip(paths, hashes, read)):
                    conn.execute("INSERT OR IGNORE INTO files(id, path, size, mtime_ns, width, "
                                 "height, sha1, status, updated_at) "
                                 "VALUES(?, ?, ?, ?, ?, ?, ?, 'ok', 0)",
                                 (int(offsets[s]) + n, path, *stat, sha1))
                    if info is not None:
                        store.put_metadata(conn, int(offsets[s]) + n, info)
            done += len(paths)
            if progress is not None:
                progress(done, int(offsets[-1]))
    with store.transaction() as conn:
        store.set_meta(conn, "model", meta["model"])
        store.set_meta(conn, "model_spec", meta.get("model_spec") or "")
        store.set_meta(conn, "dim", str(meta["dim"]))
    store.close()
    os.replace(tmp, out)
    return out


def open_catalog(folder: str | os.PathLike):
    """The catalog of the index in ``folder`` (a Store), or a clear error without one."""
    from xmodal.index.store import Store

    path = catalog_path(folder)
    if not path.is_file():
        raise XmodalError(f"{folder} has no photo catalog ({CATALOG}: paths, dates, places for "
                          f"filters and sorting): run 'xmodal ann build SHARDS {folder} --stage "
                          "catalog' to add it")
    return Store(path, create=False)
