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


def test_pay_counts_the_entry_test_on_its_own_line(tmp_path):
    """An entry test is no paid HIT: it is left out of the HITs, their time and their cost, and
    counted apart (unpaid unless --entry-reward names its reward)."""
    c, _ = build_campaign(tmp_path, qualify=6)
    for name, wrong in (("alice", False), ("bob", True)):
        w = c.worker_for(c.add_worker(name))
        entry = c.next_assignment(w)  # the entry test comes first
        c.submit(entry, w, gold_answers(c, c.assignment(entry, w), wrong=wrong))
        c.conn.execute("UPDATE assignments SET started_at = submitted_at - 30 WHERE id = ?",
                       (entry,))
    alice = c.worker_for(c.add_worker("alice2"))  # a third worker: entry test, then one HIT
    entry = c.next_assignment(alice)
    c.submit(entry, alice, gold_answers(c, c.assignment(entry, alice)))
    hit = c.next_assignment(alice)
    c.submit(hit, alice, gold_answers(c, c.assignment(hit, alice)))
    c.conn.execute("UPDATE assignments SET started_at = submitted_at - 50 WHERE id = ?", (entry,))
    c.conn.execute("UPDATE assignments SET started_at = submitted_at - 90 WHERE id = ?", (hit,))
    c.close()
    r = _cli("mitl", "crowd", "pay", c.path, "--reward", "0.5", "--fee", "0.2", "--json")
    assert r.exit_code == 0, r.output
    pay = json.loads(r.stdout)
    # the HITs: alice2's one HIT of 90 s, paid 0.5 + 20 % fee
    assert pay["paid_hits"] == 1 and pay["cost"] == pytest.approx(0.6)
    assert pay["median_s_per_hit"] == pytest.approx(90) and pay["hourly"] == pytest.approx(20)
    assert pay["workers"]["alice2"] == {
        "hits": 1, "paid_hits": 1, "mean_s_per_hit": pytest.approx(90),
        "median_s_per_hit": pytest.approx(90), "hourly": pytest.approx(20), "earned": 0.5,
        "entry_test": "passed"}
    assert pay["workers"]["bob"]["hits"] == 0 and pay["workers"]["bob"]["earned"] == 0
    assert pay["workers"]["bob"]["entry_test"] == "failed"
    # the entry test: its own line, unpaid by default (MTurk's qualification tests are)
    assert pay["entry_test"] == {"taken": 3, "passed": 2, "failed": 1, "reward": 0.0,
                                 "paid": 0, "median_s": pytest.approx(30), "cost": 0.0}
    r = _cli("mitl", "crowd", "pay", c.path, "--reward", "0.5", "--fee", "0.2",
             "--entry-reward", "0.1", "--json")
    pay = json.loads(r.stdout)
    assert pay["entry_test"]["paid"] == 3 and pay["entry_test"]["cost"] == pytest.approx(0.36)
    assert pay["workers"]["bob"]["earned"] == pytest.approx(0.1)
    assert pay["workers"]["alice2"]["earned"] == pytest.approx(0.6)
    assert pay["cost"] == pytest.approx(0.96)  # HITs and entry tests, with fees
    r = _cli("mitl", "crowd", "pay", c.path, "--reward", "0.5", "--entry-reward", "0.1")
    assert r.exit_code == 0 and "entry test" in r.output and "3 taken" in r.output, r.output


