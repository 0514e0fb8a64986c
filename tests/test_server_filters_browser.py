"""Browser tests of the search page's filter bar, sort toggle, cutoff notice and example images.

Playwright drives Debian's headless Chromium against a real uvicorn server (a thread on
127.0.0.1) over the EXIF-tagged colour photos of ``test_server_filters``: red and blue taken in
Lisbon, green and yellow in Paris, white and black dated by their file time only.
Screenshots go to ``test-artifacts/`` (gitignored). ``python tests/test_server_filters_browser.py
docs/web-filters.png`` regenerates the documentation's screenshot.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from live_server import chromium, live_server
from PIL import Image
from test_server_browser import page  # noqa: F401 - the same browser page fixture (1100 x 800)
from test_server_filters import MODEL, build_exif_index

from tests.fake_models import COLOURS, ColourModel

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CARD_IDS = ("() => [...document.querySelectorAll('#results .card')]"
            ".map(c => c.dataset.id.split('/').pop())")
SEARCH_DONE = "!document.querySelector('#search-status').textContent.startsWith('Searching')"
IMAGES_LOADED = ("[...document.querySelectorAll('#results img')]"
                 ".every(i => i.complete && i.naturalWidth > 0)")
ICON_STATUS = ("(async () => { const link = document.querySelector('link[rel=icon]');"
               " return link ? (await fetch(link.href)).status : null; })()")
NEWEST = ["red.jpg", "yellow.jpg", "green.jpg", "blue.jpg", "white.jpg", "black.jpg"]
OVERFLOWING = """() => [...document.querySelectorAll('body *')].filter((e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden'
        && r.right > innerWidth + 0.5;
}).map((e) => `${e.tagName}#${e.id}.${e.className}: ${Math.round(e.getBoundingClientRect().right)}`)"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from xmodal.server import create_app

    root = tmp_path_factory.mktemp("filters-browser")
    db, ids = build_exif_index(root)
    app = create_app(db, model=ColourModel(), model_spec=MODEL, thumbnail_dir=root / "thumbs")
    with live_server(app) as url:
        yield {"url": url, "root": root, "ids": ids}


def cards(page) -> list[str]:
    return page.evaluate(CARD_IDS)


def wait_for_cards(page, expected: list[str]) -> None:
    """Wait until the result cards are ``expected`` (file names, in order)."""
    page.wait_for_function(f"(want) => JSON.stringify(({CARD_IDS})()) === JSON.stringify(want)",
                           arg=expected)


def wait_for_status(page, text: str) -> None:
    page.wait_for_function("(t) => document.querySelector('#search-status').textContent"
                           ".includes(t)", arg=text)


def example_image(root: Path, colour: str) -> Path:
    path = root / f"example-{colour}.png"
    Image.new("RGB", (40, 30), COLOURS[colour]).save(path)
    return path


def test_the_filter_bar_narrows_the_results_and_stays_in_the_url(server, page):
    page.goto(server["url"] + "/?q=red")
    page.wait_for_function(f"({CARD_IDS})().length === 6")
    page.fill("#f-place", "Paris")
    page.press("#f-place", "Enter")
    wait_for_cards(page, ["yellow.jpg", "green.jpg"])
    assert "place=Paris" in page.url
    assert page.inner_text("#filter-count") == "(1)"
    info = page.locator("#results .card").first.locator(".info").inner_text()
    assert "2023" in info and "Paris" in info  # date and place under the thumbnail
    page.fill("#f-after", "2023")
    page.press("#f-after", "Enter")
    wait_for_cards(page, ["yellow.jpg"])
    page.reload()  # a bookmark brings the same search back, its filters filled in
    wait_for_cards(page, ["yellow.jpg"])
    assert page.input_value("#f-place") == "Paris" and page.input_value("#f-after") == "2023"
    page.click("#filters-clear")
    page.wait_for_function(f"({CARD_IDS})().length === 6")
    assert "place=" not in page.url and "after=" not in page.url
    # the collection's places are offered in the place field
    options = page.evaluate("[...document.querySelectorAll('#places option')].map(o => o.value)")
    assert {"Paris", "France", "Portugal"} <= set(options)
    page.goto(server["url"] + "/?q=red&near=91,0")
    wait_for_status(page, "latitude")  # the server's message, as it says it


