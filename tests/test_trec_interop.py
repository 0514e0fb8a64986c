"""Ranked lists in TREC format: ``xmodal eval --export-run trec DIR`` writes run + qrels per
direction that ranx reads back to the same R@1 / R@5 / R@10 (ranx's hit_rate), recall@K and
MAP; ``-m run:DIR`` evaluates such a ranked list (another system's) to the same numbers."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from typer.testing import CliRunner

import tests.benchmark_layouts as bl
from xmodal.cli import app
from xmodal.errors import XmodalError
from xmodal.eval.protocols import get_protocol
from xmodal.eval.runner import run_eval
from xmodal.eval.trec import RunFileScorer, decode_id, encode_id
from xmodal.factory import get_scorer

HASH = "python:tests.sweep_models:HashModel"
WORDS = ["dog", "beach", "red", "child", "ball", "grass", "water", "street", "man", "snow"]


@pytest.fixture()
def caption_file(tmp_path, flickr8k_root):
    """6 photos x 3 captions, every caption a different set of words (no tied scores), and one
    image name with a space (ids are percent-encoded in TREC files)."""
    combos = list(itertools.combinations(WORDS, 3))
    random.Random(2).shuffle(combos)
    lines = []
    for k, src in enumerate(bl.flickr8k_photos(flickr8k_root, 6)):
        name = f"pics/p {k}.jpg" if k == 0 else f"pics/p{k}.jpg"
        (tmp_path / "pics").mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(bl.tinted_bytes(src, k))
        lines += [f"{name},{' '.join(combos[3 * k + j])}" for j in range(3)]
    f = tmp_path / "caps.csv"
    f.write_text("image,caption\n" + "\n".join(lines) + "\n")
    return f


def test_trec_export_read_by_ranx_gives_the_same_metrics(caption_file, tmp_path):
    ranx = pytest.importorskip("ranx")  # the test extra
    trec = tmp_path / "trec"
    out = CliRunner().invoke(app, ["eval", "-p", "caption-file", "--data", str(caption_file),
                                   "-m", HASH, "--export-run", "trec", str(trec),
                                   "--run-depth", "0", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    for d in ("i2t", "t2i"):
        assert report["exported"][d]["run"] == str(trec / f"{d}.run")
        qrels = ranx.Qrels.from_file(str(trec / f"{d}.qrels"), kind="trec")
        run = ranx.Run.from_file(str(trec / f"{d}.run"), kind="trec")
        theirs = ranx.evaluate(qrels, run, ["hit_rate@1", "hit_rate@5", "hit_rate@10",
                                            "recall@5", "map"])
        ours = report["directions"][d]
        for mine, their in (("R@1", "hit_rate@1"), ("R@5", "hit_rate@5"),
                            ("R@10", "hit_rate@10"), ("recall@5", "recall@5"), ("MAP", "map")):
            assert ours[mine] == pytest.approx(theirs[their], abs=1e-12), (d, mine)
        assert 0 < ours["MAP"] < 1  # not a trivial ranking
    first = (trec / "i2t.run").read_text().splitlines()[0].split()
    assert first[0] == "pics/p%200.jpg" and first[1] == "Q0" and first[3] == "1"


def test_another_systems_ranked_list_evaluates_to_the_same_numbers(caption_file, tmp_path):
    trec = tmp_path / "trec"
    ran = CliRunner().invoke(app, ["eval", "-p", "caption-file", "--data", str(caption_file),
                                   "-m", HASH, "--export-run", "trec", str(trec),
                                   "--run-depth", "0", "--json"])
    assert ran.exit_code == 0, ran.output
    again = CliRunner().invoke(app, ["eval", "-p", "caption-file", "--data", str(caption_file),
                                     "-m", f"run:{trec}", "--json"])
    assert again.exit_code == 0, again.output
    a, b = json.loads(ran.stdout), json.loads(again.stdout)
    for d in ("i2t", "t2i"):
        for k in ("R@1", "R@5", "R@10", "MAP", "mAP@R", "medR"):
            assert b["directions"][d][k] == pytest.approx(a["directions"][d][k], abs=1e-12)
    # a single run file with t2i queries only: the i2t direction has none of its queries
    proto = get_protocol("caption-file", caption_file)
    with pytest.raises(XmodalError, match="none of its .* is a i2t query"):
        RunFileScorer(trec / "t2i.run")(proto, proto.directions["i2t"])
    # a truncated list (depth 2) still evaluates: unlisted items rank last
    short = tmp_path / "short"
    short.mkdir()
    (short / "i2t.run").write_text((trec / "i2t.run").read_text())
    (short / "t2i.run").write_text("".join(ln + "\n" for ln in (trec / "t2i.run").read_text()
                                           .splitlines() if int(ln.split()[3]) <= 2))
    r = run_eval(proto, get_scorer(f"run:{short}", "caption-file"))
    assert r["directions"]["t2i"]["R@1"] == pytest.approx(a["directions"]["t2i"]["R@1"])
    bad = tmp_path / "bad.run"
    bad.write_text("pics/p1.jpg#0 Q0 nowhere.jpg 1 0.5 x\n")
    with pytest.raises(XmodalError, match="1 ranked items are not in the t2i gallery"):
        RunFileScorer(bad)(proto, proto.directions["t2i"])


def test_ids_round_trip_through_the_percent_encoding():
    for x in ("a b.jpg#0", "100%\tdone", "plain#3"):
        assert decode_id(encode_id(x)) == x and " " not in encode_id(x)
