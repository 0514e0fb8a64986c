"""Hostile requests schemathesis does not generate: no route of the photo server or the judging
server answers 500, and every error is the JSON error body.

Cases on every route (path parameters filled with a real or plausible id): deeply nested JSON
(``[`` x 30,000 and ``{"a":`` x 30,000, under 64 KB), a body over the size limit, malformed
JSON, invalid UTF-8 in the body, the query string and the path, the wrong content type, a huge
query string and many repeated parameters. The judging routes are called with a real worker's
token and assignment, so the requests reach the route code, not only the sign-in check.
(``tests/test_server_fuzz.py`` runs schemathesis on what the OpenAPI schema describes.)
"""

from __future__ import annotations

import json
import re

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from test_server_fakes import fake_backends

from xmodal.server import create_app

NESTED = {
    "nested-list": b"[" * 30_000 + b"]" * 30_000,
    "nested-object": b'{"a":' * 30_000 + b"1" + b"}" * 30_000,
    "nested-answers": b'{"answers": {"x": ' + b"[" * 30_000 + b"]" * 30_000 + b"}}",
}
MALFORMED = {
    "truncated": b'{"answers": {',
    "not-json": b"hello there",
    "bad-utf8": b'{"token": "\xff\xfe\xfa"}',
    "nul-bytes": b'{"q": "\x00\x00"}',
    "huge-number": b'{"version": 1' + b"0" * 5000 + b"}",
    "wrong-types": b'{"answers": [1, 2], "version": "x", "position": {}, "token": 5}',
    "empty": b"",
}


@pytest.fixture(scope="module")
def photo_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("malformed-photos")
    db, parts = fake_backends(root)
    (root / "reports").mkdir()
    app = create_app(db, reports_dir=root / "reports", thumbnail_dir=root / "thumbs", **parts)
    return TestClient(app, raise_server_exceptions=False), {}


@pytest.fixture(scope="module")
def judge_app(tmp_path_factory):
    from mitl_fixtures import build_campaign

    root = tmp_path_factory.mktemp("malformed-judge")
    campaign, _ = build_campaign(root)
    token = campaign.add_worker("alice")
    boss = campaign.add_worker("boss", "reviewer")
    campaign.close()
    app = create_app(root / "none.db", reports_dir=root, thumbnail_dir=root / "t",
                     campaign=root / "campaign.db")
    client = TestClient(app, raise_server_exceptions=False)
    r = client.post("/api/mitl/next", json={}, headers={"X-Worker-Token": token})
    assert r.status_code == 200, r.text
    return client, {"worker": token, "reviewer": boss, "assignment": r.json()["assignment"]}


def _routes(client: TestClient, ids: dict) -> list[tuple[str, str]]:
    """(method, path) of every operation of the OpenAPI schema and every page route."""
    found = {(m.upper(), p) for p, ops in client.app.openapi()["paths"].items() for m in ops}
    found |= {(m, r.path) for r in client.app.routes if isinstance(r, APIRoute)
              for m in r.methods}
    found |= {("GET", "/prolific"), ("GET", "/prolific/done")}  # pages left out of the schema
    out = []
    for method, path in sorted(found):
        if method == "HEAD":
            continue
        path = re.sub(r"\{assignment_id\}", str(ids.get("assignment", 1)), path)
        path = re.sub(r"\{item\}", "abc", path)
        path = re.sub(r"\{name(:path)?\}", "x.json", path)
        out.append((method, re.sub(r"\{[^}]+\}", "1", path)))
    return out


def _headers(ids: dict, path: str) -> dict:
    if "/review" in path and ids.get("reviewer"):
        return {"X-Worker-Token": ids["reviewer"]}
    return {"X-Worker-Token": ids["worker"]} if ids.get("worker") else {}


def _check(r, what) -> None:
    # 503: the judging server has no photo index to search (a JSON error too)
    assert r.status_code < 500 or r.status_code == 503, (what, r.status_code, r.text[:300])
    if r.status_code >= 400 and r.headers.get("content-type", "").startswith("application/json"):
        body = r.json()
        assert set(body) == {"error"} and body["error"]["message"], (what, body)


