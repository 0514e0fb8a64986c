"""The generic folder loader: images found recursively, captions from CSV or JSONL, clear errors."""

from __future__ import annotations

import pytest
from PIL import Image

from xmodal.data import load_image_folder, read_captions
from xmodal.errors import XmodalError


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "imgs"
    (root / "sub").mkdir(parents=True)
    (root / ".hidden").mkdir()
    for rel in ("b.jpg", "a.PNG", "sub/c.jpeg", ".hidden/d.jpg"):
        Image.new("RGB", (4, 4), (1, 2, 3)).save(root / rel, format="PNG")
    (root / "notes.txt").write_text("x")
    return root


def test_images_are_found_recursively_sorted_without_hidden(folder):
    ds = load_image_folder(folder)
    assert ds.image_ids == ["a.PNG", "b.jpg", "sub/c.jpeg"]
    assert ds.image_path("sub/c.jpeg") == folder / "sub" / "c.jpeg"
    assert ds.captions == {}


def test_csv_with_header_in_any_column_order(folder, tmp_path):
    f = tmp_path / "caps.csv"
    f.write_text('caption,image\n"a dog, running",b.jpg\na cat,a.PNG\nanother dog,b.jpg\n')
    ds = load_image_folder(folder, captions=f)
    assert ds.captions == {"b.jpg": ["a dog, running", "another dog"], "a.PNG": ["a cat"]}


def test_csv_without_header_and_jsonl(tmp_path):
    f = tmp_path / "caps.csv"
    f.write_text("x.jpg,first\n\ny.jpg,second\n")
    assert read_captions(f) == {"x.jpg": ["first"], "y.jpg": ["second"]}
    j = tmp_path / "caps.jsonl"
    j.write_text('{"image": "x.jpg", "caption": "one"}\n\n{"image": "x.jpg", "caption": "two"}\n')
    assert read_captions(j) == {"x.jpg": ["one", "two"]}


@pytest.mark.parametrize(
    "name, content, where",
    [
        ("bad.jsonl", '{"image": "x", "caption": "ok"}\n{"image": "x", "caption": \n', ":2:"),
        ("bad.jsonl", '{"image": "x", "caption": "ok"}\n\n["x", "y"]\n', ":3:"),
        ("bad.jsonl", '{"image": "x"}\n', ":1:"),
        ("bad.csv", "image,caption\nx.jpg,fine\ny.jpg\n", ":3:"),
        ("bad.csv", "image,caption\nx.jpg,\n", ":2:"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, name, content, where):
    f = tmp_path / name
    f.write_text(content)
    with pytest.raises(XmodalError) as err:
        read_captions(f)
    assert name in str(err.value) and where in str(err.value)


def test_missing_inputs_are_user_errors(tmp_path):
    with pytest.raises(XmodalError, match="not a folder"):
        load_image_folder(tmp_path / "nope")
    with pytest.raises(XmodalError, match="not found"):
        read_captions(tmp_path / "nope.csv")
