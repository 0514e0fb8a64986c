"""Browser tests: Playwright drives Debian's headless Chromium against a real uvicorn server.

The server runs in a thread on 127.0.0.1 (free port) over the fake index of ``test_server_fakes``.
Screenshots are saved to ``test-artifacts/`` (gitignored) as test artifacts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_server import CHROMIUM, CHROMIUM_ARGS, chromium, live_server
from PIL import Image
from test_server_fakes import COLOURS, fake_backends

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from xmodal.server import create_app

    root = tmp_path_factory.mktemp("browser")
    reports = root / "reports"
    reports.mkdir()
    base = {"protocol": "flickr8k-5cap", "seed": 0, "elapsed_s": 2.0,
            "n_queries": {"i2t": 1000, "t2i": 5000}}
    metrics_a = {"R@1": 0.05, "R@5": 0.15, "R@10": 0.25, "recall@1": 0.01, "recall@5": 0.03,
                 "recall@10": 0.05, "P@1": 0.05, "P@5": 0.03, "P@10": 0.025, "medR": 40.0}
    metrics_b = {k: (v * 3 if k != "medR" else 9.0) for k, v in metrics_a.items()}
    (reports / "baseline.json").write_text(json.dumps(
        {**base, "model": "baseline", "directions": {"i2t": metrics_a, "t2i": metrics_a}}))
    curves = {"recall_at_k": {"1": 0.15, "2": 0.25, "5": 0.45, "10": 0.75, "20": 0.9},
              "pr": {"recall": [0.0, 0.5, 1.0], "precision": [0.8, 0.3, 0.1]}}
    (reports / "dual.json").write_text(json.dumps(  # curves as `xmodal eval --json` writes them
        {**base, "model": "dual", "directions": {"i2t": metrics_b, "t2i": metrics_b},
         "curves": {"i2t": curves}}))
    paper = {"annotation_top5": {"mean_P": 0.124, "n_words_recall_gt0": 79, "n_words": 260},
             "retrieval_by_query_length": {"1": {"n_queries": 179, "MAP": 0.176}}}
    for name, p in (("cmrm", paper), ("crm", {"annotation_top5": {
            "mean_P": 0.138, "n_words_recall_gt0": 90, "n_words": 260},
            "retrieval_by_query_length": {"1": {"n_queries": 179, "MAP": 0.2}}})):
        (reports / f"{name}.json").write_text(json.dumps(
            {**base, "protocol": "corel5k", "model": name, "paper_metrics": p,
             "directions": {"i2t": metrics_a}}))
    db, parts = fake_backends(root)
    app = create_app(db, reports_dir=reports, thumbnail_dir=root / "thumbs", **parts)
    with live_server(app) as url:
        yield {"url": url, "root": root}


@pytest.fixture(scope="module")
def page():
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1100, "height": 800})
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        pg.set_default_navigation_timeout(60_000)  # a page load on a busy 2-core machine
        yield pg
        context.close()


def test_search_shows_results_and_similar_images(server, page):
    page.goto(server["url"] + "/")
    page.fill("#query", "a red kite")
    page.press("#query", "Enter")
    page.wait_for_selector("#results .card")
    cards = page.locator("#results .card")
    assert cards.count() == 6
    assert cards.first.get_attribute("data-id").endswith("/0_red.png")
    page.wait_for_function(
        "[...document.querySelectorAll('#results img')].every(i => i.complete && i.naturalWidth > 0)")
    assert "6 images" in page.inner_text("#search-status")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-search.png"))

    cards.nth(1).click()
    page.wait_for_selector("#detail:not([hidden]) #similar .card")
    assert page.locator("#similar .card").count() == 5  # all others, itself excluded
    second = cards.nth(1).get_attribute("data-id")
    assert second not in page.locator("#similar .card").evaluate_all(
        "cards => cards.map(c => c.dataset.id)")
    page.screenshot(path=str(ARTIFACTS / "web-detail.png"))
    page.click("#detail-close")
    assert page.locator("#detail").is_hidden()


def test_search_inside_a_folder_from_the_page_and_the_url(server, page):
    """The optional folder field restricts the search; a link with ?q=...&under=... fills it in;
    a folder without indexed photos says so in the status line."""
    page.goto(server["url"] + "/")
    page.fill("#query", "a red kite")
    page.fill("#f-under", str((server["root"] / "photos").resolve()))
    page.press("#query", "Enter")
    page.wait_for_selector("#results .card")
    assert page.locator("#results .card").count() == 6
    page.screenshot(path=str(ARTIFACTS / "web-search-folder.png"))
    page.goto(server["url"] + "/?q=red&under=/nowhere")
    page.wait_for_function("document.querySelector('#search-status').textContent.includes("
                           "'no indexed photo')")
    assert page.input_value("#f-under") == "/nowhere"
    assert page.locator("#results .card").count() == 0


def test_upload_shows_captions_and_keywords(server, page):
    upload = server["root"] / "green.png"
    Image.new("RGB", (120, 90), COLOURS["green"]).save(upload)
    page.goto(server["url"] + "/")
    page.set_input_files("#image-file", str(upload))
    page.wait_for_selector("#captions li")
    assert page.locator("#captions li").first.inner_text().startswith("a green picture")
    page.wait_for_selector("#keywords li")
    assert page.locator("#keywords li").first.inner_text() == "green"
    assert "indexed collection" in page.inner_text("#annotate-status")
    page.screenshot(path=str(ARTIFACTS / "web-describe.png"), full_page=True)


def test_drop_image_with_caption_file(server, page):
    import base64
    import io

    buf = io.BytesIO()
    Image.new("RGB", (64, 64), COLOURS["blue"]).save(buf, "PNG")
    captions = server["root"] / "captions.txt"
    captions.write_text("a red bus\nthe blue sea\ngreen hills\n")
    page.goto(server["url"] + "/")
    page.set_input_files("#caption-file", str(captions))
    transfer = page.evaluate_handle(
        """(b64) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], "blue.png", { type: "image/png" }));
            return dt;
        }""",
        base64.b64encode(buf.getvalue()).decode(),
    )
    page.dispatch_event("#dropzone", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("#captions li")
    items = page.locator("#captions li").all_inner_texts()
    assert len(items) == 3 and items[0].startswith("the blue sea")
    assert "uploaded caption file" in page.inner_text("#annotate-status")


def test_bad_upload_shows_the_error_message(server, page):
    bad = server["root"] / "notes.jpg"
    bad.write_text("not really a picture")
    page.goto(server["url"] + "/")
    page.set_input_files("#image-file", str(bad))
    page.wait_for_function(
        "document.querySelector('#annotate-status').textContent.includes('not an image')")
    assert page.locator("#keywords li.error").inner_text().startswith("the upload is not an image")


def test_evaluation_page_compares_two_reports(server, page):
    page.goto(server["url"] + "/eval?a=baseline&b=dual")
    page.wait_for_selector("table.metrics")
    assert page.locator("table.metrics").count() == 2  # i2t and t2i
    assert page.locator("svg.chart").count() == 4  # Recall@K and precision-recall per direction
    first = page.locator("table.metrics").first
    rows = first.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    by_metric = {cells[0]: cells[1:] for cells in rows}
    assert by_metric["R@10"] == ["0.250", "0.750", "+0.500"]
    assert by_metric["medR"] == ["40", "9", "-31"]
    assert first.locator("td.better").count() > 0
    # i2t Recall@K chart: baseline from its 3 R@K metrics, dual from its 5-point saved curve
    lines = page.locator("svg.chart").first.locator("polyline").evaluate_all(
        "ls => ls.map(l => l.getAttribute('points').trim().split(/\\s+/).length)")
    assert lines == [3, 5]
    pr_lines = page.locator("svg.chart").nth(1).locator("polyline").evaluate_all(
        "ls => ls.map(l => l.getAttribute('points').trim().split(/\\s+/).length)")
    assert pr_lines == [3, 3]  # baseline: 3 (recall@K, P@K) pairs; dual: its saved PR curve
    page.screenshot(path=str(ARTIFACTS / "web-eval.png"), full_page=True)


def test_evaluation_page_compares_the_protocols_paper_metrics(server, page):
    """corel5k reports carry Lavrenko et al.'s tables as ``paper_metrics``: compared row by row,
    sizes (n_words, n_queries) left out."""
    page.goto(server["url"] + "/eval?a=cmrm&b=crm")
    page.wait_for_selector("table.metrics[data-paper]")
    rows = page.locator("table.metrics[data-paper] tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    by_metric = {cells[0]: cells[1:] for cells in rows}
    assert set(by_metric) == {"annotation_top5 · mean_P", "annotation_top5 · n_words_recall_gt0",
                              "retrieval_by_query_length · 1 · MAP"}
    assert by_metric["annotation_top5 · n_words_recall_gt0"] == ["79", "90", "+11"]
    assert by_metric["annotation_top5 · mean_P"] == ["0.124", "0.138", "+0.014"]
    assert page.locator("table.metrics[data-paper] td.better").count() == 3
    page.goto(server["url"] + "/eval?a=baseline&b=dual")
    page.wait_for_selector("table.metrics")
    assert page.locator("table.metrics[data-paper]").count() == 0


def test_swagger_ui_works_offline(server, page):
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server["url"] + "/docs")
    page.wait_for_selector(".opblock")
    text = page.inner_text("body")
    for path in ("/api/search", "/api/describe", "/api/mitl/next"):
        assert path in text
    assert not errors



def _png(root: Path, name: str, colour: str, size=(64, 64)) -> Path:
    path = root / name
    Image.new("RGB", size, COLOURS[colour]).save(path)
    return path


def _describe_after_search(server, page, image: Path, scroll_js: str = "") -> None:
    """Search for "red", run ``scroll_js``, choose ``image``; wait for its captions and keywords."""
    page.goto(server["url"] + "/?q=red")
    page.wait_for_selector("#results .card")
    if scroll_js:
        page.evaluate(scroll_js)
    page.set_input_files("#image-file", str(image))
    page.wait_for_selector("#captions li")
    page.wait_for_selector("#keywords li")


def test_describe_reruns_when_either_input_changes(server, page):
    """Image then caption file, a changed caption file, and caption file then image: every change
    of either input describes again, with the caption file chosen at that moment."""
    root = server["root"]
    image = _png(root, "order-blue.png", "blue")
    first = root / "order-captions-1.txt"
    first.write_text("a red bus\nthe blue sea\ngreen hills\n")
    second = root / "order-captions-2.txt"
    second.write_text("a blue whale\nred wine\n")
    requests = []

    def count(request):
        if request.url.endswith("/api/describe") and request.method == "POST":
            requests.append(request.url)

    status = "document.querySelector('#annotate-status').textContent.includes(%r)"
    page.on("request", count)
    try:
        page.goto(server["url"] + "/")
        page.set_input_files("#image-file", str(image))  # image first: the indexed collection
        page.wait_for_function(status % "indexed collection")
        assert len(requests) == 1
        page.set_input_files("#caption-file", str(first))  # then captions: described again
        page.wait_for_function(status % "uploaded caption file", timeout=5_000)
        items = page.locator("#captions li").all_inner_texts()
        assert len(items) == 3 and items[0].startswith("the blue sea")
        assert len(requests) == 2
        page.set_input_files("#caption-file", str(second))  # another caption file: again
        page.wait_for_function("document.querySelectorAll('#captions li').length === 2")
        assert page.locator("#captions li").first.inner_text().startswith("a blue whale")
        assert "Ranked 2 captions" in page.inner_text("#annotate-status")
        assert len(requests) == 3

        page.goto(server["url"] + "/")  # captions first, then the image
        page.set_input_files("#caption-file", str(first))
        assert len(requests) == 3  # no image yet: nothing to describe
        page.set_input_files("#image-file", str(image))
        page.wait_for_function(status % "uploaded caption file")
        items = page.locator("#captions li").all_inner_texts()
        assert len(items) == 3 and items[0].startswith("the blue sea")
        assert len(requests) == 4
    finally:
        page.remove_listener("request", count)


def test_describe_results_are_scrolled_into_view(server, page):
    """The drop zone at the bottom of the window (after a search): the captions and keywords that
    arrive below it are brought into view, not left below the fold."""
    page.set_viewport_size({"width": 1100, "height": 500})
    try:
        _describe_after_search(server, page, _png(server["root"], "view.png", "green", (1600, 1200)),
                               "document.getElementById('dropzone').scrollIntoView({block: 'end'})")
        page.wait_for_function(
            """() => {
                const r = document.getElementById('annotation').getBoundingClientRect();
                const k = document.getElementById('keywords').getBoundingClientRect();
                return r.top >= 0 && r.top < innerHeight && k.top < innerHeight;
            }""", timeout=5_000)
        zone = page.locator("#dropzone").bounding_box()
        box = page.locator("#annotation").bounding_box()
        assert 0 <= box["y"] - (zone["y"] + zone["height"]) < 500
    finally:
        page.set_viewport_size({"width": 1100, "height": 800})


def test_search_page_fits_a_phone_screen(server, page):
    """At 390 px wide nothing sticks out to the right: the search form wraps, the describe panel
    stacks; with search results and a described image on the page."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        _describe_after_search(server, page, _png(server["root"], "phone.png", "red", (1200, 900)))
        page.wait_for_function(
            "(i => i.complete && i.naturalWidth > 0)(document.getElementById('upload-preview'))")
        wide = page.evaluate(
            """() => [...document.querySelectorAll('body *')].filter((e) => {
                const r = e.getBoundingClientRect();
                const style = getComputedStyle(e);
                return r.width > 0 && r.height > 0 && style.visibility !== 'hidden'
                    && r.right > innerWidth + 0.5;
            }).map((e) => `${e.tagName}#${e.id}.${e.className}: ${Math.round(
                e.getBoundingClientRect().right)}`)""")
        assert wide == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        query = page.locator("#query").bounding_box()
        assert query["width"] >= 200  # the sentence box keeps a usable width
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "web-390.png"), full_page=True)
    finally:
        page.set_viewport_size({"width": 1100, "height": 800})

def docs_screenshot(out: Path) -> None:
    """Regenerate ``docs/web-search.png``: scikit-image's sample photos (the ``make demo`` set),
    indexed with the default model, searched for "a cat" in headless Chromium.

        python tests/test_server_browser.py docs/web-search.png
    """
    import tempfile

    from playwright.sync_api import sync_playwright

    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.factory import open_photo_index
    from xmodal.server import create_app

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        copy_sample_photos(root / "photos")
        open_photo_index(root / "photos.db", create=True).update(root / "photos", progress=False)
        app = create_app(root / "photos.db", thumbnail_dir=root / "thumbs")
        with live_server(app, timeout=120) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 620})
            page.set_default_timeout(120_000)
            page.goto(f"{url}/?q=a%20cat")
            page.wait_for_selector("#results .card")
            page.wait_for_function(
                "[...document.querySelectorAll('#results img')]"
                ".every(i => i.complete && i.naturalWidth > 0)")
            page.screenshot(path=str(root / "shot.png"))
            browser.close()
        shot = Image.open(root / "shot.png").convert("RGB")
        shot.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    import sys

    docs_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/web-search.png"))
