"""xmodal embed --engine local and xmodal ann build on small, hand-made collections (fast).

The colour stand-in model (tests.fake_models) embeds an image as its mean colour, so expected
embeddings are computed by hand; the index is checked against exact search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from xmodal.errors import XmodalError
from xmodal.index.photo_index import SearchResult
from xmodal.scale import shards as sh
from xmodal.scale.ann_build import build_index, choose_factory, n_lists, parse_size, recall_at
from xmodal.scale.ann_search import ShardIndex, search_text
from xmodal.scale.embed import run_embed

MODEL = "python:tests.fake_models:ColourModel"
COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255),
           "white": (255, 255, 255)}


def _unit(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


@pytest.fixture
def photos(tmp_path) -> Path:
    """12 single-colour photos in two folders, plus an unreadable one and a non-image file."""
    src = tmp_path / "photos"
    for i, (name, rgb) in enumerate(list(COLOURS.items()) * 3):
        folder = src / ("a" if i % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (40, 30), rgb).save(folder / f"{name}{i}.png")
    (src / "a" / "broken.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    (src / "notes.txt").write_text("not an image")
    return src


def _all_rows(out: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [r for f in sorted(out.glob("shard-*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_local_embed_writes_each_image_once_with_hand_computed_vectors(photos, tmp_path):
    out = tmp_path / "emb"
    s = run_embed(photos, out, engine="local", model_spec=MODEL, shard_size=5, dtype="float32")
    assert (s["images"], s["shards"], s["shards_written"], s["bad_in_written"]) == (13, 3, 3, 1)
    rows = _all_rows(out)
    assert len({r["path"] for r in rows}) == len(rows) == 13
    for r in rows:
        name = Path(r["path"]).stem.rstrip("0123456789")
        if name == "broken":
            assert not r["ok"] and r["embedding"] is None and "image" in r["error"]
            continue
        assert r["ok"] and r["model"] == "test-colour-v1" and len(r["sha1"]) == 40
        expected = _unit([c / 255 for c in COLOURS[name]] + [0.1])
        np.testing.assert_allclose(r["embedding"], expected, atol=1e-6)
    m = sh.read_manifest(out)
    assert (m.model_id, m.dim, m.n_inputs, m.n_shards) == ("test-colour-v1", 4, 13, 3)


def test_rerun_redoes_only_missing_or_damaged_shards(photos, tmp_path):
    out = tmp_path / "emb"
    run_embed(photos, out, engine="local", model_spec=MODEL, shard_size=5)
    before = _all_rows(out)
    again = run_embed(photos, out, engine="local", model_spec=MODEL, shard_size=5)
    assert again["shards_written"] == 0 and again["shards_skipped_done"] == 3
    (out / "shard-00001.parquet").unlink()  # killed before this shard was written
    (out / "shard-00002.parquet").write_bytes(b"PAR1 half a file")  # a damaged file
    (out / ".shard-00000.parquet.tmp999").write_bytes(b"leftover")  # a killed writer's temp
    again = run_embed(photos, out, engine="local", model_spec=MODEL, shard_size=5)
    assert again["shards_written"] == 2 and again["shards_skipped_done"] == 1
    assert _all_rows(out) == before


def test_bad_input_is_a_clear_error_and_writes_nothing(photos, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("no images here")
    with pytest.raises(XmodalError, match="holds no images"):
        run_embed(empty, tmp_path / "o1", engine="local", model_spec=MODEL)
    assert not (tmp_path / "o1").exists()
    with pytest.raises(XmodalError, match="cannot reach a Ray cluster at 127.0.0.1:9"):
        run_embed(photos, tmp_path / "o2", engine="ray", address="127.0.0.1:9", model_spec=MODEL)
    assert not (tmp_path / "o2").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep me")
    with pytest.raises(XmodalError, match="not an embedding folder"):
        run_embed(photos, busy, engine="local", model_spec=MODEL)
    assert (busy / "mine.txt").read_text() == "keep me" and len(list(busy.iterdir())) == 1
    out = tmp_path / "emb"
    run_embed(photos, out, engine="local", model_spec=MODEL)
    snapshot = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(XmodalError, match="holds embeddings of model test-colour-v1"):
        run_embed(photos, out, engine="local", model_spec="python:tests.test_scale_unit:Other")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == snapshot
    with pytest.raises(XmodalError, match="--engine"):
        run_embed(photos, tmp_path / "o3", engine="spark", model_spec=MODEL)


class Other:
    """Another model (another id) of the same dimension."""

    dim = 4
    model_id = "other-v1"

    def embed_images(self, images, *, progress=False, cache=True):
        return np.tile(_unit([1, 1, 1, 1]), (len(images), 1)).astype(np.float32)

    def embed_texts(self, texts, *, progress=False):
        return np.tile(_unit([1, 1, 1, 1]), (len(texts), 1)).astype(np.float32)


def test_index_mixing_models_or_reading_a_corrupt_shard_fails_before_writing(photos, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run_embed(photos, a, engine="local", model_spec=MODEL)
    run_embed(photos, b, engine="local", model_spec="python:tests.test_scale_unit:Other")
    with pytest.raises(XmodalError, match="different models"):
        build_index([a, b], tmp_path / "ann1")
    assert not (tmp_path / "ann1").exists()
    (a / "shard-00000.parquet").write_bytes(b"garbage")
    with pytest.raises(XmodalError, match="corrupt embedding shard .*shard-00000"):
        build_index([a], tmp_path / "ann2")
    assert not (tmp_path / "ann2").exists()
    with pytest.raises(XmodalError, match="not an embedding folder"):
        build_index([tmp_path], tmp_path / "ann3")


def test_ivf_index_merged_on_disk_matches_exact_search(tmp_path):
    """600 random unit vectors in 3 shards, IVF16,Flat: at nprobe = nlist the on-disk index
    returns exactly the brute-force top 10; paths come back from the shards."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    emb = tmp_path / "emb"
    emb.mkdir()
    for s in range(3):
        part = x[s * 200:(s + 1) * 200]
        paths = [f"img{s * 200 + i}.jpg" for i in range(200)]
        sh.write_shard(emb, s, sh.array_table(paths, [None] * 200, [None] * 200, part,
                                              np.ones(200, bool), "m1"))
    m = sh.Manifest("m1", "", 8, "float32", "test", 200, 600, 3)
    sh.write_json_atomic(emb / sh.MANIFEST, m.to_dict())
    meta = build_index([emb], tmp_path / "ann", factory="IVF16,Flat", queries=40)
    assert meta["vectors"] == 600 and (tmp_path / "ann" / "index.ivfdata").is_file()
    assert not list((tmp_path / "ann" / "blocks").iterdir())  # merged, blocks removed
    assert meta["eval"]["rows"][-1]["recall_at_k"] == 1.0
    moved = tmp_path / "moved"
    (tmp_path / "ann").rename(moved)  # the folder can move: the data file is named relative
    index = ShardIndex(moved)
    q = x[[5, 250, 599]] + 0.01
    _, ids = index.search_ids(q, 10, nprobe=16)
    exact = np.argsort(-(q @ x.T), axis=1)[:, :10]
    assert recall_at(ids, exact, 10) == 1.0
    assert index.paths(ids[:, 0]) == [f"img{i}.jpg" for i in exact[:, 0]]