# ----- 2. MTurk import -------------------------------------------------------------------------
def _mturk_export(c, tmp_path):
    """(input rows, item ref -> role) of the campaign's MTurk export."""
    import csv

    from xmodal.mitl.crowd import hit_table

    out = tmp_path / "m"
    r = _cli("mitl", "crowd", "export", c.path, out, "--platform", "mturk")
    assert r.exit_code == 0, r.output
    with open(out / "mturk" / "input.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    roles = {it["ref"]: it["role"] for h in hit_table(c) for it in h["items"]}
    return rows, roles


def _mturk_row(row, roles, worker, assignment, status="Submitted", wrong=False, **extra):
    """A batch results row as MTurk writes it: the checks right (or wrong), the rest '2'."""
    out = {"HITId": "H" + row["hit"][:6], "AssignmentId": assignment, "WorkerId": worker,
           "AssignmentStatus": status, "AcceptTime": "Sat Nov 28 02:00:00 PST 2026",
           "SubmitTime": "Sat Nov 28 02:01:00 PST 2026", "WorkTimeInSeconds": "60",
           "RequesterFeedback": "", "Answer.feedback": "nice", "Extra": "kept"}
    out.update({f"Input.{k}": v for k, v in row.items()})
    k = 1
    while f"item_{k}" in row:
        role = roles.get(row[f"item_{k}"])
        answer = {"gold_pos": 4 if wrong else 1, "gold_neg": 1 if wrong else 4}.get(role, 2)
        for v in (1, 2, 3, 4):
            out[f"Answer.item_{k}_a{v}.on"] = "true" if role and v == answer else "false"
        out[f"Answer.item_{k}_reason"] = ""
        k += 1
    out.update(extra)
    return out


def _write_csv(path, rows):
    import csv

    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def test_mturk_import_honours_mturk_decisions_and_names_every_row(tmp_path):
    import csv

    c, _ = build_campaign(tmp_path, replication=2)
    (a, b), roles = _mturk_export(c, tmp_path)[0][:2], _mturk_export(c, tmp_path)[1]
    rows = [
        _mturk_row(a, roles, "W1", "A1"),                               # line 2: accepted
        _mturk_row(a, roles, "W2", "A2", "Approved", wrong=True),       # 3: MTurk approved it
        _mturk_row(a, roles, "W3", "A3"),                               # 4: over the limit (2)
        _mturk_row(b, roles, "W1", "B1", "Rejected"),                   # 5: MTurk rejected it
        _mturk_row(b, roles, "W2", "B2", wrong=True),                   # 6: checks wrong: review
        _mturk_row(b, roles, "W2", "B3"),                               # 7: W2's second of HIT b
        _mturk_row(a, roles, "W1", "A1"),                               # 8: the same row again
    ]
    batch = _write_csv(tmp_path / "Batch_9_batch_results.csv", rows)
    c.close()
    r = _cli("mitl", "crowd", "import", c.path, batch)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert {k: got.get(k) for k in ("rows", "accepted", "rejected", "review", "full", "taken",
                                    "duplicate")} == {
        "rows": 7, "accepted": 2, "rejected": 1, "review": 1, "full": 1, "taken": 1,
        "duplicate": 1}
    assert got["over_limit"] == [{"line": 4, "assignment": "A3", "worker": "W3"}]
    assert got["second_assignments"] == [{"line": 7, "assignment": "B3", "worker": "W2"}]
    assert got["duplicates"] == [{"line": 8, "assignment": "A1", "worker": "W1",
                                  "same_as_line": 2}]
    assert got["waiting_for_review"] == [6]
    with Campaign(c.path) as cc:
        status = dict(cc.q("SELECT e.external_id, a.status FROM external_assignments e JOIN "
                           "assignments a ON a.id = e.assignment_id"))
    # Rejected on MTurk is never accepted; Approved stays approved (its wrong checks or not)
    assert status == {"A1": "accepted", "A2": "accepted", "B1": "rejected", "B2": "review"}
    with open(got["decisions"], newline="") as f:
        decided = list(csv.DictReader(f))
    assert [(d["Approve"], bool(d["Reject"])) for d in decided] == [
        ("x", False), ("", False), ("x", False), ("", False), ("", False), ("", True),
        ("x", False)]
    assert all(d["xmodal"] for d in decided)  # a decision (or why none) on every row
    assert "over the HIT's limit" in decided[2]["xmodal"] and "on MTurk" in decided[3]["xmodal"]
    assert decided[0]["Extra"] == "kept"  # other columns pass through


def test_a_bad_mturk_file_stores_nothing_and_names_every_bad_line(tmp_path):
    c, _ = build_campaign(tmp_path, replication=2)
    (a, b), roles = _mturk_export(c, tmp_path)[0][:2], _mturk_export(c, tmp_path)[1]
    double = _mturk_row(b, roles, "W2", "B2")
    double["Answer.item_1_a3.on"] = double["Answer.item_1_a1.on"] = "true"
    none = _mturk_row(b, roles, "W3", "B3")
    for v in (1, 2, 3, 4):
        none[f"Answer.item_2_a{v}.on"] = "false"
    rows = [
        _mturk_row(a, roles, "W1", "A1"),                               # line 2: fine
        _mturk_row(a, roles, "W2", "A2", **{"Input.item_1": "feedface00000000"}),  # 3
        double,                                                         # 4
        none,                                                           # 5
        _mturk_row(b, roles, "W4", "B4", "Returned"),                   # 6
        _mturk_row(b, roles, "W5", "B5", **{"Input.hit": "nohit"}),     # 7
    ]
    batch = _write_csv(tmp_path / "bad.csv", rows)
    c.close()
    r = _cli("mitl", "crowd", "import", c.path, batch)
    assert isinstance(r.exception, XmodalError), r.output
    msg = str(r.exception)
    assert "5 of 6 rows" in msg and "nothing was stored" in msg
    for line, what in ((3, "feedface00000000"), (4, "pair 1 has 3 answers (1, 3, 4)"),
                       (5, "pair 2 has no answer"), (6, "'Returned'"), (7, "'nohit'")):
        assert f"line {line}: " in msg and what in msg, (line, msg)
    assert "line 2:" not in msg
    with Campaign(c.path) as cc:
        assert cc.q("SELECT COUNT(*) FROM assignments")[0][0] == 0
        assert cc.q("SELECT COUNT(*) FROM workers")[0][0] == 0
    assert not (tmp_path / "bad.decisions.csv").exists()


# ----- 3. Label Studio -------------------------------------------------------------------------
def _ls_export(c, tmp_path, *flags):
    out = tmp_path / "ls"
    r = _cli("mitl", "crowd", "export", c.path, out, "--platform", "label-studio", *flags)
    assert r.exit_code == 0, r.output
    tasks = json.loads((out / "label-studio" / "tasks.json").read_text())
    return tasks, (out / "label-studio" / "config.xml").read_text()


def _check_label_studio(config: str, tasks: list, exported: list | None = None,
                        sdk: bool | None = None) -> str:
    """Validate with label-studio-sdk where it is installed (its LabelInterface; ``make
    install`` installs it, see the Makefile), else check the structure by hand: every task's
    data fills the config's variables, every prediction and annotation result names a control
    of the config and one of its choices. ``sdk`` True / False: that check only. Returns which
    check ran."""
    import xml.etree.ElementTree as ET

    LabelInterface = None
    if sdk is not False:
        try:
            from label_studio_sdk.label_interface import LabelInterface
        except ImportError:
            if sdk:
                raise
    if LabelInterface is not None:
        li = LabelInterface(config)
        for t in tasks + (exported or []):
            # the data alone: validate_task(task) with 'predictions' calls
            # validate_prediction() without its argument (label-studio-sdk 2.1.2)
            assert li.validate_task({"data": t["data"]}), t["data"]
            for p in t.get("predictions", []):
                assert li.validate_prediction(p, return_errors=True) == [], p
            for a in t.get("annotations", []):
                if a["result"]:
                    assert li.validate_prediction(a, return_errors=True) == [], a
        return "label-studio-sdk"
    view = ET.fromstring(config)
    variables = {el.get("value")[1:] for el in view.iter() if (el.get("value") or "")[:1] == "$"}
    controls = {el.get("name"): el for el in view.iter() if el.tag in ("Choices", "TextArea")}
    objects = {el.get("name") for el in view.iter() if el.tag in ("Image", "Text")}
    assert all(el.get("toName") in objects for el in controls.values())
    choices = {ch.get("value") for ch in controls["answer"]}
    for t in tasks + (exported or []):
        assert variables <= set(t["data"]), t["data"]
        results = [r for p in t.get("predictions", []) for r in p["result"]] + [
            r for a in t.get("annotations", []) for r in a["result"]]
        for r in results:
            assert r["from_name"] in controls and r["to_name"] in objects, r
            if r["type"] == "choices":
                assert set(r["value"]["choices"]) <= choices, r
    return "structure"


@pytest.mark.parametrize("sdk", [True, False], ids=["label-studio-sdk", "structure"])
def test_the_label_studio_checks_refuse_what_label_studio_would(tmp_path, sdk):
    """Both checks the Label Studio tests rely on pass the export and refuse a task without its
    sentence, an unknown answer, a result of an unknown control or object."""
    import copy

    if sdk:
        pytest.importorskip("label_studio_sdk.label_interface",
                            reason="label-studio-sdk: 'make install' installs it (--no-deps)")
    c, _ = build_campaign(tmp_path)
    tasks, config = _ls_export(c, tmp_path, "--predictions")
    assert _check_label_studio(config, tasks, sdk=sdk) == ("label-studio-sdk" if sdk
                                                           else "structure")
    task = tasks[0]

    def broken(change):
        t = copy.deepcopy(task)
        change(t)
        return t

    for bad in (broken(lambda t: t["data"].pop("text")),
                broken(lambda t: t["predictions"][0]["result"][0]["value"].update(
                    choices=["maybe"])),
                broken(lambda t: t["predictions"][0]["result"][0].update(from_name="nope")),
                broken(lambda t: t["predictions"][0]["result"][0].update(to_name="nope"))):
        with pytest.raises(AssertionError):
            _check_label_studio(config, [bad], sdk=sdk)


def test_label_studio_export_has_no_predictions_or_ids_unless_asked(tmp_path):
    c, _ = build_campaign(tmp_path)
    tasks, config = _ls_export(c, tmp_path)
    print("validated by", _check_label_studio(config, tasks))
    assert tasks and not any("predictions" in t for t in tasks)
    assert all(set(t["data"]) == {"image", "text"} for t in tasks)  # no hit / item ids
    n_pairs = c.q("SELECT COUNT(DISTINCT pair_id) FROM hit_items")[0][0]
    assert len(tasks) == n_pairs
    tasks, config = _ls_export(c, tmp_path, "--predictions")
    _check_label_studio(config, tasks)
    # every task, check pairs included, one prediction per annotator with the model's score
    names = [n for (n,) in c.q("SELECT name FROM annotators ORDER BY id")]
    assert all([p["model_version"] for p in t["predictions"]] == names for t in tasks)
    import numpy as np

    from xmodal.mitl.crowd import hit_table, ls_tasks, secret
    from xmodal.mitl.propose import protocol_pool

    _, protocol = build_campaign(tmp_path / "again", hits=False)
    image_ids, text_ids, _ = protocol_pool(protocol)
    refs = {it["ref"]: it for it in ls_tasks(hit_table(c), secret(c))}
    spec = dict(c.q("SELECT name, spec FROM annotators"))
    scores = {n: np.load(spec[n]) for n in names}
    answers = set()
    for t in tasks:
        it = refs[t["meta"]["xmodal"]]
        i, j = image_ids.index(it["image_id"]), text_ids.index(it["text_id"])
        for p in t["predictions"]:
            assert p["score"] == pytest.approx(float(scores[p["model_version"]][i, j]))
            answers.add(p["result"][0]["value"]["choices"][0])
    assert answers == {"100% yes", "100% no"}  # by rank, not '100% yes' for all


def _ls_annotation(ann_id, who, task_pair_role, answer_for, minute, cancelled=False):
    role = task_pair_role
    answer = answer_for(role)
    from xmodal.mitl.answers import ANSWERS

    return {"id": ann_id, "completed_by": who, "was_cancelled": cancelled,
            "result": [] if cancelled else [{
                "from_name": "answer", "to_name": "image", "type": "choices",
                "value": {"choices": [ANSWERS[answer]]}}],
            "lead_time": 4.0, "created_at": f"2026-11-28T02:{minute:02d}:00.000000Z",
            "updated_at": f"2026-11-28T02:{minute:02d}:04.000000Z"}


def test_label_studio_import_is_by_task_and_reports_what_it_dropped(tmp_path):
    """The issue's file: annotators 1-3 do every task of a HIT, annotator 10 (later) does it
    too, annotator 3 answers one task twice, annotator 4 skips the checks of another HIT,
    annotator 5 gets a check wrong, and a task of another project is in the file."""
    from xmodal.mitl.aggregate import verdicts
    from xmodal.mitl.crowd import hit_table, ls_tasks, secret

    c, _ = build_campaign(tmp_path, replication=3)
    tasks, config = _ls_export(c, tmp_path)
    hits = hit_table(c)
    task_of = {it["pair_id"]: it["ref"] for it in ls_tasks(hits, secret(c))}
    h0, h1 = hits[0], hits[1]
    right = {"gold_pos": 1, "gold_neg": 4}
    by_ref = {t["meta"]["xmodal"]: dict(t, id=n + 1, annotations=[])
              for n, t in enumerate(tasks)}
    ann_id = [0]

    def annotate(hit, who, minute, wrong_check=False, skip_checks=False, only=None):
        for it in hit["items"]:
            if only and it["role"] not in only:
                continue
            ann_id[0] += 1
            check = it["role"] != "judge"
            answer = (lambda role: (5 - right[role] if wrong_check else right[role])
                      if check else 2)
            by_ref[task_of[it["pair_id"]]]["annotations"].append(_ls_annotation(
                ann_id[0], who, it["role"], answer, minute, cancelled=skip_checks and check))

    for who in (1, 2, 3):
        annotate(h0, who, who)
    annotate(h0, 3, 9, only=("judge",))                  # annotator 3 again: duplicates
    annotate(h0, 10, 30)                                 # later: over the limit of 3
    annotate(h1, 4, 10, skip_checks=True)                # skips the checks
    annotate(h1, {"id": 5, "email": "five@x.org"}, 11, wrong_check=True)
    exported = list(by_ref.values()) + [{"id": 999, "data": {"image": "x.jpg", "text": "y"},
                                         "annotations": [_ls_annotation(
                                             999, 1, "judge", lambda r: 1, 1)]}]
    checked = _check_label_studio(config, tasks, exported)
    print("validated by", checked)
    assert checked in ("label-studio-sdk", "structure")
    path = tmp_path / "project-1-at-2026-11-28.json"
    path.write_text(json.dumps(exported))
    c.close()
    r = _cli("mitl", "crowd", "import", c.path, path)
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    n0, j0 = len(h0["items"]), sum(it["role"] == "judge" for it in h0["items"])
    n1, j1 = len(h1["items"]), sum(it["role"] == "judge" for it in h1["items"])
    # hand count: 1-3 all of h0; 10 only h0's checks (its judge pairs are full); 4 the judge
    # pairs of h1; 5 all of h1
    assert got["judgments"] == 3 * n0 + (n0 - j0) + j1 + n1
    dropped = got["dropped"]
    assert len(dropped["duplicates"]) == j0 and {d["annotator"] for d in
                                                 dropped["duplicates"]} == {"3"}
    assert len(dropped["over_limit"]) == j0 and {d["annotator"] for d in
                                                 dropped["over_limit"]} == {"10"}
    assert len(dropped["skipped"]) == n1 - j1 and {d["annotator"] for d in
                                                   dropped["skipped"]} == {"4"}
    assert dropped["unknown_tasks"] == [{"task": 999, "why": "not a task of this campaign"}]
    assert got["review"] == ["5"]
    c = Campaign(c.path)
    status = dict(c.q("SELECT e.external_id, group_concat(DISTINCT a.status) FROM "
                      "external_workers e JOIN assignments a ON a.worker_id = e.worker_id "
                      "GROUP BY e.external_id"))
    assert status == {"1": "accepted", "2": "accepted", "3": "accepted", "10": "accepted",
                      "4": "accepted", "5": "review"}
    # skipped tasks are no answers: annotator 4 has no judgment of h1's checks at all
    four = c.q("SELECT COUNT(*) FROM judgments j JOIN assignments a ON a.id = j.assignment_id "
               "JOIN external_workers e ON e.worker_id = a.worker_id WHERE e.external_id = '4'")
    assert four[0][0] == j1
    # overlap per pair: every judge pair of h0 has exactly 3 judgments (1, 2, 3), none of 10's
    judged = {v.pair_id: v.answers for v in verdicts(c)[0]}
    assert all(judged[it["pair_id"]] == (2, 2, 2) for it in h0["items"]
               if it["role"] == "judge")
    # importing the same file again adds nothing
    c.close()
    again = json.loads(_cli("mitl", "crowd", "import", c.path, path).stdout)
    assert again["judgments"] == 0
    assert len(again["dropped"]["already_imported"]) == got["judgments"]


# ----- 4 and 8. Prolific: one identity per person, no code after a failed entry test -----------
def _answer_all(client, c, wrong=False):
    """The browser takes its next HIT (or the entry test) and submits it: check pairs right (or
    wrong), the rest '2'. Returns the /next payload."""
    from xmodal.mitl.blind import id_map

    got = client.post("/api/mitl/next").json()
    if got["assignment"] is None:
        return got
    roles = dict(c.q("SELECT hi.pair_id, hi.role FROM hit_items hi JOIN assignments a ON "
                     "a.hit_id = hi.hit_id WHERE a.id = ?", (got["assignment"],)))
    right = {"gold_pos": 1, "gold_neg": 4}
    answers = {}
    for item, pair in id_map(c, got["assignment"]).items():
        role = roles[pair]
        answers[item] = {"answer": (5 - right[role] if wrong else right[role])
                         if role in right else 2}
    r = client.post(f"/api/mitl/assignments/{got['assignment']}/submit",
                    json={"answers": answers})
    assert r.status_code == 200, r.text
    return got


def test_a_simulated_paid_study_gives_one_identity_per_person(tmp_path):
    """Four participants through Prolific-style links; one of them tries three invented PIDs
    from their browser, a stranger tries a participant's PID, one participant fails the entry
    test: four identities, no session rotated, no completion code for the failure."""
    c, _ = build_campaign(tmp_path, qualify=6)
    info = json.loads(_cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform",
                           "prolific", "--study-id", "65f0aa").stdout)
    app = _app(c, tmp_path)
    link = "/prolific?PROLIFIC_PID={}&STUDY_ID=65f0aa&SESSION_ID={}"
    with TestClient(app) as stranger:
        people = {}
        for n in range(1, 5):
            browser = TestClient(app)
            r = browser.get(link.format(f"60b{n}", f"s{n}"))
            assert r.status_code == 200, r.text
            people[n] = browser
        # participant 2 edits the address: three invented PIDs, each refused
        for fake in ("60bfake1", "60bfake2", "60bfake3"):
            r = people[2].get(link.format(fake, "s2"))
            assert r.status_code == 409 and "another participant" in r.text
            r = people[2].get(link.format(fake, "sX"))
            assert r.status_code == 409
        # a stranger with participant 1's PID: refused, and participant 1 stays signed in
        r = stranger.get(link.format("60b1", "stolen"))
        assert r.status_code == 409 and "another session" in r.text
        assert people[1].get("/api/mitl/me").json()["name"] == "prolific:60b1"
        # the entry test: 1-3 pass, 4 fails
        for n, browser in people.items():
            got = _answer_all(browser, c, wrong=n == 4)
            assert got["entry_test"]["pass_mark"] == 0.8
        for n in (1, 2, 3):
            assert _answer_all(people[n], c)["number"] == 1  # a real HIT
            r = people[n].get("/prolific/done")
            assert r.status_code == 200 and info["completion_code"] in r.text
        assert people[4].post("/api/mitl/next").json()["entry_test_failed"] is True
        r = people[4].get("/prolific/done")
        assert r.status_code == 403 and info["completion_code"] not in r.text
        assert "did not pass the entry test" in r.text
        assert stranger.get("/prolific/done").status_code == 401
        # a participant the researcher revokes is out, link or cookie
        assert _cli("mitl", "workers", "revoke", c.path, "prolific:60b3").exit_code == 0
        assert people[3].get("/api/mitl/me").status_code == 401
        assert people[3].get(link.format("60b3", "s3")).status_code == 409
    assert sorted(x for (x,) in c.q("SELECT external_id FROM external_workers")) == [
        "60b1", "60b2", "60b3", "60b4"]
    assert c.q("SELECT COUNT(*) FROM workers")[0][0] == 4