def test_the_sort_toggle_orders_by_date(server, page):
    page.goto(server["url"] + "/?q=red")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'red.jpg'")
    page.click("#sort [data-sort=date]")
    wait_for_cards(page, NEWEST)
    assert "sort=date" in page.url
    assert page.get_attribute("#sort [data-sort=date]", "aria-pressed") == "true"
    white = page.locator("#results .card").nth(4)  # dated by its file time: marked
    assert white.locator(".file-date .tag").inner_text() == "file"
    page.click("#sort [data-sort=oldest]")
    wait_for_cards(page, NEWEST[::-1])
    page.click("#sort [data-sort=relevance]")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'red.jpg'")
    assert "sort=" not in page.url


def test_show_the_closest_after_no_good_match(server, page):
    # "green blue" is cyan: no photo passes 0.9; white comes closest
    page.goto(server["url"] + "/?q=green%20blue&min_score=0.9")
    wait_for_status(page, "No photo matches “green blue” well")
    assert cards(page) == []
    assert "white.jpg" in page.inner_text("#search-notice")
    assert page.inner_text("#show-closest") == "Show the closest"
    page.click("#show-closest")
    page.wait_for_function(f"({CARD_IDS})().length === 6")
    assert cards(page)[0] == "white.jpg" and "min_score=0" in page.url
    assert page.locator("#search-notice").is_hidden()
    page.goto(server["url"] + "/?q=red&min_score=0.9")  # one passes, five hidden
    wait_for_cards(page, ["red.jpg"])
    page.wait_for_selector("#search-notice:not([hidden])")
    assert "5 of the best 6 matches hidden" in page.inner_text("#search-notice")
    assert page.inner_text("#show-closest") == "Show them"  # some are shown already
    page.click("#show-closest")
    page.wait_for_function(f"({CARD_IDS})().length === 6")


def test_a_calibrated_model_shows_match_probabilities(server, page, monkeypatch):
    from xmodal.index import calibration

    cal = calibration.Calibrator(model_id=ColourModel.model_id, scores=[0.6, 1.0],
                                 probabilities=[0.0, 1.0], threshold=0.6)
    monkeypatch.setattr(calibration, "load_calibrator",
                        lambda mid, path=None: cal if mid == cal.model_id else None)
    page.goto(server["url"] + "/?q=red")
    wait_for_cards(page, ["red.jpg"])
    assert page.locator("#results .card .score").first.inner_text().endswith("% match")
    assert "5 of the best 6 matches hidden" in page.inner_text("#search-notice")


def test_an_example_image_changes_the_results(server, page):
    page.goto(server["url"] + "/?q=red")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'red.jpg'")
    page.set_input_files("#query-image", str(example_image(server["root"], "green")))
    page.wait_for_selector("#query-examples .example")
    assert "example-green.png" in page.inner_text("#query-examples")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'yellow.jpg'")  # red + green = yellow
    assert "red + example-green.png" in page.inner_text("#search-status")
    page.click("#query-examples .chip-remove")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'red.jpg'")
    assert page.locator("#query-examples").is_hidden()
    # an indexed photo as the example, from its detail view: kept in the URL
    page.locator("#results .card").nth(0).click()
    page.click("#detail-like")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'yellow.jpg'")  # red + red, less itself
    assert "like=" in page.url and page.locator("#detail").is_hidden()
    assert "red.jpg" not in cards(page)  # the example photo itself is left out


def test_similar_images_take_the_filters(server, page):
    page.goto(server["url"] + "/?q=red&place=Paris")
    wait_for_cards(page, ["yellow.jpg", "green.jpg"])
    page.locator("#results .card").first.click()
    page.wait_for_selector("#detail:not([hidden]) #similar .card")
    similar = page.evaluate("[...document.querySelectorAll('#similar .card')]"
                            ".map(c => c.dataset.id.split('/').pop())")
    assert similar == ["green.jpg"]  # the other photo taken in Paris
    assert "place Paris" in page.inner_text("#similar-filter")
    assert "Canon EOS 5D" in page.inner_text("#detail-title")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-filters-detail.png"))
    page.click("#detail-close")


