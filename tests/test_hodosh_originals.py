"""Issue 18: the loader of the original-resolution Flickr8K photos, images kept at their own
resolution (ragged word grids), kernels sliced from one matrix, the folds, the feature comparison
and the report section of ``xmodal reproduce hodosh --part originals``."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from xmodal.errors import XmodalError

ORIGINALS = Path(os.environ.get(
    "XMODAL_FLICKR8K_ORIGINALS",
    Path(__file__).resolve().parents[2] / "data" / "flickr8k-originals"))
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "hodosh_originals.json"


@pytest.fixture(scope="module")
def originals_root() -> Path:
    if not (ORIGINALS / "data" / "captions.txt").is_file() and not (
            ORIGINALS / "captions.txt").is_file():
        pytest.skip(f"the original-resolution Flickr8K photos are not at {ORIGINALS} (issue 18; "
                    "set XMODAL_FLICKR8K_ORIGINALS); CI has only the 224-px release")
    return ORIGINALS


def _write_layout(root: Path, flickr8k, images: list[str], nested: bool = True,
                  edit=None) -> Path:
    """An ``Images/`` + ``captions.txt`` layout of some official images (copied pixels)."""
    base = root / "data" if nested else root
    (base / "Images").mkdir(parents=True)
    with open(base / "captions.txt", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "caption"])
        for i in images:
            (base / "Images" / i).write_bytes(flickr8k.image_path(i).read_bytes())
            for c in flickr8k.captions_of(i):
                w.writerow([i, edit(c) if edit else c.text])
    return root


# --------------------------------------------------------------------------------- loader
def test_loader_reads_the_layout_with_official_splits(tmp_path, flickr8k, flickr8k_root):
    from xmodal.data.flickr8k_originals import load_flickr8k_originals

    train, test = flickr8k.split("train")[:3], flickr8k.split("test")[:2]
    root = _write_layout(tmp_path, flickr8k, train + test,
                         edit=lambda c: c.text + ("  " if c.index == 1 else ""))
    (tmp_path / "data" / "Images" / "no_captions.jpg").write_bytes(b"x")
    with pytest.warns(UserWarning, match="1 image"):
        ds = load_flickr8k_originals(root, flickr8k_root)
    assert ds.image_ids == sorted(train + test)
    assert ds.splits == {"train": train, "dev": [], "test": test}
    assert ds.image_path(train[0]) == tmp_path / "data" / "Images" / train[0]
    assert ds.root == flickr8k.root  # the text side (tokens) is the official one
    cid = f"{test[0]}#2"
    assert ds.caption(cid).text == flickr8k.caption(cid).text
    assert [c.id for c in ds.captions_of(train[1])] == [f"{train[1]}#{k}" for k in range(5)]
    assert {e.image_id for e in ds.crowd} <= set(ds.image_ids)
    assert len(ds.crowd) == sum(c.image_id in set(ds.image_ids) for c in flickr8k.crowd)


def test_loader_refuses_captions_that_differ_from_the_official_ones(tmp_path, flickr8k,
                                                                    flickr8k_root):
    from xmodal.data.flickr8k_originals import load_flickr8k_originals

    img = flickr8k.split("train")[0]
    _write_layout(tmp_path, flickr8k, [img], nested=False,
                  edit=lambda c: "A cat ." if c.index == 3 else c.text)
    with pytest.raises(XmodalError, match=f"caption 3 of {img} differs"):
        load_flickr8k_originals(tmp_path, flickr8k_root)
    with pytest.raises(XmodalError, match="expected Images/ and captions.txt"):
        load_flickr8k_originals(tmp_path / "nowhere", flickr8k_root)


def test_loader_on_the_real_originals(originals_root, flickr8k):
    from PIL import Image

    from xmodal.data.flickr8k_originals import load_flickr8k_originals

    ds = load_flickr8k_originals(originals_root, flickr8k.root)
    assert len(ds.image_ids) == 1000 and len(ds.captions) == 5000
    assert {k: len(v) for k, v in ds.splits.items()} == {"train": 753, "dev": 113, "test": 125}
    assert ds.image_ids == sorted(os.listdir(flickr8k.root / "Flicker8k_Dataset"))[:1000]
    with Image.open(ds.image_path(ds.image_ids[0])) as im:
        assert max(im.size) > 224  # the originals, not our copies
    assert all(ds.caption(c.id).text == flickr8k.caption(c.id).text for c in ds.captions)


# ------------------------------------------------------------------- images at own size
def _images(tmp_path: Path, shapes) -> list[Path]:
    import cv2

    rng = np.random.default_rng(0)
    paths = []
    for n, (h, w) in enumerate(shapes):
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * (n + 1)) % 256, (yy * 3) % 256, rng.integers(0, 256, (h, w))], -1)
        p = tmp_path / f"img{n}.png"
        cv2.imwrite(str(p), img.astype(np.uint8))
        paths.append(p)
    return paths


def test_native_resolution_word_maps_are_ragged_and_cached(tmp_path):
    from xmodal.features.image_kernels import pyramid_histograms
    from xmodal.features.visual_words import VisualWordCache, VisualWordConfig

    paths = _images(tmp_path, [(64, 96), (96, 64), (80, 80)])
    cfg = VisualWordConfig(size=None, n_words=(4, 4, 4), n_sample_images=3,
                           points_per_image=50)
    cache = VisualWordCache("t", cfg, root=tmp_path / "cache")
    words = cache.words(["a", "b", "c"], paths, progress=False)
    assert [g.shape for g in words["colour"]] == [(16, 24), (24, 16), (20, 20)]
    assert [g.shape for g in words["sift"]] == [(8, 12), (12, 8), (10, 10)]
    again = VisualWordCache("t", cfg, root=tmp_path / "cache").words(["c", "a"], paths[::-1])
    assert all((x == y).all() for x, y in zip(again["texture"], words["texture"][::-2]))
    h = pyramid_histograms(words["colour"], 4)
    assert h.shape == (3, 4 * 21)
    np.testing.assert_allclose(h[1], pyramid_histograms(words["colour"][1], 4)[0])
    np.testing.assert_allclose(h[:, :4].sum(1), 0.25, rtol=1e-5)  # level 0 sums to its weight
    same = VisualWordCache("s", VisualWordConfig(n_words=(4, 4, 4), n_sample_images=3,
                                                 points_per_image=50), root=tmp_path / "c2")
    assert same.words(["a"], paths[:1], paths, progress=False)["colour"].shape == (1, 56, 56)


class _Photos:
    def __init__(self, paths):
        self.paths = {f"p{n}": p for n, p in enumerate(paths)}

    def image_path(self, i):
        return self.paths[i]


def test_image_kernels_over_a_set_are_sliced_from_one_matrix(tmp_path, monkeypatch):
    from xmodal.models.hodosh import HodoshData, ImageSide

    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    # big enough for the default codebooks (256 SIFT words from 4 images)
    paths = _images(tmp_path, [(160, 200), (200, 160), (176, 176), (144, 224)])
    data = _Photos(paths)
    ids = list(data.paths)
    full = HodoshData(data, ids[:3], [], ids[3:], image_set="toy", kernel_ids=ids)
    sliced = ImageSide(full, "pyramid-native").block(ids[3:], ids[:2])
    direct = ImageSide(HodoshData(data, ids[:3], [], ids[3:], image_set="toy"),
                       "pyramid-native").block(ids[3:], ids[:2])
    np.testing.assert_allclose(sliced, direct, rtol=1e-6)
    whole = ImageSide(full, "pyramid-native").block(ids, ids)
    np.testing.assert_allclose(np.diagonal(whole), 1.0, rtol=1e-4)  # (mean of 1s) ** 2
    assert not np.allclose(whole, 1.0)
    with pytest.raises(XmodalError, match="effnet"):
        ImageSide(full, "effnet")


# ------------------------------------------------------------------- folds and comparison
class _Split:
    def __init__(self, ids):
        self.ids = ids

    def split(self, name):
        return {"train": self.ids[:6], "dev": self.ids[6:8], "test": self.ids[8:]}[name]


def test_cv_folds_test_every_photo_once_and_never_select_on_it():
    from xmodal.reproduce.hodosh_originals import splits

    ids = [f"i{n:02d}" for n in range(20)]
    sp = splits({"ids": ids, "originals": _Split(ids)}, folds=4, seed=1)
    assert sp["official"] == (ids[:6], ids[6:8], ids[8:])
    tested = [i for f in range(4) for i in sp[f"cv-{f}"][2]]
    assert sorted(tested) == ids
    for f in range(4):
        train, dev, test = sp[f"cv-{f}"]
        assert not set(train) & set(dev) and not set(train) & set(test)
        assert not set(dev) & set(test) and len(train) + len(dev) + len(test) == 20
        assert set(dev) == set(sp[f"cv-{(f + 1) % 4}"][2])


def test_kernel_agreement_and_stats():
    from xmodal.reproduce.hodosh_originals import kernel_agreement, kernel_stats

    rng = np.random.default_rng(0)
    x = rng.random((30, 5))
    k = x @ x.T
    same = kernel_agreement(k, k)
    assert same["pearson"] == pytest.approx(1.0) and same["top10_overlap"] == 1.0
    assert same["row_spearman"] == pytest.approx(1.0)
    other = kernel_agreement(k, (lambda y: y @ y.T)(rng.random((30, 5))))
    assert other["pearson"] < 0.9 and other["top10_overlap"] < 1.0
    assert kernel_stats(np.eye(30))["effective_dim"] == pytest.approx(29.0)
    assert kernel_stats(k)["effective_dim"] < 5.0  # rank 5, dominated by a few directions


def test_system_params_are_the_exact_kernel_records():
    from xmodal.recipes.flickr8k import get_hodosh_setting
    from xmodal.reproduce.hodosh_originals import system_params

    p = system_params("tri5sem", "pyramid-native", 750)
    full = dict(get_hodosh_setting("hodosh-tri5sem-full").params)
    assert p["rank"] == 750 and p["n_landmarks"] == 6000 and p["image_kernel"] == "pyramid-native"
    assert {k: v for k, v in p.items() if k not in ("rank", "image_kernel")} == \
        {k: v for k, v in full.items() if k not in ("rank", "image_kernel")}


# ----------------------------------------------------------------------- report and CLI
def test_report_section_is_rendered_from_the_stored_json(tmp_path):
    from xmodal.reproduce.hodosh_report import (ORIGINALS_END, ORIGINALS_START,
                                                write_originals_section)

    if not RESULTS.is_file():
        pytest.skip("benchmarks/results/hodosh_originals.json not recorded yet")
    payload = json.loads(RESULTS.read_text())
    main_path = RESULTS.with_name("hodosh_reproduction.json")
    main = json.loads(main_path.read_text()) if main_path.is_file() else None
    report = tmp_path / "hodosh.md"
    report.write_text("# title\n\nintro\n\n## Paper numbers against ours\n\ntable\n")
    write_originals_section(report, payload, main)  # compared with the stored 8K numbers
    first = report.read_text()
    assert first.index(ORIGINALS_START) < first.index("## Paper numbers against ours")
    write_originals_section(report, payload, main)  # replaces, never duplicates
    assert report.read_text() == first and first.count(ORIGINALS_END) == 1
    res = payload["results"]
    m = res["metrics"]["cv"]["gold"]["i2t"]["tri5sem"]["originals"]["R@10"]
    assert f"{100 * m:.1f}" in first
    stored = (RESULTS.parents[2] / "reports" / "hodosh.md").read_text()
    section = first.split(ORIGINALS_START)[1].split(ORIGINALS_END)[0]
    assert section in stored, "reports/hodosh.md is not rendered from hodosh_originals.json"


def test_cli_part_originals_errors_clearly(tmp_path):
    from typer.testing import CliRunner

    from xmodal.cli import app

    r = CliRunner().invoke(app, ["reproduce", "hodosh", "--part", "originals", "--originals",
                                 str(tmp_path / "none"), "--out", str(tmp_path)])
    assert r.exit_code != 0
    assert isinstance(r.exception, XmodalError) and "no Flickr8K originals" in str(r.exception)
    r = CliRunner().invoke(app, ["reproduce", "hodosh", "--help"])
    assert "--part originals" in r.output


@pytest.mark.reproduce  # visual words of 1,000 original photos unless cached (minutes)
def test_official_split_numbers_reproduce(originals_root):
    """bow5 on the official split of the set, 224-px copies and originals, against the JSON."""
    if not RESULTS.is_file():
        pytest.skip("benchmarks/results/hodosh_originals.json not recorded yet")
    from xmodal.reproduce import hodosh_originals as H

    stored = json.loads(RESULTS.read_text())["results"]["metrics"]["official"]
    ds = H.datasets(originals_root)
    split = H.splits(ds)["official"]
    H.prime(ds, ["224", "originals"])
    for c in ("224", "originals"):
        pq = H.per_query(ds, split[2], H.run_split(ds, c, "bow5", split))
        for rel in ("gold", "crowd"):
            for d in ("i2t", "t2i"):
                got = H.summary(pq[rel][d])
                want = stored[rel][d]["bow5"][c]
                assert {k: got[k] for k in ("R@1", "R@5", "R@10", "medR")} == \
                    {k: want[k] for k in ("R@1", "R@5", "R@10", "medR")}


def test_paired_bootstrap_and_gap_share_by_hand():
    from xmodal.reproduce.hodosh_originals import paired_bootstrap, selection_summary
    from xmodal.reproduce.hodosh_summary import gap_shares

    hits_a = np.array([1, 1, 1, 0] * 25, dtype=float)  # R@K 0.75
    hits_b = np.array([1, 0, 1, 0] * 25, dtype=float)  # R@K 0.50
    a = {k: hits_a for k in ("R@1", "R@5", "R@10", "R-P")} | {"rank": np.arange(1.0, 101)}
    b = {k: hits_b for k in ("R@1", "R@5", "R@10", "R-P")} | {"rank": np.arange(3.0, 103)}
    e = paired_bootstrap(a, b)
    assert e["R@10"]["diff"] == pytest.approx(0.25) and e["R@10"]["ratio"] == pytest.approx(1.5)
    lo, hi = e["R@10"]["ratio_ci"]
    assert 1.0 < lo < 1.5 < hi
    assert e["medR"]["diff"] == -2.0
    res = {"effects": {"cv": {"gold": {"i2t": {"bow5": {"originals": e}}}}},
           "against_enlarged": {"cv": {"gold": {"i2t": {"bow5": {"effect": e}}}}},
           "full_scale": {"claims": [{"claim": "R@1", "paper": 6.0, "ours": 4.0, "system": "bow5",
                                      "direction": "i2t", "metric": "R@1", "ours_full": 4.0,
                                      "ours_448_full": 3.0, "controlled": ["cv", "gold"]}]}}
    (row,) = gap_shares(res)
    assert row["a"]["estimate"][0] == pytest.approx(6.0)  # 4.0 x 1.5 closes the whole gap
    assert row["a"]["share"][0] == pytest.approx(1.0)
    assert row["b"]["estimate"][0] == pytest.approx(4.5)  # 3.0 x 1.5: a quarter of the gap
    assert row["b"]["share"][0] == pytest.approx(0.25)
    assert "calibration" not in row  # no 224@448 effect given
    sel = selection_summary([{"i2t": [(0.5, 10), (1.0, 30)], "t2i": [(5.0, 20)] * 2}])
    assert sel["i2t"] == {"kappa_share": {"0.5": 0.5, "1.0": 0.5}, "median_n": 20.0}
    assert sel["t2i"]["kappa_share"] == {"5.0": 1.0}
