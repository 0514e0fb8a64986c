"""The search filters as one registry (xmodal.index.filters.FILTERS): the filter object, the
CLI options of search and similar, the HTTP parameters, the web page's filter bar, the facets and
the "nothing passes" message are generated from it, so every surface names the same filters."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main
from fastapi.testclient import TestClient

from tests.fake_models import ColourModel
from tests.test_server_filters import MODEL, build_exif_index
from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.index import PhotoIndex
from xmodal.index import filters as registry
from xmodal.server import create_app


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("registry")
    db, ids = build_exif_index(root)
    return {"root": root, "db": db, "ids": ids}


def _client(collection) -> TestClient:
    return TestClient(create_app(collection["db"], model=ColourModel(), model_spec=MODEL,
                                 thumbnail_dir=collection["root"] / "thumbs"))


def _cli_options(command: str) -> set[str]:
    click = typer.main.get_command(cli_app).commands[command]
    return {o for p in click.params for o in p.opts}


def _api_params(openapi: dict, path: str, method: str = "get") -> set[str]:
    op = openapi["paths"][path][method]
    if method == "get":
        return {p["name"] for p in op["parameters"]}
    ref = op["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    return set(openapi["components"]["schemas"][ref.split("/")[-1]]["properties"])


def test_every_surface_names_the_registered_filters(collection):
    names = registry.names()
    assert {"after", "before", "place", "near", "km", "camera", "under"} <= set(names)
    for command in ("search", "similar", "photos"):
        assert {f"--{n}" for n in names} <= _cli_options(command), command
    with _client(collection) as client:
        openapi = client.get("/openapi.json").json()
        for path, method in (("/api/search", "get"), ("/api/similar", "get"),
                             ("/api/search", "post")):
            assert set(names) <= _api_params(openapi, path, method), (path, method)
        page = client.get("/").text
        listed = client.get("/api/filters").json()
    for n in names:
        assert f'data-filter="{n}"' in page
    assert [f["name"] for f in listed] == names
    # the fields offer the index's values, from the facets, with photo counts
    offered = {f["name"]: dict(map(tuple, f.get("suggest", []))) for f in listed}
    assert offered["place"]["Paris"] == 2 and offered["place"]["Portugal"] == 2
    assert offered["camera"] == {"Canon EOS 5D": 2, "Apple iPhone 12": 2}
    assert offered["after"] == offered["before"] and set(offered["after"]) >= {"2023", "2019"}


def test_facets_and_the_nothing_passes_message_come_from_the_registry(collection):
    index = PhotoIndex(collection["db"], model=ColourModel(), model_spec=MODEL)
    facets = index.facets()
    assert list(facets) == [f.key for f in registry.all_facets()] == ["years", "places",
                                                                      "cameras"]
    assert sum(y["count"] for y in facets["years"]) == 6
    with pytest.raises(XmodalError) as err:
        index.find("red", filters=registry.PhotoFilter(place="Tokyo", camera="nikon"))
    message = str(err.value)
    assert "places in the index: Lisbon, Paris" in message
    assert "Canon EOS 5D" in message.split("cameras: ")[1]
    assert message.endswith("'xmodal photos --facets' lists dates, places and cameras")


def test_a_filter_value_is_parsed_and_checked_by_its_spec():
    f = registry.PhotoFilter(near="38.72, -9.14", km="5", under=Path("/photos"))
    assert f.near == (38.72, -9.14) and f.km == 5.0 and f.under == "/photos"
    assert f.to_dict() == {"near": (38.72, -9.14), "km": 5.0, "under": "/photos"}
    assert f.replace(km=None) == registry.PhotoFilter(near=(38.72, -9.14), under="/photos")
    for bad, words in (({"km": 5}, "--km needs --near"), ({"after": "June"}, "--after 'June'"),
                       ({"after": "2024", "before": "2023"}, "later than --before"),
                       ({"place": " "}, "--place is empty")):
        with pytest.raises(XmodalError, match=words):
            registry.PhotoFilter(**bad)
    with pytest.raises(TypeError, match="unknown filter colour"):
        registry.PhotoFilter(colour="red")


def test_a_new_filter_is_one_spec_one_extractor_and_one_migration_step(tmp_path, monkeypatch):
    """A toy filter, the file's type, added the documented way to an index written before it
    existed: the next 'xmodal index' reads the new metadata without re-embedding, and the
    library, the CLI, the API and the page all filter by it."""
    from PIL import Image
    from typer.testing import CliRunner

    from xmodal.index import metadata
    from xmodal.index import store as store_module
    from xmodal.migrations import Schema, add_column

    folder = tmp_path / "photos"
    folder.mkdir()
    for name, colour in (("a.jpg", "red"), ("b.png", "red"), ("c.png", "blue"), ("d.jpg", "blue")):
        Image.new("RGB", (32, 24), colour).save(folder / name)
    db = tmp_path / "photos.db"
    PhotoIndex(db, model=ColourModel(), model_spec=MODEL).update(folder, progress=False)

    # 1. the migration step: the column, and the photos' metadata marked to be read again
    def file_type_column(conn):
        add_column("photo_meta", "file_type", "TEXT")(conn)
        conn.execute("UPDATE photo_meta SET version = 0")

    steps = list(store_module.INDEX_SCHEMA.steps)
    monkeypatch.setattr(store_module, "INDEX_SCHEMA", Schema(
        "photo index", [*steps, (len(steps) + 1, file_type_column)]))
    # 2. the metadata extractor
    monkeypatch.setitem(metadata.EXTRACTORS, "file_type",
                        lambda path, data, meta: Path(path).suffix.lstrip(".").lower())
    # 3. the spec entry
    registry.register(registry.FilterSpec(
        "filetype", "Only files of this type (jpg, png, ...).", "png", "Type",
        where=lambda value, f, store: (["m.file_type = ?"], [value.strip().lower()])))
    try:
        index = PhotoIndex(db, model=ColourModel(), model_spec=MODEL)
        stats = index.update(folder, progress=False)
        assert (stats.added, stats.updated, stats.metadata_read) == (0, 0, 4)
        found = index.find("red", filters=registry.PhotoFilter(filetype="PNG"), min_relevance=0)
        assert [Path(r.path).name for r in found.results] == ["b.png", "c.png"]
        index.close()

        cli = CliRunner().invoke(cli_app, ["search", "blue", "--filetype", "jpg", "--db", str(db),
                                           "--model", MODEL, "--json", "--min-score", "0"])
        assert cli.exit_code == 0, cli.output
        assert '"filter": {\n    "filetype": "jpg"' in cli.output
        assert "d.jpg" in cli.output and ".png" not in cli.output

        collection = {"db": db, "root": tmp_path}
        with _client(collection) as client:
            answer = client.get("/api/search", params={"q": "red", "filetype": "png",
                                                       "min_score": 0}).json()
            assert [Path(r["id"]).name for r in answer["results"]] == ["b.png", "c.png"]
            assert 'data-filter="filetype"' in client.get("/").text
            assert "filetype" in _api_params(client.get("/openapi.json").json(), "/api/search")
    finally:
        registry.unregister("filetype")
    assert "--filetype" not in _cli_options("search")


def test_the_cli_builds_its_filter_options_without_loading_the_photo_index():
    """The options come from xmodal.index.filters (standard library only): 'xmodal --help' must
    not pay for the photo index (numpy, Pillow, SQLite, FAISS) to list them."""
    import subprocess
    import sys

    code = ("import sys, xmodal.cli; "
            "print(sorted(m for m in ('xmodal.index.photo_index', 'numpy', 'PIL') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "xmodal.index.photo_index" not in out.stdout, out.stdout
