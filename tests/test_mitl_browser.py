"""Browser tests of the judging (/judge) and review (/review) pages of a MITL campaign.

A small campaign is built on the fly (30 coloured JPEGs, 2 captions each, two seeded random
machine annotators, HITs of 4 candidates + 2 gold pairs judged twice); the server runs in a
thread on 127.0.0.1 and Playwright drives Debian's headless Chromium, as in
``test_server_browser``. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from live_server import chromium, live_server
from PIL import Image

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
N_IMAGES = 30


def _build_campaign(root: Path) -> Path:
    from xmodal.eval.protocols import get_protocol
    from xmodal.mitl.hits import make_hits
    from xmodal.mitl.propose import Annotator, propose
    from xmodal.mitl.store import Campaign

    folder = root / "photos"
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows = []
    for i in range(N_IMAGES):
        colour = tuple(int(v) for v in rng.integers(0, 256, 3))
        Image.new("RGB", (96, 72), colour).save(folder / f"img{i:02d}.jpg")
        rows += [(f"img{i:02d}.jpg", f"photo {i}: a flat colour {colour}"),
                 (f"img{i:02d}.jpg", f"a plain square of colour number {i}")]
    captions = root / "captions.csv"
    with captions.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["image", "caption"])
        writer.writerows(rows)
    protocol = get_protocol("folder", folder, captions=captions)
    n_texts = len(next(iter(protocol.directions.values())).text_ids)
    annotators = []
    for j in range(2):
        s = np.random.default_rng(10 + j).random((N_IMAGES, n_texts))
        annotators.append(Annotator(f"a{j}", "test", {"i2t": s, "t2i": s}))
    db = root / "campaign.db"
    c = Campaign(db, create=True)
    propose(c, protocol, annotators, n_queries=10, k=5)
    make_hits(c, protocol, size=4, replication=2)
    c.close()
    return db


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    from xmodal.mitl.store import Campaign
    from xmodal.server import create_app

    root = tmp_path_factory.mktemp("mitl")
    ARTIFACTS.mkdir(exist_ok=True)
    db = _build_campaign(root)
    with Campaign(db) as c:
        tokens = {name: c.add_worker(name) for name in ("alice", "bob")}
        tokens["rev"] = c.add_worker("rev", role="reviewer")
    app = create_app(db_path=root / "none.db", reports_dir=root, thumbnail_dir=root / "thumbs",
                     campaign=db)
    with live_server(app) as url:
        yield {"url": url, "db": db, "tokens": tokens}


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def new_page(browser):
    """A fresh browser context per page (its own localStorage, so tokens don't leak)."""
    contexts, errors = [], []

    def make(width: int = 1100, height: int = 800):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        pg = context.new_page()
        pg.set_default_timeout(10_000)
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        return pg

    yield make
    for context in contexts:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def _link(campaign, name: str, page: str | None = None) -> str:
    """A fresh one-time sign-in link for the worker (as 'xmodal mitl workers link' gives)."""
    from xmodal.mitl.blind import make_signin_code

    with _db(campaign) as c:
        code, page = make_signin_code(c, name, page)
    return f"{campaign['url']}/{page}?code={code}"


def _db(campaign):
    from xmodal.mitl.store import Campaign

    return Campaign(campaign["db"])


def _open_assignment(campaign, worker: str) -> tuple[int, int, list[tuple[int, str]]]:
    """(assignment, hit, [(pair id, gold role)] in the order this worker is shown) of the
    worker's active assignment."""
    from xmodal.mitl.blind import id_map

    with _db(campaign) as c:
        (aid, hit), = c.q("SELECT a.id, a.hit_id FROM assignments a JOIN workers w ON "
                          "w.id = a.worker_id WHERE w.name = ? AND a.status = 'active'", (worker,))
        roles = dict(c.q("SELECT pair_id, role FROM hit_items WHERE hit_id = ?", (hit,)))
        items = [(p, roles[p]) for p in id_map(c, aid).values()]
    return aid, hit, items


def _snapshot(campaign) -> list:
    with _db(campaign) as c:
        return [c.q(f"SELECT * FROM {t} ORDER BY 1, 2") for t in
                ("assignments", "judgments", "reviews")]


def _wait_pair(page, index: int, total: int) -> None:
    page.wait_for_function(
        "t => document.querySelector('#progress-text').textContent.includes(t)",
        arg=f"pair {index} of {total}")
    assert page.is_visible("#pair-view")


def _wait_saved(page) -> None:
    page.wait_for_selector("#save-status[data-state=saved]")


def _pressed(page) -> list[str]:
    return page.locator("#answer-buttons button[aria-pressed=true]").evaluate_all(
        "bs => bs.map(b => b.dataset.answer)")


def _right(kind: str, default: int) -> int:
    return {"gold_pos": 1, "gold_neg": 4}.get(kind, default)


def test_worker_judges_a_hit_by_keyboard_resumes_after_reload_and_submits(campaign, new_page):
    page = new_page()
    page.goto(_link(campaign, "alice"))
    _wait_pair(page, 1, 6)
    assert page.url == campaign["url"] + "/judge"  # exchanged for a cookie, a clean address
    assert "HIT 1 of" in page.inner_text("#progress-text")  # numbered per worker
    assert page.inner_text("#who").startswith("alice")
    aid, hit, items = _open_assignment(campaign, "alice")
    assert len(items) == 6
    # answers that pass the gold check: 1-2 on a known positive, 3-4 on a known negative
    plan = [_right(kind, 1 + i % 4) for i, (_, kind) in enumerate(items)]
    labels = page.locator("#answer-buttons button").all_inner_texts()
    assert [label.split(None, 1)[1] for label in labels] == [
        "100% yes", "partially yes, but …", "mostly no, because …", "100% no", "can't tell"]
    page.wait_for_function("document.querySelector('#pair-image').naturalWidth > 0")
    page.screenshot(path=str(ARTIFACTS / "web-judge.png"))

    for i in range(3):
        page.keyboard.press(str(plan[i]))
        _wait_pair(page, i + 2, 6)
    # a reason typed with digits in it: the keys must not answer; Esc leaves the field
    page.click("#reason")
    page.keyboard.type("2 cats, not 3")
    assert _pressed(page) == [] and "pair 4 of 6" in page.inner_text("#progress-text")
    page.keyboard.press("Escape")
    page.keyboard.press(str(plan[3]))
    _wait_pair(page, 5, 6)
    _wait_saved(page)

    page.reload()  # resumes at the same pair with the answers so far
    _wait_pair(page, 5, 6)
    assert _pressed(page) == []
    page.keyboard.press("ArrowLeft")
    _wait_pair(page, 4, 6)
    assert _pressed(page) == [str(plan[3])]
    assert page.input_value("#reason") == "2 cats, not 3"
    page.keyboard.press("ArrowLeft")
    assert _pressed(page) == [str(plan[2])] and page.input_value("#reason") == ""
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    _wait_pair(page, 5, 6)

    page.keyboard.press(str(plan[4]))
    _wait_pair(page, 6, 6)
    page.keyboard.press(str(plan[5]))
    page.wait_for_selector("#summary:not([hidden])")
    page.keyboard.press("ArrowLeft")
    _wait_pair(page, 6, 6)
    # Enter in the reason field goes on (here: to the summary) without choosing an answer
    page.click("#reason")
    page.keyboard.type("last one")
    page.keyboard.press("Enter")
    page.wait_for_selector("#summary:not([hidden]) #submit:not([hidden])")
    assert page.locator("#summary-list li").count() == 6
    assert page.locator("#summary-list li.error").count() == 0
    page.screenshot(path=str(ARTIFACTS / "web-judge-summary.png"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#outcome:not([hidden])")
    assert page.inner_text("#outcome-text").startswith("Submitted")
    assert "review" not in page.inner_text("#outcome-text")

    with _db(campaign) as c:
        assert c.q("SELECT a.id, a.hit_id, a.status, a.draft FROM assignments a JOIN workers w "
                   "ON w.id = a.worker_id WHERE w.name = 'alice'") == [(aid, hit, "accepted", None)]
        got = c.q("SELECT pair_id, answer, reason FROM judgments WHERE assignment_id = ?", (aid,))
    reasons = {3: "2 cats, not 3", 5: "last one"}
    assert sorted(got) == sorted((pid, plan[i], reasons.get(i)) for i, (pid, _) in enumerate(items))

    page.click("#next-hit")  # the next HIT starts at its first pair
    _wait_pair(page, 1, 6)


def test_a_wrong_gold_answer_goes_to_review_and_is_rejected(campaign, new_page):
    page = new_page(width=600, height=900)  # narrow: image above the caption
    page.goto(_link(campaign, "bob"))
    _wait_pair(page, 1, 6)
    box_img = page.locator("#pair-image").bounding_box()
    box_cap = page.locator("#caption").bounding_box()
    assert box_cap["y"] >= box_img["y"] + box_img["height"] - 1  # stacked
    page.screenshot(path=str(ARTIFACTS / "web-judge-narrow.png"))
    aid, hit, items = _open_assignment(campaign, "bob")
    wrong = {"gold_pos": 4, "gold_neg": 1}
    plan = [wrong.get(kind, 2) for _, kind in items]
    for i, answer in enumerate(plan):
        _wait_pair(page, i + 1, 6)
        if items[i][1].startswith("gold"):
            page.fill("#reason", "not sure")
        page.click(f"#answer-buttons button[data-answer='{answer}']")  # one tap: answer, go on
    page.wait_for_selector("#summary:not([hidden]) #submit:not([hidden])")
    page.click("#submit")
    page.wait_for_selector("#outcome:not([hidden])")
    # no verdict on the check pairs before review: the same words as a right answer
    assert page.inner_text("#outcome-text").startswith("Submitted")
    assert "review" not in page.inner_text("#outcome-text")
    assert "check" not in page.inner_text("#outcome-text")
    with _db(campaign) as c:
        assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("review",)]

    rev = new_page()
    rev.goto(_link(campaign, "rev"))
    entry = rev.locator(f".review-entry[data-assignment='{aid}']")
    entry.wait_for()
    assert "token=" not in rev.url
    assert f"HIT {hit}" in entry.locator("h2").inner_text() and "bob" in entry.inner_text()
    assert entry.locator(".review-item").count() == 6
    golds = entry.locator(".review-item.gold.wrong")
    assert golds.count() == sum(k.startswith("gold") for _, k in items) == 2
    kinds = golds.evaluate_all("ls => ls.map(l => l.dataset.kind)")
    assert sorted(kinds) == ["gold_neg", "gold_pos"]
    pos = entry.locator(".review-item[data-kind=gold_pos]")
    assert "right answer is 1 or 2" in pos.inner_text() and "4 · 100% no" in pos.inner_text()
    assert "not sure" in pos.inner_text()
    rev.wait_for_function("[...document.querySelectorAll('.review-item img')]"
                          ".every(i => i.complete && i.naturalWidth > 0)")
    rev.screenshot(path=str(ARTIFACTS / "web-review.png"), full_page=True)
    entry.locator("input.note").fill("both check pairs wrong")
    # Reject asks first; Cancel keeps the HIT; a confirmed Reject can be undone
    entry.locator("button.reject").click()
    assert entry.locator("button.reject").inner_text() == "Confirm reject"
    with _db(campaign) as c:
        assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("review",)]
    entry.locator("button.cancel").click()
    assert entry.locator("button.reject").inner_text() == "Reject"
    entry.locator("button.reject").click()
    entry.locator("button.reject").click()
    notice = rev.locator(f".review-entry.decided[data-assignment='{aid}']")
    notice.wait_for()
    assert "rejected" in notice.inner_text()
    with _db(campaign) as c:
        assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("rejected",)]
    notice.locator("button.undo").click()
    entry = rev.locator(f".review-entry:not(.decided)[data-assignment='{aid}']")
    entry.wait_for()
    assert "undone" in rev.inner_text("#message")
    with _db(campaign) as c:
        assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("review",)]
    entry.locator("input.note").fill("both check pairs wrong")
    entry.locator("button.reject").click()
    entry.locator("button.reject").click()
    rev.locator(f".review-entry.decided[data-assignment='{aid}']").wait_for()
    assert "rejected" in rev.inner_text("#message")
    with _db(campaign) as c:
        assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,)) == [("rejected",)]
        assert c.q("SELECT decision, note FROM reviews WHERE assignment_id = ?", (aid,)) == [
            ("reject", "both check pairs wrong")]


