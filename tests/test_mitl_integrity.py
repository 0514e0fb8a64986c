"""Issue 33 items 4, 6 and 8 (campaign parts): exports that match the aggregation, positives
that an evaluation report can trace, campaigns that work from any folder and read-only, files
that are not campaigns refused, gold accuracy over accepted HITs, a simulation that can run
again, small collections and the last HIT."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess

import pytest
from mitl_fixtures import build_campaign, gold_answers, score_files
from typer.testing import CliRunner

from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.mitl.aggregate import gold_accuracy, summarize, verdicts
from xmodal.mitl.store import Campaign

runner = CliRunner()


def _cli(*args):
    return runner.invoke(cli_app, [str(a) for a in args])


def _worker(c, name, role="worker"):
    return c.worker_for(c.add_worker(name, role))


def _finish(c, worker, judge_answer, wrong_gold=False):
    """The worker submits every HIT it can get: gold right (or wrong), pairs ``judge_answer``."""
    while (aid := c.next_assignment(worker)) is not None:
        payload = c.assignment(aid, worker)
        ans = gold_answers(c, payload, wrong_gold)
        c.submit(aid, worker, {p: (judge_answer if a == 2 else a, None)
                               for p, (a, _) in ans.items()})


def _split_campaign(tmp_path):
    """Two good workers disagree (yes / no); a third with every gold pair wrong says yes and
    is accepted by a reviewer: with her every pair is positive, without her none is."""
    c, protocol = build_campaign(tmp_path, size=4, replication=3)
    _finish(c, _worker(c, "yes"), 2)
    _finish(c, _worker(c, "no"), 4)
    _finish(c, _worker(c, "bad"), 1, wrong_gold=True)
    boss = _worker(c, "boss", "reviewer")
    for aid, in c.q("SELECT id FROM assignments WHERE status = 'review'"):
        c.decide(aid, boss, "accept")
    return c, protocol


def test_export_uses_the_settings_aggregate_ran_with(tmp_path):
    c, _ = _split_campaign(tmp_path)
    r = _cli("mitl", "aggregate", c.path, "--min-gold-accuracy", "0.5", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["dropped_workers"] == ["bad"]
    aggregated = sum(v["positive"] for v in report["verdicts"].values())
    assert aggregated == 0
    out = tmp_path / "pos"
    r = _cli("mitl", "export", c.path, out)
    assert r.exit_code == 0, r.output
    exported = json.loads(r.stdout)
    assert exported["verified_positive"] == aggregated  # not the unfiltered count
    record = json.loads((out / "mitl_export.json").read_text())
    assert record["aggregate"] == {"rule": "eccv", "ties": "negative", "min_gold_accuracy": 0.5}
    assert record["dropped_workers"] == ["bad"]
    # asking export for other settings than aggregate's is refused, naming both
    r = _cli("mitl", "export", c.path, tmp_path / "other", "--min-gold-accuracy", "0.1")
    assert isinstance(r.exception, XmodalError)
    assert "0.5" in str(r.exception) and "0.1" in str(r.exception)
    assert not (tmp_path / "other").exists()
    # the same setting given again is fine
    assert _cli("mitl", "export", c.path, tmp_path / "same", "--min-gold-accuracy",
                "0.5").exit_code == 0
    # without the filter everything is positive: the filter really changes the export
    everything = len([v for v in verdicts(c)[0] if v.positive])
    assert everything > 0


def test_eval_report_records_the_positives_source_and_digest(tmp_path):
    c, _ = _split_campaign(tmp_path)
    out = tmp_path / "pos"
    assert _cli("mitl", "export", c.path, out).exit_code == 0
    r = _cli("eval", "-p", "folder", "--data", tmp_path / "photos", "--captions",
             tmp_path / "caps.csv", "--scores", tmp_path / "annotator0.npy", "--positives", out,
             "--json")
    assert r.exit_code == 0, r.output
    pos = json.loads(r.stdout)["positives"]
    assert pos["source"] == str(out.resolve())
    import hashlib

    h = hashlib.sha256()
    for name in ("image_to_caption.json", "caption_to_image.json"):
        data = (out / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    assert pos["sha256"] == h.hexdigest()
    assert pos["matches_export"] is True
    assert pos["export"]["campaign"] == str(c.path.resolve())
    assert pos["export"]["aggregate"]["rule"] == "eccv"
    plain = json.loads(_cli("eval", "-p", "folder", "--data", tmp_path / "photos", "--captions",
                            tmp_path / "caps.csv", "--scores", tmp_path / "annotator0.npy",
                            "--json").stdout)
    assert "positives" not in plain


def test_a_campaign_proposed_with_relative_paths_works_from_another_folder(tmp_path,
                                                                           monkeypatch):
    from mitl_fixtures import make_folder

    work = tmp_path / "work"
    work.mkdir()
    make_folder(work)
    score_files(work, 1)
    monkeypatch.chdir(work)
    r = _cli("mitl", "propose", "c.db", "-p", "folder", "--data", "photos", "--captions",
             "caps.csv", "-a", "annotator0.npy", "-n", "6", "--json")
    assert r.exit_code == 0, r.output
    assert _cli("mitl", "hits", "c.db", "--size", "4", "--judgments", "1").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    c = Campaign(work / "c.db")
    for image_id, in c.q("SELECT DISTINCT image_id FROM pairs"):
        assert os.path.isfile(c.image_path(image_id))
    w = _worker(c, "w")
    _finish(c, w, 2)
    c.close()
    r = _cli("mitl", "export", work / "c.db", "pos")
    assert r.exit_code == 0, r.output
    assert (elsewhere / "pos" / "image_to_caption.json").is_file()
    # serve checks the images before anyone judges (uvicorn is not started here)
    import uvicorn

    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    r = _cli("serve", "--campaign", work / "c.db", "--db", tmp_path / "none.db",
             "--thumbnails", tmp_path / "t")
    assert r.exit_code == 0, r.output
    assert served
    # moved photos: a clear error listing them, and nothing served
    shutil.move(work / "photos", tmp_path / "moved")
    served.clear()
    r = _cli("serve", "--campaign", work / "c.db", "--db", tmp_path / "none.db",
             "--thumbnails", tmp_path / "t")
    assert isinstance(r.exception, XmodalError) and not served
    assert "not found" in str(r.exception) and str(work / "photos") in str(r.exception)


def test_a_sqlite_file_that_is_not_a_campaign_is_refused_and_left_alone(tmp_path):
    other = tmp_path / "photos.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    for args in (("status", other), ("workers", "add", other, "x"), ("hits", other)):
        r = _cli("mitl", *args)
        assert isinstance(r.exception, XmodalError), args
        assert "not an xmodal campaign" in str(r.exception)
    with pytest.raises(XmodalError, match="not an xmodal campaign"):
        Campaign(other, create=True)
    assert other.read_bytes() == before
    tables = {r[0] for r in sqlite3.connect(other).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"photos"}
    text = tmp_path / "notes.db"
    text.write_text("hello")
    r = _cli("mitl", "status", text)
    assert isinstance(r.exception, XmodalError) and "not an SQLite file" in str(r.exception)


def test_a_read_only_campaign_can_be_read_by_status_and_export(tmp_path):
    c, _ = _split_campaign(tmp_path)
    summarize(c)
    c.close()
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(c.path, ro / "c.db")
    out = tmp_path / "out"
    out.mkdir()
    db = ro / "c.db"
    if os.geteuid() == 0:  # root writes through file modes: make the files immutable instead
        lock = lambda on: subprocess.run(  # noqa: E731
            ["chattr", "+i" if on else "-i", str(db), str(ro)], capture_output=True)
        if lock(True).returncode != 0:
            pytest.skip("running as root and chattr +i is not allowed here")
    else:
        lock = lambda on: (os.chmod(db, 0o444 if on else 0o644),  # noqa: E731
                           os.chmod(ro, 0o555 if on else 0o755))
        lock(True)
    try:
        with pytest.raises((OSError, sqlite3.OperationalError)):
            (ro / "probe").write_text("x")  # really read-only
        r = _cli("mitl", "status", db, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["accepted"] > 0
        r = _cli("mitl", "export", db, out / "pos")
        assert r.exit_code == 0, r.output
        assert (out / "pos" / "image_to_caption.json").is_file()
    finally:
        lock(False)
    assert sorted(p.name for p in ro.iterdir()) == ["c.db"]


def test_gold_accuracy_counts_accepted_hits_only(tmp_path):
    c, _ = build_campaign(tmp_path, size=4, replication=3)
    _finish(c, _worker(c, "good"), 2)
    _finish(c, _worker(c, "bad"), 2, wrong_gold=True)
    assert "bad" not in gold_accuracy(c)  # in review: not counted yet
    boss = _worker(c, "boss", "reviewer")
    review = [a for a, in c.q("SELECT id FROM assignments WHERE status = 'review'")]
    c.decide(review[0], boss, "reject")
    for aid in review[1:]:
        c.decide(aid, boss, "accept")
    acc = gold_accuracy(c)
    assert acc["bad"]["gold"] == 2 * (len(review) - 1)  # the rejected HIT left out
    assert acc["good"]["accuracy"] == 1.0


def test_simulate_writes_into_a_named_or_temporary_folder_and_runs_again(
        flickr8k_root, tmp_path, monkeypatch):
    import numpy as np

    from xmodal.eval.protocols import get_protocol

    protocol = get_protocol("flickr8k-hodosh", flickr8k_root.parent)
    d = protocol.directions["i2t"]
    rng = np.random.default_rng(0)
    np.save(tmp_path / "m.npy", rng.random((len(d.image_ids), len(d.text_ids))))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    args = ["mitl", "simulate", "--judgments", "crowd", "--data", flickr8k_root.parent,
            "-n", "4", "-a", f"a={tmp_path / 'm.npy'}", "-m", f"b={tmp_path / 'm.npy'}",
            "--json"]
    reports = []
    for _ in range(2):
        r = _cli(*args, "--out", tmp_path / "sim")
        assert r.exit_code == 0, r.output
        reports.append(json.loads(r.stdout))
    assert reports[0]["campaign"] == str(tmp_path / "sim" / "mitl-flickr8k-hodosh-crowd.db")
    assert reports[0]["aggregate"]["verdicts"] == reports[1]["aggregate"]["verdicts"]
    r = _cli(*args)
    assert r.exit_code == 0, r.output
    tmp = json.loads(r.stdout)["campaign"]
    assert os.path.isfile(tmp) and not tmp.startswith(str(here))
    assert list(here.iterdir()) == []  # nothing written where it ran
    shutil.rmtree(os.path.dirname(tmp))
    # a file that is not a simulation is never replaced
    Campaign(tmp_path / "mine.db", create=True).close()
    r = _cli(*args, "--campaign", tmp_path / "mine.db")
    assert isinstance(r.exception, XmodalError) and "not a simulated campaign" in str(
        r.exception)


# -- small collections, gold choices, HIT sizes, messages (item 8) ---------------------------
def _propose_small(tmp_path, *extra):
    from mitl_fixtures import make_folder

    make_folder(tmp_path)
    files = score_files(tmp_path, 1)
    return _cli("mitl", "propose", tmp_path / "c.db", "-p", "folder", "--data",
                tmp_path / "photos", "--captions", tmp_path / "caps.csv", "-a", files[0],
                "-n", "0", "--json", *extra)


def test_a_small_collection_is_refused_at_propose_unless_gold_is_none_or_given(tmp_path):
    r = _propose_small(tmp_path)
    assert isinstance(r.exception, XmodalError)
    assert "--gold none" in str(r.exception) and "--gold FILE" in str(r.exception)
    assert not (tmp_path / "c.db").exists()
    # no check pairs
    r = _propose_small(tmp_path, "--gold", "none")
    assert r.exit_code == 0, r.output
    r = _cli("mitl", "hits", tmp_path / "c.db", "--size", "6")
    assert r.exit_code == 0, r.output
    with Campaign(tmp_path / "c.db") as c:
        assert c.q("SELECT COUNT(*) FROM hits")[0][0] > 0
        assert {r for r, in c.q("SELECT DISTINCT role FROM hit_items")} == {"judge"}
    # user-supplied gold pairs, checked at propose
    (tmp_path / "c.db").unlink()
    gold = tmp_path / "gold.csv"
    gold.write_text("image_id,text_id,label\np00.jpg,p00.jpg#0,positive\np01.jpg,nope,negative\n")
    r = _propose_small(tmp_path, "--gold", gold)
    assert isinstance(r.exception, XmodalError) and "gold.csv:3" in str(r.exception)
    assert not (tmp_path / "c.db").exists()
    from xmodal.eval.protocols import get_protocol

    protocol = get_protocol("folder", tmp_path / "photos", captions=tmp_path / "caps.csv")
    d = protocol.directions["i2t"]
    pos = (d.image_ids[0], d.text_ids[d.relevance[0].indices[0]])
    neg = (d.image_ids[1], d.text_ids[d.relevance[5].indices[0]])
    gold.write_text(f"image_id,text_id,label\n{pos[0]},{pos[1]},positive\n"
                    f"{neg[0]},{neg[1]},negative\n")
    r = _propose_small(tmp_path, "--gold", gold)
    assert r.exit_code == 0, r.output
    assert _cli("mitl", "hits", tmp_path / "c.db", "--size", "6").exit_code == 0
    with Campaign(tmp_path / "c.db") as c:
        got = set(c.q("SELECT hi.role, p.image_id, p.text_id FROM hit_items hi JOIN pairs p "
                      "ON p.id = hi.pair_id WHERE hi.role != 'judge'"))
        assert got == {("gold_pos", *pos), ("gold_neg", *neg)}


def test_the_last_tiny_hit_is_folded_into_the_one_before(tmp_path):
    from xmodal.mitl.hits import chunks

    assert [len(c) for c in chunks(list(range(33)), 16)] == [16, 17]  # not 16 + 16 + 1
    assert [len(c) for c in chunks(list(range(40)), 16)] == [16, 16, 8]
    assert [len(c) for c in chunks(list(range(3)), 16)] == [3]
    c, _ = build_campaign(tmp_path, size=5, replication=1)
    sizes = [n for n, in c.q("SELECT COUNT(*) FROM hit_items WHERE role = 'judge' GROUP BY "
                             "hit_id")]
    assert min(sizes) * 2 >= 5 and sum(sizes) == c.progress()["candidates"]


def test_hits_after_everything_is_bundled_says_what_to_do(tmp_path):
    c, _ = build_campaign(tmp_path)
    c.close()
    r = _cli("mitl", "hits", c.path)
    assert isinstance(r.exception, XmodalError)
    msg = str(r.exception)
    assert "already in one of the" in msg and "next-round" in msg and "propose first" not in msg


def test_an_entry_test_comes_before_real_hits_and_keeps_out_who_fails_it(tmp_path):
    from mitl_fixtures import gold_answers as right_answers

    c, _ = build_campaign(tmp_path)
    n_hits = c.q("SELECT COUNT(*) FROM hits")[0][0]
    c.close()
    r = _cli("mitl", "hits", c.path, "--qualify", "6", "--min-accuracy", "0.8")
    assert r.exit_code == 0, r.output
    c = Campaign(c.path)
    q = c.meta("qualify")
    assert q["n"] >= 4 and c.q("SELECT COUNT(*) FROM hits")[0][0] == n_hits + 1
    slots = c.progress()["slots"]
    good, bad = _worker(c, "good"), _worker(c, "bad")
    for w, wrong in ((good, False), (bad, True)):
        aid = c.next_assignment(w)
        payload = c.assignment(aid, w)
        assert payload["hit"] == q["hit"]  # the entry test first
        c.submit(aid, w, right_answers(c, payload, wrong))
    assert c.next_assignment(bad) is None  # failed: no real HIT
    aid = c.next_assignment(good)
    assert aid is not None and c.assignment(aid, good)["hit"] != q["hit"]
    assert c.progress()["slots"] == slots  # the entry test holds no judgment slots
    from xmodal.mitl.crowd import hit_table

    assert q["hit"] not in {h["hit"] for h in hit_table(c)}  # never exported to platforms
    r = _cli("mitl", "hits", c.path, "--qualify", "4")
    assert isinstance(r.exception, XmodalError) and "already" in str(r.exception)
