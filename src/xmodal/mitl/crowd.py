"""Crowd platforms, both ways: HITs out to MTurk, Label Studio or Prolific, their results in.

* **MTurk** (``--platform mturk``): ``mturk/input.csv``, one row per HIT for a batch (columns
  ``hit``, ``item_K``, ``image_K``, ``text_K``), ``mturk/question.html``, the question
  template in crowd-html elements (``${image_1}`` … are filled from the CSV), and with an entry
  test ``mturk/qualification/`` (QuestionForm, AnswerKey). Import checks the whole batch results
  CSV (``Input.*``, ``Answer.*``, ``WorkerId``, ``AssignmentId``, ``AssignmentStatus``,
  ``AcceptTime``, ``SubmitTime``, ``WorkTimeInSeconds``) before storing it in one transaction,
  keeps MTurk's own decisions, and writes ``*.decisions.csv`` beside it: the same rows with
  ``Approve`` / ``Reject`` and the reason for every row, to upload back.
* **Label Studio** (``--platform label-studio``): ``label-studio/tasks.json`` (one task per
  pair, its visible data the photo and the sentence only; predictions only with
  ``--predictions``) and ``label-studio/config.xml``, the labeling config with the four answers
  and "can't tell". Import reads the project's JSON export by task: each annotation is one
  judgment of one pair by one annotator.
* **Prolific** (``--platform prolific --study-id ID``): the external-study link for the server
  (``/prolific?PROLIFIC_PID=…``, :mod:`xmodal.server.routes.crowd`) and its completion code;
  import reads the study's submissions export to screen out participants Prolific does not
  know.

Outside platforms never see a campaign's ids or file paths: HITs, items and images get opaque
names (HMAC of the campaign's own secret), images are copied without their metadata into
``images/`` under those names, to be put on a web server (``--image-url``).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import math
import secrets
import time
from collections import defaultdict
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.mitl.answers import ANSWERS, SKIP, SKIP_LABEL, is_gold_correct
from xmodal.mitl.store import LIVE, Campaign, Worker

PLATFORMS = ("mturk", "label-studio", "prolific")
PID_RE = r"[A-Za-z0-9_-]{1,64}"  # a Prolific PROLIFIC_PID, STUDY_ID or SESSION_ID


# ----- opaque names ---------------------------------------------------------------------------
def secret(campaign: Campaign) -> str:
    """The campaign's secret for opaque names (made on first use, kept in ``meta``)."""
    value = campaign.meta("crowd_secret")
    if value is None:
        value = secrets.token_hex(16)
        campaign.set_meta_now("crowd_secret", value)
    return value


def opaque(key: str, *parts: Any) -> str:
    msg = ":".join(str(p) for p in parts).encode()
    return hmac.new(key.encode(), msg, hashlib.sha256).hexdigest()[:16]


def hit_table(campaign: Campaign) -> list[dict[str, Any]]:
    """Every HIT with its items in the order shown (gold roles kept for import only)."""
    key = secret(campaign)
    rows = campaign.q(
        "SELECT h.id, h.replication, hi.position, hi.pair_id, hi.role, p.image_id, p.text_id, "
        "t.text FROM hits h JOIN hit_items hi ON hi.hit_id = h.id JOIN pairs p ON "
        "p.id = hi.pair_id JOIN texts t ON t.id = p.text_id WHERE h.replication > 0 "
        "ORDER BY h.id, hi.position")  # replication 0: the qualification HIT, served here only
    hits: dict[int, dict[str, Any]] = {}
    for hit, repl, _pos, pid, role, image_id, text_id, text in rows:
        h = hits.setdefault(hit, {"hit": hit, "ref": opaque(key, "hit", hit),
                                  "replication": repl, "items": []})
        h["items"].append({"pair_id": pid, "role": role, "image_id": image_id,
                           "text_id": text_id, "text": text,
                           "ref": opaque(key, "item", hit, pid),
                           "image": opaque(key, "image", image_id)})
    if not hits:
        raise XmodalError(f"{campaign.path}: the campaign has no HITs yet (run 'xmodal mitl "
                          "hits' first)")
    return list(hits.values())


def export_images(campaign: Campaign, hits: list[dict[str, Any]], folder: Path) -> dict[str, str]:
    """Copy each image of the HITs to ``folder/<opaque>.jpg`` (re-encoded: no EXIF, no GPS);
    returns image id -> file name. Images already there are kept."""
    from PIL import Image, ImageOps

    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    missing = []
    for h in hits:
        for it in h["items"]:
            if it["image_id"] in names:
                continue
            name = f"{it['image']}.jpg"
            names[it["image_id"]] = name
            if (folder / name).is_file():
                continue
            src = campaign.image_path(it["image_id"])
            if not src or not Path(src).is_file():
                missing.append(src or it["image_id"])
                continue
            with Image.open(src) as im:
                im = ImageOps.exif_transpose(im).convert("RGB")
                im.thumbnail((1600, 1600))
                im.save(folder / (name + ".tmp"), "JPEG", quality=90)
            (folder / (name + ".tmp")).replace(folder / name)
    if missing:
        raise XmodalError(f"{len(missing)} image(s) of the campaign are not found: "
                          + ", ".join(missing[:5]))
    return names


