"""xmodal index --watch: new photos searchable within seconds, deleted ones gone, renamed ones not
embedded again, and kill -9 of the watcher loses nothing committed."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.fake_models import ColourModel
from xmodal.index import PhotoIndex

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"
SLOW = "python:tests.fake_models:SlowColourModel"


def solid(path: Path, colour) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 30), colour).save(path)
    return path


class Watcher:
    """``xmodal index FOLDER --watch --json`` in a subprocess, its JSON lines in a queue."""

    def __init__(self, folder: Path, db: Path, model: str = FAKE):
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xmodal", "index", str(folder), "--db", str(db), "--model",
             model, "--watch", "--json", "-q", "--debounce-ms", "200"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.strip():
                self.lines.put(json.loads(line))

    def next(self, timeout: float = 30) -> dict:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise AssertionError(f"no update from the watcher: {self.proc.stderr.read()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _wait_for(predicate, timeout: float) -> float:
    """Seconds until ``predicate()`` held; fails after ``timeout``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s")


def _paths(db: Path, query: str, k: int = 10) -> list[str]:
    index = PhotoIndex(db, model=ColourModel(), create=False)
    try:
        return [r.path for r in index.search(query, k)]
    finally:
        index.close()


def test_watch_adds_removes_and_renames(tmp_path):
    folder = tmp_path / "photos"
    solid(folder / "red.png", (250, 0, 0))
    solid(folder / "green.png", (0, 250, 0))
    db = tmp_path / "p.db"
    w = Watcher(folder, db)
    try:
        first = w.next(60)
        assert first["added"] == 2
        # a new photo, copied in: found by search within 5 s
        t0 = time.monotonic()
        solid(tmp_path / "blue.png", (0, 0, 250))
        shutil.copyfile(tmp_path / "blue.png", folder / "blue.png")
        _wait_for(lambda: str(folder / "blue.png") in _paths(db, "blue", 1), 5)
        assert time.monotonic() - t0 < 5
        # deleted: gone from search within 5 s
        os.remove(folder / "green.png")
        _wait_for(lambda: str(folder / "green.png") not in _paths(db, "green"), 5)
        # the watcher reports an update after committing it: wait for the deletion's report, so
        # that it is not counted with the rename's below
        seen = [w.next(10)]
        while sum(m["deleted"] for m in seen) < 1:
            seen.append(w.next(10))
        while not w.lines.empty():
            w.lines.get()
        # renamed into a new folder: found under its new name, its vector reused
        (folder / "2024").mkdir()
        os.rename(folder / "red.png", folder / "2024" / "red renamed.png")
        _wait_for(lambda: _paths(db, "red", 1) == [str(folder / "2024" / "red renamed.png")], 5)
        moves = [w.next(10)]
        while not w.lines.empty():
            moves.append(w.lines.get())
        assert sum(m["reused"] for m in moves) == 1
        assert sum(m["added"] for m in moves) == 1 and sum(m["deleted"] for m in moves) == 1
        assert w.proc.poll() is None
    finally:
        w.stop()
    assert w.proc.returncode is not None


def test_kill_9_of_the_watcher_loses_nothing(tmp_path):
    folder = tmp_path / "photos"
    solid(folder / "first.png", (250, 250, 250))
    db = tmp_path / "p.db"
    w = Watcher(folder, db, model=SLOW)  # 0.1 s an image: the kill lands mid-run
    try:
        assert w.next(60)["added"] == 1
        colours = [(10 * i, 200 - 5 * i, 100) for i in range(40)]
        for i, c in enumerate(colours):
            solid(folder / "burst" / f"{i:02d}.png", c)

        def some_committed() -> bool:
            index = PhotoIndex(db, model=ColourModel(), create=False)
            try:
                return index.stats()["indexed"] > 1 + 16  # at least one batch of 16 written
            finally:
                index.close()

        _wait_for(some_committed, 30)
        w.proc.send_signal(signal.SIGKILL)
        w.proc.wait(10)
    finally:
        w.stop()
    index = PhotoIndex(db, model=ColourModel(), create=False)
    before = index.stats()["indexed"]
    assert 17 <= before <= 41
    assert len(index.search("white", 50)) == before  # the index opens and answers
    index.close()
    again = subprocess.run(
        [sys.executable, "-m", "xmodal", "index", str(folder), "--db", str(db), "--model", FAKE,
         "--json", "-q"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    stats = json.loads(again.stdout)
    assert stats["unchanged"] == before and stats["added"] == 41 - before


def test_watch_refuses_a_missing_folder(tmp_path):
    from xmodal.errors import XmodalError
    from xmodal.index.watch import watch

    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    with pytest.raises(XmodalError, match="not a folder"):
        next(watch(index, tmp_path / "nope"))
