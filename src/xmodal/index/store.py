"""SQLite storage of files, vectors and captions: the source of truth of a photo index.

Every write happens in a transaction (WAL journal), so a process killed at any moment leaves a
database that opens and holds only whole records. A ``generation`` counter in ``meta`` grows
with every change; derived structures (the ANN index) record the generation they were built
from and are rebuilt when it moved.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError

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
"""


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
            self.conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise XmodalError(f"{self.path} is not a usable photo index: {exc}") from exc

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

    def drop_vector(self, conn, file_id: int) -> None:
        conn.execute("DELETE FROM vectors WHERE file_id = ?", (file_id,))

    def set_captions(self, conn, file_id: int, texts: Iterable[str]) -> None:
        conn.execute("DELETE FROM captions WHERE file_id = ?", (file_id,))
        conn.executemany(
            "INSERT OR IGNORE INTO captions(file_id, text) VALUES(?, ?)",
            [(file_id, t) for t in texts],
        )

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
                f"SELECT f.sha1, f.path FROM files f JOIN vectors v ON v.file_id = f.id "
                f"WHERE f.sha1 IN ({marks}) ORDER BY f.path", hashes):
            out.setdefault(sha1, []).append(path)
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

    def skipped(self) -> list[tuple[str, str]]:
        return self.conn.execute(
            "SELECT path, reason FROM files WHERE status = 'skipped' ORDER BY path"
        ).fetchall()
