"""Two small fixes of issue 40: a GPS position far from every known place gets no place name (it
was labelled with the nearest town, however far), and a query term written as an image file's
path that names no file is an error (it was searched as words)."""

from __future__ import annotations

import piexif
import pytest
from PIL import Image
from typer.testing import CliRunner

from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.index import PhotoIndex
from xmodal.index.metadata import PLACE_MAX_KM, km_between, place_of, read_metadata
from xmodal.index.query import parse_query

runner = CliRunner()
FAKE = "python:tests.fake_models:ColourModel"
MID_ATLANTIC = (38.0, -40.0)  # the nearest GeoNames place: Lajes das Flores (Azores), 780 km
LISBON = (38.7223, -9.1393)


def gps_jpeg(path, lat: float, lon: float, colour=(200, 30, 30)) -> None:
    def dms(x: float):
        x = abs(x)
        d, m = int(x), int((x - int(x)) * 60)
        return (d, 1), (m, 1), (round((x - d - m / 60) * 3600 * 1000), 1000)

    gps = {piexif.GPSIFD.GPSLatitudeRef: b"N" if lat >= 0 else b"S",
           piexif.GPSIFD.GPSLatitude: dms(lat),
           piexif.GPSIFD.GPSLongitudeRef: b"E" if lon >= 0 else b"W",
           piexif.GPSIFD.GPSLongitude: dms(lon)}
    Image.new("RGB", (64, 48), colour).save(path, exif=piexif.dump({"GPS": gps}))


def test_a_position_far_from_every_place_has_no_place_name(tmp_path):
    import reverse_geocode

    nearest = reverse_geocode.get(MID_ATLANTIC)
    assert km_between(*MID_ATLANTIC, nearest["latitude"], nearest["longitude"]) > PLACE_MAX_KM
    assert place_of(*MID_ATLANTIC) == (None, None, None, None)
    assert place_of(*LISBON)[0] == "Lisbon"
    gps_jpeg(tmp_path / "sea.jpg", *MID_ATLANTIC)
    meta = read_metadata(str(tmp_path / "sea.jpg"))
    assert meta.place is None and meta.country is None
    assert (meta.lat, meta.lon) == pytest.approx(MID_ATLANTIC, abs=1e-3)  # the position stays


def test_an_unknown_place_is_left_out_of_the_places_and_near_still_finds_it(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    gps_jpeg(photos / "sea.jpg", *MID_ATLANTIC)
    gps_jpeg(photos / "town.jpg", *LISBON, colour=(30, 30, 200))
    from fake_models import ColourModel

    index = PhotoIndex(tmp_path / "p.db", model=ColourModel())
    index.update(photos, progress=False)
    places = index.facets()["places"]
    assert [p["city"] for p in places] == ["Lisbon"]  # no Azores town for the sea photo
    res = runner.invoke(app, ["search", "red", "--db", str(tmp_path / "p.db"), "--model", FAKE,
                              "--near", f"{MID_ATLANTIC[0]},{MID_ATLANTIC[1]}", "--json",
                              "--min-score", "0"])
    assert res.exit_code == 0, res.output
    assert "sea.jpg" in res.stdout and "town.jpg" not in res.stdout
    index.close()


def test_a_missing_file_in_a_query_expression_is_an_error(tmp_path):
    photo = tmp_path / "pool.jpg"
    Image.new("RGB", (32, 32), (0, 0, 200)).save(photo)
    terms = parse_query(f"a dog + {photo}")
    assert [t.kind for t in terms] == ["text", "image"]
    for written in (f"a dog + {tmp_path}/pol.jpg", "a dog - missing-photo.png",
                    "2:~/no/such/folder/at the pool.jpg"):
        with pytest.raises(XmodalError, match="no image file"):
            parse_query(written)
    # written as words, not as a file's name: a sentence as before
    assert [t.kind for t in parse_query("a cat.jpg on a sofa")] == ["text"]
    assert parse_query("a dog + nosuch.jpg", check_files=False)[1].kind == "text"  # the server


def test_the_cli_says_which_file_is_missing(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.new("RGB", (32, 32), (200, 0, 0)).save(photos / "red.png")
    res = runner.invoke(app, ["index", str(photos), "--db", str(tmp_path / "p.db"), "--model",
                              FAKE, "-q"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["search", "red", "+", "rde.png", "--db", str(tmp_path / "p.db")])
    assert isinstance(res.exception, XmodalError) and "no image file 'rde.png'" in \
        str(res.exception)
