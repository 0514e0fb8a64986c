"""Loader counts against the data, and clear errors with file and line for malformed files."""

from __future__ import annotations

import warnings

import pytest

from xmodal.data import load_corel5k, load_flickr8k, load_wikipedia
from xmodal.data.corel5k import read_sparse_arff
from xmodal.errors import XmodalError


def test_flickr8k_counts(flickr8k_root):
    with pytest.warns(UserWarning, match="skipped 5 caption"):
        ds = load_flickr8k(flickr8k_root)
    assert len(ds.image_ids) == 8091
    assert len(ds.captions) == 40455
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 6000, "dev": 1000, "test": 1000}
    assert len(ds.expert) == 5822
    assert len(ds.crowd) == 47830
    first = ds.captions_of("1000268201_693b08cb0e.jpg")
    assert [c.index for c in first] == [0, 1, 2, 3, 4]
    assert ds.image_path("1000268201_693b08cb0e.jpg").is_file()
    e = ds.expert[0]
    assert len(e.scores) == 3 and all(1 <= s <= 4 for s in e.scores)
    c = ds.crowd[0]
    assert c.yes_fraction == pytest.approx(c.n_yes / (c.n_yes + c.n_no))


def test_crowd_rule_gives_papers_extra_pairs(flickr8k):
    test = set(flickr8k.split("test"))
    extra = [
        c for c in flickr8k.crowd
        if c.yes_fraction >= 0.5 and c.caption_id != f"{c.image_id}#2" and c.image_id in test
    ]
    assert len(extra) == 2031


def test_wikipedia_counts(wikipedia_root):
    ds = load_wikipedia(wikipedia_root)
    assert ds.image_train.shape == (2173, 128) and ds.image_test.shape == (693, 128)
    assert ds.text_train.shape == (2173, 10) and ds.text_test.shape == (693, 10)
    assert len(ds.categories) == 10
    assert ds.labels_train.min() == 0 and ds.labels_train.max() == 9


def test_corel5k_counts(corel5k_root):
    ds = load_corel5k(corel5k_root)
    assert ds.blobs_train.shape == (4500, 499) and ds.blobs_test.shape == (500, 499)
    assert ds.labels_train.shape == (4500, 374) and len(ds.keywords) == 374
    in_test = ds.labels_test.sum(0) > 0
    assert int(in_test.sum()) == 263
    # the paper's 260-word test vocabulary: test words that also occur in training
    assert int((in_test & (ds.labels_train.sum(0) > 0)).sum()) == 260


def test_malformed_token_file_names_file_and_line(tmp_path):
    root = tmp_path / "flickr8k"
    (root / "Flicker8k_Dataset").mkdir(parents=True)
    (root / "Flicker8k_Dataset" / "a.jpg").write_bytes(b"")
    text = root / "Flickr8k_text"
    text.mkdir()
    (text / "Flickr8k.token.txt").write_text("a.jpg#0\tA dog .\nbroken line without tab\n")
    with pytest.raises(XmodalError, match=r"Flickr8k.token.txt:2"):
        load_flickr8k(root, judgments=False)


def test_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(XmodalError, match="not found"):
        load_wikipedia(tmp_path / "nowhere")


def test_malformed_arff(tmp_path):
    p = tmp_path / "x.arff"
    p.write_text("@relation r\n@attribute a {0,1}\n@data\n{0 1}\n{7 1}\n")
    with pytest.raises(XmodalError, match=r"x.arff:5"):
        read_sparse_arff(p)
    p.write_text("@relation r\n@attribute a {0,1}\n@attribute b {0,1}\n@data\n{1 1}\n{}\n")
    names, m = read_sparse_arff(p)
    assert names == ["a", "b"] and m.toarray().tolist() == [[False, True], [False, False]]


def test_flickr8k_skips_missing_images(tmp_path):
    root = tmp_path / "flickr8k"
    (root / "Flicker8k_Dataset").mkdir(parents=True)
    (root / "Flicker8k_Dataset" / "a.jpg").write_bytes(b"x")
    text = root / "Flickr8k_text"
    text.mkdir()
    (text / "Flickr8k.token.txt").write_text("a.jpg#0\tA dog .\nb.jpg#0\tA cat .\n")
    for split in ("train", "dev", "test"):
        (text / f"Flickr_8k.{split}Images.txt").write_text("a.jpg\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load_flickr8k(root, judgments=False)
    assert ds.n_skipped_captions == 1 and len(ds.captions) == 1
    assert any("skipped 1" in str(w.message) for w in caught)
