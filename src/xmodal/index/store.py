"""SQLite storage of files, vectors and captions: the source of truth of a photo index.

Every write happens in a transaction (WAL journal), so a process killed at any moment leaves a
database that opens and holds only whole records. A ``generation`` counter in ``meta`` grows
with every change; derived structures (the ANN index) record the generation they were built
from and are rebuilt when it moved.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.metadata import PhotoMeta
from xmodal.migrations import Schema, add_columns, file_lock, migrate


def fold(text: str) -> str:
    """Case- and accent-insensitive form of a name: 'São Paulo' and 'sao paulo' match."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).strip()



SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha1 TEXT,
    width INTEGER,
    height INTEGER,
    status TEXT NOT NULL CHECK (status IN ('ok', 'skipped')),
    reason TEXT,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS vectors (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vec BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS files_sha1 ON files(sha1);
CREATE TABLE IF NOT EXISTS captions (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    UNIQUE (file_id, text)
);
CREATE TABLE IF NOT EXISTS photo_meta (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    version INTEGER NOT NULL,
    taken_at TEXT,
    utc_offset TEXT,
    date_source TEXT,
    camera_make TEXT,
    camera_model TEXT,
    camera TEXT,
    lat REAL,
    lon REAL,
    orientation INTEGER,
    city TEXT,
    region TEXT,
    country TEXT,
    country_code TEXT,
    camera_key TEXT
);
CREATE INDEX IF NOT EXISTS photo_meta_taken ON photo_meta(taken_at);
CREATE INDEX IF NOT EXISTS photo_meta_position ON photo_meta(lat, lon);
CREATE INDEX IF NOT EXISTS photo_meta_camera ON photo_meta(camera_key);
-- every name of a photo's place (city, region, country, country code), folded: --place looks
-- a name up in this index instead of reading every photo's metadata
CREATE TABLE IF NOT EXISTS photo_places (
    name TEXT NOT NULL,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    PRIMARY KEY (name, file_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS photo_places_file ON photo_places(file_id);
"""

# the perceptual-hash cache of ``xmodal duplicates`` (index/duplicates.py), keyed by content
HASH_SCHEMA = """
CREATE TABLE IF NOT EXISTS photo_hashes (
    sha1 TEXT PRIMARY KEY,
    phash TEXT,
    phash_mirror TEXT,
    reason TEXT,
    computed_at REAL NOT NULL
);
"""

# The photo index's schema, one step per change (xmodal.migrations): a database of an older
# version is upgraded in place when it is opened. Append a step to change it, e.g.
# ``(5, add_column("photo_meta", "lens", "TEXT"))``; never edit a step that has shipped.
# Steps 1-2 are the schema as it stood before versioning (databases of that time report
# version 0), so they must stay idempotent.
INDEX_SCHEMA = Schema("photo index", [
    (1, SCHEMA),
    (2, HASH_SCHEMA),
    # duplicates: the eight pHashes of the picture's rotations and mirror images (border
    # trimmed), its size without uniform borders, and what its EXIF says about its origin
    (3, add_columns("photo_hashes", ("dihedral", "TEXT"), ("content_width", "INTEGER"),
                    ("content_height", "INTEGER"), ("software", "TEXT"),
                    ("date_original", "TEXT"), ("exif_camera", "TEXT"))),
    # vectors of files moved aside by 'xmodal duplicates --move-to', by content: a file moved
    # back (--undo) is indexed again without being embedded again
    (4, """CREATE TABLE IF NOT EXISTS retired_vectors (
        sha1 TEXT NOT NULL,
        model TEXT NOT NULL,
        vec BLOB NOT NULL,
        width INTEGER,
        height INTEGER,
        retired_at REAL NOT NULL,
        PRIMARY KEY (sha1, model)
    )"""),
])

# Bumped when metadata extraction changes: rows of an older version are read again (without
# re-embedding) by the next 'xmodal index'.
METADATA_VERSION = 2  # 2: no place name farther than 50 km from any known place


@dataclass(frozen=True)
class FileRecord:
    id: int
    path: str
    size: int
    mtime_ns: int
    sha1: str | None
    status: str
    reason: str | None
    vector_model: str | None  # the model of its stored vector, None without one


class Store:
    """A thin, transactional layer over one SQLite database file."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path).expanduser()
        if not create and not self.path.exists():
            raise XmodalError(
                f"no photo index at {self.path}: build one first with 'xmodal index FOLDER'"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            migrate(self.conn, INDEX_SCHEMA, self.path, lock=self._upgrade_lock)
        except sqlite3.DatabaseError as exc:
            raise XmodalError(f"{self.path} is not a usable photo index: {exc}") from exc

    def _upgrade_lock(self):
        """The writer lock ``xmodal index`` holds (``<db>.lock``), taken to upgrade the schema."""
        return file_lock(str(self.path) + ".lock",
                         f"another 'xmodal index' is updating {self.path}, which this version "
                         "of xmodal must upgrade first: run this again when it has finished")

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit of work; bumps the generation counter when it commits."""
        with self.conn:
            yield self.conn
            self.conn.execute(
                "INSERT INTO meta(key, value) VALUES('generation', '1') ON CONFLICT(key) "
                "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
            )

    # ----- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
            (key, value, value),
        )

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    # ----- files --------------------------------------------------------------------------
    def files_under(self, root: str) -> dict[str, FileRecord]:
        """Every recorded file below folder ``root`` (absolute), by path."""
        prefix = root.rstrip("/") + "/"
        rows = self.conn.execute(
            "SELECT f.id, f.path, f.size, f.mtime_ns, f.sha1, f.status, f.reason, v.model "
            "FROM files f LEFT JOIN vectors v ON v.file_id = f.id "
            "WHERE substr(f.path, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return {r[1]: FileRecord(*r) for r in rows}

    def upsert_file(self, conn, path, size, mtime_ns, sha1, width, height, status, reason) -> int:
        conn.execute(
            "INSERT INTO files(path, size, mtime_ns, sha1, width, height, status, reason, "
            "updated_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "size=excluded.size, mtime_ns=excluded.mtime_ns, sha1=excluded.sha1, "
            "width=excluded.width, height=excluded.height, status=excluded.status, "
            "reason=excluded.reason, updated_at=excluded.updated_at",
            (path, size, mtime_ns, sha1, width, height, status, reason, time.time()),
        )
        return conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()[0]

    def touch_file(self, conn, file_id: int, size: int, mtime_ns: int) -> None:
        conn.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id)
        )

    def delete_files(self, conn, ids: Iterable[int]) -> int:
        ids = list(ids)
        conn.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in ids])
        return len(ids)

    def put_vector(self, conn, file_id: int, model: str, vec: np.ndarray) -> None:
        conn.execute(
            "INSERT INTO vectors(file_id, model, vec) VALUES(?, ?, ?) ON CONFLICT(file_id) DO "
            "UPDATE SET model=excluded.model, vec=excluded.vec",
            (file_id, model, np.asarray(vec, np.float32).tobytes()),
        )

    def put_metadata(self, conn, file_id: int, meta: PhotoMeta) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO photo_meta(file_id, version, taken_at, utc_offset, "
            "date_source, camera_make, camera_model, camera, lat, lon, orientation, city, region, "
            "country, country_code, camera_key) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (file_id, METADATA_VERSION, meta.taken_at, meta.utc_offset, meta.date_source,
             meta.camera_make, meta.camera_model, meta.camera, meta.lat, meta.lon,
             meta.orientation, meta.city, meta.region, meta.country, meta.country_code,
             fold(meta.camera) if meta.camera else None),
        )
        if meta.extra:  # the columns of registered filters' extractors (metadata.EXTRACTORS)
            cols = [c for c in meta.extra if c.isidentifier()]
            conn.execute(f"UPDATE photo_meta SET {', '.join(f'{c} = ?' for c in cols)} "
                         "WHERE file_id = ?", [*(meta.extra[c] for c in cols), file_id])
        conn.execute("DELETE FROM photo_places WHERE file_id = ?", (file_id,))
        names = {fold(n) for n in (meta.city, meta.region, meta.country, meta.country_code) if n}
        conn.executemany("INSERT OR IGNORE INTO photo_places(name, file_id) VALUES(?, ?)",
                         [(n, file_id) for n in names])

    def camera_keys(self, part: str) -> list[str]:
        """The distinct folded camera names that contain ``part`` (folded)."""
        rows = self.conn.execute(
            "SELECT DISTINCT camera_key FROM photo_meta WHERE camera_key IS NOT NULL")
        return [r[0] for r in rows if part in r[0]]

    def without_metadata(self) -> list[tuple[int, str, int]]:
        """(id, path, mtime_ns) of searchable files whose metadata is missing or out of date."""
        return self.conn.execute(
            "SELECT f.id, f.path, f.mtime_ns FROM files f LEFT JOIN photo_meta m "
            "ON m.file_id = f.id WHERE f.status = 'ok' AND (m.file_id IS NULL OR m.version < ?) "
            "ORDER BY f.id", (METADATA_VERSION,)
        ).fetchall()

    def drop_vector(self, conn, file_id: int) -> None:
        conn.execute("DELETE FROM vectors WHERE file_id = ?", (file_id,))

    def set_captions(self, conn, file_id: int, texts: Iterable[str]) -> None:
        conn.execute("DELETE FROM captions WHERE file_id = ?", (file_id,))
        conn.executemany(
            "INSERT OR IGNORE INTO captions(file_id, text) VALUES(?, ?)",
            [(file_id, t) for t in texts],
        )

    def relabel_vectors(self, conn, old: str, new: str) -> None:
        """Vectors of model ``old`` become model ``new``'s (the same image side), kept ones too."""
        for table in ("vectors", "retired_vectors"):
            conn.execute(f"UPDATE {table} SET model = ? WHERE model = ?", (new, old))
        self.set_meta(conn, "model", new)

    # ----- reading ------------------------------------------------------------------------
    def vectors(self, model: str, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """(file ids, vectors) of every indexed image for ``model``."""
        rows = self.conn.execute(
            "SELECT file_id, vec FROM vectors WHERE model = ? ORDER BY file_id", (model,)
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.empty((len(rows), dim), dtype=np.float32)
        for i, (_, blob) in enumerate(rows):
            vecs[i] = np.frombuffer(blob, dtype=np.float32)
        return ids, vecs

    def vector_of(self, file_id: int, model: str) -> np.ndarray | None:
        row = self.conn.execute(
            "SELECT vec FROM vectors WHERE file_id = ? AND model = ?", (file_id, model)
        ).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.float32).copy()

    def paths(self, ids: Iterable[int]) -> dict[int, str]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT id, path FROM files WHERE id IN ({marks})", ids)
        return dict(rows.fetchall())

    def ids_under(self, folder: str) -> np.ndarray:
        """Ids of the files inside ``folder`` (an absolute path), at any depth."""
        prefix = folder.rstrip(os.sep) + os.sep
        rows = self.conn.execute(  # substr, not LIKE: paths may hold % and _
            "SELECT id FROM files WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
        ).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def hashes(self, ids: Iterable[int]) -> dict[int, str | None]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return dict(self.conn.execute(f"SELECT id, sha1 FROM files WHERE id IN ({marks})", ids))

    def copies(self, hashes: Iterable[str]) -> dict[str, list[str]]:
        """Paths of the searchable files with each content hash, sorted (one indexed query)."""
        hashes = sorted(set(hashes))
        if not hashes:
            return {}
        marks = ",".join("?" * len(hashes))
        out: dict[str, list[str]] = {}
        for sha1, path in self.conn.execute(
                f"SELECT f.sha1, f.path FROM files f "
                f"WHERE f.status = 'ok' AND f.sha1 IN ({marks}) ORDER BY f.path", hashes):
            out.setdefault(sha1, []).append(path)
        return out

    def hashes_with_vector(self, model: str) -> set[str]:
        """Content hashes of the files that have a vector of ``model``, and of the files moved
        aside with theirs kept (:meth:`retire_vectors`)."""
        rows = self.conn.execute(
            "SELECT DISTINCT f.sha1 FROM files f JOIN vectors v ON v.file_id = f.id "
            "WHERE v.model = ? AND f.sha1 IS NOT NULL "
            "UNION SELECT sha1 FROM retired_vectors WHERE model = ?", (model, model))
        return {r[0] for r in rows}

    def vector_by_hash(self, sha1: str, model: str) -> np.ndarray | None:
        """The vector of ``model`` of any file with this content (or of a file moved aside with
        it), or None."""
        row = self.conn.execute(
            "SELECT v.vec FROM files f JOIN vectors v ON v.file_id = f.id "
            "WHERE f.sha1 = ? AND v.model = ? "
            "UNION ALL SELECT vec FROM retired_vectors WHERE sha1 = ? AND model = ? LIMIT 1",
            (sha1, model, sha1, model)).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.float32).copy()

    def size_by_hash(self, sha1: str) -> tuple[int | None, int | None]:
        row = self.conn.execute(
            "SELECT width, height FROM files WHERE sha1 = ? AND width IS NOT NULL "
            "UNION ALL SELECT width, height FROM retired_vectors WHERE sha1 = ? AND width IS "
            "NOT NULL LIMIT 1", (sha1, sha1)).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def retire_vectors(self, conn, ids: Iterable[int]) -> int:
        """Keep the vectors of these files by content before their records go (files moved
        aside by 'xmodal duplicates'): moved back, they are indexed without embedding."""
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), 900):
            part = ids[start:start + 900]
            conn.execute(
                "INSERT OR REPLACE INTO retired_vectors(sha1, model, vec, width, height, "
                "retired_at) SELECT f.sha1, v.model, v.vec, f.width, f.height, ? FROM files f "
                f"JOIN vectors v ON v.file_id = f.id WHERE f.sha1 IS NOT NULL AND f.id IN "
                f"({','.join('?' * len(part))})", [time.time(), *part])
        return len(ids)

    def unretire(self, conn, sha1s: Iterable[str]) -> None:
        """Forget the kept vectors of these contents (their files are indexed again)."""
        conn.executemany("DELETE FROM retired_vectors WHERE sha1 = ?", [(s,) for s in sha1s])

    def vectors_of(self, ids: Iterable[int], model: str) -> dict[int, np.ndarray]:
        """The stored vectors of ``model`` of these file ids (those that have one)."""
        ids = [int(i) for i in ids]
        out: dict[int, np.ndarray] = {}
        for start in range(0, len(ids), 30_000):  # SQLite's limit on bound parameters
            part = ids[start:start + 30_000]
            rows = self.conn.execute(
                f"SELECT file_id, vec FROM vectors WHERE model = ? AND file_id IN "
                f"({','.join('?' * len(part))})", [model, *part])
            out.update((i, np.frombuffer(b, dtype=np.float32)) for i, b in rows)
        return out

    def all_paths(self) -> list[tuple[int, str]]:
        return self.conn.execute("SELECT id, path FROM files ORDER BY id").fetchall()

    def file_id(self, path: str) -> int | None:
        row = self.conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        return None if row is None else row[0]

    def captions(self) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT f.path, c.text FROM captions c JOIN files f ON f.id = c.file_id ORDER BY c.id"
        )
        return rows.fetchall()

    def counts(self, model: str) -> dict[str, int]:
        q = self.conn.execute
        return {
            "files": q("SELECT COUNT(*) FROM files").fetchone()[0],
            "indexed": q("SELECT COUNT(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0],
            "skipped": q("SELECT COUNT(*) FROM files WHERE status = 'skipped'").fetchone()[0],
            "stale_vectors": q(
                "SELECT COUNT(*) FROM vectors WHERE model != ?", (model,)
            ).fetchone()[0],
            "captions": q("SELECT COUNT(*) FROM captions").fetchone()[0],
        }

    def metadata(self, ids: Iterable[int]) -> dict[int, dict]:
        """Per file id: path, width, height, bytes and the photo metadata columns."""
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        cur = self.conn.execute(
            f"SELECT f.id, f.path, f.width, f.height, f.size, m.taken_at, m.utc_offset, "
            f"m.date_source, m.camera, m.lat, m.lon, m.city, m.region, m.country "
            f"FROM files f LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.id IN ({marks})",
            ids)
        names = [d[0] for d in cur.description]
        return {row[0]: dict(zip(names[1:], row[1:])) for row in cur.fetchall()}

    def ids_matching(self, where: list[str], params: list, columns: list[str] = ()):
        """Ids of the searchable files meeting every SQL condition in ``where`` (over ``files f``
        and ``photo_meta m``); with ``columns`` (SQL expressions), (ids, a float array of those
        columns, one row per id)."""
        extra = "".join(f", {c}" for c in columns)
        sql = (f"SELECT f.id{extra} FROM files f "
               "LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.status = 'ok'")
        if where:
            sql += " AND " + " AND ".join(f"({w})" for w in where)
        rows = self.conn.execute(sql + " ORDER BY f.id", params).fetchall()
        if not columns:
            return np.array([r[0] for r in rows], dtype=np.int64)
        arr = np.array(rows, dtype=np.float64).reshape(-1, 1 + len(columns))
        return arr[:, 0].astype(np.int64), arr[:, 1:]

    def group_counts(self, select: Iterable[str], where: str = "", order: str = "n DESC",
                     among: np.ndarray | None = None) -> list[tuple]:
        """Searchable photos (of the ids ``among``, when given) counted per value of the
        ``select`` expressions (over ``files f`` and ``photo_meta m``): rows of (*values,
        count); byte-identical copies count once, as search results show them once."""
        select = list(select)
        cols, groups = ", ".join(select), ", ".join(str(i + 1) for i in range(len(select)))
        conditions = ["f.status = 'ok'", *([where] if where else [])]
        params: list = []
        if among is not None:
            conditions.append("f.id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps([int(i) for i in among]))
        sql = (f"SELECT {cols}, COUNT(DISTINCT COALESCE(f.sha1, f.id)) n FROM files f "
               f"LEFT JOIN photo_meta m ON m.file_id = f.id WHERE {' AND '.join(conditions)} "
               f"GROUP BY {groups} ORDER BY {order}")
        return self.conn.execute(sql, params).fetchall()

    def ids_by_date(self, among: np.ndarray | None, newest: bool = True, offset: int = 0,
                    limit: int = 24) -> np.ndarray:
        """Ids of searchable photos (of ``among``, when given) by the date taken, newest first
        unless ``newest`` is False, undated last; one id per content (copies listed once)."""
        sql = ("SELECT MIN(f.id) i, MAX(m.taken_at) t FROM files f "
               "LEFT JOIN photo_meta m ON m.file_id = f.id WHERE f.status = 'ok'")
        params: list = []
        if among is not None:
            sql += " AND f.id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps([int(i) for i in among]))
        sql += (" GROUP BY COALESCE(f.sha1, 'id:' || f.id) "
                f"ORDER BY t IS NULL, t {'DESC' if newest else 'ASC'}, i LIMIT ? OFFSET ?")
        rows = self.conn.execute(sql, [*params, int(limit), int(offset)]).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)

    def skipped(self) -> list[tuple[str, str]]:
        return self.conn.execute(
            "SELECT path, reason FROM files WHERE status = 'skipped' ORDER BY path"
        ).fetchall()
