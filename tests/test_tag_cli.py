"""``xmodal tag``, the tagger library and the keyword head."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from xmodal.errors import XmodalError
from xmodal.models.tagger import (
    DEFAULT_MODEL_DIR,
    KeywordHead,
    Tagger,
    load_default_tagger,
    load_tagger,
)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    sky = np.zeros((120, 160, 3), np.uint8)
    sky[:60] = (90, 150, 230)
    sky[60:] = (60, 140, 40)
    Image.fromarray(sky).save(d / "sky.jpg", quality=90)
    Image.fromarray(rng.integers(0, 255, (64, 48, 3), dtype=np.uint8)).save(d / "noise.png")
    Image.fromarray(rng.integers(0, 255, (40, 40), dtype=np.uint8)).save(d / "gray.png")
    (d / "broken.jpg").write_bytes(b"this is not a jpeg")
    return d


def test_keyword_head_learns_a_separable_problem_and_roundtrips(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    y = np.stack([x[:, 0] > 0, x[:, 1] > 0.5, x[:, 2] < -0.5], axis=1)
    m = KeywordHead(l2=1e-4).fit(x, y, ["a", "b", "c"])
    acc = ((m.probabilities(x) > 0.5) == y).mean()
    assert acc > 0.95
    # query score = sum over query words of log sigmoid(logit), computed independently
    z = m.logits(x[:5])
    expected = np.log(1 / (1 + np.exp(-z[:, 0]))) + np.log(1 / (1 + np.exp(-z[:, 2])))
    np.testing.assert_allclose(m.query_scores(["a c"], x[:5])[0], expected, rtol=1e-5)
    m.save(tmp_path / "head")
    m2 = KeywordHead.load(tmp_path / "head")
    np.testing.assert_allclose(m2.probabilities(x), m.probabilities(x), atol=2e-3)
    assert m2.vocabulary_ == ["a", "b", "c"]


def test_prior_power_ranks_by_probability_over_prior():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4))
    y = np.stack([x[:, 0] > -1, x[:, 1] > 1], axis=1)  # a frequent and a rare word
    m = KeywordHead(prior_power=1.0).fit(x, y)
    prior = (y.sum(0) + 1.0) / (len(y) + 2.0)
    np.testing.assert_allclose(m.word_scores(x), m.probabilities(x) / prior, rtol=1e-6)


def test_load_tagger_errors(tmp_path):
    with pytest.raises(XmodalError, match="not a saved tagging model"):
        load_tagger(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"type": "cmrm"}))
    (tmp_path / "arrays.npz").write_bytes(b"")
    with pytest.raises(XmodalError, match="not a tagging model"):
        load_tagger(tmp_path)


def test_default_model_is_small_and_safe():
    files = list(DEFAULT_MODEL_DIR.iterdir())
    assert {p.name for p in files} >= {"config.json", "arrays.npz"}
    assert sum(p.stat().st_size for p in files) < 8e6
    with np.load(DEFAULT_MODEL_DIR / "arrays.npz", allow_pickle=False) as z:
        assert z["coef"].dtype == np.float16


def test_default_tagger_tags_jpeg_png_and_grayscale(images):
    tagger = load_default_tagger()
    assert isinstance(tagger, Tagger)
    out = tagger.tag_many([images / "sky.jpg", images / "noise.png", images / "gray.png"], n=7)
    vocab = set(tagger.vocabulary)
    for tags in out:
        assert len(tags) == 7
        assert all(w in vocab for w, _ in tags)
        assert all(0.0 <= s <= 1.0 for _, s in tags)
        assert len({w for w, _ in tags}) == 7
    # the library call on a PIL image agrees with the file path
    pil = Image.open(images / "noise.png")
    assert [w for w, _ in tagger.tag(pil, 3)] == [w for w, _ in out[1][:3]]


def test_phone_photos_heic_avif_and_big_jpegs_are_tagged(images, tmp_path):
    """iPhone HEIC, AVIF and a 108-megapixel JPEG (over Pillow's bomb warning, decoded at a
    reduced scale) are tagged; HEIC and AVIF of the same picture as the JPEG get its top tags."""
    import warnings

    sky = Image.open(images / "sky.jpg")
    sky.save(tmp_path / "sky.heic", quality=95)
    sky.save(tmp_path / "sky.avif", quality=95)
    Image.new("L", (12000, 9000), 90).save(tmp_path / "camera.jpg", quality=30)
    tagger = load_default_tagger()
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        out = tagger.tag_many([images / "sky.jpg", tmp_path / "sky.heic", tmp_path / "sky.avif",
                               tmp_path / "camera.jpg"], n=3)
    words = [{w for w, _ in tags} for tags in out]  # lossy re-encoding may swap close scores
    assert words[1] == words[0] and words[2] == words[0]
    assert len(words[3]) == 3


def test_tagger_rejects_unreadable_files(images):
    tagger = load_default_tagger()
    with pytest.raises(XmodalError, match="cannot read image"):
        tagger.tag(images / "broken.jpg")
    with pytest.raises(XmodalError, match="not found"):
        tagger.tag(images / "missing.jpg")


def _run(args):
    from xmodal.cli import app

    return CliRunner().invoke(app, args)


def test_cli_tag_json(images):
    r = _run(["tag", str(images / "sky.jpg"), str(images / "noise.png"), "-n", "3", "--json"])
    assert r.exit_code == 0, r.output
    payload = json.loads(r.stdout)
    assert [p["image"] for p in payload] == [str(images / "sky.jpg"), str(images / "noise.png")]
    assert all(len(p["tags"]) == 3 for p in payload)
    expected = load_default_tagger().tag(images / "sky.jpg", 3)
    assert [t["word"] for t in payload[0]["tags"]] == [w for w, _ in expected]


def test_cli_tag_errors(images, tmp_path):
    r = _run(["tag", str(tmp_path / "nope.png")])
    assert isinstance(r.exception, XmodalError) and "image not found" in str(r.exception)
    r = _run(["tag", str(images / "sky.jpg"), "-n", "0"])
    assert isinstance(r.exception, XmodalError)


def test_cli_unreadable_file_exits_2_without_traceback(images):
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "from xmodal.cli import main; main()", "tag"]
    r = subprocess.run(cmd + [str(images / "broken.jpg")], capture_output=True, text=True)
    assert r.returncode == 2
    assert "cannot read image" in r.stderr and "Traceback" not in r.stderr


def test_train_a_tagger_on_your_own_captioned_photos(tmp_path):
    """``xmodal train tagger``: keywords from your captions, a head on your photos; the saved
    model tags a new photo with the right colour word, and bad inputs get clear errors."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "photos"
    (folder / "sub").mkdir(parents=True)
    colours = {"red": (220, 30, 30), "green": (30, 180, 40), "blue": (30, 40, 220)}
    rows = ["image,caption"]
    for name, rgb in colours.items():
        for k in range(8):
            pixels = np.clip(np.array(rgb) + rng.normal(0, 20, (48, 64, 3)), 0, 255)
            rel = f"sub/{name}{k}.png" if k % 2 else f"{name}{k}.jpg"
            Image.fromarray(pixels.astype(np.uint8)).save(folder / rel)
            rows += [f"{rel},a {name} wall", f"{rel},the {name} paint on a wall"]
    (tmp_path / "caps.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "tagger"
    r = _run(["train", "tagger", str(folder), "--captions", str(tmp_path / "caps.csv"),
              "--out", str(out), "--min-images", "3", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["photos"] == 24 and {"red", "green", "blue", "wall"} <= set(
        load_tagger(out).vocabulary)
    tagger = load_tagger(out)
    for name, rgb in colours.items():  # a new photo of each colour gets its colour word
        pixels = np.clip(np.array(rgb) + rng.normal(0, 20, (48, 64, 3)), 0, 255)
        Image.fromarray(pixels.astype(np.uint8)).save(tmp_path / "new.png")
        assert [w for w, _ in tagger.tag(tmp_path / "new.png", 5) if w in colours][0] == name
    r = _run(["tag", str(tmp_path / "new.png"), "--model", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["tags"][0]["word"] in load_tagger(
        out).vocabulary
    (tmp_path / "few.csv").write_text("image,caption\nred0.jpg,a red wall\n")
    with pytest.raises(XmodalError, match="at least 10"):
        from xmodal.recipes.tagger import train_keyword_tagger

        train_keyword_tagger(folder, tmp_path / "few.csv", tmp_path / "x")