def test_flat_index_and_text_search_through_the_cli(photos, tmp_path):
    from typer.testing import CliRunner

    from xmodal.cli import app

    runner = CliRunner()
    emb, ann = tmp_path / "emb", tmp_path / "ann"
    r = runner.invoke(app, ["embed", str(photos), str(emb), "--model", MODEL, "--json", "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["ann", "build", str(emb), str(ann), "--json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(ann.joinpath("ann.json").read_text())["factory"] == "Flat"
    r = runner.invoke(app, ["search", "red", "--ann", str(ann), "-k", "3", "--json"])
    assert r.exit_code == 0, r.output
    answer = json.loads(r.stdout[r.stdout.index("{"):])
    hits = answer["results"]
    # the answer of a photo database: the three identical red PNGs are one result, its copies
    # listed under it, with the sizes the catalog beside the index read
    assert Path(hits[0]["path"]).stem.rstrip("0123456789") == "red"
    assert [Path(p).stem.rstrip("0123456789") for p in hits[0]["duplicates"]] == ["red"] * 2
    assert (hits[0]["width"], hits[0]["height"]) == (40, 30)
    assert len({Path(h["path"]).stem.rstrip("0123456789") for h in hits}) == 3
    assert {"hidden", "no_good_match", "sort", "filter"} <= set(answer)
    best = search_text(ann, "blue", k=1)
    assert type(best[0]) is SearchResult  # the flat search's result type
    assert best[0].path.endswith(("blue2.png", "blue6.png", "blue10.png"))


def test_index_choice_follows_size_and_budget():
    assert choose_factory(50_000, 640, parse_size("4GB"))[0] == "Flat"
    assert choose_factory(1_000_000, 640, parse_size("4GB"))[0] == "IVF2048_HNSW32,SQ8"
    assert choose_factory(10_000_000, 640, parse_size("8GB"))[0] == "IVF8192_HNSW32,SQ8"
    assert choose_factory(10_000_000, 640, parse_size("4GB"))[0] == "IVF8192_HNSW32,SQ4"
    assert choose_factory(100_000_000, 640, parse_size("4GB"))[0] == "OPQ32,IVF16384_HNSW32,PQ32"
    with pytest.raises(XmodalError, match="too small"):
        choose_factory(10_000_000, 640, parse_size("10MB"))
    assert (n_lists(1_000_000), n_lists(10_000_000), n_lists(10)) == (2048, 8192, 256)
    assert parse_size("512MB") == 512 * 2**20 and parse_size("1.5G") == int(1.5 * 2**30)
    with pytest.raises(XmodalError, match="memory-budget"):
        parse_size("lots")


def test_server_searches_an_ann_folder_and_serves_only_returned_thumbnails(photos, tmp_path):
    from fastapi.testclient import TestClient

    from xmodal.scale.ann_search import AnnCollection
    from xmodal.server import create_app

    emb, ann = tmp_path / "emb", tmp_path / "ann"
    run_embed(photos, emb, engine="local", model_spec=MODEL)
    build_index([emb], ann, factory="IVF2,Flat", queries=2)
    app = create_app(None, index=AnnCollection(ann), thumbnail_dir=tmp_path / "thumbs")
    with TestClient(app) as client:
        r = client.get("/api/search", params={"q": "green", "limit": 3})
        assert r.status_code == 200, r.text
        ids = [h["id"] for h in r.json()["results"]]
        assert [Path(i).stem.rstrip("0123456789") for i in ids] == ["green"] * 3
        assert client.get("/api/thumbnail", params={"id": ids[0]}).status_code == 200
        other = str(next(photos.glob("*/red*.png")))  # never returned by this search
        assert client.get("/api/thumbnail", params={"id": other}).status_code == 404
        assert client.get("/api/stats").json()["vectors"] == 12


def test_encoder_actors_leave_room_for_decoding():
    """Two 1-CPU nodes with two 1-CPU actors left the decode tasks nowhere to run (a hang):
    actors are sized so that the busiest node keeps DECODE_CPUS free, or refused clearly."""
    from xmodal.errors import XmodalError
    from xmodal.scale.embed import DECODE_CPUS, actor_cpus

    assert actor_cpus([1, 1], 2, None) == pytest.approx(1 - DECODE_CPUS)
    assert actor_cpus([1], 2, None) == pytest.approx((1 - DECODE_CPUS) / 2)  # a node lost
    assert actor_cpus([3], 2, None) == 1.0  # a local Ray with workers + 1 CPUs
    assert actor_cpus([8, 8, 8, 8], 8, None) == 1.0
    assert actor_cpus([1, 1], 2, 0.5) == 0.5
    with pytest.raises(XmodalError, match="--cpus-per-worker 0.75 or less"):
        actor_cpus([1, 1], 2, 1.0)
    with pytest.raises(XmodalError, match="too small"):
        actor_cpus([0.25], 1, None)
    with pytest.raises(XmodalError, match="no living node"):
        actor_cpus([], 2, None)
