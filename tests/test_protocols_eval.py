"""Protocols (sizes, relevance rules) and the ``xmodal eval`` command end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.eval.protocols import get_protocol, list_protocols
from xmodal.eval.runner import run_eval
from xmodal.factory import get_scorer


def test_all_protocols_registered():
    assert set(list_protocols()) >= {
        "flickr8k-hodosh", "flickr8k-hodosh-crowd", "flickr8k-hodosh-expert", "flickr8k-5cap",
        "wikipedia", "corel5k", "eccv", "cxc", "coco5k",
    }
    with pytest.raises(XmodalError, match="unknown protocol"):
        get_protocol("nope")


def test_flickr_protocols(flickr8k_root):
    p = get_protocol("flickr8k-hodosh", flickr8k_root.parent)
    d = p.directions["i2t"]
    assert len(d.image_ids) == len(d.text_ids) == 1000
    assert d.relevance.nnz == 1000 and all(t.endswith("#2") for t in d.text_ids)
    assert (d.relevance.diagonal()).all()
    crowd = get_protocol("flickr8k-hodosh-crowd", flickr8k_root.parent)
    assert crowd.directions["t2i"].relevance.nnz == 1000 + 2031
    five = get_protocol("flickr8k-5cap", flickr8k_root.parent)
    assert five.directions["t2i"].relevance.shape == (1000, 5000)
    assert (np.asarray(five.directions["t2i"].relevance.sum(0)) == 1).all()


def test_wikipedia_random_map_near_chance(wikipedia_root):
    p = get_protocol("wikipedia", wikipedia_root.parent)
    report = run_eval(p, get_scorer("random", "wikipedia"), model="random", seed=0)
    for direction in ("i2t", "t2i"):
        assert abs(report["directions"][direction]["MAP"] - 0.118) < 0.01
        assert report["n_queries"][direction] == 693


def test_corel_queries(corel5k_root):
    p = get_protocol("corel5k", corel5k_root.parent)
    i2t, t2i = p.directions["i2t"], p.directions["t2i"]
    assert i2t.relevance.shape == (500, 374)
    lengths = np.bincount(p.extra["query_lengths"])
    assert lengths[1] == 179  # one-word queries occurring on at least two test images
    assert (np.asarray(t2i.relevance.sum(0)) >= 2).all()


def test_cli_eval_json(wikipedia_root):
    out = subprocess.run(
        [sys.executable, "-m", "xmodal", "eval", "--protocol", "wikipedia", "--model", "random",
         "--data", str(wikipedia_root.parent), "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report) >= {"protocol", "model", "directions", "n_queries", "seed", "elapsed_s"}
    assert abs(report["directions"]["t2i"]["MAP"] - 0.118) < 0.01


def test_cli_eval_unknown_model_is_clean_error(wikipedia_root):
    out = subprocess.run(
        [sys.executable, "-m", "xmodal", "eval", "-p", "wikipedia", "-m", "no-such-model",
         "--data", str(wikipedia_root.parent)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 2
    assert "unknown model" in out.stderr and "Traceback" not in out.stderr


def test_cli_eval_precomputed_scores(tmp_path, wikipedia_root):
    p = get_protocol("wikipedia", wikipedia_root.parent)
    y = p.dataset.labels_test
    perfect = (y[:, None] == y[None, :]).astype(np.float32)
    np.save(tmp_path / "s.npy", perfect)
    out = subprocess.run(
        [sys.executable, "-m", "xmodal", "eval", "-p", "wikipedia", "--scores",
         str(tmp_path / "s.npy"), "--data", str(wikipedia_root.parent), "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["directions"]["i2t"]["MAP"] == pytest.approx(1.0)


def test_folder_protocol_evaluates_your_own_captioned_photos(tmp_path):
    """``xmodal eval -p folder --data FOLDER --captions FILE``: captioned photos x all their
    captions; perfect scores give R@1 = 1 both ways; a model runs on it; misuse is a clear error."""
    from PIL import Image

    root = tmp_path / "trip"
    (root / "day2").mkdir(parents=True)
    names = ["a.jpg", "b.png", "day2/c.jpg", "day2/d.jpg"]
    rows = ["image,caption"]
    for k, name in enumerate(names):
        Image.new("RGB", (40, 30), (60 * k, 20, 200 - 40 * k)).save(root / name)
        rows += [f"{name},caption one of {name}", f"{name},caption two of {name}"]
    Image.new("RGB", (40, 30)).save(root / "uncaptioned.jpg")
    rows.append("gone.jpg,a photo that is not in the folder")
    caps = tmp_path / "caps.csv"
    caps.write_text("\n".join(rows) + "\n")
    p = get_protocol("folder", root, captions=caps)
    i2t = p.directions["i2t"]
    assert i2t.image_ids == names and len(i2t.text_ids) == 8
    assert "1 caption image names match no file" in p.notes
    perfect = i2t.relevance.toarray().astype(np.float32)
    np.save(tmp_path / "perfect.npy", perfect)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "xmodal", "eval", "-p", "folder", *args],
                              capture_output=True, text=True, timeout=300)

    out = run("--data", str(root), "--captions", str(caps), "--scores",
              str(tmp_path / "perfect.npy"), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["n_queries"] == {"i2t": 4, "t2i": 8}
    assert report["directions"]["i2t"]["R@1"] == 1.0 and report["directions"]["t2i"]["R@1"] == 1.0
    out = run("--data", str(root), "--captions", str(caps), "-m", "random", "--json")
    assert out.returncode == 0, out.stderr
    out = run("--data", str(root))
    assert out.returncode == 2 and "--captions FILE" in out.stderr
    with pytest.raises(XmodalError, match="no photo"):
        (tmp_path / "other.csv").write_text("image,caption\nnope.jpg,a caption\n")
        get_protocol("folder", root, captions=tmp_path / "other.csv")
