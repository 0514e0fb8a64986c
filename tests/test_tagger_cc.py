"""The tagger on several caption sources: the union of datasets, selection over several dev sets,
per-word tables, the feature name a saved tagger records, and the replacement rule."""

from __future__ import annotations

import numpy as np
import pytest

from xmodal.data.flickr8k import Caption
from xmodal.errors import XmodalError


class _Captions:
    def __init__(self, caps: dict[str, list[str]]):
        self.image_ids = list(caps)
        self._caps = caps

    def captions_of(self, i):
        return [Caption(f"{i}#{n}", i, n, t) for n, t in enumerate(self._caps.get(i, []))]


def test_caption_sources_union_and_clash():
    from xmodal.features.keywords import CaptionSources

    a = _Captions({"a1": ["x", "y"], "a2": ["z"]})
    b = _Captions({"b1": ["w"]})
    both = CaptionSources(a, b)
    assert [c.text for c in both.captions_of("a1")] == ["x", "y"]
    assert [c.text for c in both.captions_of("b1")] == ["w"]
    assert both.captions_of("nope") == []
    with pytest.raises(XmodalError, match="two caption sources"):
        CaptionSources(a, _Captions({"a2": ["q"]}))


def _problem(seed: int, n: int = 300, d: int = 6, w: int = 4):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x[:, :w] + 0.3 * rng.normal(size=(n, w))) > 0.8
    return x, y


def test_selection_over_two_dev_sets_averages_them():
    from xmodal.eval.metrics import annotation_metrics
    from xmodal.recipes.tagger import select_keyword_head, select_keyword_head_on

    xt, yt = _problem(0)
    d1, d2 = _problem(1, 100), _problem(2, 100)
    words = ["a", "b", "c", "d"]
    best, rows, model = select_keyword_head_on(xt, yt, {"one": d1, "two": d2}, words,
                                               l2s=(1e-4, 1e-1), powers=(0.0, 1.0))
    assert len(rows) == 4 and all(set(r["dev_sets"]) == {"one", "two"} for r in rows)
    for r in rows:
        assert r["mean_F1"] == pytest.approx(
            (r["dev_sets"]["one"]["mean_F1"] + r["dev_sets"]["two"]["mean_F1"]) / 2, abs=1e-4)
    assert best["mean_F1"] == max(r["mean_F1"] for r in rows)
    # the returned model is the selected one, fit on the training images
    assert (model.l2, model.prior_power) == (best["l2"], best["prior_power"])
    r1 = annotation_metrics(model.word_scores(d1[0]), d1[1], n=5, best=None)
    assert round(r1["mean_F1"], 4) == best["dev_sets"]["one"]["mean_F1"]
    # one dev set: the flat rows of before
    b1, rows1 = select_keyword_head(xt, yt, *d1, words, l2s=(1e-4,), powers=(0.0,))
    assert "dev_sets" not in b1 and set(b1) >= {"l2", "prior_power", "mean_F1", "n_words"}


def test_saved_tagger_records_its_features(tmp_path):
    from xmodal.models.tagger import (
        KeywordHead,
        backbone_of,
        features_name,
        load_tagger,
    )

    x, y = _problem(3)
    m = KeywordHead().fit(x, y, ["a", "b", "c", "d"])
    m.features_ = features_name("lite1")
    m.save(tmp_path / "t")
    t = load_tagger(tmp_path / "t")
    assert t.features == "efficientnet-lite1-pooled" and t.model.features_ == t.features
    assert backbone_of("efficientnet-lite0-pooled") == "lite0"
    with pytest.raises(XmodalError, match="unknown tagger features"):
        backbone_of("resnet-pooled")


def test_word_table_and_install_rule():
    from xmodal.reproduce.tagger import EVERYDAY, install_rule, word_table

    scores = np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.3]])
    truth = np.array([[True, False], [False, False], [False, True]])
    # top-5 of 2 words: every word predicted for every image
    t = word_table(scores, truth, ["cat", "dog"], ["cat", "zebra"])
    assert t["zebra"] is None
    assert t["cat"] == {"n_true": 1, "n_predicted": 3, "correct": 1, "P": 1 / 3, "R": 1.0}
    cmp = {"as_shipped": {"flickr8k_cc": {"mean_F1": 0.30}, "flickr8k_only": {"mean_F1": 0.30}}}
    assert install_rule(cmp, ["cat"])[0]
    assert not install_rule(cmp, [])[0]
    cmp["as_shipped"]["flickr8k_cc"]["mean_F1"] = 0.29
    ok, why = install_rule(cmp, list(EVERYDAY))
    assert not ok and "0.2900" in why


