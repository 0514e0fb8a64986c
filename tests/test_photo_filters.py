"""Photo metadata (EXIF dates, cameras, GPS, places), search filters and sorting, checked against
brute force over what the fixture wrote, below and above the size where the index is an HNSW
graph; the metadata migration and moved photos that keep their vectors."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import piexif
import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.exif_photos import CAMERAS, PLACES, Planned, exif_bytes, make_photos
from tests.fake_models import ColourModel, CountingColourModel
from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.index import PhotoIndex
from xmodal.index.filters import PhotoFilter, period
from xmodal.index.metadata import read_metadata
from xmodal.index.query import parse_query

N = 60
FAKE = "python:tests.fake_models:ColourModel"


def _km(lat1, lon1, lat2, lon2):  # spherical law of cosines: an independent distance
    p1, p2, dl = map(math.radians, (lat1, lat2, lon2 - lon1))
    c = math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)
    return 6371.0088 * math.acos(max(-1.0, min(1.0, c)))


@pytest.fixture(scope="module")
def photos(flickr8k_root, tmp_path_factory):
    folder = tmp_path_factory.mktemp("exif") / "photos"
    planned = make_photos(flickr8k_root, folder, N)
    return folder, planned


def _build(folder: Path, db: Path, hnsw_above: int | None, monkeypatch) -> PhotoIndex:
    if hnsw_above is not None:
        monkeypatch.setenv("XMODAL_HNSW_ABOVE", str(hnsw_above))
    index = PhotoIndex(db, model=ColourModel())
    stats = index.update(folder, progress=False)
    assert stats.added == N and stats.skipped == 0
    return index


def _truth(folder: Path, planned: list[Planned]) -> dict[str, dict]:
    """Per path: the date, place and camera the fixture wrote (file time where no date)."""
    out = {}
    for p in planned:
        path = str(folder / p.name)
        taken = p.taken_at or datetime.fromtimestamp(os.stat(path).st_mtime).isoformat(
            timespec="seconds")
        lat, lon, city, country = PLACES[p.place] if p.place else (None, None, None, None)
        out[path] = {"taken": taken, "lat": lat, "lon": lon, "city": city, "country": country,
                     "camera": " ".join(p.camera) if p.camera else ""}
    return out


def _camera_name(make: str, model: str) -> str:
    """How the fixture's cameras are named: the make once ("Apple iPhone 12", "NIKON D750")."""
    return model if model.lower().startswith(make.split()[0].lower()) else f"{make} {model}"


def _passes(t: dict, f: PhotoFilter, folder: Path) -> bool:
    fold = lambda s: s.lower().replace("ã", "a")  # noqa: E731 - enough for the fixture's names
    if f.after and t["taken"] < period(f.after)[0]:
        return False
    if f.before and t["taken"] >= period(f.before)[1]:
        return False
    if f.place and fold(f.place) not in {fold(x) for x in (t["city"], t["country"]) if x}:
        return False
    if f.camera and fold(f.camera) not in fold(t["camera"]):
        return False
    if f.near and (t["lat"] is None or _km(*f.near, t["lat"], t["lon"]) > f.km):
        return False
    return not f.under or t["path"].startswith(f.under.rstrip("/") + "/")


FILTERS = [
    PhotoFilter(after="2021"),
    PhotoFilter(before="2020-06"),
    PhotoFilter(after="2022-10", before="2022-10"),
    PhotoFilter(after="2021-06-14", before="2023-01-01"),
    PhotoFilter(place="portugal"),
    PhotoFilter(place="Sao Paulo"),
    PhotoFilter(place="PARIS"),
    PhotoFilter(near=(38.72, -9.14), km=5),
    PhotoFilter(near=(40.0, -8.8), km=200),
    PhotoFilter(camera="iphone"),
    PhotoFilter(camera="Nikon"),
    PhotoFilter(after="2020", place="France", camera="canon"),
]


