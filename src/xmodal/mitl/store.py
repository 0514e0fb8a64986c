"""The campaign store: one SQLite database holds a whole machine-in-the-loop campaign.

Queries, candidate pairs, which annotator proposed each pair at which rank, HITs, workers,
assignments (a worker's lease on a HIT), judgments and review decisions all live here; nothing
is kept only in memory. Every write is one transaction (WAL journal, ``BEGIN IMMEDIATE`` where a
read decides the write), so a process killed at any moment leaves whole records only: a HIT is
either submitted with all its answers or not at all.

A pair's judgment count is the number of assignments of its HIT that are active (leased and not
expired), submitted, in review or accepted; assigning a HIT checks that count inside the same
immediate transaction, so concurrent workers never push a pair past the HIT's replication.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.migrations import Schema, check_not_newer, migrate
from xmodal.mitl.answers import SKIP, is_gold_correct

SCHEMA_VERSION = 1
DEFAULT_LEASE_S = 2 * 3600.0  # counted from the assignment's last activity (active_at)
MAX_REASON_CHARS = 2000
LIVE = ("active", "review", "accepted")  # assignment states that hold a judgment slot

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS images (id TEXT PRIMARY KEY, path TEXT);
CREATE TABLE IF NOT EXISTS texts (id TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queries (
    id INTEGER PRIMARY KEY,
    direction TEXT NOT NULL CHECK (direction IN ('i2t', 't2i')),
    item TEXT NOT NULL,
    round INTEGER NOT NULL,
    UNIQUE (direction, item));
CREATE TABLE IF NOT EXISTS pairs (
    id INTEGER PRIMARY KEY,
    image_id TEXT NOT NULL REFERENCES images(id),
    text_id TEXT NOT NULL REFERENCES texts(id),
    kind TEXT NOT NULL CHECK (kind IN ('candidate', 'original', 'gold_pos', 'gold_neg')),
    round INTEGER NOT NULL,
    UNIQUE (image_id, text_id));
CREATE TABLE IF NOT EXISTS proposals (
    annotator_id INTEGER NOT NULL REFERENCES annotators(id),
    query_id INTEGER NOT NULL REFERENCES queries(id),
    rank INTEGER NOT NULL,
    image_id TEXT NOT NULL,
    text_id TEXT NOT NULL,
    PRIMARY KEY (annotator_id, query_id, rank));
CREATE INDEX IF NOT EXISTS proposals_pair ON proposals(image_id, text_id);
CREATE TABLE IF NOT EXISTS hits (
    id INTEGER PRIMARY KEY, round INTEGER NOT NULL, replication INTEGER NOT NULL,
    created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS hit_items (
    hit_id INTEGER NOT NULL REFERENCES hits(id),
    position INTEGER NOT NULL,
    pair_id INTEGER NOT NULL REFERENCES pairs(id),
    -- judge: a pair to judge, gold_pos / gold_neg: a known positive / negative (the check)
    role TEXT NOT NULL CHECK (role IN ('judge', 'gold_pos', 'gold_neg')),
    PRIMARY KEY (hit_id, position),
    UNIQUE (hit_id, pair_id));
CREATE INDEX IF NOT EXISTS hit_items_pair ON hit_items(pair_id);
CREATE TABLE IF NOT EXISTS workers (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token_sha256 TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('worker', 'reviewer')), created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS assignments (
    id INTEGER PRIMARY KEY,
    hit_id INTEGER NOT NULL REFERENCES hits(id),
    worker_id INTEGER NOT NULL REFERENCES workers(id),
    status TEXT NOT NULL CHECK (status IN ('active', 'expired', 'review', 'accepted',
                                           'rejected')),
    started_at REAL NOT NULL,
    submitted_at REAL,
    draft TEXT,
    UNIQUE (hit_id, worker_id));
CREATE INDEX IF NOT EXISTS assignments_hit ON assignments(hit_id, status);
CREATE INDEX IF NOT EXISTS assignments_worker ON assignments(worker_id, status);
CREATE TABLE IF NOT EXISTS judgments (
    assignment_id INTEGER NOT NULL REFERENCES assignments(id),
    pair_id INTEGER NOT NULL REFERENCES pairs(id),
    answer INTEGER CHECK (answer IS NULL OR answer BETWEEN 1 AND 4),
    reason TEXT,
    PRIMARY KEY (assignment_id, pair_id));
CREATE TABLE IF NOT EXISTS reviews (
    assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
    reviewer_id INTEGER REFERENCES workers(id),
    decision TEXT NOT NULL CHECK (decision IN ('accept', 'reject')),
    note TEXT, decided_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS results (name TEXT PRIMARY KEY, json TEXT NOT NULL,
    created_at REAL NOT NULL);
-- workers of a crowd platform (MTurk WorkerId, Prolific PID, Label Studio annotator)
CREATE TABLE IF NOT EXISTS external_workers (
    worker_id INTEGER PRIMARY KEY REFERENCES workers(id),
    platform TEXT NOT NULL, external_id TEXT NOT NULL, UNIQUE (platform, external_id));
-- assignments imported from a crowd platform: its own id and the work time it reported
CREATE TABLE IF NOT EXISTS external_assignments (
    assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
    platform TEXT NOT NULL, external_id TEXT NOT NULL, work_s REAL,
    UNIQUE (platform, external_id));
"""