def test_report_is_rendered_from_the_stored_results():
    """reports/tagger.md is exactly what the stored benchmarks/results/tagger.json renders."""
    import json
    from pathlib import Path

    from xmodal.reproduce.tagger import markdown

    root = Path(__file__).resolve().parents[1]
    path = root / "benchmarks" / "results" / "tagger.json"
    if not path.is_file():
        pytest.skip("no stored tagger results (xmodal reproduce tagger)")
    res = json.loads(path.read_text())
    assert (root / "reports" / "tagger.md").read_text() == markdown(res)
    assert set(res["everyday_added"]) <= set(res["everyday_words"])


def test_report_claims_follow_the_numbers():
    """A conclusion of templates/tagger.md that the results contradict stops the rendering."""
    import copy
    import json
    from pathlib import Path

    from xmodal.reproduce.render import ClaimFailed
    from xmodal.reproduce.tagger import claims, markdown

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "tagger.json"
    if not path.is_file():
        pytest.skip("no stored tagger results (xmodal reproduce tagger)")
    res = json.loads(path.read_text())
    assert all(claims(res).values())
    flipped = copy.deepcopy(res)
    flipped["comparison"]["test"]["restricted"]["flickr8k_cc"]["mean_F1"] = 0.1
    with pytest.raises(ClaimFailed, match="higher F1 on dev and test"):
        markdown(flipped)
    passed = copy.deepcopy(res)
    passed["install_rule"]["passed"] = True
    assert not claims(passed)["the install rule failed"]


def test_shipped_taggers_default_knows_everyday_words_flickr8k_kept():
    """`xmodal tag` ships the Flickr8K + CC tagger; the Flickr8K-only one stays beside it for
    the reports measured with it (relevance neural row, MITL tagger-lemmas)."""
    from xmodal.models.tagger import load_default_tagger, load_flickr8k_tagger
    from xmodal.reproduce.tagger import EVERYDAY

    new, old = set(load_default_tagger().vocabulary), set(load_flickr8k_tagger().vocabulary)
    assert len(old) == 540 and not set(EVERYDAY) & old
    assert len(new) > 1000 and len(set(EVERYDAY) & new) >= 11
    assert len(old & new) > 500


def test_flickr8k_tagger_selection_is_the_relevance_reports():
    """The relevance report's neural selection table is read from the Flickr8K tagger's
    provenance (it vanished when the model-directory format moved it there)."""
    import json
    from pathlib import Path

    from xmodal.models.tagger import FLICKR8K_MODEL_DIR
    from xmodal.reproduce.keywords_flickr import tagger_selection

    rows = tagger_selection(FLICKR8K_MODEL_DIR)
    assert len(rows) == 10 and {"l2", "prior_power", "mean_F1"} <= set(rows[0])
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "relevance_models.json"
    if path.is_file():
        assert json.loads(path.read_text())["flickr"]["selection"]["neural"] == rows


def test_reproduce_tagger_cli_passes_its_options_and_rejects_bad_penalties(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    import xmodal.reproduce.tagger as T
    from xmodal.cli import app

    seen = {}

    def fake(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        return {"model_out": str(tmp_path / "m"), "installed": False,
                "install_rule": {"reason": "not asked"}}

    monkeypatch.setattr(T, "reproduce", fake)
    r = CliRunner().invoke(app, ["reproduce", "tagger", "--l2s", "1e-6,1e-5", "--min-images",
                                 "10", "--out", str(tmp_path), "--report",
                                 str(tmp_path / "t.md")])
    assert r.exit_code == 0, r.output
    data, cc, backbone, min_images, model_out, install, out, report, cmd, l2s = seen["args"]
    assert (min_images, install, out, l2s) == (10, False, tmp_path, (1e-6, 1e-5))
    assert cmd == "xmodal reproduce tagger --min-images 10 --l2s 1e-6,1e-5"
    assert seen["kwargs"] == {"ship": False}
    r = CliRunner().invoke(app, ["reproduce", "tagger", "--l2s", "a,b"])
    assert r.exit_code != 0 and "not a list of numbers" in r.output
