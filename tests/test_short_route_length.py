"""benchmarks.short_route_length: the three-word dev queries, the paired comparison, and that
the shipped route length is what its recorded rule chose."""

import json
from pathlib import Path

import numpy as np

from benchmarks import short_route_length as srl
from xmodal.eval.short_queries import Query, ShortQuerySet
from xmodal.models.dual import SHORT_MAX_WORDS, is_short_query

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks/results/short_route_length.json"


def test_three_word_queries_keep_the_pairs_relevance_and_take_frequent_compounds():
    rel = np.array([[1, 1, 0, 0] * 3, [0, 0, 1, 1] * 3], bool)
    sq = ShortQuerySet(photos=[f"p{i}" for i in range(12)], paths=[""] * 12,
                       queries=[Query("black dog", "adjective noun", ["dog"]),
                                Query("dog", "noun", ["dog"])], relevant=rel)
    comp = ([{"brick wall"}] * 8 + [{"rock wall", "background wall"}] * 3 + [set()])
    comp = [set(c) for c in comp]
    qs, r = srl.three_word_queries(sq, comp)
    texts = [q["text"] for q in qs]
    assert texts == ["a black dog", "a brick wall"]  # rock wall: 3 photos < MIN_PHOTOS
    assert (r[0] == rel[0]).all() and r[1].sum() == 8 and r[1][:8].all()
    assert all(len(t.split()) == 3 and is_short_query(t, 3) for t in texts)


def test_paired_comparison_by_hand():
    out = srl.paired(np.array([0.5, 0.2, 0.9]), np.array([0.4, 0.3, 0.6]))
    assert out["short_heads_map"] == round(1.6 / 3, 4)
    assert out["sentence_heads_map"] == round(1.3 / 3, 4)
    assert out["difference"] == round(0.1, 4)
    assert out["short_heads_better"] == 2 and out["sentence_heads_better"] == 1
    lo, hi = out["difference_95ci"]
    assert -0.1 <= lo <= 0.1 <= hi <= 0.3 + 1e-9


def _gate(no_worse3: bool, no_worse2: bool) -> dict:
    return {"routes": {"3": {"no_worse": no_worse3}, "2": {"no_worse": no_worse2}}}


def test_the_rule_needs_the_dev_gain_and_the_out_of_domain_gate():
    assert srl.choose(0.03, _gate(True, True)) == 3
    assert srl.choose(0.03, _gate(False, True)) == 2  # what the recorded run found
    assert srl.choose(-0.01, _gate(True, True)) == 2
    assert srl.choose(0.03, _gate(False, False)) == 1


def test_the_shipped_route_length_is_what_the_recorded_rule_chose():
    from xmodal.models.dual import DEFAULT_MODEL_DIR

    res = json.loads(RESULTS.read_text())["results"]
    three = res["sets"]["three words"]
    per = three["per_query"].values()
    diff = np.mean([q["short"] - q["sentence"] for q in per])  # recomputed from the queries
    assert abs(diff - three["difference"]) < 1e-3
    gate = res["ood_gate"]
    before = gate["before_stage3"]
    for route in gate["routes"].values():  # the gate recomputed from the recorded ranks
        assert route["no_worse"] == all(route["ranks"][n] <= before[n] for n in before)
        assert route["first"] == sum(r == 1 for r in route["ranks"].values())
    shipped = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())["state"]["short_text"]
    assert res["max_words_chosen"] == srl.choose(diff, gate) == shipped["max_words"]
    assert SHORT_MAX_WORDS == shipped["max_words"]  # a rerun of the recipe routes the same