def test_the_page_fits_a_phone_screen_with_filters(server, page):
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.goto(server["url"] + "/?q=red&place=Lisbon&sort=date")
        wait_for_cards(page, ["red.jpg", "blue.jpg"])
        assert page.evaluate("document.getElementById('filters').open") is False
        assert page.inner_text("#filters summary").startswith("Filters (1)")
        page.set_input_files("#query-image", str(example_image(server["root"], "blue")))
        page.wait_for_selector("#query-examples .example")
        page.click("#filters summary")
        page.wait_for_selector("#f-place", state="visible")
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.locator("#query").bounding_box()["width"] >= 200
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "web-filters-390.png"), full_page=True)
    finally:
        page.set_viewport_size({"width": 1100, "height": 800})


def test_desktop_screenshot(server, page):
    page.goto(server["url"] + "/?q=red&after=2021&sort=date")
    page.wait_for_function(f"({CARD_IDS})().length === 4")
    page.wait_for_function(IMAGES_LOADED)
    assert page.evaluate(OVERFLOWING) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "web-filters.png"))



def test_sorting_keeps_the_closest_shown(server, page):
    # "Show the closest", then another order: the same photos, not "no photo matches" again
    page.goto(server["url"] + "/?q=green%20blue&min_score=0.9")
    wait_for_status(page, "No photo matches")
    page.click("#show-closest")
    page.wait_for_function(f"({CARD_IDS})().length === 6")
    page.click("#sort [data-sort=date]")
    wait_for_cards(page, NEWEST)
    assert "min_score=0" in page.url and "sort=date" in page.url


def test_place_suggestions_count_each_photo_once(server, page):
    # red and blue were taken in Lisbon, which is both the city and the region
    page.goto(server["url"] + "/")
    page.wait_for_selector("#places option[value=Lisbon]", state="attached")
    labels = page.evaluate("Object.fromEntries([...document.querySelectorAll('#places option')]"
                           ".map(o => [o.value, o.label]))")
    assert labels["Lisbon"] == "2 photos" and labels["Portugal"] == "2 photos"


def test_the_detail_view_holds_the_keyboard_focus(server, page):
    focused = "document.activeElement.closest('#detail') ? document.activeElement.id || 'in' : " \
              "(document.activeElement.dataset.id || document.activeElement.tagName)"
    page.goto(server["url"] + "/?q=red")
    page.wait_for_function(f"({CARD_IDS})()[0] === 'red.jpg'")
    page.focus("#results .card")
    page.keyboard.press("Enter")
    page.wait_for_selector("#detail:not([hidden]) #similar .card")
    assert page.evaluate(focused) == "detail-close"
    clipped = page.evaluate("[...document.querySelectorAll('#similar .card .info > span')]"
                            ".filter(s => s.scrollWidth > s.clientWidth).map(s => s.textContent)")
    assert clipped == []  # dates and places of the small cards wrap instead
    for _ in range(6):  # Tab walks the dialog, never the page behind it
        page.keyboard.press("Tab")
        assert page.evaluate(focused) in ("detail-close", "detail-like", "in")
    page.keyboard.press("Escape")
    assert page.locator("#detail").is_hidden()
    assert page.evaluate(focused).endswith("/red.jpg")  # back on the card that opened it


