"""The photo-search commands end to end: index, search, similar, describe, photos, demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"


def xmodal(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "xmodal", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    root = tmp / "photos"
    root.mkdir()
    for name, colour in {"red": (250, 0, 0), "green": (0, 250, 0), "blue": (0, 0, 250)}.items():
        Image.new("RGB", (40, 30), colour).save(root / f"{name}.png")
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff garbage")
    (tmp / "caps.csv").write_text("image,caption\nred.png,a red square\nblue.png,a blue square\n")
    db = tmp / "photos.db"
    out = xmodal("index", root, "--db", db, "--model", FAKE, "--captions", tmp / "caps.csv",
                 "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    return tmp, root, db, json.loads(out.stdout)


def test_index_reports_counts(indexed):
    _, _, _, stats = indexed
    assert stats["added"] == 3 and stats["skipped"] == 1 and stats["images_per_s"] > 0


def test_search_json_shape(indexed):
    _, _, db, _ = indexed
    out = xmodal("search", "something green", "--db", db, "--model", FAKE, "-k", "2", "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["query"] == "something green"
    assert [Path(r["path"]).name for r in payload["results"]][0] == "green.png"
    assert len(payload["results"]) == 2 and set(payload["results"][0]) == {"path", "score"}


def test_similar_same_shape(indexed):
    _, root, db, _ = indexed
    out = xmodal("similar", root / "red.png", "--db", db, "--model", FAKE, "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert set(payload) == {"query", "results"}
    assert "red.png" not in {Path(r["path"]).name for r in payload["results"]}


def test_describe_ranks_caption_pool(indexed, tmp_path):
    _, root, _, _ = indexed
    pool = tmp_path / "pool.txt"
    pool.write_text("a blue ocean\na red car\n\na green lawn\n")
    out = xmodal("describe", root / "green.png", "--captions", pool, "--model", FAKE, "--json")
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert results[0]["caption"] == "a green lawn" and len(results) == 3


def test_photos_lists_skipped_files(indexed):
    _, _, db, _ = indexed
    out = xmodal("photos", "--db", db, "--skipped", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["indexed"] == 3 and info["captions"] == 2
    assert [Path(s["path"]).name for s in info["skipped_files"]] == ["broken.jpg"]


def test_errors_are_clean(indexed, tmp_path):
    _, _, db, _ = indexed
    empty = xmodal("search", "  ", "--db", db, "--model", FAKE)
    assert empty.returncode == 2 and "empty" in empty.stderr and "Traceback" not in empty.stderr
    missing = xmodal("search", "a dog", "--db", tmp_path / "nope.db", "--model", FAKE)
    assert missing.returncode == 2 and "xmodal index" in missing.stderr
    nofolder = xmodal("index", tmp_path / "nowhere", "--db", tmp_path / "x.db", "--model", FAKE)
    assert nofolder.returncode == 2 and "not a folder" in nofolder.stderr


def test_help_has_examples():
    for cmd in ("index", "search", "similar", "describe", "demo"):
        out = xmodal(cmd, "--help")
        assert out.returncode == 0 and "Example" in out.stdout, cmd


@pytest.mark.slow
def test_demo_photos_with_the_default_model(tmp_path):
    """The main job on real photos with the shipped model: a query for a cat finds the cat."""
    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.index import PhotoIndex

    copy_sample_photos(tmp_path / "photos")
    index = PhotoIndex(tmp_path / "demo.db")
    index.update(tmp_path / "photos", progress=False)
    top = {q: Path(index.search(q, k=1)[0].path).stem for q in
           ("a cat", "a cup of coffee", "a rocket launching into the sky", "the moon")}
    assert top == {"a cat": "chelsea", "a cup of coffee": "coffee",
                   "a rocket launching into the sky": "rocket", "the moon": "moon"}
