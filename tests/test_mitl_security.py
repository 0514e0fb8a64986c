"""Credentials, hidden gold, drafts and leases of the judging server (issue 33, items 1, 2, 3, 5).

API tests use FastAPI's TestClient over a small generated campaign (``mitl_fixtures``); the
token-in-URL test runs a real uvicorn server with its access log on and drives Chromium,
recording every URL the page requests.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest
from fastapi.testclient import TestClient
from mitl_fixtures import build_campaign, gold_answers, judging_app

EVIL = "http://evil.example"


@pytest.fixture()
def served(tmp_path):
    c, protocol = build_campaign(tmp_path)
    app = judging_app(tmp_path, c.path)
    with TestClient(app) as client:
        yield client, c, app


def _h(token):
    return {"X-Worker-Token": token}


def _session(app, token, page="judge"):
    """A client that opened the worker's one-time sign-in link: it holds the session cookie
    only."""
    from xmodal.mitl.blind import make_signin_code

    c = app.state.campaign.get()
    code, _ = make_signin_code(c, c.worker_for(token).name, page)
    client = TestClient(app)
    r = client.get(f"/{page}?code={code}", follow_redirects=False)
    assert r.status_code == 303, r.text
    return client, r


def _roles(c, payload_hit):
    return dict(c.q("SELECT pair_id, role FROM hit_items WHERE hit_id = ?", (payload_hit,)))


def test_a_token_link_becomes_an_httponly_cookie_and_a_clean_url(served):
    client, c, app = served
    token = c.add_worker("alice")
    web, r = _session(app, token)
    assert r.headers["location"] == "/judge"  # a 303 to the page without the query
    cookie = r.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert token not in cookie  # the cookie is a session, not the token itself
    # the cookie alone carries the worker from now on
    me = web.get("/api/mitl/me")
    assert me.status_code == 200 and me.json()["name"] == "alice"
    first = web.post("/api/mitl/next")
    assert first.status_code == 200 and first.json()["assignment"] is not None
    image = first.json()["items"][0]["image"]
    assert "token" not in image and "?" not in image
    assert web.get(image).status_code == 200
    # a wrong token: back to the page, no cookie, no token in the address
    bad = TestClient(app).get("/judge?token=wrong", follow_redirects=False)
    assert bad.status_code == 303 and "wrong" not in bad.headers["location"]
    assert "token=" not in bad.headers["location"]
    # tokens in a query string are refused on the API, on GET and on POST alike
    assert client.post(f"/api/mitl/next?token={token}").status_code == 400
    assert client.get(f"/api/mitl/me?token={token}").status_code == 400
    # the session ends on request
    assert web.request("DELETE", "/api/mitl/session").status_code == 200
    assert web.get("/api/mitl/me").status_code == 401


def test_a_cross_origin_post_with_a_valid_cookie_is_refused(served):
    _, c, app = served
    web, _ = _session(app, c.add_worker("alice"))
    before = c.q("SELECT COUNT(*) FROM assignments")[0][0]
    for origin in (EVIL, "null", "http://127.0.0.1:9"):
        r = web.post("/api/mitl/next", headers={"Origin": origin})
        assert r.status_code == 403, (origin, r.text)
        assert "origin" in r.json()["error"]["message"].lower()
    r = web.post("/api/mitl/next", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert c.q("SELECT COUNT(*) FROM assignments")[0][0] == before  # nothing written
    ok = web.post("/api/mitl/next", headers={"Origin": "http://testserver"})
    assert ok.status_code == 200


def test_gold_and_candidates_are_indistinguishable_to_workers(served):
    client, c, app = served
    dataset_ids = {i for (i,) in c.q("SELECT id FROM images")} | \
        {t for (t,) in c.q("SELECT id FROM texts")}
    payloads, gold_positions, orders = [], [], {}
    for k in range(4):
        token = c.add_worker(f"w{k}")
        web, _ = _session(app, token)
        for _ in range(3):
            r = web.post("/api/mitl/next")
            data = r.json()
            if data["assignment"] is None:
                break
            payloads.append(r.text)
            raw = c.assignment(data["assignment"], c.worker_for(token))  # the server's view
            roles = _roles(c, raw["hit"])
            ids = [it["id"] for it in data["items"]]
            assert len(set(ids)) == len(ids)
            for it in data["items"]:
                assert set(it) == {"id", "text", "image"}  # the same fields for every item
                # an HMAC in hex, not a row number (it may happen to hold only digits: 16 hex
                # characters are all decimal digits once in about 1,850 ids)
                assert len(it["id"]) >= 12 and set(it["id"]) <= set("0123456789abcdef")
            from xmodal.mitl.blind import pair_of

            pairs = [pair_of(c, data["assignment"], i) for i in ids]
            gold_positions += [n for n, p in enumerate(pairs) if roles[p] != "judge"]
            orders.setdefault(raw["hit"], []).append((ids, pairs))
            answers = {i: {"answer": a} for i, p in zip(ids, pairs)
                       for a in [gold_answers(c, raw, wrong=k == 0)[p][0]]}
            s = web.post(f"/api/mitl/assignments/{data['assignment']}/submit",
                         json={"answers": answers})
            assert s.status_code == 200, s.text
            payloads.append(s.text)
            # no verdict on the check pairs before review: the same answer either way
            assert "review" not in s.text and "gold" not in s.text
            assert set(s.json()) == {"assignment", "submitted"}
            after = web.get(f"/api/mitl/assignments/{data['assignment']}")
            assert after.json()["status"] == "submitted"  # in review or accepted alike
            payloads.append(after.text)
    assert payloads
    for text in payloads:
        assert "pair_id" not in text and "image_id" not in text and "text_id" not in text
        assert "gold" not in text and "kind" not in text and "role" not in text
        found = [d for d in dataset_ids if json.dumps(d)[1:-1] in text]
        assert not found, found
    # gold is not always at the same place; one HIT shows other ids and order per worker
    assert len(set(gold_positions)) > 2
    shared = [v for v in orders.values() if len(v) > 1]
    assert shared
    for views in shared:
        (ids_a, pairs_a), (ids_b, pairs_b) = views[:2]
        assert not set(ids_a) & set(ids_b)
        assert sorted(pairs_a) == sorted(pairs_b)
    assert any(v[0][1] != v[1][1] for v in shared)


def test_a_reviewer_cannot_review_their_own_hit(served):
    client, c, app = served
    boss = c.add_worker("boss", "reviewer")
    other = c.add_worker("other", "reviewer")
    data = client.post("/api/mitl/next", headers=_h(boss)).json()
    raw = c.assignment(data["assignment"], c.worker_for(boss))
    from xmodal.mitl.blind import pair_of

    wrong = gold_answers(c, raw, wrong=True)
    answers = {i: {"answer": wrong[pair_of(c, data["assignment"], i)][0]}
               for i in (it["id"] for it in data["items"])}
    r = client.post(f"/api/mitl/assignments/{data['assignment']}/submit", headers=_h(boss),
                    json={"answers": answers})
    assert r.status_code == 200
    assert c.q("SELECT status FROM assignments WHERE id = ?", (data["assignment"],))[0][0] == \
        "review"
    queue = client.get("/api/mitl/review", headers=_h(boss)).json()["queue"]
    assert data["assignment"] not in [q["assignment"] for q in queue]
    r = client.post(f"/api/mitl/review/{data['assignment']}", headers=_h(boss),
                    json={"decision": "accept"})
    assert r.status_code == 403 and "own" in r.json()["error"]["message"]
    assert c.q("SELECT status FROM assignments WHERE id = ?", (data["assignment"],))[0][0] == \
        "review"
    # another reviewer may; and may undo the decision
    queue = client.get("/api/mitl/review", headers=_h(other)).json()["queue"]
    assert [q["assignment"] for q in queue] == [data["assignment"]]
    r = client.post(f"/api/mitl/review/{data['assignment']}", headers=_h(other),
                    json={"decision": "reject"})
    assert r.status_code == 200
    r = client.post(f"/api/mitl/review/{data['assignment']}/undo", headers=_h(other))
    assert r.status_code == 200
    assert c.q("SELECT status FROM assignments WHERE id = ?", (data["assignment"],))[0][0] == \
        "review"
    assert c.q("SELECT COUNT(*) FROM reviews")[0][0] == 0


def test_a_worker_gets_only_their_own_hits_images(served):
    client, c, app = served
    alice, bob = c.add_worker("alice"), c.add_worker("bob")
    a = client.post("/api/mitl/next", headers=_h(alice)).json()
    b = client.post("/api/mitl/next", headers=_h(bob)).json()
    assert a["assignment"] != b["assignment"]
    url = a["items"][0]["image"]
    assert client.get(url, headers=_h(alice)).status_code == 200
    assert client.get(url, headers=_h(bob)).status_code == 404
    # bob's own assignment with alice's item id: not in his HIT either
    forged = url.replace(f"/assignments/{a['assignment']}/", f"/assignments/{b['assignment']}/")
    assert client.get(forged, headers=_h(bob)).status_code == 404
    # counting pair ids no longer downloads the campaign
    for pid in range(1, 6):
        assert client.get(f"/api/mitl/image/{pid}", headers=_h(bob)).status_code == 404


def test_two_tabs_editing_one_draft_get_409(served):
    client, c, app = served
    token = c.add_worker("alice")
    data = client.post("/api/mitl/next", headers=_h(token)).json()
    aid, ids = data["assignment"], [it["id"] for it in data["items"]]
    version = data["version"]
    url = f"/api/mitl/assignments/{aid}/draft"
    one = client.put(url, headers=_h(token),
                     json={"answers": {ids[0]: {"answer": 1}}, "position": 1, "version": version})
    assert one.status_code == 200 and one.json()["version"] == version + 1
    two = client.put(url, headers=_h(token),  # the other tab still holds the old version
                     json={"answers": {ids[0]: {"answer": 4}}, "position": 1, "version": version})
    assert two.status_code == 409 and "another tab" in two.json()["error"]["message"]
    again = client.get(f"/api/mitl/assignments/{aid}", headers=_h(token)).json()
    assert again["draft"]["answers"] == {ids[0]: {"answer": 1}}
    assert again["version"] == version + 1
    # an item id of another assignment is refused
    bad = client.put(url, headers=_h(token), json={"answers": {"nope": {"answer": 1}},
                                                   "version": again["version"]})
    assert bad.status_code == 400


def test_oversized_drafts_and_reasons_are_refused_with_the_limit_named(served):
    client, c, app = served
    token = c.add_worker("alice")
    data = client.post("/api/mitl/next", headers=_h(token)).json()
    aid, ids = data["assignment"], [it["id"] for it in data["items"]]
    url = f"/api/mitl/assignments/{aid}/draft"
    big = client.put(url, headers=_h(token), json={"answers": {}, "junk": "x" * 200_000,
                                                   "version": data["version"]})
    assert big.status_code == 413
    assert "limit" in big.json()["error"]["message"] and "64" in big.json()["error"]["message"]
    long = "w" * 2001
    r = client.put(url, headers=_h(token), json={
        "answers": {ids[0]: {"answer": 1, "reason": long}}, "version": data["version"]})
    assert r.status_code == 400 and "2,000" in r.json()["error"]["message"]
    assert data["limits"] == {"reason_chars": 2000, "draft_bytes": 65536}
    raw = c.assignment(aid, c.worker_for(token))
    from xmodal.mitl.blind import pair_of

    right = gold_answers(c, raw)
    answers = {i: {"answer": right[pair_of(c, aid, i)][0], "reason": long} for i in ids}
    r = client.post(f"/api/mitl/assignments/{aid}/submit", headers=_h(token),
                    json={"answers": answers})
    assert r.status_code == 400 and "2,000" in r.json()["error"]["message"]
    assert c.q("SELECT COUNT(*) FROM judgments")[0][0] == 0  # refused, not cut


def test_a_lease_counts_from_the_last_activity(served):
    client, c, app = served
    token = c.add_worker("alice")
    data = client.post("/api/mitl/next", headers=_h(token)).json()
    aid = data["assignment"]
    c.conn.execute("UPDATE assignments SET started_at = ? WHERE id = ?",
                   (time.time() - 3 * 3600, aid))  # started 3 h ago, the lease is 2 h
    r = client.put(f"/api/mitl/assignments/{aid}/draft", headers=_h(token),
                   json={"answers": {}, "position": 0, "version": data["version"]})
    assert r.status_code == 200  # a save is activity: the lease runs from now
    other = c.worker_for(c.add_worker("bob"))
    c.next_assignment(other)
    assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,))[0][0] == "active"
    again = client.post("/api/mitl/next", headers=_h(token)).json()
    assert again["assignment"] == aid
    # idle for longer than the lease: it expires
    c.conn.execute("UPDATE assignments SET started_at = 0, active_at = 0 WHERE id = ?", (aid,))
    c.next_assignment(other)
    assert c.q("SELECT status FROM assignments WHERE id = ?", (aid,))[0][0] == "expired"


def test_hit_numbers_are_per_worker(served):
    client, c, app = served
    first = c.worker_for(c.add_worker("first"))
    c.next_assignment(first)  # someone else took HIT 1
    token = c.add_worker("newcomer")
    data = client.post("/api/mitl/next", headers=_h(token)).json()
    assert data["number"] == 1 and data["of"] >= 2 and data["left"] == data["of"] - 1
    assert "hit" not in data  # no global HIT ids


# -- a real server: the access log and the URLs the page requests --------------------------
class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        from uvicorn.logging import AccessFormatter

        self.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s'))
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))


@pytest.mark.browser
def test_no_token_in_the_access_log_or_any_url_after_the_first_load(tmp_path):
    import uvicorn
    from live_server import CHROMIUM, CHROMIUM_ARGS, free_port

    from xmodal.server import create_app

    from xmodal.mitl.blind import make_signin_code

    c, _ = build_campaign(tmp_path)
    token, rev = c.add_worker("alice"), c.add_worker("rev", "reviewer")
    (code, _), (rev_code, _) = make_signin_code(c, "alice"), make_signin_code(c, "rev")
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=c.path, access_token="s3cret-access")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info",
                                           access_log=True))
    lines = _Lines()
    access = logging.getLogger("uvicorn.access")
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    access.addHandler(lines)
    url = f"http://127.0.0.1:{port}"
    profile = tmp_path / "chromium-profile"
    try:
        import pytest

        if not CHROMIUM.exists():
            pytest.skip("Debian Chromium not found at /usr/bin/chromium")
        sync_api = pytest.importorskip("playwright.sync_api")
        with sync_api.sync_playwright() as pw:
            # a browser profile on disk, to read what Chromium keeps in its history
            context = pw.chromium.launch_persistent_context(
                str(profile), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = context.new_page()
            page.set_default_timeout(10_000)
            requested: list[str] = []
            page.on("request", lambda req: requested.append(req.url))
            page.goto(f"{url}/judge?access_token=s3cret-access&code={code}")
            page.wait_for_function("document.querySelector('#pair-image').naturalWidth > 0")
            page.click("#answer-buttons button[data-answer='1']")
            page.wait_for_selector("#save-status[data-state=saved]")
            assert page.url == f"{url}/judge"
            cookies = {ck["name"]: ck for ck in context.cookies()}
            assert all(ck["httpOnly"] and ck["sameSite"] == "Strict" for ck in cookies.values())
            assert not any(token in ck["value"] or code in ck["value"]
                           for ck in cookies.values())
            rp = context.new_page()
            rp.on("request", lambda req: requested.append(req.url))
            rp.goto(f"{url}/review?code={rev_code}")
            rp.wait_for_selector("#review:not([hidden])")
            context.close()  # Chromium writes its history on the way out
        import sqlite3 as sq

        history = sq.connect(profile / "Default" / "History")
        kept = [u for (u,) in history.execute("SELECT url FROM urls")]
        history.close()
        # the sign-in addresses are in the history (issue 42: the token was), but they hold no
        # token and open nothing any more: each code was burned when it was used
        assert any("code=" in u for u in kept), kept
        assert not any(token in u or rev in u for u in kept), kept
        with TestClient(app) as again:
            for u in kept:
                if "code=" in u:
                    r = again.get(u.replace(url, "").replace("access_token=s3cret-access&", ""),
                                  follow_redirects=False,
                                  headers={"Authorization": "Bearer s3cret-access"})
                    assert r.status_code == 303 and r.headers["location"].endswith(
                        "#used-link"), (u, r.status_code, r.headers)
                    assert again.get("/api/mitl/me", headers={
                        "Authorization": "Bearer s3cret-access"}).status_code == 401
    finally:
        access.removeHandler(lines)
        server.should_exit = True
        thread.join(timeout=10)
    from urllib.parse import urlparse

    pages = [u for u in requested if urlparse(u).path in ("/judge", "/review")]
    assert pages[-1] == f"{url}/review" and f"{url}/judge" in pages  # redirected to clean URLs
    later = [u for u in requested if urlparse(u).path not in ("/judge", "/review")]
    assert any("/api/mitl/" in u for u in later) and any("/image" in u for u in later)
    leaked = [u for u in later if token in u or rev in u or "s3cret" in u or "token=" in u
              or code in u or rev_code in u]
    assert not leaked, leaked
    assert any("/judge" in line for line in lines.lines), lines.lines
    leaked = [line for line in lines.lines if token in line or rev in line or "s3cret" in line
              or code in line or rev_code in line or "?" in line.split('"')[1]]
    assert not leaked, leaked


def test_writes_behind_a_proxy_pass_with_its_public_origin(tmp_path):
    from xmodal.server import create_app

    c, _ = build_campaign(tmp_path)
    token = c.add_worker("alice")
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=c.path, allowed_origins=["https://judge.example.org"])
    with TestClient(app) as client:
        h = {"X-Worker-Token": token}
        assert client.post("/api/mitl/next", headers={
            **h, "Origin": "https://judge.example.org"}).status_code == 200
        assert client.post("/api/mitl/next", headers={  # a proxy naming the public host
            **h, "Origin": "https://proxy.example.net", "X-Forwarded-Host": "proxy.example.net"
        }).status_code == 200
        assert client.post("/api/mitl/next", headers={
            **h, "Origin": "https://judge.example.org.evil.example"}).status_code == 403
        # reads are not writes: a GET from anywhere is answered as before
        assert client.get("/api/mitl/me", headers={**h, "Origin": EVIL}).status_code == 200


def test_a_reissued_token_ends_its_sessions(served):
    import hashlib

    _, c, app = served
    token = c.add_worker("alice")
    web, _ = _session(app, token)
    assert web.get("/api/mitl/me").status_code == 200
    new = "a-new-token"
    c.conn.execute("UPDATE workers SET token_sha256 = ? WHERE name = 'alice'",
                   (hashlib.sha256(new.encode()).hexdigest(),))
    r = web.get("/api/mitl/me")
    assert r.status_code == 401 and "session has ended" in r.json()["error"]["message"]
    web2, _ = _session(app, new)
    assert web2.get("/api/mitl/me").json()["name"] == "alice"
    # a forged cookie (another worker id with alice's MAC) is nobody
    forged = TestClient(app)
    value = web2.cookies.get("xmodal_judge")
    forged.cookies.set("xmodal_judge", "999." + value.split(".", 1)[1])
    assert forged.get("/api/mitl/me").status_code == 401