def test_a_failed_more_keeps_the_results_and_the_more_button(server, page):
    calls = []

    def first_page_says_more_then_fail(route):
        calls.append(route.request.url)
        if "offset=0" in route.request.url:
            response = route.fetch()
            route.fulfill(response=response, json={**response.json(), "has_more": True})
        else:
            route.abort()

    page.route("**/api/search*", first_page_says_more_then_fail)
    try:
        page.goto(server["url"] + "/?q=red&min_score=0")
        page.wait_for_selector("#more:not([hidden])")
        shown = len(page.evaluate(f"({CARD_IDS})()"))
        page.click("#more")
        wait_for_status(page, "Search failed")
        assert len(page.evaluate(f"({CARD_IDS})()")) == shown
        assert page.locator("#more").is_visible()  # the load can be tried again
    finally:
        page.unroute("**/api/search*")
    page.click("#more")  # the server answers now: nothing more to show
    page.wait_for_selector("#more[hidden]", state="attached")
    assert len(calls) == 2 and "offset=0" not in calls[1]


def test_the_describe_drop_zone_chooses_a_file_from_the_keyboard(server, page):
    page.goto(server["url"] + "/")
    # Enter on the zone must open the file input's chooser. Whether headless Chromium reports
    # the chooser right after a page load is racy (microsoft/playwright#28023), so the test
    # checks the click the page gives the input, then chooses the file through that input
    page.evaluate("window.chooserOpened = 0; document.getElementById('image-file')"
                  ".addEventListener('click', (e) => { e.preventDefault(); "
                  "window.chooserOpened += 1; })")
    page.focus("#dropzone")
    page.keyboard.press("Enter")
    page.keyboard.press(" ")
    assert page.evaluate("window.chooserOpened") == 2
    page.set_input_files("#image-file", str(example_image(server["root"], "red")))
    page.wait_for_selector("#annotation:not([hidden])")


def test_errors_wrap_on_a_phone_and_read_as_errors(server, page):
    folder = "/" + "/".join(["holidays2023"] * 10)
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.goto(server["url"] + f"/?q=red&place=Lisbon,%20Portugal&under={folder}")
        wait_for_status(page, "Search failed")
        assert page.evaluate(OVERFLOWING) == []  # the message names the folder: it wraps
        assert page.evaluate("document.querySelector('#search-status').classList"
                             ".contains('error')")
        page.goto(server["url"] + "/?q=red&camera=zzz")  # the page has no use for API hints
        wait_for_status(page, "Search failed")
        said = page.inner_text("#search-status")
        assert "zzz" in said and "/api/facets" not in said, said
        page.route("**/api/search*", lambda route: route.abort())  # the server went away
        page.fill("#query", "blue")
        page.press("#query", "Enter")
        wait_for_status(page, "the server did not answer")
    finally:
        page.unroute("**/api/search*")
        page.set_viewport_size({"width": 1100, "height": 800})
    page.click("#filters-clear")  # the query is "blue" now
    page.wait_for_function(f"({CARD_IDS})()[0] === 'blue.jpg'")
    assert not page.evaluate("document.querySelector('#search-status').classList"
                             ".contains('error')")


def test_pages_load_without_console_errors(server, page):
    context = page.context.browser.new_context()
    fresh = context.new_page()
    errors = []
    fresh.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    fresh.on("pageerror", lambda e: errors.append(str(e)))
    try:
        for path in ("/?q=red", "/duplicates"):
            fresh.goto(server["url"] + path)
            fresh.wait_for_load_state("networkidle")
            # without an icon of its own a page has Chromium ask for /favicon.ico: a 404
            assert fresh.evaluate(ICON_STATUS) == 200
        assert errors == []
    finally:
        context.close()

# made-up EXIF for the documentation's screenshot: a few named photos, the others in turn
LISBON, PORTO, PARIS = (38.7223, -9.1393), (41.1579, -8.6291), (48.8566, 2.3522)
DOC_EXIF = {
    "chelsea": ("2023:06:14 18:20:00", LISBON, ("Apple", "iPhone 12")),
    "coffee": ("2023:06:15 09:05:00", LISBON, ("Apple", "iPhone 12")),
    "motorcycle": ("2022:09:03 16:40:00", PORTO, ("Canon", "Canon EOS 5D")),
    "astronaut": ("2021:04:02 11:00:00", PARIS, ("Google", "Pixel 7")),
    "grass": ("2024:04:21 10:15:00", PORTO, ("Google", "Pixel 7")),
    "gravel": ("2023:08:02 17:30:00", LISBON, ("Canon", "Canon EOS 5D")),
}
DOC_PLACES = [LISBON, PORTO, PARIS, None]
DOC_CAMERAS = [("Apple", "iPhone 12"), ("Canon", "Canon EOS 5D"), ("Google", "Pixel 7"), None]


