"""Versioned SQLite databases: numbered schema steps applied in place, ``PRAGMA user_version``.

Both databases xmodal writes, the photo index (``index/store.py``) and the campaign store
(``mitl/store.py``), declare their schema as a :class:`Schema`: a name and an ordered list of
``(version, step)`` pairs, where a step is SQL text (any number of statements) or a callable
taking the connection. Opening a database runs :func:`migrate`:

* ``user_version`` equal to the last step's version: nothing happens (no write, no lock, so a
  read-only file still opens);
* lower: the missing steps run in one ``BEGIN IMMEDIATE`` transaction together with the new
  ``user_version``, under the database's writer lock when the caller gives one (the photo index:
  ``<db>.lock``, the lock ``xmodal index`` holds), so a crash or an error leaves the old version
  whole and a second process waits for SQLite's write lock, then finds the work done;
* higher: the database was written by a newer xmodal and is refused with a message saying so,
  before anything is changed.

Adding a column is one step at the end of the list, e.g. ``(4, add_column("photo_meta",
"lens", "TEXT"))``. Databases written before versioning existed report ``user_version`` 0
whatever tables they hold, so the steps up to a schema's first versioned release use
``CREATE ... IF NOT EXISTS`` and :func:`add_column` (which skips a column that exists), and
run on those databases as on empty ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from xmodal.errors import XmodalError

StepAction = str | Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Schema:
    """A database kind's schema as steps; ``steps``: ``(version, SQL or callable)``, the
    versions 1, 2, 3 ... in order."""

    name: str  # what the database is called in messages ("photo index", "campaign")
    steps: Sequence[tuple[int, StepAction]]

    def __post_init__(self) -> None:
        versions = [v for v, _ in self.steps]
        if versions != list(range(1, len(versions) + 1)):
            raise ValueError(f"the {self.name} schema steps must be numbered 1, 2, 3 ... in "
                             f"order, not {versions}")

    @property
    def version(self) -> int:
        """The version this code writes: the last step's."""
        return len(self.steps)


def add_column(table: str, column: str, decl: str) -> Callable[[sqlite3.Connection], None]:
    """A step adding ``column`` (declared ``decl``, e.g. ``"TEXT"`` or ``"INTEGER NOT NULL
    DEFAULT 0"``) to ``table``; a no-op where the column exists already."""

    def step(conn: sqlite3.Connection) -> None:
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")

    step.__name__ = f"add_column_{table}_{column}"
    return step


def add_columns(table: str, *columns: tuple[str, str]) -> Callable[[sqlite3.Connection], None]:
    """One step adding several ``(column, decl)`` to ``table`` (each skipped where it exists)."""

    def step(conn: sqlite3.Connection) -> None:
        for column, decl in columns:
            add_column(table, column, decl)(conn)

    return step


def statements(script: str) -> list[str]:
    """The statements of an SQL script, split where SQLite says a statement ends (so ``;``
    inside strings and comments stays put)."""
    out, buf = [], ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \t\n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \t\n;") and _has_code(buf):
        out.append(buf.strip())
    return out


def _has_code(sql: str) -> bool:
    """Whether a trailing fragment holds more than comments and blanks."""
    return any(line.strip() and not line.strip().startswith("--") for line in sql.splitlines())


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_not_newer(conn: sqlite3.Connection, schema: Schema, path: str | Path) -> int:
    """The database's version; a :class:`XmodalError` when a newer xmodal wrote it."""
    found = user_version(conn)
    if found > schema.version:
        raise XmodalError(
            f"{path} is a {schema.name} database of schema version {found}, written by a newer "
            f"xmodal; this one reads versions up to {schema.version}. Update xmodal "
            "('pip install -U xmodal') to open it; nothing was changed")
    return found


def migrate(conn: sqlite3.Connection, schema: Schema, path: str | Path,
            lock: Callable[[], AbstractContextManager] | None = None) -> int:
    """Bring the database on ``conn`` to ``schema.version`` in place; returns the version it
    had. ``lock``: a context manager factory taken around the upgrade (the writer lock)."""
    found = check_not_newer(conn, schema, path)
    if found == schema.version:
        return found
    with (lock or nullcontext)():
        if conn.in_transaction:
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = check_not_newer(conn, schema, path)  # another process may have done it
            for version, action in schema.steps:
                if version <= found:
                    continue
                if callable(action):
                    action(conn)
                else:
                    for stmt in statements(action):
                        conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {int(schema.version)}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return found


@contextmanager
def file_lock(lock_path: str | Path, busy: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock_path`` for the block; :class:`XmodalError` ``busy`` at
    once when another process holds it. A folder this process cannot write gets no lock (no
    other writer can work there either)."""
    import fcntl

    try:
        handle = open(lock_path, "a+")
    except OSError:
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise XmodalError(busy) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