def _brute(index: PhotoIndex, query_vec: np.ndarray, keep: list[str], k: int):
    ids = [index.store.file_id(p) for p in keep]
    vecs = index.store.vectors_of(ids, index.model_id)
    scored = sorted(((float(vecs[i] @ query_vec), p) for i, p in zip(ids, keep)),
                    key=lambda x: -x[0])
    return scored[:k]


@pytest.mark.parametrize("hnsw_above", [None, 20], ids=["flat", "hnsw"])
def test_filtered_top_k_equals_brute_force(photos, tmp_path, monkeypatch, hnsw_above):
    folder, planned = photos
    index = _build(folder, tmp_path / "p.db", hnsw_above, monkeypatch)
    assert index.ann.kind == ("flat" if hnsw_above is None else "hnsw")
    truth = _truth(folder, planned)
    for path, t in truth.items():
        t["path"] = path
    under = PhotoFilter(under=str(folder / "sub"))
    query = "red green"
    q = ColourModel().embed_texts([query])[0]
    for f in [*FILTERS, under]:
        keep = [p for p, t in truth.items() if _passes(t, f, folder)]
        assert keep, f"the fixture must give every filter something to pass: {f}"
        want = _brute(index, q, keep, 5)
        got = index.find(query, 5, filters=f, min_relevance=0).results
        assert [r.path for r in got] == [p for _, p in want], f
        assert [r.score for r in got] == pytest.approx([s for s, _ in want], abs=1e-5)
        answer = index.find(query, 5, filters=f)
        assert answer.candidates == len(keep), f


def test_metadata_read_back_as_written(photos, tmp_path, monkeypatch):
    folder, planned = photos
    index = _build(folder, tmp_path / "p.db", None, monkeypatch)
    rows = index.store.metadata(index.store.ids_matching([], []))
    by_path = {r["path"]: r for r in rows.values()}
    for p in planned:
        row = by_path[str(folder / p.name)]
        if p.taken_at:
            assert (row["taken_at"], row["date_source"]) == (p.taken_at, "exif")
            assert row["utc_offset"] == p.offset
        else:
            assert row["date_source"] == "mtime"
        assert row["camera"] == (_camera_name(*p.camera) if p.camera else None)
        if p.place:
            lat, lon, city, country = PLACES[p.place]
            assert (row["lat"], row["lon"]) == pytest.approx((lat, lon), abs=1e-5)
            assert (row["city"], row["country"]) == (city, country)
        else:
            assert row["lat"] is None and row["city"] is None


def test_sort_by_date_and_facets(photos, tmp_path, monkeypatch):
    folder, planned = photos
    index = _build(folder, tmp_path / "p.db", None, monkeypatch)
    truth = _truth(folder, planned)
    newest = index.find("red", 10, sort="date", min_relevance=0).results
    dates = [truth[r.path]["taken"] for r in newest]
    assert dates == sorted(dates, reverse=True)
    assert dates == sorted((t["taken"] for t in truth.values()), reverse=True)[:10]
    oldest = index.find("red", 5, sort="oldest", filters=PhotoFilter(place="Portugal"),
                        min_relevance=0).results
    want = sorted(t["taken"] for t in truth.values() if t["country"] == "Portugal")[:5]
    assert [truth[r.path]["taken"] for r in oldest] == want
    facets = index.facets()
    years = {y["year"]: y["count"] for y in facets["years"]}
    want_years: dict[str, int] = {}
    for t in truth.values():
        want_years[t["taken"][:4]] = want_years.get(t["taken"][:4], 0) + 1
    assert years == want_years
    cams = {c["camera"]: c["count"] for c in facets["cameras"]}
    for make, model in CAMERAS:
        assert cams[_camera_name(make, model)] == sum(p.camera == (make, model) for p in planned)
    places = {p["city"]: p["count"] for p in facets["places"]}
    assert places["Lisbon"] == sum(p.place == "lisbon" for p in planned)