def docs_screenshot(out: Path, query: str = "?q=grass&after=2022&place=Portugal") -> None:
    """Regenerate ``docs/web-filters.png``: scikit-image's sample photos (the ``make demo`` set)
    saved as JPEGs with made-up EXIF dates, places and cameras, indexed with the default model,
    searched with filters in headless Chromium.

        python tests/test_server_filters_browser.py docs/web-filters.png
    """
    import io
    import tempfile

    from test_server_filters import exif_bytes

    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.factory import open_photo_index
    from xmodal.server import create_app

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        photos = root / "photos"
        for n, src in enumerate(sorted(copy_sample_photos(root / "samples"))):
            stamp, place, camera = DOC_EXIF.get(src.stem, (
                f"{2019 + n % 6}:{1 + (5 * n) % 12:02d}:{1 + (7 * n) % 27:02d} 12:00:00",
                DOC_PLACES[n % 4], DOC_CAMERAS[(n // 2) % 4]))
            taken = (stamp, "+01:00")
            photos.mkdir(exist_ok=True)
            Image.open(src).convert("RGB").save(photos / f"{src.stem}.jpg", "JPEG", quality=90,
                                                exif=exif_bytes(taken, place, camera))
        open_photo_index(root / "photos.db", create=True).update(photos, progress=False)
        app = create_app(root / "photos.db", thumbnail_dir=root / "thumbs")
        with live_server(app, timeout=120) as url, chromium() as browser:
            page = browser.new_page(viewport={"width": 1000, "height": 620})
            page.set_default_timeout(120_000)
            page.goto(f"{url}/{query}")
            page.wait_for_function(SEARCH_DONE)
            page.wait_for_function(IMAGES_LOADED)
            shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    shot.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    import sys

    docs_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/web-filters.png"),
                    *sys.argv[2:])


def test_an_empty_search_with_a_filter_lists_photos_by_month_on_a_phone(server, page):
    """No words, a filter: the photos that pass, newest first under a heading per month, no
    match scores, and the places of all of them with counts; a place narrows the listing, the
    sort toggle turns it round (issue 40 item 4)."""
    from test_browse import by_date
    from test_server_filters import CANON, LISBON, PHOTOS

    canon = [n for n, row in PHOTOS.items() if row[3] == CANON]
    months = "[...document.querySelectorAll('#results .month')].map(h => h.textContent)"
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.goto(server["url"] + "/")
        page.click("#filters summary")  # folded on a phone
        page.fill("#f-camera", "canon")
        page.press("#f-camera", "Enter")
        wait_for_cards(page, by_date(canon))
        assert page.evaluate(months) == ["June 2023", "January 2023"]
        assert page.locator("#results .score").count() == 0  # nothing was matched to words
        wait_for_status(page, f"{len(canon)} photos · camera canon · newest first")
        assert "camera=canon" in page.url and "q=" not in page.url
        places = page.locator("#browse-places li").all_inner_texts()
        assert sorted(places) == ["Lisbon, Portugal (1)", "Paris, France (1)"]
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "web-browse-390.png"), full_page=True)
        page.click("#sort [data-sort=oldest]")
        wait_for_cards(page, by_date(canon, oldest=True))
        assert page.evaluate(months) == ["January 2023", "June 2023"]
        page.click("#browse-places li button:has-text('Lisbon')")
        wait_for_cards(page, by_date([n for n in canon if PHOTOS[n][2] == LISBON], oldest=True))
        assert page.input_value("#f-place") == "Lisbon, Portugal"
        page.reload()  # the listing is a bookmark like a search
        wait_for_cards(page, ["red.jpg"])
    finally:
        page.set_viewport_size({"width": 1100, "height": 800})