def test_a_study_link_holds_no_credential_beyond_judging(tmp_path):
    """The study URL every participant sees carries no shared access token; what it holds signs
    the browser in for judging only: photo search, the review pages and the API docs still ask
    for the server's access token."""
    c, _ = build_campaign(tmp_path, qualify=6)
    info = json.loads(_cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform",
                           "prolific", "--study-id", "65f0aa", "--public-url",
                           "https://judge.example.org").stdout)
    assert "access_token" not in json.dumps(info) and "SHARED" not in json.dumps(info)
    link = (info["study_url"].removeprefix("https://judge.example.org")
            .replace("{{%PROLIFIC_PID%}}", "60b1").replace("{{%STUDY_ID%}}", "65f0aa")
            .replace("{{%SESSION_ID%}}", "s1"))
    with TestClient(_app(c, tmp_path, access_token="SHARED")) as browser:
        r = browser.get(link)
        assert r.status_code == 200 and "Welcome" in r.text, r.text
        assert "xmodal_token" not in browser.cookies
        for page in ("/judge", "/judge/instructions", "/static/judge.js", "/static/common.js",
                     "/static/style.css", "/prolific/done"):
            assert browser.get(page).status_code in (200, 409), page
        assert browser.get("/api/mitl/me").json()["name"] == "prolific:60b1"
        got = _answer_all(browser, c)  # the entry test, through the judging API
        assert got["entry_test"] is not None
        for path in ("/", "/eval", "/review", "/duplicates", "/docs", "/openapi.json",
                     "/api/health", "/api/search?q=a+dog", "/api/mitl/review",
                     "/api/mitl/review/disagreements", "/static/review.js",
                     "/static/index.html", "/api/mitl/../search?q=x", "/api/mitl//review"):
            r = browser.get(path, follow_redirects=False)
            assert r.status_code == 401, (path, r.status_code)
        assert browser.post("/api/mitl/review/1", json={"decision": "accept"}).status_code \
            == 401
        # a signed-in reviewer's own pages still need the shared token too
        rev = c.add_worker("rev", "reviewer")
        r = browser.post("/api/mitl/session", json={"token": rev, "page": "review"})
        assert r.status_code == 200
        assert browser.get("/api/mitl/review").status_code == 401
        # the same paths as an HTTP client may send them, undecoded (httpx folds '..')
        from xmodal.server.security import is_judging_path
        assert all(not is_judging_path(p) for p in (
            "/api/mitl/../search", "/api/mitl/./review", "/api/mitl//review", "/static/../x",
            "/api/mitl/review", "/api/mitl/reviews", "/judge/", "/api/mitlx/next"))
        assert is_judging_path("/api/mitl/next") and is_judging_path("/prolific")
        # with the server's token the researcher reaches everything
        assert browser.get("/api/health", headers={"Authorization": "Bearer SHARED"}) \
            .status_code == 200


