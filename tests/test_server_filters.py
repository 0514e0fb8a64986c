"""API tests of photo search with filters, sort orders, cutoffs and combined queries.

A real ``PhotoIndex`` over small solid-colour JPEGs that carry EXIF written with ``piexif``
(dates with their UTC offset, GPS in Lisbon and Paris, two cameras) plus two files without EXIF
(dated by their modification time), embedded by ``tests.fake_models.ColourModel``: an image is
its mean colour, a text the colour words it names, so every right answer is known by hand.
"""

from __future__ import annotations

import io
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import piexif
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from tests.fake_models import COLOURS, ColourModel
from xmodal.server import create_app

LISBON = (38.7223, -9.1393)
PARIS = (48.8566, 2.3522)
CANON = ("Canon", "Canon EOS 5D")
IPHONE = ("Apple", "iPhone 12")
# name -> (colour, taken (local time, offset) or the file's mtime, position, camera)
PHOTOS = {
    "red.jpg": ("red", ("2023-06-14 10:30:00", "+01:00"), LISBON, CANON),
    "green.jpg": ("green", ("2022-08-01 18:00:00", "+02:00"), PARIS, IPHONE),
    "blue.jpg": ("blue", ("2021-03-05 09:15:00", "+00:00"), LISBON, IPHONE),
    "trip/yellow.jpg": ("yellow", ("2023-01-20 12:00:00", "+01:00"), PARIS, CANON),
    "white.jpg": ("white", datetime(2020, 5, 1, 12, 0), None, None),
    "black.jpg": ("black", datetime(2019, 2, 3, 12, 0), None, None),
}
MODEL = "python:tests.fake_models:ColourModel"


