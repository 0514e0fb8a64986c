"""Machine-in-the-loop campaigns: propose -> HITs -> judge -> aggregate -> export -> eval.

Independent oracles: candidate sets recomputed with a full argsort, hand-computed verdicts,
Kendall τ on orderings whose τ is known, R@1 recomputed with numpy from the exported files.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient
from mitl_fixtures import (build_campaign, folder_protocol, gold_answers, judging_app,
                           score_files)
from typer.testing import CliRunner

from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.mitl.aggregate import agreement, summarize, verdicts
from xmodal.mitl.hits import make_hits
from xmodal.mitl.propose import load_annotator, propose
from xmodal.mitl.store import Campaign, CampaignConflict

runner = CliRunner()


def _cli(*args):
    result = runner.invoke(cli_app, [str(a) for a in args])
    return result


def _worker(campaign, name, role="worker"):
    return campaign.worker_for(campaign.add_worker(name, role))


def _finish(campaign, worker, wrong=False):
    """The worker takes and submits HITs until none is left; returns the outcomes."""
    outcomes = []
    while (aid := campaign.next_assignment(worker)) is not None:
        payload = campaign.assignment(aid, worker)
        outcomes.append(campaign.submit(aid, worker, gold_answers(campaign, payload, wrong)))
    return outcomes


# -- propose and HITs ------------------------------------------------------------------------
def test_propose_matches_a_full_sort(tmp_path):
    protocol = folder_protocol(tmp_path)
    files = score_files(tmp_path, 2)
    anns = [load_annotator(f"a{k}={p}", protocol) for k, p in enumerate(files)]
    c = Campaign(tmp_path / "c.db", create=True)
    stats = propose(c, protocol, anns, n_queries=None, k=3)
    rel = protocol.directions["i2t"].relevance.toarray()
    expected = {}
    for a in anns:
        s = a.scores["i2t"]
        pairs = set()
        for i in range(s.shape[0]):  # i2t: top texts per image
            pairs |= {(i, t) for t in np.argsort(-s[i], kind="stable")[:3] if not rel[i, t]}
        for t in range(s.shape[1]):  # t2i: top images per text
            pairs |= {(i, t) for i in np.argsort(-s[:, t], kind="stable")[:3] if not rel[i, t]}
        expected[a.name] = pairs
    for name, pairs in expected.items():
        assert stats["annotators"][name]["candidates"] == len(pairs)
    union = expected["a0"] | expected["a1"]
    assert stats["unique_candidates"] == len(union)
    assert stats["annotators"]["a0"]["unique"] == len(expected["a0"] - expected["a1"])
    assert stats["overlap"]["a0|a1"]["shared"] == len(expected["a0"] & expected["a1"])
    assert c.progress()["candidates"] == len(union)
    # nothing that is already positive became a candidate
    ids = protocol.directions["i2t"]
    for img, txt in c.q("SELECT image_id, text_id FROM pairs"):
        assert not rel[ids.image_ids.index(img), ids.text_ids.index(txt)]
    assert c.result("propose-round1") == stats


def test_hits_hold_candidates_once_plus_one_gold_of_each_kind(tmp_path):
    c, protocol = build_campaign(tmp_path, size=5, replication=3)
    kinds = dict(c.q("SELECT id, kind FROM pairs"))
    roles = {(h, p): r for h, p, r in c.q("SELECT hit_id, pair_id, role FROM hit_items")}
    near = set(c.q("SELECT image_id, text_id FROM proposals"))
    pair = {pid: (i, t) for pid, i, t in c.q("SELECT id, image_id, text_id FROM pairs")}
    rel = protocol.directions["i2t"]
    seen = []
    for hit, replication in c.q("SELECT id, replication FROM hits"):
        assert replication == 3
        items = [pid for _, pid in c.q("SELECT position, pair_id FROM hit_items WHERE hit_id = ?",
                                       (hit,))]
        got = [roles[hit, p] for p in items]
        assert got.count("gold_pos") == 1 and got.count("gold_neg") == 1
        assert 3 <= len(items) <= 7
        for p in items:
            i, t = pair[p]
            positive = rel.relevance[rel.image_ids.index(i), rel.text_ids.index(t)]
            if roles[hit, p] == "gold_pos":
                assert positive
            elif roles[hit, p] == "gold_neg":
                assert not positive and (i, t) not in near
            else:
                assert kinds[p] == "candidate"
                seen.append(p)
    candidates = [p for p, k in kinds.items() if k == "candidate"]
    assert sorted(seen) == sorted(candidates)  # every candidate in exactly one HIT


# -- judging through the HTTP API ------------------------------------------------------------
@pytest.fixture()
def served(tmp_path):
    c, protocol = build_campaign(tmp_path)
    app = judging_app(tmp_path, c.path)
    with TestClient(app) as client:
        yield client, c, protocol, tmp_path


def _h(token):
    return {"X-Worker-Token": token}


def test_tokens_are_required_and_nothing_is_written_without_one(served):
    client, c, _, _ = served
    for headers in ({}, _h("not-a-token")):
        r = client.post("/api/mitl/next", headers=headers)
        assert r.status_code == 401 and "token" in r.json()["error"]["message"]
        r = client.post("/api/mitl/assignments/1/submit", headers=headers,
                        json={"answers": {"1": {"answer": 1}}})
        assert r.status_code == 401
    assert client.get("/api/mitl/assignments/1/items/x/image").status_code == 401
    assert client.get("/api/mitl/me?token=nope").status_code == 400  # no tokens in URLs
    assert c.q("SELECT COUNT(*) FROM assignments")[0][0] == 0
    assert c.q("SELECT COUNT(*) FROM judgments")[0][0] == 0


def test_api_loop_with_gold_failure_and_review(served):
    client, c, protocol, root = served
    alice, bob = c.add_worker("alice"), c.add_worker("bob")
    boss = c.add_worker("boss", "reviewer")
    # alice: a draft, a reload (same HIT and draft back), then a correct submission
    from xmodal.mitl.blind import id_map

    def by_item(payload, token, wrong=False, reason=None):
        """gold_answers re-keyed by the opaque item ids the worker sees."""
        raw = c.assignment(payload["assignment"], c.worker_for(token))
        right = gold_answers(c, raw, wrong)
        return {i: {"answer": right[p][0], **({"reason": reason} if reason else {})}
                for i, p in id_map(c, payload["assignment"]).items()}

    first = client.post("/api/mitl/next", headers=_h(alice)).json()
    aid, items = first["assignment"], first["items"]
    assert len(items) >= 3 and first["answers"]["1"] == "100% yes"
    r = client.put(f"/api/mitl/assignments/{aid}/draft", headers=_h(alice),
                   json={"answers": {items[0]["id"]: {"answer": 2}}, "position": 1})
    assert r.status_code == 200
    again = client.post("/api/mitl/next", headers=_h(alice)).json()
    assert again["assignment"] == aid and again["draft"]["position"] == 1
    assert again["draft"]["answers"] == {items[0]["id"]: {"answer": 2}}
    img = client.get(items[0]["image"], headers=_h(alice))
    assert img.status_code == 200 and img.headers["content-type"] == "image/jpeg"
    # an incomplete HIT is refused whole
    r = client.post(f"/api/mitl/assignments/{aid}/submit", headers=_h(alice),
                    json={"answers": {items[0]["id"]: {"answer": 1}}})
    assert r.status_code == 400 and "incomplete" in r.json()["error"]["message"]
    assert c.q("SELECT COUNT(*) FROM judgments")[0][0] == 0
    right = by_item(first, alice, reason="ok")
    r = client.post(f"/api/mitl/assignments/{aid}/submit", headers=_h(alice), json={"answers": right})
    assert r.json()["submitted"] is True
    assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,))[0][0] == "accepted"
    r = client.post(f"/api/mitl/assignments/{aid}/submit", headers=_h(alice), json={"answers": right})
    assert r.status_code == 409  # no second submission
    # bob fails the gold check: the HIT goes to review (bob is not told)
    nb = client.post("/api/mitl/next", headers=_h(bob)).json()
    wrong = by_item(nb, bob, wrong=True)
    r = client.post(f"/api/mitl/assignments/{nb['assignment']}/submit", headers=_h(bob),
                    json={"answers": wrong})
    assert r.json() == {"assignment": nb["assignment"], "submitted": True}
    assert c.q("SELECT status FROM assignments WHERE id = ?", (nb["assignment"],))[0][0] == \
        "review"
    assert client.get("/api/mitl/review", headers=_h(bob)).status_code == 403
    queue = client.get("/api/mitl/review", headers=_h(boss)).json()["queue"]
    assert [q["assignment"] for q in queue] == [nb["assignment"]]
    assert {it["kind"] for it in queue[0]["items"]} >= {"gold_pos", "gold_neg"}
    r = client.post(f"/api/mitl/review/{nb['assignment']}", headers=_h(boss),
                    json={"decision": "reject", "note": "gold wrong"})
    assert r.status_code == 200
    assert c.q("SELECT status FROM assignments WHERE id = ?", (nb["assignment"],))[0][0] == \
        "rejected"
    # the rejected slot is free again: a third worker can take that HIT
    carol = c.worker_for(c.add_worker("carol"))
    hits_open = {c.assignment(a, carol)["hit"] for a in [c.next_assignment(carol)]}
    assert hits_open  # carol gets work


def test_loop_to_export_and_eval_with_positives(tmp_path):
    c, protocol = build_campaign(tmp_path, judge_originals=True)
    for name in ("w1", "w2"):
        assert set(_finish(c, _worker(c, name))) == {"accepted"}
    found, _ = verdicts(c)
    assert found and all(v.positive for v in found)  # everyone answered "partially yes"
    out = tmp_path / "positives"
    r = _cli("mitl", "export", c.path, out)
    assert r.exit_code == 0, r.output
    i2c = json.loads((out / "image_to_caption.json").read_text())
    c2i = json.loads((out / "caption_to_image.json").read_text())
    d = protocol.directions["i2t"]
    rel = np.zeros((len(d.image_ids), len(d.text_ids)), bool)
    for i, caps in i2c.items():
        for t in caps:
            rel[d.image_ids.index(i), d.text_ids.index(t)] = True
    assert rel.sum() == d.relevance.nnz + sum(1 for v in found if v.kind == "candidate")
    assert sum(map(len, c2i.values())) == rel.sum()
    # xmodal eval against the extended positives: R@1 recomputed here
    scores = tmp_path / "annotator0.npy"
    r = _cli("eval", "-p", "folder", "--data", tmp_path / "photos", "--captions",
             tmp_path / "caps.csv", "--scores", scores, "--positives", out, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    s = np.load(scores)
    top = s.argmax(1)
    expected = np.mean([rel[i, top[i]] for i in range(len(top))])
    assert report["directions"]["i2t"]["R@1"] == pytest.approx(expected)
    plain = json.loads(_cli("eval", "-p", "folder", "--data", tmp_path / "photos", "--captions",
                            tmp_path / "caps.csv", "--scores", scores, "--json").stdout)
    assert report["directions"]["i2t"]["R@1"] >= plain["directions"]["i2t"]["R@1"]


# -- concurrency and crashes ---------------------------------------------------------------
def test_concurrent_workers_never_exceed_the_judgment_count(tmp_path):
    c, _ = build_campaign(tmp_path, size=3, replication=2)
    tokens = [c.add_worker(f"w{k}") for k in range(6)]
    errors = []

    def work(token):
        try:
            own = Campaign(c.path)  # one connection per thread, as the server does
            _finish(own, own.worker_for(token))
            own.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    counts = c.q("SELECT p.id, COUNT(j.pair_id) FROM pairs p LEFT JOIN judgments j ON "
                 "j.pair_id = p.id WHERE p.kind = 'candidate' GROUP BY p.id")
    assert counts and all(n == 2 for _, n in counts)  # exactly as asked: never more
    per_hit = c.q("SELECT hit_id, COUNT(*) FROM assignments GROUP BY hit_id")
    assert all(n == 2 for _, n in per_hit)
    assert not c.q("SELECT hit_id, worker_id, COUNT(*) FROM assignments GROUP BY hit_id, "
                   "worker_id HAVING COUNT(*) > 1")


def test_an_expired_lease_keeps_its_slot_only_if_free(tmp_path):
    c, _ = build_campaign(tmp_path, size=3, replication=1)
    slow, fast = _worker(c, "slow"), _worker(c, "fast")
    aid = c.next_assignment(slow)
    payload = c.assignment(aid, slow)
    c.conn.execute("UPDATE assignments SET started_at = 0 WHERE id = ?", (aid,))
    hit = c.assignment(aid, slow)["hit"]
    taken = c.next_assignment(fast)  # the expired slot goes to another worker
    assert c.assignment(taken, fast)["hit"] == hit
    with pytest.raises(CampaignConflict, match="slot was taken"):
        c.submit(aid, slow, gold_answers(c, payload))
    assert c.q("SELECT COUNT(*) FROM judgments WHERE assignment_id = ?", (aid,))[0][0] == 0


def test_kill_9_during_submissions_loses_nothing_and_leaves_no_half_hit(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import httpx
    from live_server import free_port

    c, _ = build_campaign(tmp_path, size=4, replication=3)
    tokens = [c.add_worker(f"w{k}") for k in range(4)]
    port = free_port()
    code = ("import uvicorn, sys; from xmodal.server import create_app; "
            "app = create_app(sys.argv[1] + '/none.db', reports_dir=sys.argv[1], "
            "thumbnail_dir=sys.argv[1] + '/t', campaign=sys.argv[1] + '/campaign.db'); "
            f"uvicorn.run(app, host='127.0.0.1', port={port}, log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    acknowledged: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(base + "/api/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        stop = threading.Event()

        roles = {(h, p): r for h, p, r in c.q("SELECT hit_id, pair_id, role FROM hit_items")}

        from xmodal.mitl.blind import id_map

        def work(token):
            own = Campaign(c.path)  # the worker's item ids -> pairs, on this thread's connection
            with httpx.Client(base_url=base, headers=_h(token), timeout=5) as http:
                while not stop.is_set():
                    try:
                        nxt = http.post("/api/mitl/next").json()
                        if nxt["assignment"] is None:
                            return
                        (hit,), = own.q("SELECT hit_id FROM assignments WHERE id = ?",
                                        (nxt["assignment"],))
                        answers = {i: {"answer": 4 if roles[hit, p] == "gold_neg" else 1}
                                   for i, p in id_map(own, nxt["assignment"]).items()}
                        r = http.post(f"/api/mitl/assignments/{nxt['assignment']}/submit",
                                      json={"answers": answers})
                        if r.status_code == 200:
                            acknowledged.append(nxt["assignment"])
                    except (httpx.HTTPError, KeyError, ValueError):
                        return

        threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acknowledged) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # mid-stream: other submissions are in flight
        proc.wait(timeout=10)
        stop.set()
        for t in threads:
            t.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(acknowledged) >= 6
    after = Campaign(c.path)
    assert after.q("PRAGMA integrity_check")[0][0] == "ok"
    submitted = {a for a, in after.q("SELECT id FROM assignments WHERE submitted_at IS NOT NULL")}
    assert set(acknowledged) <= submitted  # every acknowledged HIT is there
    sizes = dict(after.q("SELECT hit_id, COUNT(*) FROM hit_items GROUP BY hit_id"))
    for aid, hit, n in after.q("SELECT a.id, a.hit_id, COUNT(j.pair_id) FROM assignments a "
                               "LEFT JOIN judgments j ON j.assignment_id = a.id GROUP BY a.id"):
        assert n == (sizes[hit] if aid in submitted else 0)  # whole HITs only


# -- aggregation and simulation --------------------------------------------------------------
def _judge_hit(c, answers_by_worker):
    """Workers submit the first HIT with the given answer for every non-gold pair."""
    hit = None
    for name, answer in answers_by_worker.items():
        w = _worker(c, name)
        aid = c.next_assignment(w)
        payload = c.assignment(aid, w)
        hit = hit or payload["hit"]
        assert payload["hit"] == hit
        ans = gold_answers(c, payload)  # golden pairs right, the rest "partially yes" (2)
        c.submit(aid, w, {p: (answer if a == 2 else a, None) for p, (a, _) in ans.items()})
    return hit


def test_majority_verdicts_rules_and_ties(tmp_path):
    c, _ = build_campaign(tmp_path, size=3, replication=4)
    _judge_hit(c, {"a": 1, "b": 2, "c": 3, "d": 4})  # eccv: 2 yes / 2 no = tie; strict: 1 / 3
    found, _ = verdicts(c, "eccv", "negative")
    assert found and all(v.positive is False and len(v.answers) == 4 for v in found)
    assert all(v.positive for v in verdicts(c, "eccv", "positive")[0])
    assert all(v.positive is None for v in verdicts(c, "eccv", "unjudged")[0])
    assert all(v.positive is False for v in verdicts(c, "strict", "positive")[0])
    report = summarize(c)
    assert report["workers"]["a"] == {"gold": 2, "correct": 2, "accuracy": 1.0}
    with pytest.raises(XmodalError, match="rule"):
        verdicts(c, "lenient")


def test_low_gold_accuracy_workers_can_be_dropped(tmp_path):
    c, _ = build_campaign(tmp_path, size=3, replication=3)
    good = [_worker(c, n) for n in ("g1", "g2")]
    bad = _worker(c, "bad")
    for w in good:
        _finish(c, w)
    _finish(c, bad, wrong=True)
    for aid, in c.q("SELECT id FROM assignments WHERE status = 'review'"):
        c.decide(aid, _worker(c, f"rev{aid}", "reviewer"), "accept")
    report = summarize(c, min_gold_accuracy=0.7)
    assert report["workers"]["bad"]["accuracy"] == 0.0
    assert report["dropped_workers"] == ["bad"]
    assert all(len(v.answers) == 2 for v in verdicts(c, min_gold_accuracy=0.7)[0])


def test_agreement_is_krippendorff_alpha():
    from xmodal.mitl.aggregate import Verdict

    same = [Verdict(n, "i", "t", "candidate", (a, a, a), True) for n, a in
            enumerate([1, 4, 1, 4, 2])]
    assert agreement(same)["alpha_binary"] == pytest.approx(1.0)
    # by hand: units (yes, yes, no) and (no, no, no); coincidences o_yn = o_ny = 1 (unit 1:
    # 2 ordered yes-no pairs / (3 - 1)), n_yes = 2, n_no = 4, n = 6;
    # alpha = 1 - (n - 1) o_yn / (n_yes n_no) = 1 - 5/8
    mixed = [Verdict(0, "i", "t", "candidate", (1, 1, 4), True),
             Verdict(1, "i", "t", "candidate", (4, 4, 4), False)]
    assert agreement(mixed)["alpha_binary"] == pytest.approx(1 - 5 * 1 / (2 * 4))


def test_simulated_workers_answer_only_from_records(tmp_path):
    from xmodal.mitl.simulate import simulate

    c, protocol = build_campaign(tmp_path, size=4, replication=3)
    pairs = c.q("SELECT image_id, text_id, kind FROM pairs WHERE kind = 'candidate'")
    recorded = {(i, t): [1, 4, 2] for i, t, _ in pairs[::2]}  # half the candidates recorded
    counts = simulate(c, recorded, "expert")
    assert counts["submitted"] == c.q("SELECT COUNT(*) FROM hits")[0][0] * 3
    rows = c.q("SELECT p.image_id, p.text_id, w.name, j.answer FROM judgments j JOIN pairs p ON "
               "p.id = j.pair_id JOIN assignments a ON a.id = j.assignment_id JOIN workers w "
               "ON w.id = a.worker_id WHERE p.kind = 'candidate'")
    for image_id, text_id, worker, answer in rows:
        want = recorded.get((image_id, text_id))
        k = int(worker.rsplit("-", 1)[1])
        assert answer == (None if want is None else want[k])  # never invented
    found, _ = verdicts(c)
    judged = {(v.image_id, v.text_id) for v in found if v.positive is not None}
    assert judged == set(recorded)
    report = summarize(c)
    assert report["verdicts"]["candidate"]["unjudged"] == len(pairs) - len(recorded)


def test_expert_and_crowd_records_map_onto_the_scale(flickr8k):
    from xmodal.mitl.simulate import recorded_from_flickr8k

    e = flickr8k.expert[0]
    assert recorded_from_flickr8k(flickr8k, "expert")[(e.image_id, e.caption_id)] == \
        [5 - s for s in e.scores]
    cr = flickr8k.crowd[0]
    got = recorded_from_flickr8k(flickr8k, "crowd")[(cr.image_id, cr.caption_id)]
    assert got.count(1) == cr.n_yes and got.count(4) == cr.n_no


# -- the study's analyses --------------------------------------------------------------------
def test_benchmark_quality_and_kendall_by_hand(tmp_path):
    from xmodal.mitl.aggregate import Verdict
    from xmodal.mitl.study import benchmark_quality, kendall_table

    protocol = folder_protocol(tmp_path)
    d = protocol.directions["i2t"]
    img = d.image_ids[0]
    own = [t for t in d.text_ids if t.startswith(img)]
    other = [t for t in d.text_ids if not t.startswith(img)][:3]
    found = [Verdict(0, img, own[0], "original", (1,), True),
             Verdict(1, img, own[1], "original", (4,), False),
             Verdict(2, img, other[0], "candidate", (1,), True),
             Verdict(3, img, other[1], "candidate", (2,), True),
             Verdict(4, img, other[2], "candidate", (4,), False)]
    q = benchmark_quality(protocol, found, {"i2t": [img], "t2i": []})["i2t"]
    assert q["precision"] == pytest.approx(1 / 2)  # one of the two judged originals holds
    assert q["recall"] == pytest.approx(1 / 3)  # the originals are 1 of 3 verified positives
    cols = {"a": {"m1": 1, "m2": 2, "m3": 3}, "b": {"m1": 10, "m2": 20, "m3": 30},
            "c": {"m1": 3, "m2": 2, "m3": 1}}
    tau = kendall_table(cols)
    assert tau["a"]["b"] == pytest.approx(1.0) and tau["a"]["c"] == pytest.approx(-1.0)


# -- bad input -----------------------------------------------------------------------------
def test_bad_input_gets_clear_errors(tmp_path):
    protocol = folder_protocol(tmp_path)
    data = ["-p", "folder", "--data", tmp_path / "photos", "--captions", tmp_path / "caps.csv"]
    r = _cli("mitl", "propose", tmp_path / "x.db", "-p", "nope", "-a", "random")
    assert isinstance(r.exception, XmodalError) and "unknown protocol" in str(r.exception)
    r = _cli("mitl", "propose", tmp_path / "x.db", *data, "-a", "no-such-model")
    assert isinstance(r.exception, XmodalError) and "no-such-model" in str(r.exception)
    np.save(tmp_path / "wrong.npy", np.zeros((3, 4)))
    r = _cli("mitl", "propose", tmp_path / "x.db", *data, "-a", tmp_path / "wrong.npy")
    assert isinstance(r.exception, XmodalError)
    assert "wrong.npy" in str(r.exception) and "shape" in str(r.exception)
    assert not (tmp_path / "x.db").exists()  # nothing half-made
    r = _cli("mitl", "hits", tmp_path / "missing.db")
    assert isinstance(r.exception, XmodalError) and "no campaign" in str(r.exception)
    # an empty campaign: no candidates to bundle, nothing to export
    c = Campaign(tmp_path / "empty.db", create=True)
    c.set_meta_now("protocol", {"name": "folder", "data": str(tmp_path / "photos"),
                                "captions": str(tmp_path / "caps.csv")})
    with pytest.raises(XmodalError, match="no candidate pairs"):
        make_hits(c, protocol)
    r = _cli("mitl", "export", c.path, tmp_path / "out")
    assert isinstance(r.exception, XmodalError) and "nothing to export" in str(r.exception)
    # a judgment file with a bad line names the file and the line
    bad = tmp_path / "ExpertAnnotations.txt"
    bad.write_text("a.jpg\ta.jpg#2\t4\t4\t4\nb.jpg\tb.jpg#2\t4\tx\t4\n")
    from xmodal.mitl.simulate import read_judgment_file

    with pytest.raises(XmodalError, match="ExpertAnnotations.txt:2"):
        read_judgment_file(bad, "expert")
    bad.write_text("a.jpg\ta.jpg#2\t4\t9\t4\n")
    with pytest.raises(XmodalError, match="1-4"):
        read_judgment_file(bad, "expert")
    r = _cli("eval", *data, "--positives", tmp_path / "nowhere")
    assert isinstance(r.exception, XmodalError) and "nowhere" in str(r.exception)


def test_simulate_on_flickr8k_with_recorded_crowd_judgments(flickr8k_root, flickr8k, tmp_path):
    """The whole simulated loop on the Hodosh pool with score-file annotators (fast)."""
    from xmodal.eval.protocols import get_protocol

    protocol = get_protocol("flickr8k-hodosh", flickr8k_root.parent)
    d = protocol.directions["i2t"]
    rng = np.random.default_rng(0)
    files = []
    for k in range(3):
        s = rng.random((len(d.image_ids), len(d.text_ids)))
        s[np.arange(len(s)), np.arange(len(s))] += 0.5 * k  # some find the originals
        np.save(tmp_path / f"m{k}.npy", s)
        files.append(tmp_path / f"m{k}.npy")
    out = tmp_path / "pos"
    r = _cli("mitl", "simulate", "-p", "flickr8k-hodosh", "--judgments", "crowd", "--data",
             flickr8k_root.parent, "--campaign", tmp_path / "c.db", "-n", "40",
             "-a", f"a0={files[0]}", "-a", f"a1={files[1]}", "-m", f"m2={files[2]}",
             "--export", out, "--plot", tmp_path / "yield.png", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    crowd = {(cj.image_id, cj.caption_id) for cj in flickr8k.crowd}
    c = Campaign(tmp_path / "c.db")
    for name in ("a0", "a1"):
        pairs = {(i, t) for i, t in c.q(
            "SELECT p.image_id, p.text_id FROM proposals p JOIN annotators a ON a.id = "
            "p.annotator_id JOIN pairs x ON x.image_id = p.image_id AND x.text_id = p.text_id "
            "WHERE a.name = ? AND p.rank <= 5 AND x.kind = 'candidate'", (name,))}
        assert report["coverage"][name]["candidates"] == len(pairs)
        assert report["coverage"][name]["judged"] == len(pairs & crowd)
    assert set(report["table2"]) == {"i2t", "t2i"}
    assert len(report["table5"]["kendall"]["i2t"]) == 8
    assert set(report["bias"]["directions"]["i2t"]) == {"all", "a0", "a1"}
    assert report["bias"]["directions"]["i2t"]["all"]["tau_vs_all"] == pytest.approx(1.0)
    assert {"round 1", "round 2 targeted", "round 2 deeper"} == set(report["yield"])
    assert (tmp_path / "yield.png").stat().st_size > 1000
    assert (out / "image_to_caption.json").is_file()
