"""A content-addressed disk cache of arrays: one SQLite file per extractor under ``cache_dir()``.

Keys are content hashes (of image bytes or caption text) plus the extractor's parameters, so a
renamed or copied file hits the cache and an edited one misses it. SQLite makes concurrent readers
and writers (several processes, several engineers) safe and an interrupted run leaves a usable file.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from xmodal.paths import cache_dir


def content_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def file_hash(path: str | Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ArrayCache:
    """``key -> {field: array}`` stored in ``cache_dir()/features/<name>.sqlite``."""

    def __init__(self, name: str, fields: dict[str, tuple[tuple[int, ...], str]], root=None):
        self.fields = fields  # field -> (shape, dtype)
        folder = Path(root) if root is not None else cache_dir() / "features"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{name}.sqlite"
        self._local = threading.local()
        cols = ", ".join(f"{f} BLOB" for f in fields)
        with self._conn() as con:
            con.execute(f"CREATE TABLE IF NOT EXISTS arrays (key TEXT PRIMARY KEY, {cols})")

    def _conn(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60)
            con.execute("PRAGMA journal_mode=WAL")
            self._local.con = con
        return con

    def get_many(self, keys: list[str]) -> dict[str, dict[str, np.ndarray]]:
        out: dict[str, dict[str, np.ndarray]] = {}
        names = list(self.fields)
        con = self._conn()
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = con.execute(
                f"SELECT key, {', '.join(names)} FROM arrays WHERE key IN ({marks})", chunk
            ).fetchall()
            for row in rows:
                item = {}
                for name, blob in zip(names, row[1:]):
                    shape, dtype = self.fields[name]
                    item[name] = np.frombuffer(blob, dtype=dtype).reshape(shape)
                out[row[0]] = item
        return out

    def put_many(self, items: Iterable[tuple[str, dict[str, np.ndarray]]]) -> None:
        names = list(self.fields)
        rows = []
        for key, arrays in items:
            row = [key]
            for name in names:
                shape, dtype = self.fields[name]
                arr = np.ascontiguousarray(arrays[name], dtype=dtype).reshape(shape)
                row.append(arr.tobytes())
            rows.append(row)
        if not rows:
            return
        marks = ",".join("?" * (len(names) + 1))
        con = self._conn()
        with con:
            con.executemany(
                f"INSERT OR REPLACE INTO arrays (key, {', '.join(names)}) VALUES ({marks})", rows
            )
