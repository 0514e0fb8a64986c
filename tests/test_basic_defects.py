"""Defects a new user hit on a fresh machine (issue 41): each test failed before its fix.

- ``xmodal eval`` without ``--json`` (its ``--output`` parameter hid the output console);
- a second ``Campaign`` in a serving process read the file with a plain ``open()``, whose close
  dropped the process's SQLite locks, so an admin command beside the server deleted the live WAL;
- deeply nested JSON bodies answered 500 (RecursionError) on the judging API.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from mitl_fixtures import build_campaign, judging_app
from typer.testing import CliRunner

from xmodal.cli import app

DEEP = b"[" * 30_000 + b"]" * 30_000


def _wikipedia_available() -> bool:
    from xmodal.paths import data_root

    return (data_root() / "wikipedia").is_dir()


@pytest.mark.skipif(not _wikipedia_available(), reason="needs the Wikipedia features (XMODAL_DATA)")
def test_eval_prints_a_table_without_json_and_with_an_output_file(tmp_path):
    runner = CliRunner()
    table = runner.invoke(app, ["eval", "-p", "wikipedia", "-m", "random"])
    assert table.exit_code == 0, table.output
    assert "wikipedia · random" in table.output and "i2t" in table.output
    report = tmp_path / "r.json"
    saved = runner.invoke(app, ["eval", "-p", "wikipedia", "-m", "random", "-o", str(report)])
    assert saved.exit_code == 0, saved.output
    assert "t2i" in saved.output
    assert set(json.loads(report.read_text())["directions"]) == {"i2t", "t2i"}


def test_an_admin_command_beside_open_campaigns_keeps_the_wal(tmp_path):
    """Two connections of one process (as the server's threads hold them), then an admin
    command in another process: the WAL must survive, and so must what was written."""
    from xmodal.mitl.store import Campaign

    first, _ = build_campaign(tmp_path)
    wal = first.path.with_name(first.path.name + "-wal")
    token = first.add_worker("alice")
    second = Campaign(first.path)  # what each server thread does
    assert wal.exists()
    done = subprocess.run([sys.executable, "-m", "xmodal", "mitl", "workers", "add",
                           str(first.path), "bob"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert wal.exists(), "the admin command's close deleted the live WAL"
    first.add_worker("carol")
    names = {r[0] for r in second.q("SELECT name FROM workers")}
    assert {"alice", "bob", "carol"} <= names
    assert token
    first.close()
    second.close()
    after = Campaign(first.path)
    assert {"alice", "bob", "carol"} <= {r[0] for r in after.q("SELECT name FROM workers")}
    after.close()


def test_a_non_campaign_file_is_still_refused(tmp_path):
    from xmodal.errors import XmodalError
    from xmodal.mitl.store import Campaign

    text = tmp_path / "notes.db"
    text.write_text("not a database at all, just text\n" * 10)
    with pytest.raises(XmodalError, match="not"):
        Campaign(text)
    assert text.read_text().startswith("not a database")


@pytest.fixture()
def judging(tmp_path):
    c, _ = build_campaign(tmp_path)
    app = judging_app(tmp_path, c.path)
    with TestClient(app) as client:
        yield client, c


def test_deeply_nested_json_never_answers_500(judging):
    client, c = judging
    headers = {"X-Worker-Token": c.add_worker("alice"), "Content-Type": "application/json"}
    first = client.post("/api/mitl/next", headers=headers)
    assert first.status_code == 200, first.text
    aid = first.json()["assignment"]
    routes = [("PUT", f"/api/mitl/assignments/{aid}/draft"),
              ("POST", f"/api/mitl/assignments/{aid}/submit"),
              ("POST", f"/api/mitl/review/{aid}"),
              ("POST", "/api/mitl/session")]
    for body in (DEEP, b'{"answers": ' + DEEP + b"}"):
        for method, url in routes:
            r = client.request(method, url, content=body, headers=headers)
            assert r.status_code < 500, (method, url, r.status_code, r.text[:200])
            assert "error" in r.json()