@pytest.mark.parametrize("server", ["photo_app", "judge_app"])
def test_every_route_survives_hostile_bodies(server, request):
    client, ids = request.getfixturevalue(server)
    routes = _routes(client, ids)
    assert len(routes) > 12 and sum(m != "GET" for m, _ in routes) > 4, routes
    bodies = {**NESTED, **MALFORMED}
    for method, path in routes:
        if method not in ("POST", "PUT", "PATCH", "DELETE"):
            continue
        headers = _headers(ids, path)
        for name, body in bodies.items():
            for ctype in ("application/json", "text/plain", "application/x-www-form-urlencoded"):
                r = client.request(method, path, content=body,
                                   headers={**headers, "Content-Type": ctype})
                _check(r, (method, path, name, ctype))
        # multipart where JSON is expected, JSON where a file is expected
        r = client.request(method, path, headers=headers,
                           files={"image": ("x.jpg", b"\xff\xd8\xff not a jpeg", "image/jpeg")})
        _check(r, (method, path, "multipart"))
        r = client.request(method, path, headers={**headers, "Content-Type":
                                                   "multipart/form-data; boundary=zzz"},
                           content=b"--zzz\r\nContent-Disposition: form-data; name=\"image\"\r\n"
                                   b"\r\n" + b"[" * 30_000 + b"\r\n--zzz--\r\n")
        _check(r, (method, path, "multipart-nested"))


@pytest.mark.parametrize("server", ["photo_app", "judge_app"])
def test_a_body_over_the_limit_is_refused_not_crashed(server, request):
    client, ids = request.getfixturevalue(server)
    big = b'{"answers": {"x": "' + b"a" * (40 << 20) + b'"}}'  # 40 MB
    for method, path in _routes(client, ids):
        if method in ("POST", "PUT"):
            r = client.request(method, path, content=big,
                               headers={**_headers(ids, path), "Content-Type": "application/json"})
            _check(r, (method, path, "40 MB"))
            assert r.status_code in (400, 401, 403, 404, 405, 409, 413, 415, 422), \
                (method, path, r.status_code)


@pytest.mark.parametrize("server", ["photo_app", "judge_app"])
def test_every_route_survives_hostile_query_strings_and_paths(server, request):
    client, ids = request.getfixturevalue(server)
    queries = [
        "q=" + "a" * 60_000,  # a huge query string (httpx refuses URLs over 64 KiB)
        "&".join(f"q=x{i}" for i in range(5_000)),  # a parameter repeated
        "q=%FF%FE%FA&k=%FF",  # invalid UTF-8, percent-encoded
        "q=%00&k=1e309&after=%FF&near=nan,nan&km=-inf&camera=" + "%C0%80" * 100,
        "k=99999999999999999999999999&offset=-1&limit=0",
        "q=[[[[[[[[[[&facets=" + "[" * 10_000,
    ]
    for method, path in _routes(client, ids):
        headers = _headers(ids, path)
        for query in queries:
            r = client.request(method, f"{path}?{query}", headers=headers,
                               json={} if method in ("POST", "PUT") else None)
            _check(r, (method, path, query[:40]))
    for raw in ("/api/search%FF", "/api/%C0%AE%C0%AE/x", "/api/" + "a/" * 5_000,
                "/api/reports/%FF%FE.json", "/api/reports/..%2F..%2Fetc%2Fpasswd",
                "/api/mitl/assignments/99999999999999999999999/draft",
                "/api/mitl/assignments/-1/items/%FF/image"):
        for method in ("GET", "PUT", "POST"):
            r = client.request(method, raw, headers=_headers(ids, raw))
            _check(r, (method, raw))


def test_a_nested_draft_is_refused_with_a_json_error(judge_app):
    """The case of issue 41, on the route it was found on."""
    client, ids = judge_app
    path = f"/api/mitl/assignments/{ids['assignment']}/draft"
    r = client.put(path, content=NESTED["nested-list"],
                   headers={"X-Worker-Token": ids["worker"], "Content-Type": "application/json"})
    assert r.status_code in (413, 422), r.text[:300]
    assert json.loads(r.text)["error"]["message"]
