"""Issue 42: crowd studies you can pay for — entry tests nobody can learn from, platform imports
that honour the platform, identities nobody can mint, sign-in without a token in the history,
and the raw answers out.

Small generated campaigns (``mitl_fixtures``); API tests through FastAPI's TestClient.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from mitl_fixtures import build_campaign, gold_answers
from typer.testing import CliRunner

from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.mitl.store import Campaign

runner = CliRunner()


def _cli(*args):
    return runner.invoke(cli_app, [str(a) for a in args])


def _worker(c, name, role="worker"):
    return c.worker_for(c.add_worker(name, role))


def _app(c, tmp_path, **kw):
    from xmodal.server import create_app

    return create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                      campaign=c.path, **kw)


def _pairs(c, entry: bool) -> set[tuple[str, str]]:
    op = "=" if entry else ">"
    return set(c.q(f"SELECT p.image_id, p.text_id FROM hit_items hi JOIN hits h ON "
                   f"h.id = hi.hit_id JOIN pairs p ON p.id = hi.pair_id WHERE h.replication {op} 0"))


# ----- 1. the entry test -----------------------------------------------------------------------
@pytest.mark.parametrize("entry_first", [True, False])
def test_entry_test_pairs_are_never_shown_in_a_hit(tmp_path, entry_first):
    """'hits --qualify 6' drew the same check pairs as the HITs (the same seeded draw): whoever
    remembered the entry test knew the checks of half the HITs. Now the pools are separate,
    whichever comes first."""
    if entry_first:
        c, _ = build_campaign(tmp_path, qualify=6)
    else:
        c, _ = build_campaign(tmp_path)
        c.close()
        assert _cli("mitl", "hits", c.path, "--qualify", "6").exit_code == 0
        c = Campaign(c.path)
    entry, hits = _pairs(c, True), _pairs(c, False)
    assert len(entry) >= 4 and len(hits) > 20
    assert not entry & hits, sorted(entry & hits)


def test_the_entry_test_is_named_with_its_pass_mark_and_a_failure_is_told(tmp_path):
    c, _ = build_campaign(tmp_path, qualify=6)
    n_hits = c.q("SELECT COUNT(*) FROM hits WHERE replication > 0")[0][0]
    bad, rev = c.add_worker("bad"), c.add_worker("boss", "reviewer")
    app = _app(c, tmp_path)
    with TestClient(app) as client:
        h = {"X-Worker-Token": bad}
        first = client.post("/api/mitl/next", headers=h).json()
        # the page is told it is the entry test, its size and pass mark, and that it is no HIT
        assert first["entry_test"] == {"pairs": 6, "pass_mark": 0.8, "need": 5}
        assert first["number"] == 0 and first["left"] == n_hits
        w = c.worker_for(bad)
        c.submit(first["assignment"], w, gold_answers(c, c.assignment(first["assignment"], w),
                                                      wrong=True))
        after = client.post("/api/mitl/next", headers=h).json()
        # an honest end: failed, nothing left (it said 'No HITs left' while 6 were left)
        assert after["assignment"] is None and after["entry_test_failed"] is True
        assert after["left"] == 0
        # not a HIT waiting for a reviewer
        queue = client.get("/api/mitl/review", headers={"X-Worker-Token": rev}).json()["queue"]
        assert queue == []
    assert c.q("SELECT status FROM assignments WHERE hit_id = ?",
               (c.meta("qualify")["hit"],)) == [("rejected",)]
    c.close()
    r = _cli("mitl", "status", c.path, "--json")
    progress = json.loads(r.stdout)
    # HITs and submissions are the real ones; the reviewer is no worker
    assert progress["hits"] == n_hits and progress["submitted"] == 0
    assert progress["review"] == 0 and progress["workers"] == 1 and progress["reviewers"] == 1
    assert progress["entry_test"] == {"pairs": 6, "pass_mark": 0.8, "taken": 1, "passed": 0,
                                      "failed": 1}


def test_the_judge_page_names_the_entry_test_and_its_failure():
    from pathlib import Path

    import xmodal.server as server

    js = (Path(server.__file__).parent / "static" / "judge.js").read_text()
    assert "Entry test" in js and "entry_test_failed" in js and "did not pass the entry test" in js
