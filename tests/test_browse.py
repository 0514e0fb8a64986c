"""Browsing by filter alone (issue 40 item 4): no sentence, a filter or a date order, and the
photos that pass come back by date, paged, with the places of all of them counted; from the
library, the CLI (``xmodal photos`` and ``xmodal search`` without a sentence) and the API.

The collection is ``test_server_filters``'s: EXIF-dated colour photos in Lisbon and Paris and
two dated by their file time; the expected orders are computed from its table, not written."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.fake_models import ColourModel
from tests.test_server_filters import LISBON, MODEL, PARIS, PHOTOS, build_exif_index
from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.index import PhotoIndex
from xmodal.index.filters import PhotoFilter
from xmodal.server import create_app


def _taken(name: str) -> str:
    taken = PHOTOS[name][1]
    return taken.isoformat() if isinstance(taken, datetime) else taken[0].replace(" ", "T")


def by_date(names, oldest: bool = False) -> list[str]:
    return [Path(n).name for n in sorted(names, key=_taken, reverse=not oldest)]


def where(position) -> list[str]:
    return [n for n, row in PHOTOS.items() if row[2] == position]


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("browse")
    db, ids = build_exif_index(root)
    return {"root": root, "db": db}


def names(results) -> list[str]:
    return [Path(r.path if hasattr(r, "path") else r["id"]).name for r in results]


def test_the_library_lists_what_passes_by_date_without_a_model(collection):
    index = PhotoIndex(collection["db"], create=False)  # no model: browsing embeds nothing
    answer = index.find([], 10, filters=PhotoFilter(place="Paris"))
    assert names(answer.results) == by_date(where(PARIS))
    assert answer.terms == [] and answer.sort == "date" and not answer.more
    assert answer.hidden == 0 and all(r.score == 0 and r.taken_at for r in answer.results)
    assert answer.places == [{"place": "Paris, Île-de-France, France", "count": 2}]
    everything = index.find([], 2, 2, sort="oldest")  # no filter: a date order alone lists all
    assert names(everything.results) == by_date(PHOTOS, oldest=True)[2:4] and everything.more
    assert sum(p["count"] for p in everything.places) == len(where(LISBON) + where(PARIS))
    last = index.find([], 4, 4, sort="oldest")
    assert names(last.results) == by_date(PHOTOS, oldest=True)[4:] and not last.more
    with pytest.raises(XmodalError, match="choose|filter"):
        index.find([], 10)  # nothing to search for and nothing to list
    with pytest.raises(XmodalError, match="no indexed photo passes"):
        index.find([], 10, filters=PhotoFilter(place="Tokyo"))


def _cli(*args: str) -> dict:
    result = CliRunner().invoke(cli_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_cli_lists_by_filter_with_photos_and_with_search(collection):
    db = str(collection["db"])
    lisbon = _cli("photos", "--db", db, "--place", "lisbon")
    assert [Path(r["path"]).name for r in lisbon["results"]] == by_date(where(LISBON))
    paged = _cli("photos", "--db", db, "--sort", "oldest", "-k", "2", "--offset", "2")
    assert [Path(r["path"]).name for r in paged["results"]] == by_date(PHOTOS, oldest=True)[2:4]
    assert paged["more"] is True and paged["offset"] == 2
    searched = _cli("search", "--db", db, "--model", MODEL, "--after", "2022", "--sort", "oldest")
    after = [n for n in PHOTOS if _taken(n) >= "2022"]
    assert [Path(r["path"]).name for r in searched["results"]] == by_date(after, oldest=True)
    assert searched["terms"] == [] and searched["sort"] == "oldest"
    table = CliRunner().invoke(cli_app, ["photos", "--db", db, "--camera", "canon"])
    assert table.exit_code == 0, table.output
    canon = [n for n, row in PHOTOS.items() if row[3] and row[3][0] == "Canon"]
    months = {datetime.fromisoformat(_taken(n)).strftime("%B %Y") for n in canon}
    assert all(m in table.stdout for m in months)  # a row per photo under its month


def test_the_api_lists_by_filter_and_pages(collection):
    app = create_app(collection["db"], model=ColourModel(), model_spec=MODEL,
                     thumbnail_dir=collection["root"] / "thumbs")
    with TestClient(app) as client:
        page = client.get("/api/search", params={"place": "Lisbon"}).json()
        assert names(page["results"]) == by_date(where(LISBON))
        assert page["terms"] == [] and page["places"] == [{"place": "Lisbon, Portugal",
                                                           "count": 2}]
        assert [r["rank"] for r in page["results"]] == [1, 2]
        second = client.get("/api/search", params={"sort": "oldest", "limit": 3,
                                                   "offset": 3}).json()
        assert names(second["results"]) == by_date(PHOTOS, oldest=True)[3:6]
        assert second["has_more"] is False and second["sort"] == "oldest"
        first = client.get("/api/search", params={"sort": "date", "limit": 3}).json()
        assert names(first["results"]) == by_date(PHOTOS)[:3] and first["has_more"] is True
