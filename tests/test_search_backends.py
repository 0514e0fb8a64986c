"""One search pipeline, two vector back-ends (issue 43 item 2): a table of queries (sentences,
filters, sort orders, cutoffs, example images, browsing) runs against a photo database
(SQLite + FAISS) and against an 'xmodal ann build' folder over the same photos (sharded
embeddings, an IVF index and the catalog beside it); the answers must be the same."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fake_models import ColourModel
from tests.test_server_filters import MODEL, make_exif_photos
from xmodal.cli import app as cli_app
from xmodal.errors import XmodalError
from xmodal.index import PhotoIndex
from xmodal.index.filters import PhotoFilter
from xmodal.index.searcher import Searcher


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from xmodal.scale.ann_build import build_index
    from xmodal.scale.ann_search import open_search
    from xmodal.scale.embed import run_embed

    root = tmp_path_factory.mktemp("backends")
    make_exif_photos(root / "photos")
    db = root / "photos.db"
    index = PhotoIndex(db, model=ColourModel(), model_spec=MODEL)
    index.update(root / "photos", progress=False)
    run_embed(root / "photos", root / "emb", engine="local", model_spec=MODEL, dtype="float32")
    meta = build_index([root / "emb"], root / "ann", factory="IVF2,Flat", queries=2)
    ann = open_search(root / "ann", model=ColourModel())
    yield {"root": root, "db": db, "index": index, "ann": ann, "meta": meta}
    index.close()


EXAMPLE = "photos/blue.jpg"  # an indexed photo as an example (relative to the root)
QUERIES = [
    ("red", {}),
    ("red", {"min_relevance": 0.0, "k": 3}),
    ("red", {"min_relevance": 0.9}),  # hides weak matches: hidden, closest, no_good_match
    ("blue", {"filters": PhotoFilter(place="Lisbon")}),
    ("green", {"sort": "date", "k": 4}),
    ("yellow", {"filters": PhotoFilter(after="2022"), "sort": "oldest"}),
    ("white", {"filters": PhotoFilter(camera="canon"), "min_relevance": 0.0}),
    ("red + white", {"k": 2, "offset": 1}),
    ("black", {"filters": PhotoFilter(near=(48.85, 2.35), km=20)}),
    ("", {"filters": PhotoFilter(place="Paris")}),  # browsing
    ("", {"sort": "oldest", "k": 2, "offset": 2}),
    ("green", {"like": [EXAMPLE]}),
]


def _answer(searcher, root: Path, query: str, options: dict) -> dict:
    options = dict(options)
    if "like" in options:
        options["like"] = [str(root / p) for p in options["like"]]
    k, offset = options.pop("k", 6), options.pop("offset", 0)
    answer = searcher.find(query, k, offset, **options).to_dict()
    for r in answer["results"] + ([answer["closest"]] if answer["closest"] else []):
        r["path"] = str(Path(r["path"]).relative_to(root))
        r["score"] = round(r["score"], 4)
    answer["terms"] = [t.replace(str(root) + "/", "") for t in answer["terms"]]
    return answer


@pytest.mark.parametrize("query,options", QUERIES, ids=[f"{q or '(browse)'}-{i}" for i, (q, _)
                                                         in enumerate(QUERIES)])
def test_both_backends_give_the_same_answer(both, query, options):
    assert both["meta"]["factory"].startswith("IVF")  # the sharded IVF, not a flat copy
    db_answer = _answer(both["index"], both["root"], query, options)
    ann_answer = _answer(both["ann"], both["root"], query, options)
    assert ann_answer == db_answer
    assert db_answer["results"] or db_answer["no_good_match"]


def test_the_same_pipeline_serves_both(both):
    assert isinstance(both["index"].searcher, Searcher) and isinstance(both["ann"], Searcher)
    with pytest.raises(XmodalError, match="no indexed photo passes"):
        both["ann"].find("red", filters=PhotoFilter(place="Tokyo"))


def test_search_ann_takes_the_same_options_as_a_database(both):
    root = both["root"]
    common = ["search", "green", "--place", "Paris", "--sort", "oldest", "--min-score", "0",
              "--json", "--model", MODEL]
    out = {}
    for name, where in (("db", ["--db", str(both["db"])]), ("ann", ["--ann", str(root / "ann")])):
        result = CliRunner().invoke(cli_app, [*common, *where])
        assert result.exit_code == 0, result.output
        out[name] = json.loads(result.stdout)
    assert out["ann"] == out["db"] and out["db"]["filter"] == {"place": "Paris"}
    assert [Path(r["path"]).name for r in out["db"]["results"]] == ["green.jpg", "yellow.jpg"]


def test_an_ann_folder_without_its_catalog_names_the_stage_to_run(both, tmp_path):
    import shutil

    from xmodal.scale.ann_search import open_search

    bare = tmp_path / "bare.ann"
    shutil.copytree(both["root"] / "ann", bare)
    (bare / "catalog.db").unlink()
    with pytest.raises(XmodalError, match="--stage catalog"):
        open_search(bare, model=ColourModel())


def test_the_server_filters_and_lists_an_ann_folder_as_a_database(both):
    from fastapi.testclient import TestClient

    from xmodal.scale.ann_search import ann_collection
    from xmodal.server import create_app

    root = both["root"]
    params = [{"q": "green", "place": "Paris", "sort": "oldest", "min_score": 0},
              {"place": "Lisbon"}, {"q": "red", "after": "2022"}]
    pages = {}
    for name, app in (
            ("db", create_app(both["db"], model=ColourModel(), model_spec=MODEL,
                              thumbnail_dir=root / "thumbs-db")),
            ("ann", create_app(None, index=ann_collection(root / "ann", model=ColourModel()),
                               model=ColourModel(), thumbnail_dir=root / "thumbs-ann"))):
        with TestClient(app) as client:
            pages[name] = [client.get("/api/search", params=p).json() for p in params]
            first = pages[name][0]["results"][0]["id"]
            assert client.get("/api/thumbnail", params={"id": first}).status_code == 200
            pages[name].append(client.get("/api/facets").json())
            pages[name].append(client.get("/api/similar", params={"id": first}).json())
    assert pages["ann"] == pages["db"]
    assert [Path(r["id"]).name for r in pages["db"][0]["results"]] == ["green.jpg", "yellow.jpg"]


def test_the_catalog_reads_the_metadata_embed_stored_not_the_files(both, tmp_path):
    """'xmodal embed' keeps each photo's metadata in its shards (it holds the bytes then): the
    catalog stage needs no second pass over the files, which may be gone or remote by then."""
    import shutil

    from xmodal.scale.ann_build import build_index
    from xmodal.scale.ann_search import open_search
    from xmodal.scale.embed import run_embed

    photos = tmp_path / "photos"
    shutil.copytree(both["root"] / "photos", photos)
    for p in photos.rglob("*.jpg"):  # the file times the photos without EXIF are dated by
        src = both["root"] / "photos" / p.relative_to(photos)
        os.utime(p, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns))
    run_embed(photos, tmp_path / "emb", engine="local", model_spec=MODEL, dtype="float32")
    stored = tmp_path / "photos-gone"
    photos.rename(stored)  # the catalog stage cannot read a single file
    build_index([tmp_path / "emb"], tmp_path / "ann", factory="Flat", queries=2)
    ann = open_search(tmp_path / "ann", model=ColourModel())
    answer = ann.find("", 6, filters=PhotoFilter(place="Lisbon")).to_dict()
    db = both["index"].find("", 6, filters=PhotoFilter(place="Lisbon")).to_dict()
    strip = lambda rows: [{k: v for k, v in r.items() if k != "path"} for r in rows]  # noqa: E731
    assert strip(answer["results"]) == strip(db["results"]) and len(db["results"]) == 2
    assert answer["places"] == db["places"]
    assert ann.find("", 6, sort="oldest").to_dict()["results"][0]["taken_at"] == \
        both["index"].find("", 6, sort="oldest").to_dict()["results"][0]["taken_at"]


class _TunedTextColourModel(ColourModel):
    model_id = "test-colour-v2"
    image_space_id = ColourModel.model_id  # the same photo vectors, another text side


class _OtherColourModel(ColourModel):
    model_id = "test-colour-other"


def test_an_ann_folder_serves_a_model_that_shares_its_photo_vectors(both):
    from xmodal.scale.ann_search import open_search

    tuned = open_search(both["root"] / "ann", model=_TunedTextColourModel())
    answer = tuned.find("red", min_relevance=0.0)
    assert Path(answer.results[0].path).name == "red.jpg"
    with pytest.raises(XmodalError, match="was built with model test-colour-v1"):
        open_search(both["root"] / "ann", model=_OtherColourModel()).find("red")
