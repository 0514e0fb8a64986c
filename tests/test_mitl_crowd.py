"""Issue 33 item 7: crowd platforms both ways, in the platforms' own file formats.

The round trips: a Flickr8K campaign (score-file annotators, a few dozen pairs) is copied;
one copy is judged by ``xmodal mitl simulate``'s simulated workers, the other is exported for
MTurk / Label Studio, answered by a script that writes the platform's results file from the
same recorded crowd judgments, imported and aggregated: the verified positives must be the
same.
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.mitl.aggregate import verdicts
from xmodal.mitl.answers import ANSWERS
from xmodal.mitl.crowd import hit_table
from xmodal.mitl.store import Campaign

runner = CliRunner()
REPLICATION = 3


def _cli(*args):
    return runner.invoke(cli_app, [str(a) for a in args])


@pytest.fixture(scope="module")
def flickr_campaign(flickr8k_root, tmp_path_factory):
    """(campaign path, recorded crowd answers, simulated positives) on a small sample."""
    from xmodal.data import load_flickr8k
    from xmodal.eval.protocols import get_protocol
    from xmodal.mitl.hits import make_hits
    from xmodal.mitl.pipeline import copy_campaign
    from xmodal.mitl.propose import load_annotator, propose
    from xmodal.mitl.simulate import recorded_from_flickr8k, simulate

    root = tmp_path_factory.mktemp("crowd")
    protocol = get_protocol("flickr8k-hodosh", flickr8k_root.parent)
    d = protocol.directions["i2t"]
    rng = np.random.default_rng(0)
    annotators = []
    for k in range(2):
        s = rng.random((len(d.image_ids), len(d.text_ids)))
        s[np.arange(len(s)), np.arange(len(s))] += 0.5 * k
        np.save(root / f"m{k}.npy", s)
        annotators.append(load_annotator(f"m{k}={root / f'm{k}.npy'}", protocol))
    c = Campaign(root / "base.db", create=True)
    c.set_meta_now("protocol", {"name": protocol.name, "data": str(flickr8k_root.parent)})
    propose(c, protocol, annotators, n_queries=3, k=5, judge_originals=True)
    make_hits(c, protocol, size=8, replication=REPLICATION)
    ds = protocol.dataset if hasattr(protocol.dataset, "crowd") else load_flickr8k(flickr8k_root)
    recorded = recorded_from_flickr8k(ds, "crowd")
    sim = copy_campaign(c, root / "simulated.db")
    simulate(sim, recorded, "crowd")
    positives = {(v.image_id, v.text_id) for v in verdicts(sim)[0] if v.positive}
    judged = {(v.image_id, v.text_id) for v in verdicts(sim)[0] if v.positive is not None}
    sim.close()
    c.close()
    return root, recorded, positives, judged


def _fresh(root, name):
    from xmodal.mitl.pipeline import copy_campaign

    with Campaign(root / "base.db") as base:
        copy_campaign(base, root / name).close()
    return root / name


def _task_pairs(path):
    """Label Studio task key -> (image id, text id)."""
    from xmodal.mitl.crowd import ls_tasks, secret

    with Campaign(path) as c:
        return {it["ref"]: (it["image_id"], it["text_id"])
                for it in ls_tasks(hit_table(c), secret(c))}


def _items(path):
    """item ref -> (image id, text id): what the person answering sees in the image."""
    with Campaign(path) as c:
        return {it["ref"]: (it["image_id"], it["text_id"]) for h in hit_table(c)
                for it in h["items"]}


def test_mturk_round_trip_gives_the_simulated_positives(flickr_campaign, tmp_path):
    root, recorded, positives, judged = flickr_campaign
    assert positives and judged - positives, "the sample should hold positive and negative verdicts"
    db = _fresh(root, "mturk.db")
    out = tmp_path / "mturk-out"
    r = _cli("mitl", "crowd", "export", db, out, "--platform", "mturk", "--image-url",
             "https://example.org/hits/images")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    # opaque names only: no image id, text id or path of the campaign leaves
    names = sorted(p.name for p in (out / "images").iterdir())
    assert len(names) == info["images"] and all(re.fullmatch(r"[0-9a-f]{16}\.jpg", n)
                                                for n in names)
    text = (out / "mturk" / "input.csv").read_text()
    with Campaign(db) as c:
        for image_id, path in c.q("SELECT id, path FROM images WHERE id IN (SELECT image_id "
                                  "FROM pairs)"):
            assert image_id not in text and path not in text
        n_hits = c.q("SELECT COUNT(*) FROM hits")[0][0]
    with Campaign(db) as c:  # a caption with markup is escaped for MTurk's substitution
        c.conn.execute("UPDATE texts SET text = text || ' <b>x</b>' WHERE id = (SELECT text_id "
                       "FROM pairs LIMIT 1)")
    _cli("mitl", "crowd", "export", db, out, "--platform", "mturk", "--image-url",
         "https://example.org/hits/images")
    text = (out / "mturk" / "input.csv").read_text()
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>" not in text
    template = (out / "mturk" / "question.html").read_text()
    assert "<crowd-form" in template and "crowd-radio-button" in template
    assert "${image_1}" in template and "${item_1}" in template and 'name="hit"' in template
    # the "workers": three per HIT, each answering from the recorded crowd judgments
    items = _items(db)
    with open(out / "mturk" / "input.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == n_hits
    n = max(int(k.split("_")[1]) for k in rows[0] if k.startswith("item_"))
    results = []
    for h, row in enumerate(rows):
        for k in range(REPLICATION):
            out_row = {"HITId": f"HIT{h}", "AssignmentId": f"ASG{h}x{k}",
                       "WorkerId": f"AWORKER{k}", "AssignmentStatus": "Submitted",
                       "AcceptTime": "Sat Nov 28 02:00:00 PST 2026",
                       "SubmitTime": "Sat Nov 28 02:01:30 PST 2026",
                       "WorkTimeInSeconds": str(60 + 10 * k)}
            out_row.update({f"Input.{key}": v for key, v in row.items()})
            for j in range(1, n + 1):
                ref = row[f"item_{j}"]
                got = recorded.get(items[ref], []) if ref else []
                answer = got[k] if k < len(got) else None
                for v in ANSWERS:
                    out_row[f"Answer.item_{j}_a{v}.on"] = "true" if answer == v else "false"
                # no recorded judgment: the worker answers "can't tell" (0), no judgment
                out_row[f"Answer.item_{j}_a0.on"] = "true" if ref and answer is None else "false"
                out_row[f"Answer.item_{j}_reason"] = ""
            out_row["Answer.hit"] = row["hit"]
            results.append(out_row)
    batch = tmp_path / "Batch_1_batch_results.csv"
    with open(batch, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)
    r = _cli("mitl", "crowd", "import", db, batch)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["rows"] == len(results)
    assert summary.get("accepted", 0) + summary.get("review", 0) == len(results)
    # aggregated: the same verified positives as the simulation
    r = _cli("mitl", "aggregate", db, "--json")
    assert r.exit_code == 0, r.output
    with Campaign(db) as c:
        found = verdicts(c)[0]
        assert {(v.image_id, v.text_id) for v in found if v.positive} == positives
        assert {(v.image_id, v.text_id) for v in found if v.positive is not None} == judged
        ext = c.q("SELECT platform, external_id FROM external_workers ORDER BY external_id")
        assert ext == [("mturk", f"AWORKER{k}") for k in range(REPLICATION)]
    # the approve / reject file to upload back
    with open(summary["decisions"], newline="") as f:
        decided = list(csv.DictReader(f))
    assert len(decided) == len(results)
    assert {d["Approve"] for d in decided} <= {"x", ""}
    assert sum(d["Approve"] == "x" for d in decided) == summary.get("accepted", 0)
    # importing again adds nothing
    again = json.loads(_cli("mitl", "crowd", "import", db, batch).stdout)
    assert again.get("duplicate") == len(results) and "accepted" not in again
    # time and pay from WorkTimeInSeconds
    r = _cli("mitl", "crowd", "pay", db, "--reward", "0.10", "--json")
    assert r.exit_code == 0, r.output
    pay = json.loads(r.stdout)
    w0 = pay["workers"]["mturk:AWORKER0"]
    assert w0["median_s_per_hit"] == 60 and w0["hourly"] == pytest.approx(6.0)
    assert pay["workers"]["mturk:AWORKER2"]["hourly"] == pytest.approx(0.1 * 3600 / 80)


def test_label_studio_round_trip_gives_the_simulated_positives(flickr_campaign, tmp_path):
    root, recorded, positives, judged = flickr_campaign
    db = _fresh(root, "ls.db")
    out = tmp_path / "ls-out"
    r = _cli("mitl", "crowd", "export", db, out, "--platform", "label-studio", "--image-url",
             "http://localhost:8081/images")
    assert r.exit_code == 0, r.output
    tasks = json.loads((out / "label-studio" / "tasks.json").read_text())
    config = (out / "label-studio" / "config.xml").read_text()
    import xml.etree.ElementTree as ET

    view = ET.fromstring(config)
    choices = view.find("Choices")
    assert choices.get("name") == "answer" and choices.get("toName") == "image"
    assert [ch.get("value") for ch in choices] == [*ANSWERS.values(), "can't tell"]
    with Campaign(db) as c:
        n_pairs = c.q("SELECT COUNT(DISTINCT pair_id) FROM hit_items")[0][0]
    assert len(tasks) == n_pairs  # one task per pair: Label Studio assigns tasks, not HITs
    assert all(set(t["data"]) == {"image", "text"} for t in tasks)  # no ids in the data
    assert not any(t.get("predictions") for t in tasks)  # no pre-filled answers by default
    items = _task_pairs(db)
    assert {items[t["meta"]["xmodal"]] for t in tasks} == set(items.values())
    # Label Studio's JSON export: annotator k+1 answers every task from the recorded answers
    exported = []
    for n, task in enumerate(tasks):
        got = recorded.get(items[task["meta"]["xmodal"]], [])
        annotations = []
        for k in range(REPLICATION):
            answer = got[k] if k < len(got) else None
            annotations.append({
                "id": n * 10 + k, "completed_by": k + 1, "was_cancelled": answer is None,
                "result": [] if answer is None else [{
                    "from_name": "answer", "to_name": "image", "type": "choices",
                    "value": {"choices": [ANSWERS[answer]]}}],
                "lead_time": 5.0, "created_at": "2026-11-28T02:00:00.000000Z",
                "updated_at": "2026-11-28T02:00:05.000000Z"})
        exported.append({"id": n + 1, "data": task["data"], "meta": task["meta"],
                         "annotations": annotations, "predictions": []})
    export_file = tmp_path / "project-1-at-2026-11-28.json"
    export_file.write_text(json.dumps(exported))
    r = _cli("mitl", "crowd", "import", db, export_file)
    assert r.exit_code == 0, r.output
    with Campaign(db) as c:
        found = verdicts(c)[0]
        assert {(v.image_id, v.text_id) for v in found if v.positive} == positives
        assert {(v.image_id, v.text_id) for v in found if v.positive is not None} == judged
        assert c.q("SELECT COUNT(DISTINCT external_id) FROM external_workers WHERE platform = "
                   "'label-studio'")[0][0] == REPLICATION


def test_prolific_export_gives_the_study_link_and_a_completion_code(tmp_path):
    from mitl_fixtures import build_campaign

    c, _ = build_campaign(tmp_path)
    c.close()
    r = _cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform", "prolific",
             "--public-url", "https://judge.example.org")
    assert isinstance(r.exception, XmodalError) and "--study-id" in str(r.exception)
    r = _cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform", "prolific",
             "--public-url", "https://judge.example.org", "--study-id", "st1")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["study_url"] == ("https://judge.example.org/prolific?PROLIFIC_PID="
                                 "{{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID="
                                 "{{%SESSION_ID%}}")
    assert re.fullmatch(r"[0-9A-F]{8}", info["completion_code"])
    again = json.loads(_cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform",
                            "prolific").stdout)  # the study id is kept
    assert again["completion_code"] == info["completion_code"]  # stable


def test_bad_crowd_input_gets_clear_errors(tmp_path):
    from mitl_fixtures import build_campaign

    c, _ = build_campaign(tmp_path)
    c.close()
    r = _cli("mitl", "crowd", "export", c.path, tmp_path / "x", "--platform", "fiverr")
    assert isinstance(r.exception, XmodalError) and "mturk" in str(r.exception)
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    r = _cli("mitl", "crowd", "import", c.path, bad)
    assert isinstance(r.exception, XmodalError) and "AssignmentId" in str(r.exception)
    r = _cli("mitl", "crowd", "import", c.path, tmp_path / "missing.json")
    assert isinstance(r.exception, XmodalError) and "not found" in str(r.exception)


def test_prolific_link_registers_the_participant_and_ends_on_the_completion_code(tmp_path):
    from fastapi.testclient import TestClient
    from mitl_fixtures import build_campaign, gold_answers

    from xmodal.server import create_app

    c, _ = build_campaign(tmp_path)
    info = json.loads(_cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform",
                           "prolific", "--study-id", "s1").stdout)
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=c.path)
    with TestClient(app) as client:
        r = client.get("/prolific?PROLIFIC_PID=5f1a2b3c4d&STUDY_ID=s1&SESSION_ID=x9")
        assert r.status_code == 200
        assert 'href="/judge"' in r.text and "token" not in r.text  # signed in by the cookie
        assert client.get("/prolific/done").status_code == 409
        me = client.get("/api/mitl/me").json()
        assert me["name"] == "prolific:5f1a2b3c4d"
        (wid,), = c.q("SELECT worker_id FROM external_workers WHERE external_id = '5f1a2b3c4d'")
        from xmodal.mitl.store import Worker

        w = Worker(wid, me["name"], "worker")
        aid = c.next_assignment(w)
        c.submit(aid, w, gold_answers(c, c.assignment(aid, w)))
        r = client.get("/prolific/done")
        assert r.status_code == 200 and info["completion_code"] in r.text
        assert f"submissions/complete?cc={info['completion_code']}" in r.text
        # coming back registers no second worker and ends no session
        r = client.get("/prolific?PROLIFIC_PID=5f1a2b3c4d&STUDY_ID=s1&SESSION_ID=x9")
        assert r.status_code == 200 and client.get("/api/mitl/me").status_code == 200
        assert c.q("SELECT COUNT(*) FROM external_workers WHERE platform = 'prolific'")[0][0] == 1
        assert TestClient(app).get("/prolific?PROLIFIC_PID=<x>&STUDY_ID=s1&SESSION_ID=x"
                                   ).status_code == 400
        # another study's link, or none: refused
        assert TestClient(app).get("/prolific?PROLIFIC_PID=6a&STUDY_ID=other&SESSION_ID=y"
                                   ).status_code == 409
        # the code goes to the participant's browser only, not to whoever knows the PID
        assert TestClient(app).get("/prolific/done?PROLIFIC_PID=5f1a2b3c4d").status_code == 401


@pytest.mark.browser
def test_prolific_study_link_to_completion_code_in_chromium(tmp_path):
    """A participant opens the study link, judges a HIT on /judge, gets the completion code."""
    import time

    from live_server import chromium, live_server
    from mitl_fixtures import build_campaign

    from xmodal.server import create_app

    c, _ = build_campaign(tmp_path)
    info = json.loads(_cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform",
                           "prolific", "--study-id", "st1").stdout)
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=c.path)
    with live_server(app) as url, chromium() as browser:
        context = browser.new_context(viewport={"width": 1000, "height": 800})
        errors = []
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        study = info["study_url"].replace("https://YOUR-HOST", url)
        study = (study.replace("{{%PROLIFIC_PID%}}", "60a1b2c3d4e5f6")
                 .replace("{{%STUDY_ID%}}", "st1").replace("{{%SESSION_ID%}}", "se1"))
        page.goto(study)
        with context.expect_page() as opened:
            page.click("#start")
        judge = opened.value
        judge.set_default_timeout(10_000)
        judge.on("pageerror", lambda exc: errors.append(str(exc)))
        judge.wait_for_selector("#pair-view")
        for _ in range(40):  # answer every pair "1" until the summary shows
            if judge.is_visible("#summary"):
                break
            before = judge.inner_text("#progress-text")
            judge.keyboard.press("1")
            judge.wait_for_function(
                "b => document.querySelector('#progress-text').textContent !== b || "
                "!document.querySelector('#summary').hidden", arg=before)
        judge.click("#submit")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = c.q("SELECT COUNT(*) FROM assignments a JOIN external_workers e ON "
                       "e.worker_id = a.worker_id WHERE e.external_id = '60a1b2c3d4e5f6' AND "
                       "a.submitted_at IS NOT NULL")[0][0]
            if done:
                break
            time.sleep(0.2)
        assert done == 1
        page.click("#done")
        page.wait_for_selector("#code")
        assert page.inner_text("#code") == info["completion_code"]
        assert page.get_attribute("#complete", "href").endswith(
            f"cc={info['completion_code']}")
        context.close()
        assert not errors, errors


def test_pay_counts_people_judging_here_too(tmp_path):
    from mitl_fixtures import build_campaign, gold_answers

    c, _ = build_campaign(tmp_path)
    w = c.worker_for(c.add_worker("alice"))
    aid = c.next_assignment(w)
    c.submit(aid, w, gold_answers(c, c.assignment(aid, w)))
    c.conn.execute("UPDATE assignments SET started_at = submitted_at - 90 WHERE id = ?", (aid,))
    c.close()
    r = _cli("mitl", "crowd", "pay", c.path, "--reward", "0.5", "--fee", "0.2", "--json")
    assert r.exit_code == 0, r.output
    pay = json.loads(r.stdout)
    assert pay["workers"]["alice"]["median_s_per_hit"] == pytest.approx(90)
    assert pay["workers"]["alice"]["hourly"] == pytest.approx(20.0)
    assert pay["cost"] == pytest.approx(0.6)
    r = _cli("mitl", "crowd", "pay", c.path, "--reward", "0.5")
    assert r.exit_code == 0 and "alice" in r.output


@pytest.mark.browser
def test_mturk_template_filled_like_mturk_shows_one_block_per_pair_in_chromium(tmp_path):
    """The question template with a short HIT's CSV row substituted (as MTurk does): the empty
    blocks go, and submitting with a pair unanswered is stopped."""
    from live_server import chromium
    from mitl_fixtures import build_campaign

    c, _ = build_campaign(tmp_path, size=4)
    c.close()
    out = tmp_path / "m"
    assert _cli("mitl", "crowd", "export", c.path, out, "--platform", "mturk").exit_code == 0
    with open(out / "mturk" / "input.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    n = max(int(k.split("_")[1]) for k in rows[0] if k.startswith("item_"))
    row = min(rows, key=lambda r: sum(bool(r[f"item_{k}"]) for k in range(1, n + 1)))
    used = sum(bool(row[f"item_{k}"]) for k in range(1, n + 1))
    assert used < n  # a shorter HIT: its extra blocks are empty
    html = (out / "mturk" / "question.html").read_text()
    for key, value in row.items():
        html = html.replace("${" + key + "}", value)
    assert "${" not in html
    with chromium() as browser:
        page = browser.new_page()
        page.route("**/*", lambda route: route.abort() if "crowd.aws" in route.request.url
                   else route.continue_())
        page.set_content(html, wait_until="domcontentloaded")
        assert page.locator("section.pair").count() == used
        assert page.locator("section.pair img").first.get_attribute("src").startswith(
            "https://YOUR-HOST/images/")
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.evaluate("document.querySelector('crowd-form').dispatchEvent("
                      "new Event('submit', {cancelable: true}))")
        assert dialogs and "answer every pair" in dialogs[0]