class CampaignConflict(XmodalError):
    """A request that the campaign's current state forbids (already submitted, slot taken)."""


class SelfReview(XmodalError):
    """A reviewer tried to decide a HIT they judged themselves."""


@dataclass(frozen=True)
class Worker:
    id: int
    name: str
    role: str


@dataclass(frozen=True)
class Item:
    """One pair of a HIT as the judging page shows it (gold roles stay server-side)."""

    position: int
    pair_id: int
    image_id: str
    text_id: str
    text: str


REVOKED = "revoked:"  # a token hash no token has: the worker cannot sign in

def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_campaign_file(path: Path) -> None:
    """Refuse an existing file that is not a campaign (another SQLite database, or not SQLite):
    a campaign is recognised by its ``meta`` table's ``schema_version``.

    Only SQLite reads the file: closing any other descriptor of it would drop this process's
    POSIX locks, and another process's closing connection would then delete the live WAL."""
    try:
        conn = open_readonly(path)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE "
                                                 "type = 'table'")}
            ok = "meta" in tables and conn.execute(
                "SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            raise XmodalError(f"{path} is not a campaign database (not an SQLite file)") from exc
        raise XmodalError(f"{path} is not a usable campaign database: {exc}") from exc
    if tables and not ok:
        raise XmodalError(f"{path} is an SQLite database but not an xmodal campaign (no "
                          f"campaign 'meta'; its tables: {', '.join(sorted(tables)[:8])}); "
                          "nothing was changed")


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection; works on a file or folder this process may not write (then
    SQLite's WAL index cannot be created, and the file is opened as immutable)."""
    uri = Path(path).resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn


def entry_test(conn) -> dict[str, Any] | None:
    """The campaign's entry test (``hits --qualify N``): its HIT id, number of check pairs and
    pass mark, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'qualify'").fetchone()
    return json.loads(row[0]) if row else None


def entry_passed(conn, hit: int, assignment_id: int, min_accuracy: float) -> bool:
    """Whether a submitted entry test has at least ``min_accuracy`` of its check pairs right
    (a skipped or missing answer counts as wrong)."""
    answers = conn.execute("SELECT hi.role, j.answer FROM hit_items hi LEFT JOIN judgments j ON "
                           "j.pair_id = hi.pair_id AND j.assignment_id = ? WHERE hi.hit_id = ?",
                           (assignment_id, hit)).fetchall()
    right = sum(1 for role, answer in answers
                if answer is not None and (answer <= 2) == (role == "gold_pos"))
    return bool(answers) and right / len(answers) >= min_accuracy - 1e-9


def qualification_gate(conn, worker_id: int) -> int | None:
    """None: the worker may take real HITs (no qualification, or passed it); the
    qualification HIT's id: they must take it first; -1: they failed it (or let it expire)."""
    q = entry_test(conn)
    if q is None:
        return None
    a = conn.execute("SELECT id, submitted_at, status FROM assignments WHERE hit_id = ? AND "
                     "worker_id = ?", (q["hit"], worker_id)).fetchone()
    if a is None:
        return q["hit"]
    if a[1] is None:
        return q["hit"] if a[2] == "active" else -1
    return None if entry_passed(conn, q["hit"], a[0], q["min_accuracy"]) else -1


# columns added after schema version 1 (ALTER TABLE ... ADD COLUMN on open): the last activity
# of an assignment (a lease runs from it) and its draft's version (two tabs cannot overwrite)
ADDED_COLUMNS = {"assignments": [("active_at", "REAL"),
                                 ("draft_version", "INTEGER NOT NULL DEFAULT 0")]}


def _add_columns(conn: sqlite3.Connection) -> None:
    for table, columns in ADDED_COLUMNS.items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for name, decl in columns:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")


# The campaign store's schema, one step per change (xmodal.migrations; PRAGMA user_version):
# append a step to change it, never edit one that has shipped. Steps 1-2 are the schema as it
# stood before versioning (such files report version 0), so they stay idempotent; the meta row
# 'schema_version' = '1' is what marks a file as a campaign (check_campaign_file).
CAMPAIGN_SCHEMA = Schema("campaign", [
    (1, SCHEMA + f"; INSERT OR IGNORE INTO meta VALUES('schema_version', '{SCHEMA_VERSION}')"),
    (2, _add_columns),
])


class Campaign:
    """One campaign database. Open an existing one with ``Campaign(path, create=False)``."""

    def __init__(self, path: str | Path, create: bool = False, readonly: bool = False):
        self.path = Path(path).expanduser()
        self.readonly = readonly
        if not create and not self.path.is_file():
            raise XmodalError(f"no campaign at {self.path}: start one with 'xmodal mitl propose'")
        if self.path.is_file() and self.path.stat().st_size > 0:
            check_campaign_file(self.path)
        if readonly:
            self.conn = open_readonly(self.path)
            check_not_newer(self.conn, CAMPAIGN_SCHEMA, self.path)  # read, but not misread
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # autocommit mode: transactions are opened explicitly in ``write``
            self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            migrate(self.conn, CAMPAIGN_SCHEMA, self.path)  # in place, in one BEGIN IMMEDIATE
        except sqlite3.DatabaseError as exc:
            raise XmodalError(f"{self.path} is not a usable campaign database: {exc}") from exc

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def resolve_path(self, path: str | None) -> str | None:
        """An image path as stored: absolute, or relative to the campaign file's folder."""
        if not path:
            return path
        p = Path(path).expanduser()
        return str(p if p.is_absolute() else (self.path.resolve().parent / p))

    def missing_images(self) -> list[str]:
        """Image paths (resolved) that are not files: the server cannot show these."""
        return [p for (raw,) in self.q("SELECT path FROM images WHERE path IS NOT NULL AND "
                                       "id IN (SELECT image_id FROM pairs)")
                if not Path(p := self.resolve_path(raw)).is_file()]

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: ``BEGIN IMMEDIATE`` takes the write lock before anything is read."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        return self.conn.execute(sql, args).fetchall()

    # ----- meta and results -----------------------------------------------------------------
    def meta(self, key: str, default: Any = None) -> Any:
        """A value stored with :meth:`set_meta` (JSON), or ``default``."""
        row = self.q("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(row[0][0]) if row else default

    def set_meta(self, conn: sqlite3.Connection, key: str, value: Any) -> None:
        conn.execute("INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                     "excluded.value", (key, json.dumps(value)))

    def set_meta_now(self, key: str, value: Any) -> None:
        with self.write() as c:
            self.set_meta(c, key, value)

    def save_result(self, name: str, value: Any) -> None:
        with self.write() as c:
            c.execute("INSERT INTO results VALUES(?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                      "json = excluded.json, created_at = excluded.created_at",
                      (name, json.dumps(value), time.time()))

    def result(self, name: str) -> Any:
        row = self.q("SELECT json FROM results WHERE name = ?", (name,))
        return json.loads(row[0][0]) if row else None

    # ----- workers --------------------------------------------------------------------------
    def add_worker(self, name: str, role: str = "worker") -> str:
        """Register a worker; returns the token (only its hash is stored)."""
        name = name.strip()
        if not name:
            raise XmodalError("a worker needs a non-empty name")
        if role not in ("worker", "reviewer"):
            raise XmodalError(f"role must be 'worker' or 'reviewer', not {role!r}")
        token = secrets.token_urlsafe(24)
        try:
            with self.write() as c:
                c.execute("INSERT INTO workers(name, token_sha256, role, created_at) "
                          "VALUES(?, ?, ?, ?)", (name, _hash(token), role, time.time()))
        except sqlite3.IntegrityError:
            raise XmodalError(f"a worker named {name!r} already exists in {self.path}") from None
        return token

    def reissue_token(self, name: str) -> str:
        """A new token for worker ``name``; the old token and its sessions stop working."""
        token = secrets.token_urlsafe(24)
        self._set_token_hash(name, _hash(token))
        return token

    def revoke_worker(self, name: str) -> None:
        """Worker ``name`` can no longer sign in (token and sessions refused); their judgments
        and HITs stay. ``reissue_token`` lets them in again."""
        self._set_token_hash(name, REVOKED + secrets.token_hex(16))

    def _set_token_hash(self, name: str, value: str) -> None:
        with self.write() as c:
            n = c.execute("UPDATE workers SET token_sha256 = ? WHERE name = ?",
                          (value, name)).rowcount
        if not n:
            known = ", ".join(w["name"] for w in self.workers()) or "none"
            raise XmodalError(f"no worker named {name!r} in {self.path} (workers: {known})")

    def worker_for(self, token: str | None) -> Worker | None:
        if not token:
            return None
        row = self.q("SELECT id, name, role FROM workers WHERE token_sha256 = ?", (_hash(token),))
        return Worker(*row[0]) if row else None

    def workers(self) -> list[dict[str, Any]]:
        rows = self.q(
            "SELECT w.name, w.role, COUNT(a.id), SUM(a.status = 'accepted'), "
            "SUM(a.status = 'review'), SUM(a.status = 'rejected'), "
            "substr(w.token_sha256, 1, ?) = ? FROM workers w "
            "LEFT JOIN assignments a ON a.worker_id = w.id AND a.submitted_at IS NOT NULL "
            "GROUP BY w.id ORDER BY w.id", (len(REVOKED), REVOKED))
        return [{"name": n, "role": r, "submitted": s, "accepted": a or 0, "review": v or 0,
                 "rejected": j or 0, "revoked": bool(x)} for n, r, s, a, v, j, x in rows]

    # ----- building the campaign ----------------------------------------------------------
    def add_items(self, conn, images: Iterable[tuple[str, str | None]],
                  texts: Iterable[tuple[str, str]]) -> None:
        conn.executemany("INSERT OR IGNORE INTO images VALUES(?, ?)", list(images))
        conn.executemany("INSERT OR IGNORE INTO texts VALUES(?, ?)", list(texts))

    def annotator_id(self, conn, name: str, spec: str) -> int:
        conn.execute("INSERT OR IGNORE INTO annotators(name, spec) VALUES(?, ?)", (name, spec))
        return conn.execute("SELECT id FROM annotators WHERE name = ?", (name,)).fetchone()[0]

    def query_id(self, conn, direction: str, item: str, round_: int) -> int:
        conn.execute("INSERT OR IGNORE INTO queries(direction, item, round) VALUES(?, ?, ?)",
                     (direction, item, round_))
        return conn.execute("SELECT id FROM queries WHERE direction = ? AND item = ?",
                            (direction, item)).fetchone()[0]

    def add_pair(self, conn, image_id: str, text_id: str, kind: str, round_: int) -> int:
        conn.execute("INSERT OR IGNORE INTO pairs(image_id, text_id, kind, round) "
                     "VALUES(?, ?, ?, ?)", (image_id, text_id, kind, round_))
        return conn.execute("SELECT id FROM pairs WHERE image_id = ? AND text_id = ?",
                            (image_id, text_id)).fetchone()[0]

    def unassigned_pairs(self, kinds: Sequence[str] = ("candidate", "original")) -> list[int]:
        marks = ",".join("?" * len(kinds))
        return [r[0] for r in self.q(
            f"SELECT id FROM pairs WHERE kind IN ({marks}) AND id NOT IN "
            f"(SELECT pair_id FROM hit_items WHERE role = 'judge') ORDER BY id", list(kinds))]

    def add_hit(self, conn, items: Sequence[tuple[int, str]], round_: int,
                replication: int) -> int:
        """A HIT of (pair id, role) items, in the order shown."""
        cur = conn.execute("INSERT INTO hits(round, replication, created_at) VALUES(?, ?, ?)",
                           (round_, replication, time.time()))
        hit = cur.lastrowid
        conn.executemany("INSERT INTO hit_items VALUES(?, ?, ?, ?)",
                         [(hit, pos, pid, role) for pos, (pid, role) in enumerate(items)])
        return hit

    # ----- judging --------------------------------------------------------------------------
    def _expire(self, conn, lease_s: float) -> None:
        conn.execute("UPDATE assignments SET status = 'expired' WHERE status = 'active' AND "
                     "COALESCE(active_at, started_at) < ?", (time.time() - lease_s,))

    def next_assignment(self, worker: Worker, lease_s: float = DEFAULT_LEASE_S) -> int | None:
        """The worker's open assignment, or a new one on a HIT that still has a free slot.

        HITs closest to complete go first, so finished HITs accumulate. None when nothing is
        left for this worker.
        """
        with self.write() as c:
            self._expire(c, lease_s)
            row = c.execute("SELECT id FROM assignments WHERE worker_id = ? AND status = "
                            "'active' ORDER BY id LIMIT 1", (worker.id,)).fetchone()
            if row:  # coming back is activity: the lease runs from now
                c.execute("UPDATE assignments SET active_at = ? WHERE id = ?",
                          (time.time(), row[0]))
                return row[0]
            gate = qualification_gate(c, worker.id)  # 'hits --qualify N': that HIT comes first
            if gate is not None:
                if gate < 0:
                    return None  # below the qualification's accuracy
                return c.execute("INSERT INTO assignments(hit_id, worker_id, status, "
                                 "started_at) VALUES(?, ?, 'active', ?)",
                                 (gate, worker.id, time.time())).lastrowid
            live = ",".join(f"'{s}'" for s in LIVE)
            row = c.execute(
                f"SELECT h.id FROM hits h LEFT JOIN assignments a ON a.hit_id = h.id AND "
                f"a.status IN ({live}) WHERE h.id NOT IN (SELECT hit_id FROM assignments WHERE "
                f"worker_id = ?) GROUP BY h.id HAVING COUNT(a.id) < h.replication "
                f"ORDER BY COUNT(a.id) DESC, h.id LIMIT 1", (worker.id,)).fetchone()
            if row is None:
                return None
            cur = c.execute("INSERT INTO assignments(hit_id, worker_id, status, started_at) "
                            "VALUES(?, ?, 'active', ?)", (row[0], worker.id, time.time()))
            return cur.lastrowid

    def assignment(self, assignment_id: int, worker: Worker) -> dict[str, Any]:
        row = self.q("SELECT hit_id, status, draft, draft_version FROM assignments WHERE id = ? "
                     "AND worker_id = ?", (assignment_id, worker.id))
        if not row:
            raise XmodalError(f"assignment {assignment_id} is not yours")
        hit, status, draft, version = row[0]
        return {"assignment": assignment_id, "hit": hit, "status": status,
                "items": [i.__dict__ for i in self.hit_items(hit)],
                "draft": json.loads(draft) if draft else {}, "version": version}

    def hit_items(self, hit_id: int) -> list[Item]:
        rows = self.q("SELECT hi.position, p.id, p.image_id, p.text_id, t.text FROM hit_items hi "
                      "JOIN pairs p ON p.id = hi.pair_id JOIN texts t ON t.id = p.text_id "
                      "WHERE hi.hit_id = ? ORDER BY hi.position", (hit_id,))
        return [Item(*r) for r in rows]

    def save_draft(self, assignment_id: int, worker: Worker, draft: dict[str, Any],
                   version: int | None = None) -> int:
        """Store the draft (a save is activity: the lease runs from now); returns its new
        version. With ``version``, a draft changed since that version (another tab) is refused."""
        with self.write() as c:
            row = c.execute("SELECT draft_version FROM assignments WHERE id = ? AND worker_id = ? "
                            "AND status = 'active'", (assignment_id, worker.id)).fetchone()
            if row is None:
                raise CampaignConflict(f"assignment {assignment_id} is not open for you")
            if version is not None and row[0] != version:
                raise CampaignConflict(
                    f"this HIT's answers were changed in another tab or window (version "
                    f"{row[0]}, this page has {version}); reload them or merge")
            c.execute("UPDATE assignments SET draft = ?, draft_version = draft_version + 1, "
                      "active_at = ? WHERE id = ?", (json.dumps(draft), time.time(), assignment_id))
            return row[0] + 1

    def submit(self, assignment_id: int, worker: Worker,
               answers: dict[int, tuple[int | None, str | None]],
               allow_unjudged: bool = False, lease_s: float = DEFAULT_LEASE_S) -> str:
        """Store a whole HIT's answers in one transaction; returns 'accepted' or 'review'.

        ``answers`` maps pair id -> (answer 1-4, reason). Every pair of the HIT must be answered
        (``allow_unjudged`` lets simulated workers leave a pair without a recorded judgment
        as None). A wrong answer on a golden pair sends the HIT to review.
        """
        with self.write() as c:
            row = c.execute("SELECT hit_id, status, COALESCE(active_at, started_at) FROM "
                            "assignments WHERE id = ? AND worker_id = ?",
                            (assignment_id, worker.id)).fetchone()
            if row is None:
                raise XmodalError(f"assignment {assignment_id} is not yours")
            hit, status, started = row
            if status == "active" and started < time.time() - lease_s:
                status = "expired"
            if status == "expired":  # a late submission keeps its slot only if it is still free
                live = ",".join(f"'{s}'" for s in LIVE)
                taken, replication = c.execute(
                    f"SELECT (SELECT COUNT(*) FROM assignments WHERE hit_id = ? AND id != ? AND "
                    f"status IN ({live})), replication FROM hits WHERE id = ?",
                    (hit, assignment_id, hit)).fetchone()
                if taken >= replication:
                    raise CampaignConflict("this HIT's lease expired and its slot was taken by "
                                      "another worker; ask for a new HIT")
            elif status != "active":
                raise CampaignConflict(f"assignment {assignment_id} was already submitted")
            kinds = dict(c.execute("SELECT pair_id, role FROM hit_items WHERE hit_id = ?",
                                   (hit,)).fetchall())
            extra = set(answers) - set(kinds)
            if extra:
                raise XmodalError(f"pairs {sorted(extra)} are not in this HIT")
            rows = []
            for pid in kinds:
                answer, reason = answers.get(pid, (None, None))
                if answer is None and not allow_unjudged:
                    raise XmodalError(f"the HIT is incomplete: pair {pid} has no answer")
                if answer is not None and answer not in (SKIP, 1, 2, 3, 4):
                    raise XmodalError(f"answer for pair {pid} must be 1-4 (or 0, can't tell), "
                                      f"got {answer!r}")
                if answer == SKIP:  # can't tell: stored as no answer, counts as no judgment
                    answer = None
                reason = (reason or "").strip()
                if len(reason) > MAX_REASON_CHARS:  # refused whole, never cut
                    raise XmodalError(f"the reason for pair {pid} has {len(reason):,} characters; "
                                      f"the limit is {MAX_REASON_CHARS:,}")
                rows.append((assignment_id, pid, answer, reason or None))
            c.executemany("INSERT INTO judgments VALUES(?, ?, ?, ?)", rows)
            gold_ok = all(is_gold_correct(kinds[pid], a) for _, pid, a, _ in rows
                          if kinds[pid].startswith("gold") and a is not None)
            outcome = "accepted" if gold_ok else "review"
            q = entry_test(c)
            if q is not None and q["hit"] == hit:  # the entry test: passed or not, no review
                outcome = ("accepted" if entry_passed(c, hit, assignment_id, q["min_accuracy"])
                           else "rejected")
            c.execute("UPDATE assignments SET status = ?, submitted_at = ?, draft = NULL WHERE "
                      "id = ?", (outcome, time.time(), assignment_id))
            return outcome

    # ----- review ---------------------------------------------------------------------------
    def review_queue(self) -> list[dict[str, Any]]:
        rows = self.q("SELECT a.id, a.hit_id, w.name, a.submitted_at FROM assignments a JOIN "
                      "workers w ON w.id = a.worker_id JOIN hits h ON h.id = a.hit_id WHERE "
                      "a.status = 'review' AND h.replication > 0 ORDER BY a.id")
        out = []
        for aid, hit, name, at in rows:
            items = self.q(
                "SELECT p.id, p.image_id, p.text_id, t.text, CASE hi.role WHEN 'judge' THEN "
                "p.kind ELSE hi.role END, j.answer, j.reason FROM "
                "judgments j JOIN pairs p ON p.id = j.pair_id JOIN texts t ON t.id = p.text_id "
                "JOIN hit_items hi ON hi.pair_id = p.id AND hi.hit_id = ? WHERE "
                "j.assignment_id = ? ORDER BY hi.position", (hit, aid))
            out.append({"assignment": aid, "hit": hit, "worker": name, "submitted_at": at,
                        "items": [dict(zip(("pair_id", "image_id", "text_id", "text", "kind",
                                            "answer", "reason"), r)) for r in items]})
        return out

    def decide(self, assignment_id: int, reviewer: Worker, decision: str, note: str = "") -> None:
        if reviewer.role != "reviewer":
            raise XmodalError("only a reviewer may accept or reject a HIT")
        if decision not in ("accept", "reject"):
            raise XmodalError(f"decision must be 'accept' or 'reject', not {decision!r}")
        with self.write() as c:
            own = c.execute("SELECT worker_id FROM assignments WHERE id = ?",
                            (assignment_id,)).fetchone()
            if own is not None and own[0] == reviewer.id:
                raise SelfReview("a reviewer cannot accept or reject their own HIT; another "
                                 "reviewer decides it")
            cur = c.execute("UPDATE assignments SET status = ? WHERE id = ? AND status = 'review'",
                            ("accepted" if decision == "accept" else "rejected", assignment_id))
            if cur.rowcount != 1:
                raise CampaignConflict(f"assignment {assignment_id} is not waiting for review")
            c.execute("INSERT INTO reviews VALUES(?, ?, ?, ?, ?)",
                      (assignment_id, reviewer.id, decision, note or None, time.time()))

    # ----- reading judgments ----------------------------------------------------------------
    def image_path(self, image_id: str) -> str | None:
        row = self.q("SELECT path FROM images WHERE id = ?", (image_id,))
        return self.resolve_path(row[0][0]) if row else None

    def accepted_judgments(self) -> list[tuple[int, str, str, str, str, int | None]]:
        """(pair id, image id, text id, kind, worker, answer) of every accepted assignment's
        pairs to judge (the golden checks left out)."""
        return self.q(
            "SELECT p.id, p.image_id, p.text_id, p.kind, w.name, j.answer FROM judgments j "
            "JOIN assignments a ON a.id = j.assignment_id JOIN workers w ON w.id = a.worker_id "
            "JOIN hit_items hi ON hi.hit_id = a.hit_id AND hi.pair_id = j.pair_id "
            "JOIN pairs p ON p.id = j.pair_id WHERE a.status = 'accepted' AND hi.role = 'judge' "
            "ORDER BY p.id, w.id")

    def submitted_gold(self) -> list[tuple[str, str, int | None]]:
        """(worker, gold role, answer) over every accepted assignment, for gold accuracy
        (HITs waiting for review or rejected do not count, as for the verdicts)."""
        return self.q(
            "SELECT w.name, hi.role, j.answer FROM judgments j JOIN assignments a ON "
            "a.id = j.assignment_id JOIN workers w ON w.id = a.worker_id JOIN hit_items hi ON "
            "hi.hit_id = a.hit_id AND hi.pair_id = j.pair_id JOIN hits h ON h.id = a.hit_id "
            "WHERE hi.role != 'judge' AND a.status = 'accepted' AND h.replication > 0")

    def progress(self) -> dict[str, Any]:
        """Counts of the campaign; HITs and assignments are the real HITs' (the entry test,
        a HIT of replication 0, is counted apart), ``workers`` the people who judge (not the
        reviewers)."""
        one = lambda sql: self.q(sql)[0][0]  # noqa: E731
        real = "FROM assignments a JOIN hits h ON h.id = a.hit_id WHERE h.replication > 0 AND "
        out = {
            "queries": one("SELECT COUNT(*) FROM queries"),
            "candidates": one("SELECT COUNT(*) FROM pairs WHERE kind = 'candidate'"),
            "originals": one("SELECT COUNT(*) FROM pairs WHERE kind = 'original'"),
            "hits": one("SELECT COUNT(*) FROM hits WHERE replication > 0"),
            "slots": one("SELECT COALESCE(SUM(replication), 0) FROM hits"),
            "submitted": one(f"SELECT COUNT(*) {real} a.submitted_at IS NOT NULL"),
            "accepted": one(f"SELECT COUNT(*) {real} a.status = 'accepted'"),
            "review": one(f"SELECT COUNT(*) {real} a.status = 'review'"),
            "rejected": one(f"SELECT COUNT(*) {real} a.status = 'rejected'"),
            "workers": one("SELECT COUNT(*) FROM workers WHERE role = 'worker'"),
            "reviewers": one("SELECT COUNT(*) FROM workers WHERE role = 'reviewer'"),
        }
        q = self.meta("qualify")
        if q:
            taken = self.q("SELECT status, COUNT(*) FROM assignments WHERE hit_id = ? AND "
                           "submitted_at IS NOT NULL GROUP BY status", (q["hit"],))
            by = dict(taken)
            out["entry_test"] = {"pairs": q["n"], "pass_mark": q["min_accuracy"],
                                 "taken": sum(by.values()), "passed": by.get("accepted", 0),
                                 "failed": by.get("rejected", 0)}
        return out