def test_a_missing_or_wrong_token_shows_an_error_and_writes_nothing(campaign, new_page):
    before = _snapshot(campaign)
    page = new_page()
    page.goto(campaign["url"] + "/judge")
    page.wait_for_selector("#token-form:not([hidden])")
    assert "token is needed" in page.inner_text("#message")
    assert page.is_hidden("#judge")
    page.fill("#token-input", "not-a-token")
    page.press("#token-input", "Enter")
    page.wait_for_function("document.querySelector('#message').textContent.includes('unknown')")
    assert page.is_visible("#token-form") and page.is_hidden("#judge")
    assert page.evaluate("localStorage.length") == 0  # a refused token is not kept

    page.goto(campaign["url"] + "/judge?token=wrong")  # a token in an address: no sign-in
    page.wait_for_function("document.querySelector('#message').textContent.includes("
                           "'does not sign in')")
    assert page.is_visible("#token-form") and "token=" not in page.url
    used = _link(campaign, "rev")  # the review page writes nothing
    page.goto(used)
    page.wait_for_selector("#review:not([hidden])")
    fresh = page.context.browser.new_context()  # another browser: the link was burned
    other = fresh.new_page()
    other.goto(used)
    other.wait_for_function("document.querySelector('#message').textContent.includes("
                            "'used already')")
    assert other.is_visible("#token-form") and "code=" not in other.url
    fresh.close()
    page.screenshot(path=str(ARTIFACTS / "web-judge-token.png"))

    page.context.clear_cookies()
    page.goto(_link(campaign, "alice", "review"))  # not a reviewer
    page.wait_for_function("document.querySelector('#message').textContent.includes('reviewer')")
    assert page.is_visible("#token-form") and page.is_hidden("#review")
    assert _snapshot(campaign) == before