def test_prolific_submissions_screen_out_participants_prolific_does_not_know(tmp_path):
    """The documented duplicate screen: Prolific's submissions export lists who really took
    part; a PID not in it (invented in a fresh browser) or returned has its HITs rejected."""
    c, _ = build_campaign(tmp_path)
    _cli("mitl", "crowd", "export", c.path, tmp_path / "p", "--platform", "prolific",
         "--study-id", "65f0aa")
    app = _app(c, tmp_path)
    with TestClient(app):
        for pid in ("60b1", "60b2", "invented"):
            browser = TestClient(app)
            assert browser.get(f"/prolific?PROLIFIC_PID={pid}&STUDY_ID=65f0aa&SESSION_ID=s"
                               f"{pid}").status_code == 200
            _answer_all(browser, c)
    export = tmp_path / "prolific_export_65f0aa.csv"
    export.write_text("Submission id,Participant id,Status,Started at\n"
                      "a1,60b1,APPROVED,2026-11-28\na2,60b2,RETURNED,2026-11-28\n")
    c.close()
    r = _cli("mitl", "crowd", "import", c.path, export, "--platform", "prolific")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["screened_out"] == [
        {"participant": "60b2", "why": "returned on Prolific", "hits_rejected": 1},
        {"participant": "invented", "why": "not a participant of the study on Prolific",
         "hits_rejected": 1}]
    with Campaign(c.path) as cc:
        assert dict(cc.q("SELECT w.name, a.status FROM assignments a JOIN workers w ON "
                         "w.id = a.worker_id")) == {"prolific:60b1": "accepted",
                                                    "prolific:60b2": "rejected",
                                                    "prolific:invented": "rejected"}