def test_filter_errors_are_clear(photos, tmp_path, monkeypatch):
    folder, _ = photos
    index = _build(folder, tmp_path / "p.db", None, monkeypatch)
    for kwargs, words in [({"after": "2023-13"}, "not a real date"),
                          ({"after": "last year"}, "2023-06-14"),
                          ({"after": "2024", "before": "2023"}, "later than"),
                          ({"km": 3}, "--near"),
                          ({"place": " "}, "empty")]:
        with pytest.raises(XmodalError, match=words):
            PhotoFilter(**kwargs)
    with pytest.raises(XmodalError, match="Lisbon"):  # names the places there are
        index.find("red", 3, filters=PhotoFilter(place="Atlantis"))
    with pytest.raises(XmodalError, match="sort"):
        index.find("red", 3, sort="size")


def test_a_place_written_as_results_show_it_filters(photos, tmp_path):
    """'--place "Paris, France"' (or the whole 'Paris, Île-de-France, France' that results and
    facets show) found nothing: only a single name matched."""
    folder, planned = photos
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    index.update(folder, progress=False)

    def found(place: str) -> set[str]:
        return {r.path for r in index.find("red", 100, filters=PhotoFilter(place=place),
                                           min_relevance=0).results}

    shown = {r.place for r in index.find("red", 100, min_relevance=0).results if r.place}
    assert len(shown) == len(PLACES)
    for key, (_, _, city, country) in PLACES.items():
        name = next(s for s in shown if s.startswith(city))
        want = {str(folder / p.name) for p in planned if p.place == key}
        assert found(name) == found(f"{city}, {country}") == found(f" {city} ,") == want
    with pytest.raises(XmodalError, match="no indexed photo passes"):
        found("Paris, Portugal")