def _url(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


# ----- export ---------------------------------------------------------------------------------
def export(campaign: Campaign, platform: str, out: str | Path, image_url: str | None = None,
           public_url: str | None = None, predictions: bool = False,
           study_id: str | None = None) -> dict[str, Any]:
    """Write what the platform needs into ``out``; returns what was written."""
    out = Path(out)
    if platform not in PLATFORMS:
        raise XmodalError(f"--platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    if platform == "prolific":
        return export_prolific(campaign, out, public_url, study_id)
    hits = hit_table(campaign)
    base = image_url or "https://YOUR-HOST/images"
    names = export_images(campaign, hits, out / "images")
    if platform == "mturk":
        files = export_mturk(hits, names, base, out / "mturk")
        files += export_mturk_qualification(campaign, out, base)
    else:
        files = export_label_studio(campaign, hits, names, base, out / "label-studio",
                                    predictions)
    result = {"platform": platform, "hits": len(hits),
              "items": sum(len(h["items"]) for h in hits), "images": len(names),
              "images_folder": str(out / "images"), "image_url": base,
              "files": [str(f) for f in files]}
    if image_url is None:
        result["note"] = ("put the images folder on a web server and export again with "
                          "--image-url https://…/images (the files hold a placeholder URL)")
    return result


def _slots(hits: list[dict[str, Any]]) -> int:
    return max(len(h["items"]) for h in hits)


def export_mturk(hits, names, base: str, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    n = _slots(hits)
    header = ["hit"] + [f"{f}_{k}" for k in range(1, n + 1) for f in ("item", "image", "text")]
    with open(folder / "input.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for h in hits:
            row = [h["ref"]]
            for k in range(n):
                if k < len(h["items"]):
                    it = h["items"][k]
                    # MTurk puts ${text_K} into the page as it is: escaped here, so a
                    # caption with markup shows as text
                    row += [it["ref"], _url(base, names[it["image_id"]]),
                            escape(it["text"], quote=False)]
                else:
                    row += ["", "", ""]
            w.writerow(row)
    (folder / "question.html").write_text(mturk_template(n), encoding="utf-8")
    return [folder / "input.csv", folder / "question.html"]


QUESTION_FORM_NS = ("http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/"
                    "2017-11-06/QuestionForm.xsd")
ANSWER_KEY_NS = ("http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/"
                 "2005-10-01/AnswerKey.xsd")


def export_mturk_qualification(campaign: Campaign, out: Path, base: str) -> list[Path]:
    """The entry test (``hits --qualify N``) as an MTurk qualification test: ``test.xml`` (a
    QuestionForm, one question per check pair: the photo, the sentence, the four answers) and
    ``answer_key.xml`` (an AnswerKey: a known positive is right with 1-2, a known negative with
    3-4; the score is the percentage right), with ``qualification.json`` naming the pass mark
    the HITs must require. Its pairs are the entry test's own, never a HIT's checks. Nothing
    when the campaign has no entry test."""
    q = campaign.meta("qualify")
    if not q:
        return []
    key = secret(campaign)
    rows = campaign.q("SELECT hi.role, p.image_id, t.text FROM hit_items hi JOIN pairs p ON "
                      "p.id = hi.pair_id JOIN texts t ON t.id = p.text_id WHERE hi.hit_id = ? "
                      "ORDER BY hi.position", (q["hit"],))
    items = [{"image_id": image_id, "image": opaque(key, "image", image_id), "text": text,
              "role": role, "pair_id": n} for n, (role, image_id, text) in enumerate(rows)]
    names = export_images(campaign, [{"items": items}], out / "images")
    folder = out / "mturk" / "qualification"
    folder.mkdir(parents=True, exist_ok=True)
    choices = "".join(f"<Selection><SelectionIdentifier>{v}</SelectionIdentifier><Text>{v} · "
                      f"{escape(label)}</Text></Selection>" for v, label in ANSWERS.items())
    questions, keys = [], []
    for n, it in enumerate(items, 1):
        questions.append(
            f"  <Question>\n    <QuestionIdentifier>q{n}</QuestionIdentifier>\n"
            f"    <IsRequired>true</IsRequired>\n    <QuestionContent>\n"
            f"      <Binary><MimeType><Type>image</Type><SubType>jpeg</SubType></MimeType>"
            f"<DataURL>{escape(_url(base, names[it['image_id']]))}</DataURL>"
            f"<AltText>photo {n}</AltText></Binary>\n"
            f"      <Text>{escape(it['text'])}</Text>\n    </QuestionContent>\n"
            f"    <AnswerSpecification><SelectionAnswer><StyleSuggestion>radiobutton"
            f"</StyleSuggestion><Selections>{choices}</Selections></SelectionAnswer>"
            f"</AnswerSpecification>\n  </Question>")
        right = (1, 2) if it["role"] == "gold_pos" else (3, 4)
        keys.append(f"  <Question><QuestionIdentifier>q{n}</QuestionIdentifier>"
                    + "".join(f"<AnswerOption><SelectionIdentifier>{v}</SelectionIdentifier>"
                              f"<AnswerScore>1</AnswerScore></AnswerOption>" for v in right)
                    + "<DefaultScore>0</DefaultScore></Question>")
    overview = ("Does the sentence describe the photo? For each pair choose 1 (100% yes), 2 "
                "(partially yes, a small mistake), 3 (mostly no) or 4 (100% no). You need "
                f"{round(100 * q['min_accuracy'])}% right to take the HITs.")
    (folder / "test.xml").write_text(
        f'<QuestionForm xmlns="{QUESTION_FORM_NS}">\n  <Overview><Title>Entry test</Title>'
        f"<Text>{escape(overview)}</Text></Overview>\n" + "\n".join(questions)
        + "\n</QuestionForm>\n", encoding="utf-8")
    (folder / "answer_key.xml").write_text(
        f'<AnswerKey xmlns="{ANSWER_KEY_NS}">\n' + "\n".join(keys)
        + f"\n  <QualificationValueMapping><PercentageMapping><MaximumSummedScore>{len(items)}"
        "</MaximumSummedScore></PercentageMapping></QualificationValueMapping>\n"
        "</AnswerKey>\n", encoding="utf-8")
    need = math.ceil(100 * q["min_accuracy"] - 1e-9)
    info = {"questions": len(items), "pass_mark": q["min_accuracy"],
            "qualification_requirement": {"Comparator": "GreaterThanOrEqualTo",
                                          "IntegerValues": [need]},
            "note": "create the qualification type with Test = test.xml and AnswerKey = "
                    "answer_key.xml (the score is the percentage right); require it on the "
                    f"HITs with a value of at least {need}"}
    (folder / "qualification.json").write_text(json.dumps(info, indent=1))
    return [folder / "test.xml", folder / "answer_key.xml", folder / "qualification.json"]


def mturk_template(n: int) -> str:
    """The HIT's question template: crowd-form, one block per pair; a block whose ``item_K``
    is empty (a shorter HIT) hides itself."""
    blocks = []
    for k in range(1, n + 1):
        buttons = "\n".join(
            f'        <crowd-radio-button name="item_{k}_a{v}" value="{v}">{v} · '
            f"{escape(label)}</crowd-radio-button>"
            for v, label in (*ANSWERS.items(), (SKIP, SKIP_LABEL)))
        blocks.append(f"""  <section class="pair" data-item="${{item_{k}}}">
    <img src="${{image_{k}}}" alt="photo {k}">
    <p class="caption">${{text_{k}}}</p>
    <crowd-radio-group>
{buttons}
    </crowd-radio-group>
    <crowd-input name="item_{k}_reason" label="reason (optional)" max-length="2000">
    </crowd-input>
  </section>""")
    body = "\n".join(blocks)
    return f"""<!-- xmodal mitl crowd export: MTurk question template (crowd-html elements) -->
<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>
<style>
  .pair {{ display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start;
          border-bottom: 1px solid #ccc; padding: 1em 0; }}
  .pair img {{ max-width: 420px; max-height: 360px; }}
  .caption {{ font-size: 1.2em; max-width: 28em; overflow-wrap: anywhere; }}
</style>
<crowd-form answer-format="flatten-objects">
  <crowd-instructions link-text="View instructions" link-type="button">
    <short-summary><p>Does the sentence describe the photo? Answer every pair.</p>
    </short-summary>
    <detailed-instructions>
      <p>1 · 100% yes: the sentence describes the photo with no mistake.<br>
      2 · partially yes: it describes the photo, with a small mistake (say which).<br>
      3 · mostly no: it gets the main thing wrong (say why).<br>
      4 · 100% no: it describes another photo.<br>
      0 · can't tell: you cannot decide (the photo does not load, or the sentence is unclear).
      It counts as no answer.</p>
    </detailed-instructions>
  </crowd-instructions>
  <input type="hidden" name="hit" value="${{hit}}">
{body}
</crowd-form>
<script>
  document.querySelectorAll('section.pair').forEach(function (s) {{
    if (!s.dataset.item) s.remove();
  }});
  // every pair needs an answer before the HIT can be submitted
  document.querySelector('crowd-form').addEventListener('submit', function (e) {{
    var left = Array.prototype.filter.call(document.querySelectorAll('section.pair'),
      function (s) {{
        return !Array.prototype.some.call(s.querySelectorAll('crowd-radio-button'),
                                          function (b) {{ return b.checked; }});
      }});
    if (left.length) {{
      e.preventDefault();
      alert('Please answer every pair (' + left.length + ' left).');
    }}
  }});
</script>
"""


def ls_tasks(hits: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Label Studio assigns tasks, not HITs: one task per distinct pair of the HITs (a check
    pair used in several HITs is one task), keyed by an opaque ``ref``."""
    seen: dict[int, dict[str, Any]] = {}
    for h in hits:
        for it in h["items"]:
            seen.setdefault(it["pair_id"], {**it, "ref": opaque(key, "pair", it["pair_id"])})
    return list(seen.values())


def pair_scores(campaign: Campaign, pairs: list[tuple[str, str]]
                ) -> dict[str, dict[tuple[str, str], tuple[float, int]]]:
    """Per machine annotator of the campaign: (score, best rank) of each pair, from the
    annotator itself (rebuilt from its stored spec on the campaign's protocol): the score it
    gives the pair (image to text) and the pair's best rank over the two directions."""
    import numpy as np

    from xmodal.eval.protocols import get_protocol
    from xmodal.mitl.propose import load_annotator, protocol_pool

    spec = campaign.meta("protocol")
    if not spec:
        raise XmodalError(f"{campaign.path}: the campaign has no protocol; --predictions needs "
                          "the annotators' scores")
    protocol = (get_protocol("folder", spec.get("data"), captions=spec.get("captions"))
                if spec.get("name") == "folder" else get_protocol(spec["name"], spec.get("data")))
    image_ids, text_ids, _ = protocol_pool(protocol)
    row = {x: n for n, x in enumerate(image_ids)}
    col = {x: n for n, x in enumerate(text_ids)}
    out: dict[str, dict[tuple[str, str], tuple[float, int]]] = {}
    for name, source in campaign.q("SELECT name, spec FROM annotators ORDER BY id"):
        scores = load_annotator(f"{name}={source}", protocol).scores
        i2t = np.asarray(scores.get("i2t", next(iter(scores.values()))))
        t2i = np.asarray(scores.get("t2i", i2t))
        got = {}
        for image_id, text_id in pairs:
            i, t = row[image_id], col[text_id]
            rank = 1 + min(int((i2t[i] > i2t[i, t]).sum()), int((t2i[:, t] > t2i[i, t]).sum()))
            got[(image_id, text_id)] = (float(i2t[i, t]), rank)
        out[name] = got
    return out


def export_label_studio(campaign: Campaign, hits, names, base: str, folder: Path,
                        predictions: bool = False) -> list[Path]:
    """``tasks.json``: one task per pair, whose visible data is the photo and the sentence only
    (the task's key is in ``meta``). With ``predictions`` every task, check pairs included,
    gets one prediction per machine annotator: the answer its rank gives (in its top-K:
    "100% yes", else "100% no") and its real score."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks_in = ls_tasks(hits, secret(campaign))
    scores = (pair_scores(campaign, [(it["image_id"], it["text_id"]) for it in tasks_in])
              if predictions else {})
    k = int(campaign.meta("k", 5))
    tasks = []
    for it in tasks_in:
        task: dict[str, Any] = {"data": {"image": _url(base, names[it["image_id"]]),
                                         "text": it["text"]},
                                "meta": {"xmodal": it["ref"]}}
        if predictions:
            task["predictions"] = [{
                "model_version": name, "score": got[(it["image_id"], it["text_id"])][0],
                "result": [{"from_name": "answer", "to_name": "image", "type": "choices",
                            "value": {"choices": [
                                ANSWERS[1 if got[(it["image_id"], it["text_id"])][1] <= k
                                        else 4]]}}]}
                for name, got in scores.items()]
        tasks.append(task)
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=1, ensure_ascii=False),
                                       encoding="utf-8")
    (folder / "config.xml").write_text(label_studio_config(), encoding="utf-8")
    return [folder / "tasks.json", folder / "config.xml"]


def label_studio_config() -> str:
    choices = "\n".join(f'    <Choice value="{escape(label)}" hotkey="{v}"/>'
                        for v, label in (*ANSWERS.items(), (SKIP, SKIP_LABEL)))
    return f"""<View>
  <Header value="Does the sentence describe the photo?"/>
  <Image name="image" value="$image" maxWidth="640px"/>
  <Text name="text" value="$text"/>
  <Choices name="answer" toName="image" choice="single-radio" required="true"
           showInline="false">
{choices}
  </Choices>
  <TextArea name="reason" toName="image" placeholder="reason (optional)" maxSubmissions="1"
            rows="2"/>
</View>
"""


def export_prolific(campaign: Campaign, out: Path, public_url: str | None,
                    study_id: str | None = None) -> dict[str, Any]:
    """The study link and completion code for a Prolific external study (the server's
    /prolific route registers participants and shows the code). ``study_id`` is the
    study's STUDY_ID: only links of that study sign in."""
    import re

    study_id = study_id or campaign.meta("prolific_study")
    if not study_id:
        raise XmodalError("--study-id is needed: create the study on Prolific (a draft is "
                          "enough), copy its STUDY_ID and export with --study-id STUDY_ID")
    if not re.fullmatch(PID_RE, study_id):
        raise XmodalError(f"--study-id {study_id!r} is not a Prolific study id (letters and "
                          "digits)")
    if study_id != campaign.meta("prolific_study"):
        campaign.set_meta_now("prolific_study", study_id)
    code = campaign.meta("prolific_completion_code")
    if code is None:
        code = secrets.token_hex(4).upper()
        campaign.set_meta_now("prolific_completion_code", code)
    base = (public_url or "https://YOUR-HOST").rstrip("/")
    link = (f"{base}/prolific?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
            f"&SESSION_ID={{{{%SESSION_ID%}}}}")
    out.mkdir(parents=True, exist_ok=True)
    info = {"platform": "prolific", "study_id": study_id, "study_url": link,
            "completion_code": code,
            "completion_url": f"https://app.prolific.com/submissions/complete?cc={code}",
            "note": "the study URL needs no access token: with 'xmodal serve --token' the "
                    "judging pages sign participants in by themselves and nothing else opens"}
    (out / "prolific.json").write_text(json.dumps(info, indent=1))
    info["files"] = [str(out / "prolific.json")]
    return info


# ----- import ---------------------------------------------------------------------------------
def external_worker(conn, platform: str, external_id: str) -> int:
    """The worker id for a platform's worker id, registered on first sight (the name is
    ``platform:id``; their token is never shown: they work on the platform)."""
    external_id = str(external_id).strip()
    if not external_id:
        raise XmodalError(f"a {platform} result has no worker id")
    row = conn.execute("SELECT worker_id FROM external_workers WHERE platform = ? AND "
                       "external_id = ?", (platform, external_id)).fetchone()
    if row:
        return row[0]
    token_hash = hashlib.sha256(secrets.token_bytes(32)).hexdigest()
    cur = conn.execute("INSERT INTO workers(name, token_sha256, role, created_at) VALUES(?, ?, "
                       "'worker', ?)", (f"{platform}:{external_id}", token_hash, time.time()))
    conn.execute("INSERT INTO external_workers VALUES(?, ?, ?)",
                 (cur.lastrowid, platform, external_id))
    return cur.lastrowid


def store_assignment(conn, platform: str, external_id: str, worker: str, hit: int,
                     answers: dict[int, tuple[int | None, str | None]], started: float | None,
                     submitted: float | None, work_s: float | None,
                     status: str | None = None) -> str:
    """Store one platform assignment inside the caller's transaction: 'accepted' or 'review' (a
    check pair answered wrongly), or the platform's own decision ``status`` ('accepted' for an
    assignment it approved, 'rejected' for one it rejected); 'duplicate' / 'taken' / 'full' when
    it is not stored (already imported; this worker already has this HIT; no slot left)."""
    c = conn
    if c.execute("SELECT 1 FROM external_assignments WHERE platform = ? AND external_id = "
                 "?", (platform, external_id)).fetchone():
        return "duplicate"
    wid = external_worker(c, platform, worker)
    if c.execute("SELECT 1 FROM assignments WHERE hit_id = ? AND worker_id = ?",
                 (hit, wid)).fetchone():
        return "taken"  # this worker already judged this HIT
    if status != "rejected":  # a rejected assignment holds no slot
        live = ",".join(f"'{s}'" for s in LIVE)
        taken, replication = c.execute(
            f"SELECT (SELECT COUNT(*) FROM assignments WHERE hit_id = ? AND status IN ({live})), "
            "replication FROM hits WHERE id = ?", (hit, hit)).fetchone()
        if taken >= replication:
            return "full"
    roles = dict(c.execute("SELECT pair_id, role FROM hit_items WHERE hit_id = ?",
                           (hit,)).fetchall())
    rows = []
    for pid, role in roles.items():
        answer, reason = answers.get(pid, (None, None))
        if answer is not None and answer not in ANSWERS:
            raise XmodalError(f"{platform} assignment {external_id}: answer {answer!r} is "
                              "not 1-4")
        rows.append((pid, answer, (reason or "").strip() or None))
    gold_ok = all(is_gold_correct(roles[pid], a) for pid, a, _ in rows
                  if roles[pid] != "judge" and a is not None)
    outcome = status or ("accepted" if gold_ok else "review")
    now = time.time()
    submitted = submitted or now
    started = started or (submitted - (work_s or 0))
    aid = c.execute("INSERT INTO assignments(hit_id, worker_id, status, started_at, "
                    "submitted_at) VALUES(?, ?, ?, ?, ?)",
                    (hit, wid, outcome, started, submitted)).lastrowid
    c.executemany("INSERT INTO judgments VALUES(?, ?, ?, ?)",
                  [(aid, pid, a, r) for pid, a, r in rows])
    c.execute("INSERT INTO external_assignments VALUES(?, ?, ?, ?)",
              (aid, platform, external_id, work_s))
    return outcome


def import_assignment(campaign: Campaign, platform: str, external_id: str, worker: str,
                      hit: int, answers: dict[int, tuple[int | None, str | None]],
                      started: float | None, submitted: float | None,
                      work_s: float | None, status: str | None = None) -> str:
    """:func:`store_assignment` in a transaction of its own."""
    with campaign.write() as c:
        return store_assignment(c, platform, external_id, worker, hit, answers, started,
                                submitted, work_s, status)


def _time(value: str | None) -> float | None:
    """MTurk's 'Sat Nov 28 02:46:02 PST 2026' or ISO 8601 -> epoch seconds (None if unknown)."""
    if not value:
        return None
    value = value.strip()
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        pass
    parts = value.split()
    if len(parts) == 6:  # drop the zone name strptime cannot read (times are compared only)
        try:
            return datetime.strptime(" ".join(parts[:4] + parts[5:]),
                                     "%a %b %d %H:%M:%S %Y").timestamp()
        except ValueError:
            return None
    return None


def _maps(campaign: Campaign) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[int, int]]]:
    hits = hit_table(campaign)
    by_hit = {h["ref"]: h for h in hits}
    by_item = {it["ref"]: (h["hit"], it["pair_id"]) for h in hits for it in h["items"]}
    return by_hit, by_item


def _answer_of(row: dict[str, str], k: int) -> tuple[int | None, str | None]:
    """(answer, problem) of pair K: ``Answer.item_K`` = 1-4, or exactly one of the radio
    buttons ``Answer.item_K_aV(.on)`` = true; the problem names a missing, double or bad one."""
    direct = (row.get(f"Answer.item_{k}") or "").strip()
    if direct:
        if direct in ("0", "1", "2", "3", "4"):
            return int(direct), None
        return None, f"Answer.item_{k} is {direct!r}, not 0-4 (0: can't tell)"
    chosen = [v for v in (*ANSWERS, SKIP)
              if (row.get(f"Answer.item_{k}_a{v}.on") or row.get(f"Answer.item_{k}_a{v}")
                  or "").strip().lower() in ("true", "on", "1", "yes")]
    if len(chosen) == 1:
        return chosen[0], None
    if not chosen:
        return None, f"pair {k} has no answer"
    return None, f"pair {k} has {len(chosen)} answers ({', '.join(map(str, chosen))})"


# MTurk's AssignmentStatus -> the status stored (None: ours to decide: checks, then review)
MTURK_STATUS = {"Submitted": None, "Approved": "accepted", "Rejected": "rejected"}
REJECT_TAKEN = "You had already submitted an assignment of this HIT."
REJECT_CHECKS = "The check pairs of this HIT were answered wrongly."


def _read_mturk(campaign: Campaign, path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every row of a batch results file, parsed and checked: (rows, field names). Any bad row
    stops the import before anything is stored; the error names every bad row by its line."""
    by_hit, by_item = _maps(campaign)
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        rows = []
        for row in reader:
            rows.append((reader.line_num, row))
        fields = list(reader.fieldnames or [])
    if not rows:
        raise XmodalError(f"{path}: no result rows")
    need = {"AssignmentId", "WorkerId", "Input.hit"}
    if not need <= set(fields):
        raise XmodalError(f"{path}: not an MTurk batch results file of this campaign (needs "
                          f"columns {', '.join(sorted(need))})")
    parsed, errors = [], []
    for line, row in rows:
        problems = []
        aid, wid = (row.get("AssignmentId") or "").strip(), (row.get("WorkerId") or "").strip()
        if not aid:
            problems.append("no AssignmentId")
        if not wid:
            problems.append("no WorkerId")
        mstatus = (row.get("AssignmentStatus") or "Submitted").strip()
        if mstatus not in MTURK_STATUS:
            problems.append(f"AssignmentStatus {mstatus!r} is not Submitted, Approved or "
                            "Rejected")
        h = by_hit.get((row.get("Input.hit") or "").strip())
        if h is None:
            problems.append(f"HIT {row.get('Input.hit')!r} is not a HIT of {campaign.path.name}")
        answers: dict[int, tuple[int | None, str | None]] = {}
        k = 1
        while f"Input.item_{k}" in row:
            ref = (row[f"Input.item_{k}"] or "").strip()
            if ref and ref not in by_item:
                problems.append(f"Input.item_{k} {ref!r} is not an item of this campaign")
            elif ref and h is not None and by_item[ref][0] != h["hit"]:
                problems.append(f"Input.item_{k} {ref!r} is an item of another HIT")
            elif ref:
                answer, problem = _answer_of(row, k)
                if problem and mstatus != "Rejected":  # a rejected one may be incomplete
                    problems.append(problem)
                answers[by_item[ref][1]] = (None if answer == SKIP else answer,
                                            row.get(f"Answer.item_{k}_reason"))
            k += 1
        if h is not None and not problems:
            lacking = len(h["items"]) - len(answers)
            if lacking:
                problems.append(f"{lacking} of the HIT's {len(h['items'])} items are not in "
                                "the row's Input.item_K columns")
        work = (row.get("WorkTimeInSeconds") or "").strip()
        try:
            work_s = float(work) if work else None
        except ValueError:
            problems.append(f"WorkTimeInSeconds {work!r} is not a number")
            work_s = None
        if problems:
            errors.append(f"line {line}: " + "; ".join(problems))
            continue
        parsed.append({"line": line, "row": row, "assignment": aid, "worker": wid,
                       "mturk_status": mstatus, "hit": h["hit"], "answers": answers,
                       "work_s": work_s, "started": _time(row.get("AcceptTime")),
                       "submitted": _time(row.get("SubmitTime"))})
    if errors:
        shown = "\n  ".join(errors[:40]) + (f"\n  … and {len(errors) - 40} more"
                                            if len(errors) > 40 else "")
        raise XmodalError(f"{path}: {len(errors)} of {len(rows)} rows cannot be imported, so "
                          f"nothing was stored; fix them and import the file again:\n  {shown}")
    return parsed, fields


def import_mturk(campaign: Campaign, path: Path) -> dict[str, Any]:
    """A batch results file, whole or not at all (one transaction, after every row was
    checked). MTurk's own decisions are kept (Approved stays accepted, Rejected is never
    accepted); duplicates, a worker's second assignment of a HIT and assignments over the
    HIT's limit are named by line; the decisions file gets a decision for every row."""
    parsed, fields = _read_mturk(campaign, path)
    counts: dict[str, int] = defaultdict(int)
    named: dict[str, list[dict[str, Any]]] = defaultdict(list)
    first_line: dict[str, int] = {}
    with campaign.write() as c:
        for r in parsed:
            outcome = store_assignment(
                c, "mturk", r["assignment"], r["worker"], r["hit"], r["answers"],
                r["started"], r["submitted"], r["work_s"], MTURK_STATUS[r["mturk_status"]])
            if outcome == "duplicate" and r["mturk_status"] == "Rejected":
                # rejected on MTurk since the last import: it no longer counts here either
                c.execute("UPDATE assignments SET status = 'rejected' WHERE id = (SELECT "
                          "assignment_id FROM external_assignments WHERE platform = 'mturk' AND "
                          "external_id = ?) AND status != 'rejected'", (r["assignment"],))
            r["outcome"] = outcome
            counts[outcome] += 1
            if outcome in ("duplicate", "taken", "full"):
                entry = {"line": r["line"], "assignment": r["assignment"],
                         "worker": r["worker"]}
                if r["assignment"] in first_line:
                    entry["same_as_line"] = first_line[r["assignment"]]
                named[outcome].append(entry)
            first_line.setdefault(r["assignment"], r["line"])
    out = path.with_name(path.stem + ".decisions.csv")
    pending = write_mturk_decisions(campaign, parsed, fields, out)
    report: dict[str, Any] = {"platform": "mturk", "rows": len(parsed), **counts,
                              "decisions": str(out)}
    for key, label in (("duplicate", "duplicates"), ("taken", "second_assignments"),
                       ("full", "over_limit")):
        if named[key]:
            report[label] = named[key]
    if pending:
        report["waiting_for_review"] = pending
    return report


def write_mturk_decisions(campaign: Campaign, parsed: list[dict[str, Any]],
                          fields: list[str], out: Path) -> list[int]:
    """The results rows with ``Approve`` ('x') or ``Reject`` (a reason) for MTurk's upload,
    and an ``xmodal`` column saying for every row what was decided and why. MTurk's own
    decisions are left as they are; a row waiting for a reviewer is left blank (import the file
    again after the review). Returns the lines of those rows."""
    stored = dict(campaign.q(
        "SELECT e.external_id, a.status FROM external_assignments e JOIN assignments a ON "
        "a.id = e.assignment_id WHERE e.platform = 'mturk'"))
    fields = list(fields)
    for col in ("Approve", "Reject", "xmodal"):
        if col not in fields:
            fields.append(col)
    pending = []
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in parsed:
            status, outcome = stored.get(r["assignment"]), r["outcome"]
            approve = reject = ""
            if r["mturk_status"] != "Submitted":
                note = (f"already {r['mturk_status'].lower()} on MTurk; "
                        + ("counted" if status == "accepted" else "not counted"))
            elif outcome == "full":
                approve, note = "x", "over the HIT's limit of assignments: paid, not counted"
            elif outcome == "taken":
                reject, note = REJECT_TAKEN, "the worker's second assignment of this HIT"
            elif status == "accepted":
                approve, note = "x", "accepted: counted"
            elif status == "rejected":
                reject, note = REJECT_CHECKS, "rejected by a reviewer: not counted"
            else:
                note = "waiting for review at /review: import this file again afterwards"
                pending.append(r["line"])
            if outcome == "duplicate":
                note = f"repeated row (assignment {r['assignment']}): " + note
            w.writerow({**r["row"], "Approve": approve, "Reject": reject, "xmodal": note})
    return pending


def _ls_answer(result: list[dict[str, Any]]) -> tuple[bool, int | None, str | None]:
    """(answered, answer 1-4 or None for "can't tell", reason) of an annotation's result."""
    by_label = {label: v for v, label in ANSWERS.items()}
    answered, answer, reason = False, None, None
    for r in result or []:
        value = r.get("value") or {}
        if r.get("from_name") == "answer" and value.get("choices"):
            label = value["choices"][0]
            if label in by_label or label == SKIP_LABEL:
                answered, answer = True, by_label.get(label)
        elif r.get("from_name") == "reason" and value.get("text"):
            text = value["text"]
            reason = text[0] if isinstance(text, list) else str(text)
    return answered, answer, reason


def _annotator(who: Any) -> str:
    """Label Studio's ``completed_by``: a user id (a number), or a user object."""
    if isinstance(who, dict):
        who = who.get("id", who.get("email"))
    if isinstance(who, float) and who.is_integer():
        who = int(who)
    return str(who).strip()


def _number_first(value: Any) -> tuple:
    """Sort key comparing numeric ids as numbers ('10' after '3'), others as text."""
    text = str(value)
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def import_label_studio(campaign: Campaign, path: Path) -> dict[str, Any]:
    """A Label Studio JSON export, by task: each annotation is one judgment of one pair by one
    annotator (stored in that annotator's assignment of the pair's HIT). A skipped task
    (``was_cancelled``) or an annotation without an answer is no judgment; a second annotation
    of a pair by the same annotator, one already imported, and one over the pair's number of
    judgments are dropped; check pairs are scored per annotator over whatever checks they
    answered (one wrong: their work waits for review). The report names everything dropped."""
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise XmodalError(f"{path}: not a Label Studio JSON export ({exc})") from exc
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise XmodalError(f"{path}: a Label Studio JSON export is a list of tasks")
    hits = hit_table(campaign)
    key = secret(campaign)
    by_ref, by_content = {}, {}
    for it in ls_tasks(hits, key):
        by_ref[it["ref"]] = it["pair_id"]
        by_content[(it["image"] + ".jpg", it["text"])] = it["pair_id"]
    in_hits: dict[int, list[tuple[int, str, int]]] = defaultdict(list)  # pair -> (hit, role, n)
    for h in hits:
        for it in h["items"]:
            in_hits[it["pair_id"]].append((h["hit"], it["role"], h["replication"]))
    hit_ref = {h["hit"]: h["ref"] for h in hits}
    dropped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    entries = []
    n_annotations = 0
    for task in tasks:
        data = task.get("data") or {}
        ref = (task.get("meta") or {}).get("xmodal") or data.get("item")
        pid = by_ref.get(ref)
        if pid is None:
            image = str(data.get("image", "")).rsplit("/", 1)[-1]
            pid = by_content.get((image, data.get("text")))
        if pid is None:
            dropped["unknown_tasks"].append({"task": task.get("id"),
                                             "why": "not a task of this campaign"})
            continue
        for ann in task.get("annotations") or []:
            n_annotations += 1
            who = _annotator(ann.get("completed_by"))
            where = {"task": task.get("id"), "annotation": ann.get("id"), "annotator": who}
            if who in ("", "None"):
                dropped["no_annotator"].append({**where, "why": "no completed_by"})
                continue
            if ann.get("was_cancelled"):
                dropped["skipped"].append({**where, "why": "skipped (no answer)"})
                continue
            answered, answer, reason = _ls_answer(ann.get("result"))
            if not answered:
                dropped["empty"].append({**where, "why": "no answer chosen"})
                continue
            times = [t for t in (_time(ann.get("created_at")), _time(ann.get("updated_at")))
                     if t]
            entries.append({**where, "pair": pid, "answer": answer, "reason": reason,
                            "lead_time": float(ann.get("lead_time") or 0), "times": times})
    if tasks and len(dropped["unknown_tasks"]) == len(tasks):
        raise XmodalError(f"{path}: none of its {len(tasks)} tasks is a task of "
                          f"{campaign.path.name} (an export of another project?)")
    # first come, first served: by time, then by annotation id (numbers as numbers)
    entries.sort(key=lambda e: (min(e["times"]) if e["times"] else float("inf"),
                                _number_first(e["annotation"])))
    stored, touched = 0, set()
    with campaign.write() as c:
        seen: set[tuple[str, int]] = set()
        for e in entries:
            who, pid = e["annotator"], e["pair"]
            where = {k: e[k] for k in ("task", "annotation", "annotator")}
            if (who, pid) in seen:
                dropped["duplicates"].append({**where, "why": "a second annotation of this "
                                              "task by the same annotator (the first is kept)"})
                continue
            seen.add((who, pid))
            wid = external_worker(c, "label-studio", who)
            if c.execute("SELECT 1 FROM judgments j JOIN assignments a ON a.id = "
                         "j.assignment_id WHERE a.worker_id = ? AND j.pair_id = ?",
                         (wid, pid)).fetchone():
                dropped["already_imported"].append({**where, "why": "imported before"})
                continue
            places = in_hits[pid]
            mine = {r[0]: r[1] for r in c.execute(
                "SELECT hit_id, id FROM assignments WHERE worker_id = ?", (wid,))}
            hit, role, replication = next((p for p in places if p[0] in mine), places[0])
            if role == "judge" and e["answer"] is not None:
                live = ",".join(f"'{s}'" for s in LIVE)
                n = c.execute(f"SELECT COUNT(*) FROM judgments j JOIN assignments a ON a.id = "
                              f"j.assignment_id WHERE j.pair_id = ? AND a.hit_id = ? AND "
                              f"j.answer IS NOT NULL AND a.status IN ({live})",
                              (pid, hit)).fetchone()[0]
                if n >= replication:
                    dropped["over_limit"].append({**where, "why": f"the pair already has its "
                                                  f"{replication} judgments"})
                    continue
            times = e["times"] or [time.time()]
            aid = mine.get(hit)
            if aid is None:
                aid = c.execute("INSERT INTO assignments(hit_id, worker_id, status, "
                                "started_at, submitted_at) VALUES(?, ?, 'accepted', ?, ?)",
                                (hit, wid, min(times), max(times))).lastrowid
                c.execute("INSERT INTO external_assignments VALUES(?, 'label-studio', ?, 0)",
                          (aid, f"{hit_ref[hit]}:{who}"))
            c.execute("UPDATE assignments SET started_at = MIN(started_at, ?), submitted_at = "
                      "MAX(submitted_at, ?) WHERE id = ?", (min(times), max(times), aid))
            c.execute("UPDATE external_assignments SET work_s = COALESCE(work_s, 0) + ? WHERE "
                      "assignment_id = ?", (e["lead_time"], aid))
            c.execute("INSERT INTO judgments VALUES(?, ?, ?, ?)",
                      (aid, pid, e["answer"], (e["reason"] or "").strip() or None))
            stored += 1
            touched.add(wid)
        # the checks, per annotator over every check they answered: one wrong, and their
        # work not yet decided by a reviewer waits for one
        review = []
        for wid in sorted(touched):
            checks = c.execute(
                "SELECT hi.role, j.answer FROM judgments j JOIN assignments a ON a.id = "
                "j.assignment_id JOIN hit_items hi ON hi.hit_id = a.hit_id AND hi.pair_id = "
                "j.pair_id WHERE a.worker_id = ? AND hi.role != 'judge'", (wid,)).fetchall()
            if all(is_gold_correct(role, answer) for role, answer in checks):
                continue
            n = c.execute("UPDATE assignments SET status = 'review' WHERE worker_id = ? AND "
                          "status = 'accepted' AND id NOT IN (SELECT assignment_id FROM "
                          "reviews)", (wid,)).rowcount
            if n:
                review.append(c.execute("SELECT external_id FROM external_workers WHERE "
                                        "worker_id = ?", (wid,)).fetchone()[0])
    return {"platform": "label-studio", "tasks": len(tasks), "annotations": n_annotations,
            "judgments": stored, "annotators": len({e["annotator"] for e in entries}),
            "review": sorted(review, key=_number_first),
            "dropped": {k: v for k, v in dropped.items() if v}}


def import_results(campaign: Campaign, path: str | Path,
                   platform: str | None = None) -> dict[str, Any]:
    """Import a platform's results file (MTurk batch CSV or Label Studio JSON export)."""
    path = Path(path)
    if not path.is_file():
        raise XmodalError(f"results file not found: {path}")
    platform = platform or ("mturk" if path.suffix.lower() == ".csv" else "label-studio")
    if platform == "mturk":
        return import_mturk(campaign, path)
    if platform == "label-studio":
        return import_label_studio(campaign, path)
    if platform == "prolific":
        return import_prolific(campaign, path)
    raise XmodalError(f"import reads mturk (CSV), label-studio (JSON) or prolific (the "
                      f"submissions CSV, to screen participants) results, not {platform!r}")


# ----- time and pay ---------------------------------------------------------------------------
def pay_report(campaign: Campaign, reward: float, fee: float = 0.0,
               entry_reward: float = 0.0) -> dict[str, Any]:
    """Per worker: submitted HITs, seconds per HIT (the platform's work time where it reported
    one, else submit minus start), and the hourly pay a reward per HIT gives.

    The entry test (``hits --qualify``) is no HIT: it counts on its own line (``entry_test``:
    taken, passed, failed, its median time) and in each worker's ``entry_test``. It is unpaid
    unless ``entry_reward`` is given (then every submitted entry test, passed or failed, earns
    it): MTurk pays no qualification test, and a Prolific participant who fails it returns the
    study (or gets the study's screen-out payment, which ``entry_reward`` stands for)."""
    from xmodal.mitl.store import entry_test

    has_external = campaign.q("SELECT 1 FROM sqlite_master WHERE name = "
                              "'external_assignments'")  # a campaign older than the table
    work = "e.work_s" if has_external else "NULL"
    join = ("LEFT JOIN external_assignments e ON e.assignment_id = a.id " if has_external
            else "")
    rows = campaign.q(
        f"SELECT w.name, a.status, a.started_at, a.submitted_at, {work}, a.hit_id "
        f"FROM assignments a JOIN workers w ON w.id = a.worker_id {join}"
        "WHERE a.submitted_at IS NOT NULL ORDER BY w.id, a.id")
    entry_hit = (entry_test(campaign.conn) or {}).get("hit")
    per: dict[str, dict[str, Any]] = {}
    entry: dict[str, Any] = {"taken": 0, "passed": 0, "failed": 0, "seconds": []}
    for name, status, started, submitted, work, hit in rows:
        p = per.setdefault(name, {"hits": 0, "paid_hits": 0, "seconds": [], "entry": None})
        seconds = work if work is not None else submitted - started
        if hit == entry_hit:
            p["entry"] = "passed" if status == "accepted" else "failed"
            entry["taken"] += 1
            entry[p["entry"]] += 1
            target = entry["seconds"]
        else:
            p["hits"] += 1
            p["paid_hits"] += status != "rejected"
            target = p["seconds"]
        if seconds and seconds > 0:
            target.append(seconds)
    median = lambda s: sorted(s)[len(s) // 2] if s else None  # noqa: E731
    workers = {}
    for name, p in per.items():
        s, m = p["seconds"], median(p["seconds"])
        workers[name] = {"hits": p["hits"], "paid_hits": p["paid_hits"],
                         "mean_s_per_hit": sum(s) / len(s) if s else None,
                         "median_s_per_hit": m, "hourly": reward * 3600 / m if m else None,
                         "earned": reward * p["paid_hits"] + entry_reward * (p["entry"] is not
                                                                            None)}
        if entry_hit is not None:
            workers[name]["entry_test"] = p["entry"]
    all_median = median([x for p in per.values() for x in p["seconds"]])
    paid = sum(p["paid_hits"] for p in per.values())
    entry_paid = entry["taken"] if entry_reward > 0 else 0
    entry_cost = round(entry_paid * entry_reward * (1 + fee), 4)
    out = {"reward": reward, "fee": fee, "workers": workers, "median_s_per_hit": all_median,
           "hourly": reward * 3600 / all_median if all_median else None,
           "paid_hits": paid, "cost": round(paid * reward * (1 + fee) + entry_cost, 4)}
    if entry_hit is not None:
        out["entry_test"] = {"taken": entry["taken"], "passed": entry["passed"],
                             "failed": entry["failed"], "reward": entry_reward,
                             "paid": entry_paid, "median_s": median(entry["seconds"]),
                             "cost": entry_cost}
    return out



# ----- Prolific participants ------------------------------------------------------------------


class ParticipantRefused(XmodalError):
    """A study link that may not sign in: another study, or a PID bound to another session."""


def register_participant(campaign: Campaign, pid: str, study: str = "",
                         session: str = "", browser_pid: str | None = None) -> Worker:
    """The worker for Prolific participant ``pid`` arriving by the study link.

    The link must carry the STUDY_ID given at export (``--study-id``). The first visit binds the
    PID to Prolific's SESSION_ID; a later visit with another SESSION_ID (someone else using the
    PID) is refused, as is a browser that already takes part as another PID (``browser_pid``:
    one person trying invented PIDs). Nobody's sign-in is rotated or ended by a visit."""
    import re

    if not re.fullmatch(PID_RE, pid or ""):
        raise XmodalError("the study link needs a PROLIFIC_PID (letters and digits)")
    expected = campaign.meta("prolific_study")
    if not expected:
        raise XmodalError("this campaign has no Prolific study: export it with 'xmodal mitl "
                          "crowd export CAMPAIGN OUT --platform prolific --study-id STUDY_ID'")
    if study != expected:
        raise ParticipantRefused("this link belongs to another Prolific study")
    if not re.fullmatch(PID_RE, session or ""):
        raise XmodalError("the study link needs Prolific's SESSION_ID")
    if browser_pid is not None and browser_pid != pid:
        raise ParticipantRefused(
            "this browser already takes part in the study as another participant; a person "
            "takes part once")
    with campaign.write() as c:
        bound = c.execute("SELECT value FROM meta WHERE key = ?",
                          (f"prolific:{pid}",)).fetchone()
        if bound is not None and json.loads(bound[0])["session"] != session:
            raise ParticipantRefused(
                "this Prolific ID has already started the study in another session; if that "
                "was you on another device, use the same study link there, or contact the "
                "researcher through Prolific")
        if bound is None:
            campaign.set_meta(c, f"prolific:{pid}", {"study": study, "session": session,
                                                    "at": time.time()})
        wid = external_worker(c, "prolific", pid)
        revoked = c.execute("SELECT token_sha256 LIKE 'revoked:%' FROM workers WHERE id = ?",
                            (wid,)).fetchone()[0]
    if revoked:
        raise ParticipantRefused("this participant can no longer take part in the study")
    return Worker(wid, f"prolific:{pid}", "worker")


def participant_done(campaign: Campaign, worker: Worker) -> dict[str, Any]:
    """Whether the participant has earned the completion code: ``submitted`` real HITs (the
    entry test is none), ``failed_entry_test``, and ``code`` once they submitted enough."""
    from xmodal.mitl.store import qualification_gate

    done = campaign.q("SELECT COUNT(*) FROM assignments a JOIN hits h ON h.id = a.hit_id WHERE "
                      "a.worker_id = ? AND a.submitted_at IS NOT NULL AND h.replication > 0",
                      (worker.id,))[0][0]
    failed = qualification_gate(campaign.conn, worker.id) == -1
    need = int(campaign.meta("prolific_min_hits", 1))
    code = campaign.meta("prolific_completion_code") if done >= need and not failed else None
    return {"submitted": done, "need": need, "failed_entry_test": failed, "code": code}


def import_prolific(campaign: Campaign, path: Path) -> dict[str, Any]:
    """Screen participants with Prolific's own list: the study's submissions export (CSV with
    ``Participant id`` and ``Status``). Participants of the campaign who are not in it (an
    invented PID never is) or whose submission Prolific marks RETURNED, TIMED-OUT or REJECTED
    have their HITs rejected (they stop counting); the report names them."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    cols = {k.strip().lower(): k for k in (rows[0] if rows else {})}
    if "participant id" not in cols:
        raise XmodalError(f"{path}: not a Prolific submissions export (needs a 'Participant "
                          "id' column; download it from the study's Submissions page)")
    status = {r[cols["participant id"]].strip(): (r.get(cols.get("status", ""), "") or "")
              .strip().upper() for r in rows}
    bad_status = {"RETURNED", "TIMED-OUT", "TIMED_OUT", "REJECTED"}
    screened = []
    with campaign.write() as c:
        for wid, pid in c.execute("SELECT worker_id, external_id FROM external_workers WHERE "
                                  "platform = 'prolific'").fetchall():
            why = ("not a participant of the study on Prolific" if pid not in status else
                   f"{status[pid].lower()} on Prolific" if status[pid] in bad_status else None)
            if why is None:
                continue
            n = c.execute("UPDATE assignments SET status = 'rejected' WHERE worker_id = ? AND "
                          "status IN ('accepted', 'review')", (wid,)).rowcount
            screened.append({"participant": pid, "why": why, "hits_rejected": n})
    return {"platform": "prolific", "participants_on_prolific": len(status),
            "screened_out": screened}