def _rational(value: float) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Degrees as EXIF (degrees, minutes, seconds) rationals."""
    value = abs(value)
    degrees, rest = int(value), (value - int(value)) * 60
    return (degrees, 1), (int(rest), 1), (round((rest - int(rest)) * 60 * 1000), 1000)


def exif_bytes(taken: tuple[str, str], position: tuple[float, float] | None,
               camera: tuple[str, str] | None) -> bytes:
    """EXIF with DateTimeOriginal and OffsetTimeOriginal, GPS and make/model (when given)."""
    stamp, offset = taken
    zeroth = {}
    if camera:
        zeroth = {piexif.ImageIFD.Make: camera[0].encode(),
                  piexif.ImageIFD.Model: camera[1].encode()}
    exif = {piexif.ExifIFD.DateTimeOriginal: stamp.replace("-", ":").encode(),
            piexif.ExifIFD.OffsetTimeOriginal: offset.encode()}
    gps = {}
    if position:
        lat, lon = position
        gps = {piexif.GPSIFD.GPSLatitudeRef: b"N" if lat >= 0 else b"S",
               piexif.GPSIFD.GPSLatitude: _rational(lat),
               piexif.GPSIFD.GPSLongitudeRef: b"E" if lon >= 0 else b"W",
               piexif.GPSIFD.GPSLongitude: _rational(lon)}
    return piexif.dump({"0th": zeroth, "Exif": exif, "GPS": gps})


def make_exif_photos(folder: Path) -> dict[str, str]:
    """The photos of ``PHOTOS`` under ``folder``; returns {name: id (absolute path)}."""
    ids = {}
    for n, (name, (colour, taken, position, camera)) in enumerate(PHOTOS.items()):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        image = Image.new("RGB", (48 + 8 * n, 40), COLOURS[colour])
        if isinstance(taken, datetime):  # no EXIF: the file's time is its date
            image.save(path, "JPEG", quality=95)
            os.utime(path, (taken.timestamp(), taken.timestamp()))
        else:
            image.save(path, "JPEG", quality=95, exif=exif_bytes(taken, position, camera))
        ids[name] = str(path.resolve())
    return ids


def build_exif_index(root: Path) -> tuple[Path, dict[str, str]]:
    from xmodal.index import PhotoIndex

    ids = make_exif_photos(root / "photos")
    db = root / "photos.db"
    index = PhotoIndex(db, model=ColourModel(), model_spec=MODEL)
    index.update(root / "photos", progress=False)
    index.close()
    return db, ids


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("filters")
    db, ids = build_exif_index(root)
    return {"root": root, "db": db, "ids": ids}


@pytest.fixture(scope="module")
def client(collection):
    app = create_app(collection["db"], model=ColourModel(), model_spec=MODEL,
                     thumbnail_dir=collection["root"] / "thumbs")
    with TestClient(app) as c:
        yield c


def names(results) -> list[str]:
    return [Path(r["id"]).name for r in results]


def get(client, **params) -> dict:
    response = client.get("/api/search", params={"limit": 10, **params})
    assert response.status_code == 200, response.text
    return response.json()


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["status"] == status
    return body["error"]["message"]


def jpeg_upload(colour: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 32), COLOURS[colour]).save(buf, "JPEG")
    return buf.getvalue()


# -- the answer's shape, facets ----------------------------------------------------------------------
def test_results_carry_date_place_camera_and_the_answer_says_what_was_hidden(client, collection):
    body = get(client, q="red")
    assert names(body["results"])[0] == "red.jpg" and len(body["results"]) == 6
    for key in ("query", "offset", "limit", "has_more", "results", "hidden", "no_good_match",
                "closest", "min_relevance", "calibrated", "filter", "sort", "terms"):
        assert key in body
    assert body["hidden"] == 0 and body["no_good_match"] is False and body["closest"] is None
    assert body["calibrated"] is False and body["min_relevance"] is None
    assert body["filter"] == {} and body["sort"] == "relevance"
    red = body["results"][0]
    assert red["id"] == collection["ids"]["red.jpg"]
    assert red["taken_at"] == "2023-06-14T10:30:00" and red["date_source"] == "exif"
    assert red["camera"] == "Canon EOS 5D" and "Lisbon" in red["place"]
    assert (red["width"], red["height"]) == (48, 40)
    assert "relevance" not in red  # no calibration for the test model
    white = next(r for r in body["results"] if r["id"].endswith("white.jpg"))
    assert white["date_source"] == "mtime" and white["taken_at"].startswith("2020-05-01")
    assert "place" not in white and "camera" not in white


def test_facets_list_years_places_and_cameras(client):
    facets = client.get("/api/facets").json()
    assert {y["year"]: y["count"] for y in facets["years"]} == {
        "2023": 2, "2022": 1, "2021": 1, "2020": 1, "2019": 1}
    places = {(p["city"], p["country"]): p["count"] for p in facets["places"]}
    assert places[("Paris", "France")] == 2
    assert sum(n for (_, country), n in places.items() if country == "Portugal") == 2
    cameras = {c["camera"]: c["count"] for c in facets["cameras"]}
    assert cameras["Canon EOS 5D"] == 2 and cameras["Apple iPhone 12"] == 2


# -- filters -------------------------------------------------------------------------------------
@pytest.mark.parametrize("params, expected", [
    ({"after": "2023"}, {"red.jpg", "yellow.jpg"}),
    ({"before": "2020"}, {"black.jpg", "white.jpg"}),  # dated by their file time
    ({"after": "2022-08", "before": "2023-01"}, {"green.jpg", "yellow.jpg"}),
    ({"after": "2023-06-14", "before": "2023-06-14"}, {"red.jpg"}),
    ({"place": "Lisbon"}, {"red.jpg", "blue.jpg"}),
    ({"place": "paris"}, {"green.jpg", "yellow.jpg"}),
    ({"place": "PT"}, {"red.jpg", "blue.jpg"}),
    ({"near": "48.85,2.35", "km": 5}, {"green.jpg", "yellow.jpg"}),
    ({"near": "38.72,-9.14"}, {"red.jpg", "blue.jpg"}),  # 10 km by default
    ({"camera": "iphone"}, {"green.jpg", "blue.jpg"}),
    ({"camera": "canon", "place": "Paris"}, {"yellow.jpg"}),
    ({"under": "trip"}, {"yellow.jpg"}),
])
def test_each_filter_narrows_the_results(client, collection, params, expected):
    if "under" in params:
        params = {**params, "under": str(collection["root"] / "photos" / params["under"])}
    body = get(client, q="red", **params)
    assert set(names(body["results"])) == expected
    assert body["filter"] == {k: (list(map(float, v.split(","))) if k == "near" else v)
                              for k, v in params.items()}


def test_similar_takes_the_same_filters_and_sort(client, collection):
    ids = collection["ids"]
    every = client.get("/api/similar", params={"id": ids["red.jpg"], "limit": 10}).json()
    assert len(every["results"]) == 5 and "red.jpg" not in names(every["results"])
    paris = client.get("/api/similar", params={"id": ids["red.jpg"], "place": "Paris"}).json()
    assert names(paris["results"]) == ["yellow.jpg", "green.jpg"]  # yellow is nearer red
    assert paris["filter"] == {"place": "Paris"}
    by_date = client.get("/api/similar", params={"id": ids["red.jpg"], "sort": "oldest"}).json()
    assert names(by_date["results"]) == ["black.jpg", "white.jpg", "blue.jpg", "green.jpg",
                                         "yellow.jpg"]
    assert by_date["sort"] == "oldest"


@pytest.mark.parametrize("params, words", [
    ({"after": "2023-13"}, ["after", "not a real date"]),
    ({"before": "yesterday"}, ["before", "2023-06-14"]),
    ({"after": "2024", "before": "2023"}, ["later than"]),
    ({"near": "Lisbon"}, ["near", "LAT,LON"]),
    ({"near": "91,0"}, ["near", "latitude"]),
    ({"near": "1,2,3"}, ["near"]),
    ({"km": 3}, ["km needs near"]),
    ({"place": "Tokyo"}, ["no indexed photo passes", "Paris"]),
    ({"near": "0,0", "km": 1}, ["no indexed photo passes"]),
])
def test_bad_filters_are_clear_400s(client, params, words):
    message = error(client.get("/api/search", params={"q": "red", **params}), 400)
    for word in words:
        assert word in message
    assert "--" not in message  # parameters by their API name, not as CLI options


def test_bad_sort_and_min_score_are_refused(client):
    error(client.get("/api/search", params={"q": "red", "sort": "random"}), 422)
    error(client.get("/api/search", params={"q": "red", "min_score": 2}), 422)
    error(client.get("/api/search", params={"q": "red", "min_score": "nan"}), 422)
    error(client.get("/api/search", params={"q": "red", "km": 0, "near": "1,1"}), 422)


# -- sort orders, paging -------------------------------------------------------------------------
def test_sort_by_date_newest_or_oldest_first(client):
    newest = get(client, q="red", sort="date")
    assert names(newest["results"]) == ["red.jpg", "yellow.jpg", "green.jpg", "blue.jpg",
                                        "white.jpg", "black.jpg"]
    assert newest["sort"] == "date"
    oldest = get(client, q="red", sort="oldest")
    assert names(oldest["results"]) == names(newest["results"])[::-1]
    page = get(client, q="red", sort="date", limit=2, offset=2)
    assert names(page["results"]) == ["green.jpg", "blue.jpg"] and page["has_more"] is True
    assert [r["rank"] for r in page["results"]] == [3, 4]


def test_paging_with_a_filter(client):
    first = get(client, q="blue", camera="iphone", limit=1)
    assert names(first["results"]) == ["blue.jpg"] and first["has_more"] is True
    second = get(client, q="blue", camera="iphone", limit=1, offset=1)
    assert names(second["results"]) == ["green.jpg"] and second["has_more"] is False


# -- the cutoff ----------------------------------------------------------------------------------
def test_min_score_hides_weak_matches_and_says_so(client):
    body = get(client, q="red", min_score=0.9)
    assert names(body["results"]) == ["red.jpg"]
    assert body["hidden"] == 5 and body["no_good_match"] is False
    assert body["min_relevance"] == 0.9
    assert names([body["closest"]]) == ["yellow.jpg"]  # the best of the hidden ones


def test_no_good_match_names_the_closest_and_min_score_0_shows_it(client):
    # "green blue" is cyan: no photo is cyan; white comes closest (by hand: 0.81)
    body = get(client, q="green blue", min_score=0.9)
    assert body["results"] == [] and body["no_good_match"] is True and body["hidden"] == 6
    assert body["closest"]["id"].endswith("white.jpg") and body["closest"]["score"] < 0.9
    assert body["closest"]["taken_at"].startswith("2020-05-01")
    shown = get(client, q="green blue", min_score=0)
    assert names(shown["results"])[0] == "white.jpg" and shown["hidden"] == 0


def test_a_calibrated_model_reports_relevance_and_hides_by_default(client, monkeypatch):
    from xmodal.index import calibration

    cal = calibration.Calibrator(model_id=ColourModel.model_id, scores=[0.6, 1.0],
                                 probabilities=[0.0, 1.0], threshold=0.6)
    monkeypatch.setattr(calibration, "load_calibrator",
                        lambda mid, path=None: cal if mid == cal.model_id else None)
    body = get(client, q="red")
    assert body["calibrated"] is True and body["min_relevance"] == 0.6
    assert names(body["results"]) == ["red.jpg"] and body["hidden"] == 5
    assert body["considered"] == 6  # the hidden five are among the best six
    assert body["results"][0]["relevance"] > 0.99
    everything = get(client, q="red", min_score=0)
    assert len(everything["results"]) == 6 and everything["hidden"] == 0
    assert all(0 <= r["relevance"] <= 1 for r in everything["results"])
    nothing = get(client, q="green blue")
    assert nothing["no_good_match"] is True and 0 < nothing["closest"]["relevance"] < 0.6


def test_an_example_image_turns_the_default_cutoff_off(client, collection, monkeypatch):
    """Relevance judges the sentence alone; with an example image the ranking follows the
    image too, so the default cutoff would hide what the example asked for."""
    from xmodal.index import calibration

    cal = calibration.Calibrator(model_id=ColourModel.model_id, scores=[0.6, 1.0],
                                 probabilities=[0.0, 1.0], threshold=0.6)
    monkeypatch.setattr(calibration, "load_calibrator",
                        lambda mid, path=None: cal if mid == cal.model_id else None)
    ids = collection["ids"]
    liked = get(client, q="red", like=ids["green.jpg"])
    assert liked["calibrated"] is True and liked["hidden"] == 0
    assert liked["min_relevance"] is None and len(liked["results"]) == 5  # all but the example
    assert all(0 <= r["relevance"] <= 1 for r in liked["results"])
    asked = get(client, q="red", like=ids["green.jpg"], min_score=0.6)
    assert asked["min_relevance"] == 0.6 and asked["hidden"] > 0
    pushed = get(client, q="red", **{"not": "green"})  # sentences only: the default holds
    assert pushed["min_relevance"] == 0.6


# -- example images and terms to push away ---------------------------------------------------------
def test_like_an_indexed_photo_and_not_a_sentence(client, collection):
    ids = collection["ids"]
    # red + green = yellow; the example photo itself is left out
    liked = get(client, q="red", like=ids["green.jpg"])
    assert names(liked["results"])[0] == "yellow.jpg"
    assert "green.jpg" not in names(liked["results"])
    assert liked["terms"] == ["+ red", f"+ {ids['green.jpg']}"]
    # yellow - red leans green
    assert names(get(client, q="yellow")["results"])[0] == "yellow.jpg"
    pushed = get(client, q="yellow", **{"not": "red"})
    assert names(pushed["results"])[0] == "green.jpg"
    assert pushed["terms"] == ["+ yellow", "- red"]


def test_q_may_be_an_expression_with_indexed_photos(client, collection):
    ids = collection["ids"]
    same = get(client, q=f"red + {ids['green.jpg']}")
    assert names(same["results"]) == names(get(client, q="red", like=ids["green.jpg"])["results"])
    weighted = get(client, q=f"3:red + {ids['green.jpg']}")
    assert names(weighted["results"])[0] == "red.jpg"
    assert names(get(client, q="yellow - red")["results"])[0] == "green.jpg"
    assert "two operators" in error(client.get("/api/search", params={"q": "red + - blue"}), 400)


def test_files_outside_the_index_are_never_read(client, collection, tmp_path):
    """An image path in ``q`` or ``like`` must be an indexed photo: an existing image elsewhere
    and a missing one are refused alike (nothing says whether a file exists)."""
    outside = tmp_path / "secret.jpg"
    Image.new("RGB", (16, 16), COLOURS["red"]).save(outside)
    messages = []
    for path in (str(outside), str(tmp_path / "missing.jpg"), "~/x.png", "notes.jpg"):
        message = error(client.get("/api/search", params={"q": f"red + {path}"}), 400)
        assert "not a photo in the index" in message
        messages.append(message.replace(path, "PATH"))
    assert len(set(messages)) == 1
    assert "no indexed image" in error(
        client.get("/api/search", params={"q": "red", "like": str(outside)}), 404)
    assert "no indexed image" in error(
        client.get("/api/search", params={"q": "red", "like": "/etc/passwd"}), 404)
    # a sentence that merely mentions a file type is a sentence
    assert get(client, q="a red photo.jpg of a car")["results"]


def test_limits_on_terms(client):
    many = {"q": "red", "not": [f"word{i}" for i in range(20)]}
    assert "at most" in error(client.get("/api/search", params=many), 400)
    long_q = " + ".join(["red"] * 20)
    assert "limit" in error(client.get("/api/search", params={"q": long_q}), 400)


# -- POST: an uploaded example image next to the text ------------------------------------------------
def test_post_with_an_uploaded_image(client):
    green = jpeg_upload("green")
    both = client.post("/api/search", data={"q": "red", "limit": "10"},
                       files={"image": ("g.jpg", green, "image/jpeg")})
    assert both.status_code == 200, both.text
    body = both.json()
    assert names(body["results"])[0] == "yellow.jpg"
    assert body["terms"] == ["+ red", "+ an uploaded image"]
    assert "green.jpg" in names(body["results"])  # an upload is no indexed photo: not left out
    alone = client.post("/api/search", files={"image": ("b.jpg", jpeg_upload("blue"))}).json()
    assert names(alone["results"])[0] == "blue.jpg" and alone["query"] == ""
    heavy = client.post("/api/search", data={"q": "red", "image_weight": "5"},
                        files={"image": ("g.jpg", green)}).json()
    assert names(heavy["results"])[0] == "green.jpg"


def test_post_takes_filters_sort_cutoff_like_and_not(client, collection):
    green = jpeg_upload("green")
    paris = client.post("/api/search", data={"q": "red", "place": "Paris", "sort": "oldest"},
                        files={"image": ("g.jpg", green)}).json()
    assert names(paris["results"]) == ["green.jpg", "yellow.jpg"]
    assert paris["filter"] == {"place": "Paris"} and paris["sort"] == "oldest"
    cut = client.post("/api/search", data={"min_score": "0.95"},
                      files={"image": ("g.jpg", green)}).json()
    assert names(cut["results"]) == ["green.jpg"] and cut["hidden"] > 0
    pushed = client.post("/api/search", data={"q": "yellow", "not": ["red"]}).json()
    assert names(pushed["results"])[0] == "green.jpg"
    ids = collection["ids"]  # example photos without words (GET needs q)
    liked = client.post("/api/search", data={"like": [ids["red.jpg"], ids["green.jpg"]]}).json()
    assert names(liked["results"])[0] == "yellow.jpg" and liked["query"] == ""


def test_post_refuses_nothing_to_search_and_bad_uploads(client):
    assert "nothing to search for" in error(client.post("/api/search", data={"q": " "}), 400)
    error(client.post("/api/search", files={"image": ("n.jpg", b"not an image")}), 415)
    error(client.post("/api/search", files={"image": ("e.jpg", b"")}), 400)
    error(client.post("/api/search", data={"image_weight": "0"},
                      files={"image": ("g.jpg", jpeg_upload("green"))}), 422)
    error(client.post("/api/search", data={"after": "2023-02-30"},
                      files={"image": ("g.jpg", jpeg_upload("green"))}), 400)
    assert client.get("/api/health").json()["status"] == "ok"


# -- collections without find() (an ANN folder) ----------------------------------------------------
def test_a_collection_that_only_ranks_answers_plain_searches(tmp_path):
    from xmodal.index.photo_index import SearchResult

    class Ranker:
        def search(self, text, k, offset=0, under=None):
            return [SearchResult(f"/p/{i}.jpg", 1 - i / 10) for i in range(offset, 3)][:k]

        def contains(self, path):
            return path.startswith("/p/")

        def similar(self, image, k):
            return [SearchResult(f"/p/{i}.jpg", 0.5) for i in range(3)][:k]

    app = create_app(None, index=Ranker(), thumbnail_dir=tmp_path)
    with TestClient(app) as c:
        body = get(c, q="anything", limit=2)
        assert names(body["results"]) == ["0.jpg", "1.jpg"] and body["has_more"] is True
        assert body["hidden"] == 0 and body["no_good_match"] is False
        assert "plain sentence searches" in error(
            c.get("/api/search", params={"q": "x", "place": "Paris"}), 400)
        assert "plain sentence searches" in error(
            c.get("/api/similar", params={"id": "/p/0.jpg", "sort": "date"}), 400)
        assert names(c.get("/api/similar", params={"id": "/p/0.jpg"}).json()["results"]) == [
            "1.jpg", "2.jpg"]
        assert c.get("/api/facets").json() == {"years": [], "places": [], "cameras": []}


def test_scores_are_finite_json(client):
    body = get(client, q="black white", min_score=-1)
    assert all(np.isfinite(r["score"]) for r in body["results"])
