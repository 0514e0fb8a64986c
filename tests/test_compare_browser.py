"""The evaluation page's A/B view shows the p-values and marks of ``xmodal compare`` when both
reports hold per-query values (Playwright + headless Chromium, like test_server_browser)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from live_server import chromium, live_server

pytestmark = pytest.mark.browser

RUNS = Path(__file__).resolve().parents[1] / "reports" / "json" / "per-query"


def test_evaluation_page_shows_significance(tmp_path):
    from xmodal.server import create_app

    reports = tmp_path / "reports"
    reports.mkdir()
    for s in ("scm", "ksm"):
        shutil.copy(RUNS / f"wikipedia-{s}.json", reports / f"{s}.json")
    app = create_app(tmp_path / "none.db", reports_dir=reports, thumbnail_dir=tmp_path / "t")
    with live_server(app) as url, chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(30_000)
        page.goto(url + "/eval?a=scm&b=ksm")
        page.wait_for_selector("#significance-legend")
        table = page.locator("table.metrics[data-direction=i2t]")
        assert table.locator("thead th").last.inner_text() == "p"
        rows = table.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
        by_metric = {cells[0]: cells[1:] for cells in rows}
        assert by_metric["MAP"][-1] == "2.0e-4 *"  # KSM better than SCM, Holm-corrected
        assert by_metric["R@10"][-1].endswith("†")  # and worse at R@10
        assert by_metric["R-P"][-1] == ""  # not among the tested metrics
        assert "Holm" in page.locator("#significance-legend").inner_text()
        page.screenshot(path=str(RUNS.parents[2] / "test-artifacts" / "web-eval-significance.png"),
                        full_page=True)
