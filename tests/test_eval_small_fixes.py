"""Small things a user of ``xmodal eval`` / ``compare`` tripped on (issue 44, point 5): a
duplicate id in an ``.npz``, a TSV header line, caption JSONL keys, temporary files of a killed
sweep, and the t-test's p-value when every difference is zero."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

import tests.benchmark_layouts as bl
from xmodal.data.caption_files import read_caption_pairs
from xmodal.errors import XmodalError
from xmodal.eval.protocols import get_protocol
from xmodal.eval.significance import compare_runs
from xmodal.eval.sweep import run_sweep
from xmodal.models.embedding_specs import PrecomputedEmbeddings

ROOT = Path(__file__).resolve().parents[1]


def test_a_duplicate_id_in_an_npz_is_named(tmp_path):
    f = tmp_path / "emb.npz"
    np.savez(f, image_ids=np.array(["a", "b", "a"]), image_emb=np.eye(3, 2),
             text_ids=np.array(["a#0"]), text_emb=np.ones((1, 2)))
    with pytest.raises(XmodalError, match=r"1 image id\(s\) occur more than once in image_ids "
                                          r"\(e.g. 'a', 2 times\)"):
        PrecomputedEmbeddings(f)


def test_a_tsv_header_is_not_an_image(tmp_path, flickr8k_root):
    root = tmp_path / "ct"
    _, names = bl.caption_table(root, bl.flickr8k_photos(flickr8k_root, 3))
    tsv = root / "captions.tsv"
    tsv.write_text("image\tcaption\n" + "".join(f"{n}\ta {c} photo\n" for n, c in
                                              zip(names, ("red", "green", "blue"))))
    assert list(read_caption_pairs(tsv)) == names
    proto = get_protocol("caption-file", tsv)
    assert proto.directions["i2t"].image_ids == names


def test_caption_jsonl_takes_text_and_names_the_keys_it_takes(tmp_path):
    good = tmp_path / "a.jsonl"
    good.write_text(json.dumps({"image": "x.jpg", "text": "a dog"}) + "\n"
                    + json.dumps({"file_name": "y.jpg", "caption": "a cat"}) + "\n")
    assert read_caption_pairs(good) == {"x.jpg": ["a dog"], "y.jpg": ["a cat"]}
    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps({"image": "x.jpg", "txt": "a dog"}) + "\n")
    with pytest.raises(XmodalError, match=r"b.jsonl:1: no caption: the object has 'image', 'txt'; "
                                          r"the caption key is one of caption, text, sentence, raw"):
        read_caption_pairs(bad)


def test_a_resumed_sweep_removes_what_a_killed_one_left(tmp_path, flickr8k_root, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    csv, _ = bl.caption_table(tmp_path / "ct", bl.flickr8k_photos(flickr8k_root, 3))
    out = tmp_path / "runs"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    left = [out / "cells" / f".caption-file__random.json.{dead}.tmp",
            out / f".errors.json.{dead}.tmp", out / "cache" / "m" / f".data-1.{dead}.tmp.npz"]
    for p in left:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"torn")
    mine = out / "cells" / "notes.tmp"  # not a sweep's temporary: kept
    mine.write_text("x")
    run_sweep(["random"], ["caption-file"], out, data={"": csv})
    assert not any(p.exists() for p in left) and mine.exists()
    assert not list(out.rglob(".*.tmp*"))


def test_t_test_with_all_zero_differences_is_p_1_as_documented():
    runs = [{"name": n, "protocol": "toy", "directions": {"i2t": {}}, "n_queries": {"i2t": 4},
             "per_query": {"i2t": {"AP": [0.1, 0.5, 0.2, 0.9]}}} for n in ("a", "b")]
    c = compare_runs(runs, metrics=["AP"], test="t")["comparisons"][0]
    assert c["p_value"] == 1.0 and not c["significant"]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(st.ttest_rel([0.1, 0.5], [0.1, 0.5]).pvalue)  # scipy: NaN
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    assert "every difference is 0" in docs and "scipy's `ttest_rel` gives NaN" in docs
