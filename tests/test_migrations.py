"""Versioned databases (xmodal.migrations): a photo index and a campaign written before the schemas
were versioned open, are upgraded in place and keep their rows; a newer database is refused; an
upgrade runs under the writer lock and is all or nothing; adding a column is one step."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from xmodal import migrations
from xmodal.errors import XmodalError
from xmodal.index import store as index_store
from xmodal.index.photo_index import writer_lock
from xmodal.migrations import Schema, add_column, statements, user_version
from xmodal.mitl import store as mitl_store

SCHEMAS = Path(__file__).parent / "data" / "schemas"


def database(tmp_path: Path, fixture: str) -> Path:
    db = tmp_path / fixture.replace(".sql", ".db")
    conn = sqlite3.connect(db)
    conn.executescript((SCHEMAS / fixture).read_text())
    conn.close()
    return db


def columns(db: Path, table: str) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    finally:
        conn.close()


def test_an_index_of_the_unversioned_schema_is_upgraded_in_place(tmp_path):
    db = database(tmp_path, "index-v0.sql")
    assert user_version(sqlite3.connect(db)) == 0
    assert "dihedral" not in columns(db, "photo_hashes")
    store = index_store.Store(db, create=False)
    assert user_version(store.conn) == index_store.INDEX_SCHEMA.version >= 4
    assert {"dihedral", "content_width", "content_height", "software", "date_original",
            "exif_camera"} <= columns(db, "photo_hashes")
    assert {"sha1", "model", "vec"} <= columns(db, "retired_vectors")
    ids, vecs = store.vectors("test-colour-v1", 4)  # the rows are all there
    assert ids.tolist() == [1, 2] and vecs.shape == (2, 4)
    assert store.get_meta("model") == "test-colour-v1"
    assert store.conn.execute("SELECT COUNT(*) FROM photo_hashes").fetchone()[0] == 2
    store.close()
    again = index_store.Store(db, create=False)  # opening it again changes nothing
    assert user_version(again.conn) == index_store.INDEX_SCHEMA.version
    again.close()


def test_a_campaign_of_the_unversioned_schema_is_upgraded_in_place(tmp_path):
    db = database(tmp_path, "campaign-v0.sql")
    with mitl_store.Campaign(db) as c:
        assert user_version(c.conn) == mitl_store.CAMPAIGN_SCHEMA.version
        assert c.q("SELECT name FROM workers") == [("alice",)]
        assert c.q("SELECT value FROM meta WHERE key = 'schema_version'") == [("1",)]
        c.add_worker("bob")
    assert {"active_at", "draft_version"} <= columns(db, "assignments")


def test_a_campaign_from_before_the_added_columns_gets_them(tmp_path):
    sql = (SCHEMAS / "campaign-v0.sql").read_text()
    sql = sql.replace(" active_at REAL, draft_version INTEGER NOT NULL DEFAULT 0,", "")
    db = tmp_path / "old.db"
    sqlite3.connect(db).executescript(sql)
    assert "active_at" not in columns(db, "assignments")
    mitl_store.Campaign(db).close()
    assert {"active_at", "draft_version"} <= columns(db, "assignments")


@pytest.mark.parametrize("fixture,opener", [
    ("index-v0.sql", lambda p: index_store.Store(p, create=False)),
    ("campaign-v0.sql", lambda p: mitl_store.Campaign(p)),
    ("campaign-v0.sql", lambda p: mitl_store.Campaign(p, readonly=True)),
])
def test_a_database_of_a_newer_xmodal_is_refused_untouched(tmp_path, fixture, opener):
    db = database(tmp_path, fixture)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = list(sqlite3.connect(db).iterdump())
    with pytest.raises(XmodalError, match="schema version 99, written by a newer xmodal"):
        opener(db)
    after = sqlite3.connect(db)
    assert user_version(after) == 99 and list(after.iterdump()) == before


def test_the_upgrade_waits_for_no_writer(tmp_path):
    """An 'xmodal index' at work (the writer lock held): the upgrade is refused with the reason,
    and the database stays at its version; once the writer is done, it goes through."""
    db = database(tmp_path, "index-v0.sql")
    with writer_lock(db), pytest.raises(XmodalError, match="another 'xmodal index' is updating"):
        index_store.Store(db, create=False)
    assert user_version(sqlite3.connect(db)) == 0
    index_store.Store(db, create=False).close()
    assert user_version(sqlite3.connect(db)) == index_store.INDEX_SCHEMA.version


def test_a_failing_step_leaves_the_old_version_whole(tmp_path):
    db = tmp_path / "x.db"

    def boom(conn):
        raise RuntimeError("step 3 failed")

    schema = Schema("toy", [(1, "CREATE TABLE a (x INTEGER)"), (2, "CREATE TABLE b (y TEXT)"),
                            (3, boom)])
    conn = sqlite3.connect(db)
    migrations.migrate(conn, Schema("toy", schema.steps[:1]), db)
    with pytest.raises(RuntimeError, match="step 3 failed"):
        migrations.migrate(conn, schema, db)
    assert user_version(conn) == 1
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["a"]


def test_adding_a_column_is_one_step(tmp_path, monkeypatch):
    db = database(tmp_path, "index-v0.sql")
    index_store.Store(db, create=False).close()  # today's version
    steps = [*index_store.INDEX_SCHEMA.steps]
    toy = Schema("photo index", [*steps, (len(steps) + 1, add_column("photo_meta", "lens",
                                                                      "TEXT"))])
    monkeypatch.setattr(index_store, "INDEX_SCHEMA", toy)
    store = index_store.Store(db, create=False)
    assert "lens" in columns(db, "photo_meta") and user_version(store.conn) == toy.version
    store.close()


def test_steps_are_numbered_and_scripts_split_where_sqlite_says():
    with pytest.raises(ValueError, match="numbered 1, 2, 3"):
        Schema("toy", [(1, "SELECT 1"), (3, "SELECT 2")])
    script = "CREATE TABLE t (x TEXT DEFAULT 'a;b'); -- a comment; with a semicolon\n" \
             "INSERT INTO t VALUES ('c;d');\n-- trailing comment"
    assert statements(script) == ["CREATE TABLE t (x TEXT DEFAULT 'a;b');",
                                  "-- a comment; with a semicolon\nINSERT INTO t VALUES ('c;d');"]
