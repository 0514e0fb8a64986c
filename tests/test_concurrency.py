"""Concurrent use, as documented, with real processes: nothing acknowledged is lost, no 500.

(a) ``xmodal serve --campaign`` while a worker drafts and submits over HTTP, with ``xmodal mitl
workers add / revoke / reissue``, ``aggregate``, ``status`` and ``export`` run beside it (the
guide says so: docs/mitl.md); (b) ``xmodal serve`` over a photo index while clients search, with
``xmodal index``, ``forget`` and ``prune`` run beside it; (c) ``xmodal index --watch`` beside a
second ``xmodal index`` of the same database. Every server listens on 127.0.0.1 and every
process started here is stopped in a ``finally``. The write-ahead log must survive while a
server holds the database open (an admin command that closed a plain file descriptor of it
once made SQLite delete the live WAL, issue 41).

``pytest --count 20 tests/test_concurrency.py`` (pytest-repeat) runs them 20 times in a row.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image

from live_server import free_port, stop_group

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("XMODAL_DB", None)
    return env


def xmodal(*args, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "xmodal", *map(str, args)], cwd=REPO,
                         env=_env(), capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    if check:
        assert run.returncode == 0, f"{args}\n{run.stderr[-3000:]}"
    return run


@contextmanager
def serving(*args):
    """``xmodal serve ARGS`` on a free port of 127.0.0.1; yields its base URL; always stopped."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "xmodal", "serve", *map(str, args), "--host",
                             "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                            cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the server did not start"
            try:
                urllib.request.urlopen(base + "/api/health", timeout=5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        _, err = stop_group(proc, signal.SIGTERM)
        assert "Traceback" not in err, err[-3000:]


def call(base: str, method: str, path: str, body=None, headers=None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            json_body = r.headers.get("content-type", "").startswith("application/json")
            return r.status, json.loads(raw or b"null") if json_body else raw
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


class Beside(threading.Thread):
    """Runs command lines one after another until stopped; records failures."""

    def __init__(self, commands, wal: Path | None = None):
        super().__init__(daemon=True)
        self.commands, self.wal = commands, wal
        self.stop, self.failures, self.runs, self.wal_missing = threading.Event(), [], 0, 0

    def run(self):
        n = 0
        while not self.stop.is_set():
            args = self.commands(n)
            n += 1
            try:
                r = xmodal(*args, check=False)
                if r.returncode != 0:
                    self.failures.append((args, r.stderr[-1500:]))
            except AssertionError as exc:
                self.failures.append((args, str(exc)[-1500:]))
            self.runs += 1
            if self.wal is not None and not self.wal.exists():
                self.wal_missing += 1


# ------------------------------------------------------------------- (a) the judging server

def _right_answers(db: Path, assignment: int) -> dict[str, int]:
    """Opaque item id -> an answer that passes the HIT's check pairs (read through SQLite)."""
    from xmodal.mitl.blind import id_map
    from xmodal.mitl.store import Campaign

    with Campaign(db, readonly=True) as c:
        roles = dict(c.q("SELECT pair_id, role FROM hit_items WHERE hit_id = (SELECT hit_id "
                         "FROM assignments WHERE id = ?)", (assignment,)))
        return {item: {"gold_pos": 1, "gold_neg": 4}.get(roles[pid], 2)
                for item, pid in id_map(c, assignment).items()}


def test_admin_commands_beside_the_judging_server_lose_no_judgment(tmp_path):
    from mitl_fixtures import build_campaign

    campaign, _ = build_campaign(tmp_path, size=4, replication=2, n_queries=8)
    token = campaign.add_worker("alice")
    n_hits = campaign.q("SELECT COUNT(*) FROM hits")[0][0]
    campaign.close()
    db = tmp_path / "campaign.db"
    wal = Path(str(db) + "-wal")
    out = tmp_path / "exported"

    def admin(n):
        k = n % 6
        return [("mitl", "workers", "add", db, f"w{n}"), ("mitl", "workers", "reissue", db,
                 f"w{n - 1}"), ("mitl", "workers", "revoke", db, f"w{n - 2}"),
                ("mitl", "aggregate", db, "--json"), ("mitl", "status", db, "--json"),
                ("mitl", "export", db, out)][k]

    submitted, drafts, errors = [], 0, []
    with serving("--campaign", db, "--db", tmp_path / "none.db") as base:
        auth = {"X-Worker-Token": token}
        beside = Beside(admin, wal)
        beside.start()
        try:
            while True:
                status, hit = call(base, "POST", "/api/mitl/next", {}, auth)
                assert status == 200, hit
                if hit["assignment"] is None:
                    break
                aid, items = hit["assignment"], [it["id"] for it in hit["items"]]
                version, right = hit["version"], _right_answers(db, aid)
                # the page loads the HIT's images and the progress at once: several server
                # threads, each with its own connection
                with ThreadPoolExecutor(6) as pool:
                    loads = list(pool.map(lambda path: call(base, "GET", path, headers=auth),
                                          [f"/api/mitl/assignments/{aid}/items/{it}/image"
                                           for it in items] + ["/api/mitl/progress"] * 3))
                errors += [(s, b) for s, b in loads if s != 200]
                for i in range(len(items)):  # one draft save per answer, as the page does
                    status, saved = call(base, "PUT", f"/api/mitl/assignments/{aid}/draft",
                                         {"answers": {it: {"answer": right[it]}
                                                      for it in items[:i + 1]},
                                          "position": i, "version": version}, auth)
                    if status != 200:
                        errors.append((status, saved))
                        break
                    version, drafts = saved["version"], drafts + 1
                    time.sleep(0.05)  # a person answering: the admin commands interleave
                status, done = call(base, "POST", f"/api/mitl/assignments/{aid}/submit",
                                    {"answers": {it: {"answer": right[it]} for it in items}},
                                    auth)
                if status != 200:
                    errors.append((status, done))
                    continue
                submitted.append((aid, len(items)))
                assert wal.exists(), "the WAL was deleted while the server had it open"
            deadline = time.monotonic() + 120
            while beside.runs < 6 and time.monotonic() < deadline:  # a whole round beside it
                status, progress = call(base, "GET", "/api/mitl/progress", headers=auth)
                if status != 200:
                    errors.append((status, progress))
                time.sleep(0.2)
        finally:
            beside.stop.set()
            beside.join(timeout=180)
        status, me = call(base, "GET", "/api/mitl/me", headers=auth)
        assert status == 200, me
    assert not errors, errors[:3]
    assert beside.runs >= 6 and beside.wal_missing == 0, (beside.runs, beside.wal_missing)
    # export before the first accepted HIT says so; nothing else may fail
    real = [f for f in beside.failures if "no accepted judgments yet" not in " ".join(f[1].split())]
    assert not real, real[:3]
    assert len(submitted) == n_hits and drafts > 0
    with sqlite3.connect(db) as conn:  # every acknowledged submission is in the file
        for aid, n_items in submitted:
            status = conn.execute("SELECT status FROM assignments WHERE id = ?",
                                  (aid,)).fetchone()
            assert status and status[0] == "accepted", (aid, status)
            got = conn.execute("SELECT COUNT(*) FROM judgments WHERE assignment_id = ?",
                               (aid,)).fetchone()[0]
            assert got == n_items, (aid, got, n_items)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --------------------------------------------------------------------- (b) the photo server

def _photos(folder: Path, names_colours) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, colour in names_colours:
        Image.new("RGB", (48, 36), colour).save(folder / name)


def _unique(n: int) -> tuple[int, int, int]:
    """A colour no other photo here has (byte-identical copies are shown once)."""
    return 40 + n % 150, 60 + (n // 150) % 150, 90


COLOURS = [(230, 20, 20), (20, 230, 20), (20, 20, 230), (230, 230, 20), (20, 230, 230),
           (230, 20, 230)]


def test_index_forget_and_prune_beside_the_photo_server_while_clients_search(tmp_path):
    home = tmp_path / "home"
    _photos(home, [(f"h{i}.png", c) for i, c in enumerate(COLOURS)])
    db = tmp_path / "photos.db"
    xmodal("index", home, "--db", db, "--model", FAKE, "-q")
    wal = Path(str(db) + "-wal")
    extra = tmp_path / "extra"
    gone = tmp_path / "gone"

    def admin(n):
        k = n % 4
        if k == 0:  # a new folder, indexed beside the server
            _photos(extra, [(f"e{n}.png", _unique(n))])
            return ("index", extra, "--db", db, "-q")
        if k == 1:
            return ("forget", extra, "--db", db, "--json")
        if k == 2:  # a folder whose photos were deleted meanwhile
            _photos(gone, [(f"g{n}.png", _unique(1000 + n))])
            xmodal("index", gone, "--db", db, "-q")
            shutil.rmtree(gone)
            return ("prune", "--db", db, "--json")
        return ("photos", "--db", db, "--json")

    answers, bad = 0, []
    with serving("--db", db) as base:
        beside = Beside(admin, wal)
        beside.start()
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and (beside.runs < 4 or answers < 20):
                for q in ("red", "a green square", "blue"):
                    status, got = call(base, "GET", f"/api/search?q={q.replace(' ', '+')}"
                                                    "&k=20&min_score=0")
                    answers += 1
                    if status != 200:
                        bad.append((status, got))
                    else:  # the photos indexed before the server started are always found
                        paths = {r["path"] for r in got["results"]}
                        if not {f"h{i}.png" for i in range(len(COLOURS))} <= \
                                {Path(p).name for p in paths}:
                            bad.append(("missing", sorted(paths)))
                assert wal.exists(), "the WAL was deleted while the server had it open"
        finally:
            beside.stop.set()
            beside.join(timeout=180)
    assert not bad, bad[:3]
    assert not beside.failures, beside.failures[:3]
    assert beside.wal_missing == 0 and beside.runs >= 4
    final = json.loads(xmodal("photos", "--db", db, "--json").stdout)
    # home's photos plus extra's if its last step was an index (forget removes them all)
    last_indexed = (beside.runs - 1) % 4 in (0,)  # runs ended after an index of extra
    expected = len(COLOURS) + (len(list(extra.glob("*.png"))) if last_indexed else 0)
    assert final["files"] == expected, (final, beside.runs)


# ------------------------------------------------------- (c) index --watch beside an index

def test_a_second_index_beside_index_watch_loses_and_duplicates_nothing(tmp_path):
    watched, other = tmp_path / "watched", tmp_path / "other"
    _photos(watched, [(f"w{i}.png", c) for i, c in enumerate(COLOURS[:3])])
    _photos(other, [(f"o{i}.png", c) for i, c in enumerate(COLOURS[3:])])
    db = tmp_path / "photos.db"
    wal = Path(str(db) + "-wal")
    log = tmp_path / "watch.jsonl"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "xmodal", "index", str(watched), "--db",
                                 str(db), "--model", FAKE, "--watch", "--json", "-q",
                                 "--debounce-ms", "200"], cwd=REPO, env=_env(), text=True,
                                stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    updates, busy = [], 0

    def next_update(timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            done = [x for x in log.read_text().splitlines(keepends=True) if x.endswith("\n")]
            if len(done) > len(updates):
                updates.append(json.loads(done[len(updates)]))
                return updates[-1]
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the watcher printed no update"
            time.sleep(0.1)

    try:
        assert next_update()["added"] == 3  # the first pass
        for n in range(4):
            # a change the watcher sees, and at once a second index of the same database
            _photos(watched, [(f"new{n}.png", COLOURS[(n + 2) % len(COLOURS)])])
            _photos(other, [(f"more{n}.png", COLOURS[n % len(COLOURS)])])
            while True:
                r = xmodal("index", other, "--db", db, "--json", "-q", check=False)
                if r.returncode == 0:
                    break
                assert "is updating" in r.stderr, r.stderr[-2000:]  # the writer lock: retry
                busy += 1
                time.sleep(0.2)
            assert wal.exists()
            deadline = time.monotonic() + 60
            while True:  # the watcher indexes the new photo (after waiting for the lock)
                stats = json.loads(xmodal("photos", "--db", db, "--json").stdout)
                if stats["files"] == 3 + 3 + 2 * (n + 1):
                    break
                assert time.monotonic() < deadline, (stats, updates)
                time.sleep(0.3)
    finally:
        _, err = stop_group(proc)
    assert "Traceback" not in err, err[-3000:]
    with sqlite3.connect(db) as conn:
        paths = [r[0] for r in conn.execute("SELECT path FROM files WHERE status = 'ok'")]
    assert len(paths) == len(set(paths)) == 3 + 3 + 8, sorted(paths)
    assert {Path(p).name for p in paths} >= {f"new{n}.png" for n in range(4)}