def test_cli_filters_json(photos, tmp_path):
    folder, planned = photos
    db = tmp_path / "p.db"
    runner = CliRunner()
    res = runner.invoke(app, ["index", str(folder), "--db", str(db), "--model", FAKE, "-q"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["search", "red", "--db", str(db), "--place", "Paris", "--after",
                              "2019", "--sort", "date", "-k", "50", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    want = sum(p.place == "paris" for p in planned)
    assert len(out["results"]) == want and {r["place"] for r in out["results"]} == {
        "Paris, Île-de-France, France"}
    res = runner.invoke(app, ["search", "red", "--db", str(db), "--place", "lisboa", "--json"])
    assert res.exit_code != 0  # GeoNames' English name only; the error lists what there is
    assert "Lisbon" in str(res.exception)
    res = runner.invoke(app, ["search", "red", "--db", str(db), "--place", "lisbon", "--json"])
    assert {r["place"] for r in json.loads(res.stdout)["results"]} == {"Lisbon, Portugal"}
    assert out["filter"] == {"after": "2019", "place": "Paris"} and out["sort"] == "date"
    res = runner.invoke(app, ["photos", "--db", str(db), "--facets", "--json"])
    assert res.exit_code == 0 and "years" in json.loads(res.stdout)
    res = runner.invoke(app, ["search", "red", "--db", str(db), "--near", "91,0"])
    assert res.exit_code != 0 and "latitude" in str(res.exception)


def test_formats_carry_metadata(tmp_path):
    p = Planned("x", "2023-06-14T10:30:00", "-03:00", "saopaulo", ("Apple", "iPhone 12"))
    exif = exif_bytes(p)
    image = Image.new("RGB", (64, 48), (200, 30, 30))
    files = {"photo.png": {"format": "PNG"}, "photo.tif": {"format": "TIFF"},
             "photo.webp": {"format": "WEBP"}, "photo.heic": {"format": "HEIF"},
             "photo.jpg": {"format": "JPEG"}}
    for name, kw in files.items():
        image.save(tmp_path / name, exif=exif, **kw)
    for name in files:
        meta = read_metadata(str(tmp_path / name), mtime_ns=0)
        assert (meta.taken_at, meta.utc_offset, meta.date_source) == (
            "2023-06-14T10:30:00", "-03:00", "exif"), name
        assert meta.camera == "Apple iPhone 12" and meta.camera_make == "Apple", name
        assert (meta.city, meta.country) == ("São Paulo", "Brazil"), name
        assert meta.lat == pytest.approx(-23.5505, abs=1e-4), name


def _png_chunks(data: bytes) -> list[bytes]:
    """A PNG's chunks, each with its length, type and CRC (the signature left out)."""
    out, at = [], 8
    while at < len(data):
        n = int.from_bytes(data[at:at + 4], "big")
        out.append(data[at:at + 12 + n])
        at += 12 + n
    return out


def test_png_exif_after_the_pixels_is_read_and_no_exif_costs_no_decode(tmp_path, monkeypatch):
    from PIL import PngImagePlugin

    p = Planned("x", "2021-01-02T03:04:05", "+01:00", "saopaulo", ("Google", "Pixel 7"))
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 200, 30)).save(buf, "PNG", exif=exif_bytes(p))
    chunks = _png_chunks(buf.getvalue())
    exif = [c for c in chunks if c[4:8] == b"eXIf"]
    rest = [c for c in chunks if c[4:8] != b"eXIf"]
    assert len(exif) == 1 and rest[-1][4:8] == b"IEND"
    late = buf.getvalue()[:8] + b"".join(rest[:-1] + exif + rest[-1:])  # eXIf after IDAT
    assert read_metadata("late.png", data=late, mtime_ns=0).camera == "Google Pixel 7"

    decodes = []
    real_load = PngImagePlugin.PngImageFile.load
    monkeypatch.setattr(PngImagePlugin.PngImageFile, "load",
                        lambda self: decodes.append(1) or real_load(self))
    plain = io.BytesIO()
    Image.new("RGB", (64, 48)).save(plain, "PNG")
    assert read_metadata("plain.png", data=plain.getvalue(), mtime_ns=0).date_source == "mtime"
    assert decodes == []  # Pillow's getexif would decode the pixels to look past them


def test_missing_or_broken_exif_falls_back_to_file_time(tmp_path):
    path = tmp_path / "a.jpg"
    buf = io.BytesIO()
    Image.new("RGB", (32, 32)).save(buf, "JPEG")
    bad = piexif.dump({"Exif": {piexif.ExifIFD.DateTimeOriginal: b"0000:00:00 00:00:00"},
                       "GPS": {piexif.GPSIFD.GPSLatitude: ((0, 0), (0, 1), (0, 1))}})
    piexif.insert(bad, buf.getvalue(), str(path))
    stamp = datetime(2020, 2, 3, 4, 5, 6).timestamp()
    os.utime(path, (stamp, stamp))
    meta = read_metadata(str(path), mtime_ns=os.stat(path).st_mtime_ns)
    assert (meta.taken_at, meta.date_source) == ("2020-02-03T04:05:06", "mtime")
    assert meta.lat is None
    garbage = read_metadata(str(tmp_path / "x.nef"), data=b"not a raw file" * 10, mtime_ns=0)
    assert garbage.date_source == "mtime"  # never raises on a foreign file


def test_old_index_gains_metadata_without_re_embedding(photos, tmp_path):
    folder, planned = photos
    db = tmp_path / "old.db"
    CountingColourModel.embedded = 0
    PhotoIndex(db, model=CountingColourModel()).update(folder, progress=False)
    assert CountingColourModel.embedded == N
    with sqlite3.connect(db) as conn:  # an index from before metadata: no such table, and
        conn.execute("DROP TABLE photo_meta")  # from before versioning (xmodal.migrations)
        conn.execute("PRAGMA user_version = 0")
    index = PhotoIndex(db, model=CountingColourModel())
    stats = index.update(folder, progress=False)
    assert (stats.metadata_read, stats.unchanged, CountingColourModel.embedded) == (N, N, N)
    dated = [p for p in planned if p.taken_at]
    got = index.find("red", N, filters=PhotoFilter(after="2019", before="2024"),
                     min_relevance=0).results
    assert len(got) == len(dated)


def test_moved_and_copied_photos_keep_their_vectors(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for i, colour in enumerate([(250, 0, 0), (0, 250, 0), (0, 0, 250)]):
        Image.new("RGB", (40, 30), colour).save(folder / f"{i}.png")
    db = tmp_path / "p.db"
    CountingColourModel.embedded = 0
    index = PhotoIndex(db, model=CountingColourModel())
    index.update(folder, progress=False)
    (folder / "new").mkdir()
    os.rename(folder / "0.png", folder / "new" / "red renamed.png")
    shutil.copyfile(folder / "1.png", folder / "green copy.png")
    stats = index.update(folder, progress=False)
    assert (stats.added, stats.reused, stats.deleted) == (2, 2, 1)
    assert CountingColourModel.embedded == 3  # nothing embedded again
    top = index.search("red", 1)[0]
    assert top.path == str(folder / "new" / "red renamed.png")
    # results show the copy once, and so do the facets: 3 photos, not 4 files
    assert sum(y["count"] for y in index.facets()["years"]) == 3
    assert sum(c["count"] for c in index.facets()["cameras"]) == 3


def test_combined_and_negative_queries(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    colours = {"red": (250, 0, 0), "orange": (250, 120, 0), "yellow": (250, 250, 0),
               "purple": (160, 0, 250), "blue": (0, 0, 250)}
    for name, c in colours.items():
        Image.new("RGB", (40, 30), c).save(folder / f"{name}.png")
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    index.update(folder, progress=False)
    model = ColourModel()

    def oracle(terms):  # weighted sum of unit vectors, cosine ranking
        q = sum(w * v / np.linalg.norm(v) for w, v in terms)
        q = q / np.linalg.norm(q)
        ids, vecs = index.store.vectors(index.model_id, 4)
        paths = index.store.paths(ids)
        order = np.argsort(-(vecs @ q))
        return [paths[int(ids[i])] for i in order]

    red, blue = model.embed_texts(["red"])[0], model.embed_texts(["blue"])[0]
    purple_vec = index.store.vector_of(index.store.file_id(str(folder / "purple.png")),
                                       index.model_id)
    got = [r.path for r in index.find('2:red + blue', 5, min_relevance=0).results]
    assert got == oracle([(2, red), (1, blue)])
    got = [r.path for r in index.find(["red", "-", "yellow"], 5, min_relevance=0).results]
    assert got == oracle([(1, red), (-1, model.embed_texts(["yellow"])[0])])
    # an indexed example image: its stored vector, and the image itself left out
    answer = index.find("blue", 4, like=[str(folder / "purple.png")], unlike=["green"],
                        min_relevance=0)
    want = [p for p in oracle([(1, blue), (1, purple_vec),
                               (-1, model.embed_texts(["green"])[0])])
            if not p.endswith("purple.png")][:4]
    assert [r.path for r in answer.results] == want
    assert answer.terms == ["+ blue", f"+ {folder / 'purple.png'}", "- green"]
    with pytest.raises(XmodalError, match="only pushes away"):
        parse_query("- people")
    with pytest.raises(XmodalError, match="cancel"):
        index.find(["red", "-", "red"], 3)


def test_a_sentence_that_starts_with_a_time_of_day_is_not_weighed():
    """'12:30 lunch' was read as weight 12 on '30 lunch'; '0:00 fireworks' was refused."""
    for text in ("12:30 lunch on a terrace", "0:00 fireworks", "5:45 am sunrise"):
        assert [(t.value, t.weight) for t in parse_query(text)] == [(text, 1.0)]
    assert [(t.value, t.weight) for t in parse_query("a dog + 2.5: 3 cats")] == [
        ("a dog", 1.0), ("3 cats", 2.5)]


def test_min_score_hides_and_says_so(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name, c in {"red": (250, 0, 0), "blue": (0, 0, 250), "green": (0, 250, 0)}.items():
        Image.new("RGB", (40, 30), c).save(folder / f"{name}.png")
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    index.update(folder, progress=False)
    everything = index.find("red", 3).results  # no calibration for this model: nothing hidden
    assert len(everything) == 3
    answer = index.find("red", 3, min_relevance=0.9)  # a raw score for an uncalibrated model
    assert [r.path for r in answer.results] == [str(folder / "red.png")]
    assert answer.hidden == 2 and not answer.no_good_match
    # paging: whether more follow, and hidden counted over this page's window only
    assert index.find("red", 2).more and not index.find("red", 3).more
    assert not index.find("red", 1, 2).more
    one = index.find("red", 1, min_relevance=0.9)
    assert (len(one.results), one.hidden, one.more) == (1, 0, False)
    answer = index.find("yellow", 3, min_relevance=0.99)
    assert answer.results == [] and answer.no_good_match and answer.closest is not None
    runner = CliRunner()
    db = str(tmp_path / "p.db")
    res = runner.invoke(app, ["search", "yellow", "--db", db, "--min-score", "0.99",
                              "--model", FAKE])
    assert res.exit_code == 0 and "No photo matches 'yellow' well" in res.output


def test_min_score_outside_its_range_is_refused(tmp_path):
    """'--min-score 50' (read as 50%) used to hide every photo and answer 'no good match'."""
    folder = tmp_path / "photos"
    folder.mkdir()
    Image.new("RGB", (40, 30), (250, 0, 0)).save(folder / "red.png")
    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    index.update(folder, progress=False)
    for bad in (50, 1.01, -1.5, float("nan")):
        with pytest.raises(XmodalError, match="from 0 to 1"):
            index.find("red", 3, min_relevance=bad)
    assert len(index.find("red", 3, min_relevance=1).results) <= 1  # the ends are allowed
    assert len(index.find("red", 3, min_relevance=-1).results) == 1
    res = CliRunner().invoke(app, ["search", "red", "--db", str(tmp_path / "p.db"),
                                   "--min-score", "50", "--model", FAKE])
    assert isinstance(res.exception, XmodalError) and "0.2 is 20%" in str(res.exception)


def test_indexing_prepares_the_query_encoder(tmp_path):
    """The first search after 'xmodal index' must not export the text tower (issue 32)."""
    class Preparing(ColourModel):
        prepared = 0

        def prepare_queries(self):
            Preparing.prepared += 1
            return True

    folder = tmp_path / "photos"
    folder.mkdir()
    Image.new("RGB", (40, 30), (250, 0, 0)).save(folder / "red.png")
    PhotoIndex(tmp_path / "p.db", model=Preparing()).update(folder, progress=False)
    assert Preparing.prepared == 1


def test_prepare_text_encoder_exports_only_a_missing_file(tmp_path, monkeypatch):
    from xmodal.features import onnx_engine, towers

    monkeypatch.setenv("XMODAL_MODELS", str(tmp_path))
    tower = towers.OnnxTextTower(towers.text_tower_spec("mpnet"))
    target = tower.path()
    calls = []
    monkeypatch.setattr(towers, "text_tower", lambda name: tower)
    monkeypatch.setattr(onnx_engine, "engine", lambda: "onnx")
    monkeypatch.setattr(tower, "source_digest", lambda: "weights")
    monkeypatch.setattr(tower, "_write", lambda p: [calls.append(p), p.write_bytes(b"x")][:0])
    assert towers.prepare_text_encoder("mpnet") and calls == [target]
    assert not towers.prepare_text_encoder("mpnet") and calls == [target]
    monkeypatch.setattr(onnx_engine, "engine", lambda: "torch")
    target.unlink()
    assert not towers.prepare_text_encoder("mpnet") and len(calls) == 1
