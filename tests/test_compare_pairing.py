"""``xmodal compare`` pairs queries by id: runs carry their query ids, a shuffled copy of the
caption file pairs every query with itself (zero difference), runs on different query sets are
refused (saying how many differ) unless ``--intersect``, and the result says which pairing it
used. Also what a run says it ran on (coverage of a partial benchmark copy, notes)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from typer.testing import CliRunner

import tests.benchmark_layouts as bl
from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.eval.protocols import get_protocol
from xmodal.eval.runner import run_eval
from xmodal.eval.significance import compare_runs
from xmodal.factory import get_scorer

HASH = "python:tests.sweep_models:HashModel"
WORDS = ["dog", "beach", "red", "child", "ball", "grass", "water", "street", "man", "snow"]


@pytest.fixture()
def captions(tmp_path, flickr8k_root):
    """A CSV of 6 photos x 3 captions, and a copy with its lines shuffled."""
    rng = random.Random(4)
    lines = []
    for k, src in enumerate(bl.flickr8k_photos(flickr8k_root, 6)):
        (tmp_path / "pics").mkdir(exist_ok=True)
        (tmp_path / "pics" / f"p{k}.jpg").write_bytes(bl.tinted_bytes(src, k))
        lines += [f"pics/p{k}.jpg,{' '.join(rng.sample(WORDS, 3))}" for _ in range(3)]
    a = tmp_path / "a.csv"
    a.write_text("image,caption\n" + "\n".join(lines) + "\n")
    shuffled = lines[:]
    random.Random(1).shuffle(shuffled)
    b = tmp_path / "b.csv"
    b.write_text("image,caption\n" + "\n".join(shuffled) + "\n")
    return a, b


def _run(path, name, tmp_path):
    proto = get_protocol("caption-file", path)
    report = run_eval(proto, get_scorer(HASH, "caption-file"), model=HASH, per_query=True)
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(report))
    return report, out


def test_runs_carry_query_ids(captions, tmp_path):
    report, _ = _run(captions[0], "a", tmp_path)
    assert report["query_ids"]["i2t"] == [f"pics/p{k}.jpg" for k in range(6)]
    assert len(report["query_ids"]["t2i"]) == 18 == len(report["per_query"]["t2i"]["rank"])
    assert all(q.startswith("pics/p") and "#" in q for q in report["query_ids"]["t2i"])


def test_a_shuffled_caption_file_pairs_every_query_with_itself(captions, tmp_path):
    a, _ = _run(captions[0], "a", tmp_path)
    b, _ = _run(captions[1], "b", tmp_path)
    assert a["query_ids"]["t2i"] != b["query_ids"]["t2i"]  # another order...
    assert sorted(a["query_ids"]["t2i"]) == sorted(b["query_ids"]["t2i"])  # ...the same ids
    res = compare_runs([a, b], metrics=["R@1", "MAP", "rank"], n_resamples=999)
    assert res["pairing"]["by"] == "query id" and "different orders" in res["pairing"]["note"]
    for c in res["comparisons"]:
        assert (c["difference"], c["ci_low"], c["ci_high"]) == (0.0, 0.0, 0.0), c
        assert c["n_pairs"] == (6 if c["direction"] == "i2t" else 18)
    # the same query has the same value in both runs, id by id
    for d in ("i2t", "t2i"):
        va = dict(zip(a["query_ids"][d], a["per_query"][d]["MAP"], strict=True))
        vb = dict(zip(b["query_ids"][d], b["per_query"][d]["MAP"], strict=True))
        assert va == vb


def test_runs_on_different_queries_are_refused_unless_intersect(captions, tmp_path):
    a, fa = _run(captions[0], "a", tmp_path)
    lines = captions[0].read_text().splitlines()
    fewer = tmp_path / "fewer.csv"
    fewer.write_text("\n".join(ln for ln in lines if "p5.jpg" not in ln) + "\n")
    b, fb = _run(fewer, "b", tmp_path)
    with pytest.raises(XmodalError, match=r"different i2t queries: 0 of 'b'.s 5 are not in 'a' "
                                          r"and 1 of 'a'.s 6 are not in 'b'.*--intersect"):
        compare_runs([{**a, "name": "a"}, {**b, "name": "b"}])
    res = compare_runs([a, b], metrics=["MAP"], intersect=True, n_resamples=99)
    assert res["pairing"]["queries"] == {"i2t": 5, "t2i": 15}
    assert {c["n_pairs"] for c in res["comparisons"] if c["direction"] == "t2i"} == {15}
    out = CliRunner().invoke(app, ["compare", str(fa), str(fb), "--json"])
    assert out.exit_code != 0 and "--intersect" in str(out.exception)
    out = CliRunner().invoke(app, ["compare", str(fa), str(fb), "--intersect", "--metric", "MAP",
                                   "--resamples", "99", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["pairing"]["dropped"] == {"a": {"i2t": 1, "t2i": 3}}
    out = CliRunner().invoke(app, ["compare", str(fa), str(fb), "--intersect", "--metric", "MAP",
                                   "--resamples", "99"])
    assert "paired by query id" in out.output


def test_runs_without_ids_are_paired_by_position_and_say_so(captions, tmp_path):
    a, _ = _run(captions[0], "a", tmp_path)
    old = {k: v for k, v in a.items() if k != "query_ids"}
    res = compare_runs([a, old], metrics=["MAP"], n_resamples=99)
    assert res["pairing"]["by"] == "position" and "no query ids" in res["pairing"]["note"]


def test_a_partial_coco_copy_is_labelled_partial(tmp_path, flickr8k_root):
    coco = bl.coco_karpathy(tmp_path / "coco", bl.flickr8k_photos(flickr8k_root, 3),
                            [1, 2, 3], [[11, 12], [21, 22], [31, 32]])
    proto = get_protocol("coco5k", coco)
    report = run_eval(proto, get_scorer(HASH, "coco5k"), model="h")
    cov = report["coverage"]
    assert cov["partial"] and cov["images"] == 3 and cov["official"]["images"] == 5000
    assert cov["label"] == "partial (3 of 5,000 images)"
    assert "3 of 5,000 images" in " ".join(cov["missing"])
    assert "COCO (local copy)" in report["notes"]


def test_coco1k_headline_is_the_mean_of_equal_folds(tmp_path, flickr8k_root):
    """5 images in folds of 2: folds of 2, 2, 1 images would weigh the last fold's queries less
    in a mean over queries; the headline is the mean of the fold means, as the docs say."""
    ids = [1, 2, 3, 4, 5]
    coco = bl.coco_karpathy(tmp_path / "coco", bl.flickr8k_photos(flickr8k_root, 5), ids,
                            [[10 * i + 1, 10 * i + 2] for i in ids])
    proto = get_protocol("coco1k", coco, fold_size=2)
    assert proto.extra["fold_sizes"] == [2, 2, 1]
    report = run_eval(proto, get_scorer(HASH, "coco1k"), model="h")
    folds = report["paper_metrics"]["folds"]
    for d in ("i2t", "t2i"):
        for k in ("R@1", "MAP", "medR"):
            fold_values = [f[d][k] for f in folds["per_fold"]]
            assert report["directions"][d][k] == pytest.approx(np.mean(fold_values))
    four = get_protocol("coco1k", coco, fold_size=4)  # 5 images: 3 + 2, not 4 + 1
    assert four.extra["fold_sizes"] == [3, 2] and "2 folds of 3, 2" in four.notes
