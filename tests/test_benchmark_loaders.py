"""Local benchmark copies in every supported layout: loading, ids, positives and metrics.

Tiny datasets are built in a temporary folder from three Flickr8K photos
(``tests/benchmark_layouts.py``); metrics are checked against hand-computed values (precomputed
embeddings, ``HAND_METRICS``) and the colour model (every caption names its photo's tint, so
retrieval is perfect). The ``datasets`` package is not installed here: its ``save_to_disk``
layout is written with pyarrow.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tests.benchmark_layouts as bl
from xmodal.errors import XmodalError
from xmodal.eval.protocols import get_protocol
from xmodal.eval.runner import run_eval
from xmodal.factory import get_scorer

COLOUR = "python:tests.fake_models:ColourModel"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def photos(flickr8k_root):
    return bl.flickr8k_photos(flickr8k_root, 3)


def _caption_ids(proto):
    return proto.directions["i2t"].text_ids


def check_hand(proto, tmp_path, image_ids, text_ids):
    """Ids as expected, and the hand-computed metrics from precomputed embeddings."""
    d = proto.directions["i2t"]
    assert d.image_ids == image_ids
    assert d.text_ids == text_ids
    assert proto.directions["t2i"].relevance.nnz == 6
    rel = d.relevance.toarray()
    assert (rel == np.repeat(np.eye(3, dtype=bool), 2, axis=1)).all()
    npz = bl.hand_embeddings(tmp_path / f"{proto.name}-emb.npz", image_ids, text_ids)
    report = run_eval(proto, get_scorer(str(npz), proto.name), model="hand")
    for direction, want in bl.HAND_METRICS.items():
        got = report["directions"][direction]
        assert report["n_queries"][direction] == want["n"]
        for k, v in want.items():
            if k != "n":
                assert got[k] == pytest.approx(v), (proto.name, direction, k)
    return report


def check_colour(proto):
    report = run_eval(proto, get_scorer(COLOUR, proto.name), model="colour")
    for direction in ("i2t", "t2i"):
        assert report["directions"][direction]["R@1"] == 1.0
        assert report["directions"][direction]["mAP@R"] == 1.0


def _texts(proto):
    return proto.directions["i2t"].texts


def test_coco_karpathy_and_official_layouts(tmp_path, photos):
    ids, sents = [11, 22, 33], [[101, 102], [201, 202], [301, 302]]
    k = bl.coco_karpathy(tmp_path / "k", photos, ids, sents)
    o = bl.coco_official(tmp_path / "o", photos, ids, sents)
    text_ids = [str(s) for pair in sents for s in pair]
    for root in (k, o):
        p = get_protocol("coco5k", root)
        check_hand(p, tmp_path, ["11", "22", "33"], text_ids)
        assert _texts(p)[:2] == bl.CAPTIONS[0]  # stripped, in annotation-id order
        check_colour(p)
    # coco1k: folds of 1,000 in general; folds of 2 here, so image 33 ranks alone
    p = get_protocol("coco1k", k, fold_size=2)
    assert p.extra["image_fold"] == [0, 0, 1] and p.extra["text_fold"] == [0, 0, 0, 0, 1, 1]
    npz = bl.hand_embeddings(tmp_path / "c1k.npz", ["11", "22", "33"], text_ids)
    from xmodal.eval.benchmark_protocols import fold_scorer

    report = run_eval(p, fold_scorer(p, get_scorer(str(npz), "coco1k")))
    # fold 0 (images 11, 22; texts 101..202): t2i ranks 1, 2, 1, 1 (c11=(.6,.8) prefers 22);
    # fold 1 (image 33 alone): ranks 1, 1
    # the headline is the mean of the fold means (7/8), not the mean over the 6 queries (5/6)
    t2i = report["directions"]["t2i"]
    assert t2i["R@1"] == pytest.approx((3 / 4 + 1) / 2)
    folds = report["paper_metrics"]["folds"]
    assert folds["n_folds"] == 2
    assert folds["per_fold"][0]["t2i"]["R@1"] == pytest.approx(3 / 4)
    assert folds["per_fold"][1]["t2i"]["R@1"] == 1.0
    assert folds["mean"]["t2i"]["R@1"] == pytest.approx((3 / 4 + 1) / 2)
    # i2t in fold 0: image 11 ranks c00 first and c01 (0, ties c10) fourth; image 22 ranks c01,
    # c10 tied at 1 first -> its own c10 at 2, c11 at 3
    assert folds["per_fold"][0]["i2t"]["R@1"] == pytest.approx(1 / 2)


def test_coco_positives_agree_with_eccv_caption(tmp_path, photos):
    from xmodal.data.eccv import load_coco_positives

    eccv = load_coco_positives("eccv")
    orig = load_coco_positives("coco5k")
    # an ECCV image query, the images of its positive captions, and their five captions each
    query = next(i for i, cs in eccv.image_to_captions.items() if 2 <= len(cs) <= 6
                 and any(orig.caption_to_images[c][0] != i for c in cs))
    images = [query] + sorted({orig.caption_to_images[c][0]
                               for c in eccv.image_to_captions[query]} - {query}, key=int)
    images = images[:5]
    caps = {i: sorted(orig.image_to_captions[i], key=int) for i in images}  # as Karpathy
    args = ([int(i) for i in images], [[int(c) for c in caps[i]] for i in images],
            [[f"caption {c}" for c in caps[i]] for i in images])
    karpathy = bl.coco_karpathy(tmp_path / "coco", photos, *args)
    official = bl.coco_official(tmp_path / "official", photos, *args)
    text_ids = [c for i in images for c in caps[i]]
    # a sixth caption (as some COCO images have) is dropped for the package's standard five
    data = json.loads((karpathy / "dataset_coco.json").read_text())
    data["images"][0]["sentences"].insert(2, {"raw": "a sixth", "tokens": [], "sentid": 1})
    (karpathy / "dataset_coco.json").write_text(json.dumps(data))
    for name, root in [(n, r) for n in ("eccv", "cxc", "coco5k") for r in (karpathy, official)]:
        pos = load_coco_positives(name)
        p = get_protocol(name, root)
        assert p.directions["i2t"].image_ids == images and _caption_ids(p) == text_ids
        pairs = {"i2t": {(i, c) for i, cs in pos.image_to_captions.items() for c in cs},
                 "t2i": {(i, c) for c, is_ in pos.caption_to_images.items() for i in is_}}
        for direction, every in pairs.items():
            want = {(i, c) for i, c in every if i in images and c in text_ids}
            rel = p.directions[direction].relevance.tocoo()
            got = {(images[r], text_ids[c]) for r, c in zip(rel.row, rel.col)}
            assert got == want, (name, direction, root.name)
            assert got  # the ids present do carry positives
    # the eccv i2t query's positives include captions of other images (5 of them are its own)
    proto = get_protocol("eccv", karpathy)
    rel = proto.directions["i2t"].relevance.toarray()
    assert rel[0, 5:].any()
    # a partial copy: its ECCV queries are counted against the official 1,261 and 1,332
    from xmodal.eval.coverage import coverage

    cov = coverage(proto)
    assert cov["label"] == f"partial ({len(images)} of 5,000 images)"
    n_i2t = int((rel.sum(1) > 0).sum())
    assert f"{n_i2t} of 1,261 i2t queries" in cov["missing"]
    assert cov["official"]["queries"] == {"i2t": 1261, "t2i": 1332}


@pytest.mark.parametrize("layout", ["karpathy", "token", "kaggle"])
def test_flickr30k_layouts(tmp_path, photos, layout):
    if layout == "karpathy":
        root, names = bl.flickr30k_karpathy(tmp_path / "f30k", photos)
    else:
        root, names = bl.flickr30k_token(tmp_path / "f30k", photos, kaggle=layout == "kaggle")
    p = get_protocol("flickr30k", root)
    check_hand(p, tmp_path, names, [f"{n}#{j}" for n in names for j in (0, 1)])
    assert _texts(p)[:2] == bl.CAPTIONS[0]
    if layout == "karpathy":
        check_colour(p)


def test_xm3600_layout(tmp_path, photos):
    root, keys = bl.xm3600(tmp_path / "xm", photos)
    p = get_protocol("xm3600", root)
    check_hand(p, tmp_path, keys, [f"{k}#en{j}" for k in keys for j in (0, 1)])
    check_colour(p)
    from xmodal.data.benchmarks_local import load_xm3600

    assert [c.text for c in load_xm3600(root, "de").captions][:1] == ["ein Bild 0"]


def test_webdataset_shards(tmp_path, photos):
    root, keys = bl.tar_shards(tmp_path / "wds", photos)
    p = get_protocol("webdataset", root)
    check_hand(p, tmp_path, keys, [f"{k}#{j}" for k in keys for j in (0, 1)])
    check_colour(p)
    files = [p.dataset.image_path(k) for k in keys]
    assert files[2].suffix == ".png" and all(f.is_file() for f in files)
    assert str(tmp_path / "cache") in str(files[0])  # written once to the cache
    assert "1 samples without an image skipped" in p.notes


@pytest.mark.parametrize("layout", ["parquet", "save_to_disk"])
def test_hf_dataset_layouts(tmp_path, photos, layout):
    build = bl.hf_parquet if layout == "parquet" else bl.hf_save_to_disk
    root, ids = build(tmp_path / "hf", photos)
    p = get_protocol("hf-dataset", root)
    check_hand(p, tmp_path, ids, [f"{i}#{j}" for i in ids for j in (0, 1)])
    check_colour(p)
    if layout == "parquet":  # only the test files, not train
        assert "2 Parquet files" in p.notes


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_caption_file(tmp_path, photos, kind):
    file, names = bl.caption_table(tmp_path / "ct", photos, kind)
    p = get_protocol("caption-file", file)
    check_hand(p, tmp_path, names, [f"{n}#{j}" for n in names for j in (0, 1)])
    check_colour(p)
    if kind == "csv":
        assert _texts(p)[0] == "a red dog runs, indeed"


def test_missing_files_name_what_was_expected(tmp_path, photos):
    (tmp_path / "empty").mkdir()
    with pytest.raises(XmodalError, match="dataset_coco.json"):
        get_protocol("coco5k", tmp_path / "empty")
    with pytest.raises(XmodalError, match="dataset_flickr30k.json.*results_20130124.token"):
        get_protocol("flickr30k", tmp_path / "empty")
    with pytest.raises(XmodalError, match="captions.jsonl"):
        get_protocol("xm3600", tmp_path / "empty")
    with pytest.raises(XmodalError, match=r"\*\.tar"):
        get_protocol("webdataset", tmp_path / "empty")
    with pytest.raises(XmodalError, match="save_to_disk"):
        get_protocol("hf-dataset", tmp_path / "empty")
    with pytest.raises(XmodalError, match="pm_image_to_caption.json"):
        get_protocol("pmrp", tmp_path / "empty")
    root, names = bl.flickr30k_karpathy(tmp_path / "f30k", photos)
    (root / "flickr30k-images" / names[1]).unlink()
    with pytest.raises(XmodalError, match=f"1 of 3 Flickr30K images are missing.*{names[1]}"):
        get_protocol("flickr30k", root)
    npz = bl.hand_embeddings(tmp_path / "e.npz", ["x", "y", "z"], [str(i) for i in range(6)])
    root, _ = bl.xm3600(tmp_path / "xm", photos)
    with pytest.raises(XmodalError, match="3 of the 3 image ids .* have no embedding"):
        run_eval(get_protocol("xm3600", root), get_scorer(str(npz), "xm3600"))
    # without --data the COCO protocols stay the eccv-caption ids alone (for --scores)
    assert get_protocol("eccv").directions["i2t"].relevance.shape == (5000, 25000)


def test_cli_scores_a_local_copy_with_a_python_model(tmp_path, photos):
    root, _ = bl.flickr30k_karpathy(tmp_path / "f30k", photos)
    out = subprocess.run(
        [sys.executable, "-m", "xmodal", "eval", "-p", "flickr30k", "--data", str(root), "-m",
         COLOUR, "--json"], capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "XMODAL_CACHE": str(tmp_path / "cache")})
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["directions"]["t2i"]["R@1"] == 1.0 and report["n_queries"]["t2i"] == 6
    out = subprocess.run(
        [sys.executable, "-m", "xmodal", "eval", "-p", "coco5k", "--data", str(tmp_path),
         "-m", "random"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "dataset_coco.json" in out.stderr
    assert "Traceback" not in out.stderr
