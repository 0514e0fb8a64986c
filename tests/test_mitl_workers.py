"""xmodal mitl workers revoke / reissue: a revoked worker's token and open sessions are refused
at once, a reissued token replaces the old one, and the judgments stay."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.mitl_fixtures import build_campaign
from xmodal.cli import app as cli_app
from xmodal.server import create_app

runner = CliRunner()


def _signed_in(app, token: str) -> TestClient:
    """A browser whose worker typed the token into the page (sent once, in a POST body)."""
    client = TestClient(app)
    r = client.post("/api/mitl/session", json={"token": token, "page": "judge"})
    assert r.status_code == 200, r.text
    return client


def test_revoke_and_reissue_from_the_command_line(tmp_path):
    campaign, _ = build_campaign(tmp_path)
    token = campaign.add_worker("alice")
    path = str(campaign.path)
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=campaign.path)
    web = _signed_in(app, token)
    assert web.get("/api/mitl/me").json()["name"] == "alice"

    res = runner.invoke(cli_app, ["mitl", "workers", "revoke", path, "alice"])
    assert res.exit_code == 0, res.output
    assert web.get("/api/mitl/me").status_code == 401  # the open session ends
    again = TestClient(app)
    r = again.post("/api/mitl/session", json={"token": token, "page": "judge"})
    assert r.status_code == 401  # the token no longer signs in
    assert again.get("/api/mitl/me").status_code == 401
    link = runner.invoke(cli_app, ["mitl", "workers", "link", path, "alice", "--json"])
    code = json.loads(link.stdout)["link"].split("code=")[1]
    r = again.get(f"/judge?code={code}", follow_redirects=False)  # nor does a sign-in link
    assert r.headers["location"].endswith("#used-link")
    assert again.get("/api/mitl/me").status_code == 401
    listed = runner.invoke(cli_app, ["mitl", "workers", "list", path, "--json"])
    assert json.loads(listed.stdout)[0]["revoked"] is True

    stale = json.loads(runner.invoke(cli_app, ["mitl", "workers", "link", path, "alice",
                                               "--json"]).stdout)["link"]
    res = runner.invoke(cli_app, ["mitl", "workers", "reissue", path, "alice"])
    assert res.exit_code == 0, res.output
    r = TestClient(app).get(stale, follow_redirects=False)  # the old link went with the token
    assert r.headers["location"].endswith("#used-link")
    new = res.stdout.strip().splitlines()[-1]
    assert new != token and "/judge?code=" in res.output.replace("\n", "")
    assert new not in res.output.replace(new, "", 1)  # the token is in no link
    assert _signed_in(app, new).get("/api/mitl/me").json()["name"] == "alice"
    listed = runner.invoke(cli_app, ["mitl", "workers", "list", path, "--json"])
    assert json.loads(listed.stdout)[0]["revoked"] is False

    res = runner.invoke(cli_app, ["mitl", "workers", "revoke", path, "bob"])
    assert res.exit_code != 0 and "alice" in str(res.exception)  # names who there is


def test_a_sign_in_link_works_once_and_holds_no_token(tmp_path):
    """Issue 42 item 7: the first address Chromium keeps in its history was /judge?token=…;
    the link a worker gets now holds a one-time code, burned on first use, and a token in an
    address signs nothing in."""
    campaign, _ = build_campaign(tmp_path)
    path = str(campaign.path)
    res = runner.invoke(cli_app, ["mitl", "workers", "add", path, "carol"])
    assert res.exit_code == 0, res.output
    token = res.stdout.strip().splitlines()[-1]
    link = res.output[res.output.index("/judge?code="):].split()[0]
    assert token not in link
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=campaign.path)
    first = TestClient(app)
    r = first.get(link, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/judge"
    assert first.get("/api/mitl/me").json()["name"] == "carol"
    second = TestClient(app)  # the address from the first browser's history
    r = second.get(link, follow_redirects=False)
    assert r.headers["location"] == "/judge#used-link" and "set-cookie" not in r.headers
    assert second.get("/api/mitl/me").status_code == 401
    r = second.get(f"/judge?token={token}", follow_redirects=False)
    assert r.headers["location"] == "/judge#token-in-address" and "set-cookie" not in r.headers
    assert second.get("/api/mitl/me").status_code == 401
    # a reviewer's link opens the review page only
    runner.invoke(cli_app, ["mitl", "workers", "add", path, "boss", "--reviewer"])
    code = json.loads(runner.invoke(cli_app, ["mitl", "workers", "link", path, "boss",
                                              "--json"]).stdout)["link"]
    assert code.startswith("/review?code=")
    assert TestClient(app).get(code.replace("/review", "/judge"),
                               follow_redirects=False).headers["location"].endswith("#used-link")
