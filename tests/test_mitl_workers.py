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
    client = TestClient(app)
    r = client.get(f"/judge?token={token}", follow_redirects=False)
    assert r.status_code == 303 and "unknown" not in r.headers["location"], r.headers
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
    r = again.get(f"/judge?token={token}", follow_redirects=False)
    assert "unknown-token" in r.headers.get("location", "")  # the token no longer signs in
    assert again.get("/api/mitl/me").status_code == 401
    listed = runner.invoke(cli_app, ["mitl", "workers", "list", path, "--json"])
    assert json.loads(listed.stdout)[0]["revoked"] is True

    res = runner.invoke(cli_app, ["mitl", "workers", "reissue", path, "alice"])
    assert res.exit_code == 0, res.output
    new = res.stdout.strip().splitlines()[-1]
    assert new != token and f"/judge?token={new}" in res.output.replace("\n", "")
    assert _signed_in(app, new).get("/api/mitl/me").json()["name"] == "alice"
    listed = runner.invoke(cli_app, ["mitl", "workers", "list", path, "--json"])
    assert json.loads(listed.stdout)[0]["revoked"] is False

    res = runner.invoke(cli_app, ["mitl", "workers", "revoke", path, "bob"])
    assert res.exit_code != 0 and "alice" in str(res.exception)  # names who there is