def test_a_phone_shows_the_pair_and_all_four_answers_and_one_tap_goes_on(campaign, new_page):
    with _db(campaign) as c:
        c.add_worker("phone")
    page = new_page(width=390, height=844)
    page.goto(_link(campaign, "phone"))
    _wait_pair(page, 1, 6)
    page.wait_for_function("document.querySelector('#pair-image').naturalWidth > 0")
    assert page.evaluate("window.scrollY") == 0
    for box in [page.locator(f"#answer-buttons button[data-answer='{n}']").bounding_box()
                for n in (1, 2, 3, 4)]:
        assert box["y"] >= 0 and box["y"] + box["height"] <= 844, box  # no scrolling needed
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    image = page.locator("#pair-image").bounding_box()
    assert image["height"] > 100 and image["y"] + image["height"] <= 844
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "web-judge-phone.png"))
    page.click("#answer-buttons button[data-answer='3']")
    _wait_pair(page, 2, 6)  # one tap answered and moved on
    # campaign pages link no search or evaluation pages; the instructions are one tap away
    links = page.locator("header a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert "/" not in links and "/eval" not in links and "/judge/instructions" in links


def test_instructions_show_an_example_for_each_answer(campaign, new_page):
    page = new_page(width=390, height=844)
    page.goto(campaign["url"] + "/judge/instructions")
    for n, words in enumerate(["100% yes", "partially yes", "mostly no", "100% no"], 1):
        example = page.locator(f"#example-{n}")
        assert words in example.inner_text() and "“" in example.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_two_tabs_of_one_worker_get_changed_in_another_tab_and_merge(campaign, new_page):
    with _db(campaign) as c:
        c.add_worker("twotabs")
    one = new_page()
    one.goto(_link(campaign, "twotabs"))
    _wait_pair(one, 1, 6)
    two = one.context.new_page()  # the same browser: the same session cookie
    two.goto(campaign["url"] + "/judge")
    _wait_pair(two, 1, 6)
    one.click("#answer-buttons button[data-answer='1']")
    _wait_pair(one, 2, 6)
    _wait_saved(one)
    two.click("#answer-buttons button[data-answer='4']")  # the stale tab
    two.wait_for_selector("#conflict:not([hidden])")
    assert "another tab" in two.inner_text("#message")
    assert "changed in another tab" in two.inner_text("#save-status").lower()
    row = two.locator("#conflict-list li")
    assert row.count() == 1 and "100% yes" in row.inner_text() and "100% no" in row.inner_text()
    two.screenshot(path=str(ARTIFACTS / "web-judge-conflict.png"))
    assert two.locator("#answer-buttons button:disabled").count() == 5  # settle first
    row.locator("button.take-theirs").click()
    two.wait_for_selector("#conflict", state="hidden")
    _wait_saved(two)
    assert two.locator("#answer-buttons button:disabled").count() == 0
    aid, _, _ = _open_assignment(campaign, "twotabs")
    with _db(campaign) as c:
        draft = json.loads(c.q("SELECT draft FROM assignments WHERE id = ?", (aid,))[0][0])
    assert [v["answer"] for v in draft["answers"].values()] == [1]


def test_a_too_long_reason_is_refused_not_cut(campaign, new_page):
    with _db(campaign) as c:
        c.add_worker("wordy")
    page = new_page()
    page.goto(_link(campaign, "wordy"))
    _wait_pair(page, 1, 6)
    page.fill("#reason", "x" * 2001)
    page.wait_for_selector("#reason-error:not([hidden])")
    assert "2,000" in page.inner_text("#reason-error")
    assert page.inner_text("#reason-count").startswith("2,001 / 2,000")
    page.wait_for_selector("#save-status[data-state=error]")
    assert page.input_value("#reason") == "x" * 2001  # nothing cut
    page.fill("#reason", "x" * 2000)
    page.wait_for_selector("#reason-error", state="hidden")
    _wait_saved(page)


def test_review_wraps_long_words(campaign, new_page):
    with _db(campaign) as c:
        worker = c.worker_for(c.add_worker("longword"))
        aid = c.next_assignment(worker)
        roles = dict(c.q("SELECT hi.pair_id, hi.role FROM hit_items hi JOIN assignments a ON "
                         "a.hit_id = hi.hit_id WHERE a.id = ?", (aid,)))
        answers = {p: ({"gold_pos": 4, "gold_neg": 1}.get(roles[p], 2), "W" * 1900)
                   for p in roles}
        assert c.submit(aid, worker, answers) == "review"
    rev = new_page(width=1100)
    rev.goto(_link(campaign, "rev"))
    rev.locator(f".review-entry[data-assignment='{aid}']").wait_for()
    assert rev.evaluate("document.documentElement.scrollWidth") <= 1100
    phone = new_page(width=390, height=844)
    phone.goto(_link(campaign, "rev"))
    phone.locator(f".review-entry[data-assignment='{aid}']").wait_for()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


def test_no_hits_left_says_thank_you(campaign, new_page):
    """Runs last: two more workers take every free slot, so a new worker gets no HIT."""
    with _db(campaign) as c:
        c.add_worker("late")
        for name in ("filler1", "filler2"):
            worker = c.worker_for(c.add_worker(name))
            while c.next_assignment(worker) is not None:
                c.q("UPDATE assignments SET status = 'accepted' WHERE worker_id = ? AND "
                    "status = 'active'", (worker.id,))
    page = new_page()
    page.goto(_link(campaign, "late"))
    page.wait_for_selector("#done:not([hidden])")
    assert "No HITs left" in page.inner_text("#done")
    assert page.is_hidden("#judge") and page.is_hidden("#message")
