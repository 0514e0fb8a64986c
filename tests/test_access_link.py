"""A server protected by its shared access token, opened from a link on another site (a link in
an e-mail): the SameSite=Strict cookie must reach the next page. A Prolific study link from
another site needs no access token: it signs the participant in for judging, and nothing else."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from tests.live_server import chromium, free_port, live_server
from tests.mitl_fixtures import build_campaign

pytestmark = pytest.mark.browser


def test_a_study_link_from_another_site_judges_and_a_token_link_opens_the_rest(tmp_path):
    from xmodal.mitl.crowd import export_prolific
    from xmodal.server import create_app

    campaign, _ = build_campaign(tmp_path)
    export_prolific(campaign, tmp_path / "prolific", None, "s1")  # the study STUDY_ID=s1
    app = create_app(tmp_path / "none.db", reports_dir=tmp_path, thumbnail_dir=tmp_path / "t",
                     campaign=campaign.path, access_token="SHARED")
    site = tmp_path / "site"
    site.mkdir()
    port = free_port()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        with live_server(app) as url, chromium() as browser:
            study = f"{url}/prolific?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=x1"
            # localhost and 127.0.0.1 are different sites: the link is a cross-site navigation
            (site / "index.html").write_text(
                f'<a id="go" href="{study}">study</a> '
                f'<a id="researcher" href="{url}/eval?access_token=SHARED">reports</a>')
            participant = browser.new_context()
            page = participant.new_page()
            page.set_default_timeout(10_000)
            page.goto(f"http://localhost:{port}/index.html")
            page.click("#go")  # the study link as Prolific gives it: no access token
            page.wait_for_url(study)
            assert "Welcome" in page.inner_text("h1")
            with participant.expect_page() as judging:
                page.click("#start")
            judge = judging.value
            judge.wait_for_load_state()
            assert judge.url == f"{url}/judge"
            me = judge.request.get(f"{url}/api/mitl/me")
            assert me.status == 200 and me.json()["name"] == "prolific:abc123"
            for path in ("/api/health", "/", "/review", "/api/mitl/review"):
                assert judge.request.get(f"{url}{path}").status == 401, path

            page = browser.new_page()  # the researcher, from a link with the token
            page.set_default_timeout(10_000)
            page.goto(f"http://localhost:{port}/index.html")
            page.click("#researcher")
            page.wait_for_url(f"{url}/eval")
            page.wait_for_load_state()
            assert "access_token" not in page.url
            body = page.inner_text("body")
            assert "access token" not in body.lower() and "401" not in body
            again = page.request.get(f"{url}/api/health")
            assert again.status == 200  # the cookie is kept for the following requests
            page.go_back()  # the link with the token left no entry in the history
            assert page.url == f"http://localhost:{port}/index.html"
    finally:
        other.shutdown()
