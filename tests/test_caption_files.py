"""The one caption-file reader, by format, with the cases the review found."""

from __future__ import annotations

import re

import pytest

from xmodal.data.caption_files import read_caption_pairs, read_caption_pool, sniff
from xmodal.errors import XmodalError


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_pairs_from_every_format_read_the_same(tmp_path):
    expected = {"a.jpg": ["a dog, running on sand", "a brown dog"], "b/c.png": ["two cats"]}
    files = {
        "pairs.csv": 'image,caption\na.jpg,"a dog, running on sand"\na.jpg,a brown dog\n'
                     "b/c.png,two cats\n",
        "pairs.tsv": "a.jpg\ta dog, running on sand\na.jpg\ta brown dog\nb/c.png\ttwo cats\n",
        "pairs.txt": "\ufeffa.jpg\ta dog, running on sand\n\na.jpg\ta brown dog\nb/c.png\ttwo cats",
        "pairs.jsonl": '{"image": "a.jpg", "caption": "a dog, running on sand"}\n'
                       '{"image": "a.jpg", "caption": "a brown dog"}\n'
                       '{"image": "b/c.png", "caption": "two cats"}\n',
    }
    for name, text in files.items():
        assert read_caption_pairs(write(tmp_path, name, text)) == expected, name


def test_a_tsv_whose_first_line_has_a_comma_is_still_tsv(tmp_path):
    p = write(tmp_path, "caps.csv", "a.jpg\ta dog, a ball\nb.jpg\ta cat\n")
    assert sniff(p.read_text()) == "tsv"
    assert read_caption_pairs(p) == {"a.jpg": ["a dog, a ball"], "b.jpg": ["a cat"]}


def test_pools_keep_commas_and_split_ids(tmp_path):
    ids, texts = read_caption_pool(write(tmp_path, "pool.txt", "a dog, running\n\ntwo cats\n"))
    assert (ids, texts) == (["line 1", "line 3"], ["a dog, running", "two cats"])
    ids, texts = read_caption_pool(write(tmp_path, "pool.tsv", "c1\ta dog\nc2\ta cat\n"))
    assert (ids, texts) == (["c1", "c2"], ["a dog", "a cat"])  # not "c1<TAB>a dog"
    ids, texts = read_caption_pool(b'image,caption\nx.jpg,"a cat, asleep"\n')
    assert (ids, texts) == (["x.jpg"], ["a cat, asleep"])


@pytest.mark.parametrize("name, text, message", [
    ("bad.jsonl", '{"image": "a.jpg", "caption": "ok"}\n{not json\n', "bad.jsonl:2: invalid JSON"),
    ("bad.tsv", "a.jpg\tfine\njust a line\n", "bad.tsv:2: expected image<TAB>caption"),
    ("bad.csv", "image,caption\na.jpg,\n", "bad.csv:2: missing caption"),
    ("one.csv", "image,caption\nonly-one-column\n", "one.csv:2: expected image and caption"),
])
def test_bad_lines_name_the_file_and_line(tmp_path, name, text, message):
    with pytest.raises(XmodalError, match=re.escape(message)):
        read_caption_pairs(write(tmp_path, name, text))


def test_empty_missing_and_binary_files(tmp_path):
    with pytest.raises(XmodalError, match="no captions"):
        read_caption_pool(write(tmp_path, "empty.txt", "\n \n"))
    with pytest.raises(XmodalError, match="not found"):
        read_caption_pairs(tmp_path / "nowhere.csv")
    with pytest.raises(XmodalError, match="not UTF-8"):
        read_caption_pool(b"\xff\xfe\x00\x81 not text")


def test_index_warns_about_captions_that_match_no_photo(tmp_path):
    from PIL import Image
    from typer.testing import CliRunner

    from xmodal.cli import app
    from xmodal.index import PhotoIndex

    photos = tmp_path / "photos"
    photos.mkdir()
    Image.new("RGB", (16, 16), (200, 0, 0)).save(photos / "red.png")
    caps = write(tmp_path, "caps.tsv", "red.png\ta red square, bright\nmissing.png\tnothing\n")
    r = CliRunner().invoke(app, ["index", str(photos), "--db", str(tmp_path / "db.sqlite"),
                                 "--captions", str(caps), "-q"])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())  # the console wraps long lines
    assert "1 image name(s)" in out and "match no photo" in out
    stored = PhotoIndex(tmp_path / "db.sqlite", create=False).captions()
    assert [text for _, text in stored] == ["a red square, bright"]


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_field = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                               blacklist_characters="\t\r\n\x1c\x1d\x1e\x85"), min_size=1,
                 max_size=30).filter(lambda t: t.strip() == t and t.strip())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_field, _field), min_size=1, max_size=8))
def test_every_format_round_trips(pairs):
    """Any (image, caption) list written as TSV, CSV or JSONL reads back the same."""
    import csv
    import io
    import json

    expected: dict[str, list[str]] = {}
    for image, caption in pairs:
        expected.setdefault(image, []).append(caption)
    tsv = "".join(f"{i}\t{c}\n" for i, c in pairs)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["image", "caption"])
    writer.writerows(pairs)
    jsonl = "".join(json.dumps({"image": i, "caption": c}) + "\n" for i, c in pairs)
    assert read_caption_pairs(tsv.encode()) == expected
    assert read_caption_pairs(buf.getvalue().encode()) == expected
    assert read_caption_pairs(jsonl.encode()) == expected


def test_a_brace_at_the_start_is_not_taken_for_json():
    assert read_caption_pairs(b"{odd}.jpg\ta caption\n") == {"{odd}.jpg": ["a caption"]}