# ----- 6. the raw answers out, a view of disagreements, "can't tell" ----------------------------
def test_answers_come_out_whole_with_cant_tell_as_no_judgment(tmp_path):
    import csv

    c, _ = build_campaign(tmp_path, replication=2)
    alice, carol = c.add_worker("alice"), c.add_worker("carol")
    rev = c.add_worker("boss", "reviewer")
    app = _app(c, tmp_path)
    with TestClient(app) as client:
        from xmodal.mitl.blind import id_map

        # alice: "can't tell" (0) on one pair to judge, '2' on the others; carol: '4' on all
        # pairs to judge of the same HIT (both get the fullest HIT first), checks right
        subs = {}
        for name, token, answer in (("alice", alice, 2), ("carol", carol, 4)):
            h = {"X-Worker-Token": token}
            got = client.post("/api/mitl/next", headers=h).json()
            roles = dict(c.q("SELECT hi.pair_id, hi.role FROM hit_items hi JOIN assignments a "
                             "ON a.hit_id = hi.hit_id WHERE a.id = ?", (got["assignment"],)))
            ids = id_map(c, got["assignment"])
            judge = [i for i, p in ids.items() if roles[p] == "judge"]
            body = {i: {"answer": {"gold_pos": 1, "gold_neg": 4}.get(roles[p], answer)}
                    for i, p in ids.items()}
            if name == "alice":
                body[judge[0]] = {"answer": 0, "reason": "the photo is too dark"}
                skipped = ids[judge[0]]
            r = client.post(f"/api/mitl/assignments/{got['assignment']}/submit",
                            headers=h, json={"answers": body})
            assert r.status_code == 200, r.text
            subs[name] = (got["assignment"], len(ids), len(judge))
        assert subs["alice"][0] != subs["carol"][0]
        # the reviewer's view of the pairs where they disagree: every pair both judged
        r = client.get("/api/mitl/review/disagreements", headers={"X-Worker-Token": rev})
        assert r.status_code == 200
        pairs = r.json()["pairs"]
        assert len(pairs) == subs["alice"][2] - 1 and skipped not in {p["pair"] for p in pairs}
        assert all(p["yes"] == 1 and p["no"] == 1 and {a["worker"] for a in p["answers"]} ==
                   {"alice", "carol"} for p in pairs)
        assert client.get(pairs[0]["image"], headers={"X-Worker-Token": rev}).status_code == 200
        assert client.get("/api/mitl/review/disagreements",
                          headers={"X-Worker-Token": alice}).status_code == 403
    c.close()
    # every answer, in each format
    for name in ("answers.csv", "answers.jsonl", "answers.parquet"):
        r = _cli("mitl", "answers", c.path, tmp_path / name, "--json")
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        assert got["rows"] == subs["alice"][1] + subs["carol"][1]
        assert got["judgments"] == got["rows"] - 1 and got["workers"] == 2
    with open(tmp_path / "answers.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "answers.parquet").to_pylist()
    lines = [json.loads(x) for x in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(rows) == len(table) == len(lines)
    assert [r["answer"] for r in table] == [r["answer"] for r in lines]
    cant = [r for r in lines if r["answer"] is None]
    assert len(cant) == 1 and cant[0]["pair"] == skipped and cant[0]["worker"] == "alice"
    assert cant[0]["answer_label"] == "can't tell" and cant[0]["reason"] == "the photo is too dark"
    assert all(r["platform"] == "here" and r["accepted"] and r["seconds"] is not None
               and r["hit"] and r["submitted_at"] for r in lines)
    assert {r["role"] for r in lines} == {"judge", "gold_pos", "gold_neg"}
    # the Python API the command uses: read-only, the same rows; "can't tell" is no judgment
    from xmodal.mitl.api import Campaign as Api

    with Api.open(c.path) as cc:
        assert cc.readonly and cc.answers() == lines
        hits = cc.hits()
        assert sum(not h["entry_test"] for h in hits) == len(hits) > 1
        verdict = {v.pair_id: v for v in cc.aggregate()}
    assert verdict[skipped].answers == (4,)
    assert all(len(verdict[p["pair"]].answers) == 2 for p in pairs)


# ----- 7. the entry test as an MTurk qualification test ----------------------------------------
def test_mturk_qualification_test_is_the_entry_test_with_its_answer_key(tmp_path):
    import xml.etree.ElementTree as ET

    c, _ = build_campaign(tmp_path, qualify=6)
    out = tmp_path / "m"
    r = _cli("mitl", "crowd", "export", c.path, out, "--platform", "mturk", "--image-url",
             "https://me.example.org/images")
    assert r.exit_code == 0, r.output
    folder = out / "mturk" / "qualification"
    qf = "{http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/" \
         "QuestionForm.xsd}"
    ak = "{http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/" \
         "AnswerKey.xsd}"
    form = ET.parse(folder / "test.xml").getroot()
    key = ET.parse(folder / "answer_key.xml").getroot()
    assert form.tag == f"{qf}QuestionForm" and key.tag == f"{ak}AnswerKey"
    questions = form.findall(f"{qf}Question")
    assert [child.tag for child in questions[0]] == [
        f"{qf}QuestionIdentifier", f"{qf}IsRequired", f"{qf}QuestionContent",
        f"{qf}AnswerSpecification"]
    assert len(questions) == 6
    # each question is an entry-test pair (photo and sentence), and its key is the right side
    entry = c.meta("qualify")["hit"]
    pairs = c.q("SELECT hi.role, t.text FROM hit_items hi JOIN pairs p ON p.id = hi.pair_id "
                "JOIN texts t ON t.id = p.text_id WHERE hi.hit_id = ? ORDER BY hi.position",
                (entry,))
    scored = {q.findtext(f"{ak}QuestionIdentifier"): sorted(
        int(o.findtext(f"{ak}SelectionIdentifier")) for o in q.findall(f"{ak}AnswerOption"))
        for q in key.findall(f"{ak}Question")}
    for q, (role, text) in zip(questions, pairs):
        ident = q.findtext(f"{qf}QuestionIdentifier")
        assert q.findtext(f"{qf}QuestionContent/{qf}Text") == text
        url = q.findtext(f"{qf}QuestionContent/{qf}Binary/{qf}DataURL")
        assert url.startswith("https://me.example.org/images/")
        assert (out / "images" / url.rsplit("/", 1)[1]).is_file()
        assert scored[ident] == ([1, 2] if role == "gold_pos" else [3, 4])
        choices = q.findall(f".//{qf}Selection/{qf}SelectionIdentifier")
        assert [x.text for x in choices] == ["1", "2", "3", "4"]
    assert key.findtext(f".//{ak}MaximumSummedScore") == "6"
    info = json.loads((folder / "qualification.json").read_text())
    assert info["qualification_requirement"]["IntegerValues"] == [80]
    # no entry-test pair (photo and sentence) is a pair of a HIT shown to MTurk workers
    import csv

    with open(out / "mturk" / "input.csv", newline="") as f:
        shown = {(row[f"image_{k}"], row[f"text_{k}"]) for row in csv.DictReader(f)
                 for k in range(1, 20) if row.get(f"image_{k}")}
    tested = {(q.findtext(f"{qf}QuestionContent/{qf}Binary/{qf}DataURL"),
               q.findtext(f"{qf}QuestionContent/{qf}Text")) for q in questions}
    assert len(tested) == 6 and not tested & shown


@pytest.mark.browser
def test_the_entry_test_and_its_failure_read_as_such_in_chromium(tmp_path):
    """The page names the entry test and its pass mark, key 0 answers "can't tell", and after
    a failed test the page says so (it said 'HIT 1 of 7', then 'No HITs left')."""
    from live_server import chromium, live_server

    from xmodal.mitl.blind import make_signin_code, pair_of
    c, _ = build_campaign(tmp_path, qualify=6)
    c.add_worker("dana")
    code, _ = make_signin_code(c, "dana")
    app = _app(c, tmp_path)
    with live_server(app) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.set_default_timeout(10_000)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{url}/judge?code={code}")
        page.wait_for_selector("#pair-view:not([hidden])")
        assert page.inner_text("#progress-text").startswith("Entry test · pair 1 of 6")
        note = page.inner_text("#entry-note")
        assert "6 pairs" in note and "at least 5" in note and "80%" in note
        (aid,), = c.q("SELECT id FROM assignments")
        roles = dict(c.q("SELECT pair_id, role FROM hit_items WHERE hit_id = ?",
                         (c.meta("qualify")["hit"],)))
        for n in range(6):  # every check answered wrongly, the first with "can't tell" (0)
            image = page.get_attribute("#pair-image", "src")
            role = roles[pair_of(c, aid, image.split("/items/")[1].split("/")[0])]
            key = "0" if n == 0 else ("4" if role == "gold_pos" else "1")
            page.keyboard.press(key)
            if n < 5:
                page.wait_for_function("n => document.querySelector('#progress-text')"
                                       ".textContent.includes(`pair ${n} of 6`)", arg=n + 2)
        page.wait_for_selector("#summary:not([hidden])")
        assert "can't tell" in page.inner_text("#summary-list")
        page.click("#submit")
        page.wait_for_selector("#outcome:not([hidden])")
        assert "Entry test submitted" in page.inner_text("#outcome-text")
        page.click("#next-hit")
        page.wait_for_selector("#done:not([hidden])")
        text = page.inner_text("#done")
        assert "did not pass the entry test" in text and "No HITs left" not in text
        assert not errors, errors
    assert c.q("SELECT answer FROM judgments WHERE assignment_id = ? AND answer IS NULL",
               (aid,)) == [(None,)]
    assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("rejected",)]
