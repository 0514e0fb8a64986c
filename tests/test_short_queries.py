"""The short-query benchmark (issue 40 item 1): query choice from parsed captions, relevance by
lemma and synonym, the default answer's numbers and the oracle, by hand on small examples."""

from collections import Counter

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.eval import short_queries as sqm


def _photo(nouns=(), verbs=(), pairs=(), ing=(), nns=()):
    return {"nouns": set(nouns), "verbs": set(verbs), "pairs": set(pairs),
            "ing": Counter(ing), "nns": Counter(nns)}


def test_queries_come_from_frequent_caption_words_with_synonyms_and_absent_subjects(monkeypatch):
    monkeypatch.setattr(sqm, "MIN_PHOTOS", 2)
    per = ([_photo(["dog"], ["run"], ["black dog"], {("run", "running"): 1},
                   {("dog", "dogs"): 1})] * 3
           + [_photo(["puppy", "beach"])] * 2 + [_photo(["man", "front"])] * 2)
    texts = [["a dog is running, a black dog"]] * 3 + [["a puppy on a beach"]] * 2 + \
        [["a man in front"]] * 2
    queries, rel = sqm.choose_queries(per, texts)
    by_text = {q.text: (q, rel[i]) for i, q in enumerate(queries)}
    # "dog" is also named by "puppy" (the synonym list): 3 + 2 photos
    assert by_text["dog"][1].tolist() == [True] * 5 + [False] * 2
    assert by_text["beach"][0].relevant == 2
    assert "front" not in by_text  # names no subject
    assert by_text["running"][0].kind == "activity" and by_text["running"][0].relevant == 3
    assert by_text["black dog"][1].sum() == 3  # the pair itself, not "puppy"
    assert by_text["a dog"][0].kind == "a noun"
    assert by_text["dogs"][0].kind == "plural"
    absent = [q for q in queries if q.kind == "absent"]
    assert absent and all(r.sum() == 0 for q, r in by_text.values() if q.kind == "absent")
    assert not any(q.terms in (["dog"], ["beach"], ["man"]) for q in absent)


def test_a_word_every_caption_names_is_never_an_absent_query(monkeypatch):
    per = [_photo(["zebra"])] * 3
    texts = [["a zebra"]] * 3
    queries, _ = sqm.choose_queries(per, texts)
    assert not [q for q in queries if q.kind == "absent" and "zebra" in q.text]


def test_f1_and_average_precision_by_hand():
    assert sqm.f1(2, 4, 2) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert sqm.f1(0, 3, 2) == 0.0
    # ranking: rel, non, rel -> AP = (1/1 + 2/3) / 2
    ap = sqm.average_precision(np.array([0.9, 0.8, 0.7]), np.array([True, False, True]))
    assert ap == pytest.approx((1 + 2 / 3) / 2)
    assert np.isnan(sqm.average_precision(np.array([0.1]), np.array([False])))


def _set(scores_rel):
    """A ShortQuerySet over 4 photos: one short query, one absent, two sentences."""
    rel = np.array([[True, True, False, False],  # "dog"
                    [False, False, False, False],  # absent
                    [True, False, False, False],  # sentence of photo 0
                    [False, False, True, False]])  # sentence of photo 2
    qs = [sqm.Query("dog", "noun", ["dog"], 2), sqm.Query("a zebra", "absent", ["zebra"]),
          sqm.Query("a dog runs", "sentence", [], 1), sqm.Query("a cat", "sentence", [], 1)]
    return sqm.ShortQuerySet(["a", "b", "c", "d"], ["a", "b", "c", "d"], qs, rel)


def test_the_default_answer_and_the_oracle_by_hand():
    sq = _set(None)
    S = np.array([[0.5, 0.2, 0.4, 0.1],  # dog: ranks a (rel), c, b (rel), d
                  [0.3, 0.1, 0.2, 0.0],
                  [0.6, 0.1, 0.2, 0.0],
                  [0.1, 0.2, 0.15, 0.3]])  # its photo c ranks 3rd
    lib = [np.arange(4)]
    slibs = [np.arange(4), np.arange(4)]
    r = sqm.evaluate(sq, S, lambda qi, s: s >= 0.35, 3, lib, slibs)
    # dog: top 3 = a, c, b; shown a, c (>= 0.35): right 1 of room 2, precision 1/2
    assert r["short"]["right_shown_share"] == pytest.approx(0.5)
    assert r["short"]["precision_of_shown"] == pytest.approx(0.5)
    assert r["short"]["f1_mean"] == pytest.approx(0.5)
    # oracle: depth 1 -> P 1, R 1/2 -> F1 2/3; depth 3 -> P 2/3, R 1 -> 0.8
    assert r["short"]["oracle_f1_mean"] == pytest.approx(0.8)
    assert r["absent_no_good_match_share"] == 1.0  # its best, 0.3, is below the cutoff
    r2 = sqm.evaluate(sq, S, lambda qi, s: s >= 0.25, 3, lib, slibs)
    assert r2["absent_no_good_match_share"] == 0.0
    assert r2["sentences"]["right_photo_shown_share"] == pytest.approx(0.5)
    assert r2["sentences"]["right_photo_in_top_k_share"] == pytest.approx(1.0)


def test_choose_by_f1_keeps_sentences_no_worse():
    rows = [{"threshold": 0.1, "f1_mean": 0.5, "sentence_right_photo_shown_share": 0.8},
            {"threshold": 0.2, "f1_mean": 0.4, "sentence_right_photo_shown_share": 0.9},
            {"threshold": 0.3, "f1_mean": 0.4, "sentence_right_photo_shown_share": 0.95}]
    assert sqm.choose_by_f1(rows, 0.85)["threshold"] == 0.3  # tie -> the higher threshold
    assert sqm.choose_by_f1(rows, 0.5)["threshold"] == 0.1
    with pytest.raises(XmodalError):
        sqm.choose_by_f1(rows, 0.99)


def test_libraries_are_fixed_by_the_seed_and_hold_each_sentence_photo():
    a = sqm.libraries(50, 10, 3)
    assert all(len(x) == 10 == len(set(x.tolist())) for x in a)
    assert all((x == y).all() for x, y in zip(a, sqm.libraries(50, 10, 3)))
    sq = _set(None)
    for qi, lib in zip(sq.sentences(), sqm.sentence_libraries(sq, 3)):
        own = int(np.flatnonzero(sq.relevant[qi])[0])
        assert own in lib.tolist() and len(lib) == 3


def test_cached_query_vectors_are_keyed_by_the_route_of_short_queries(tmp_path):
    """The model id names the photo space only: a model that routes three-word queries
    differently must not read another route's cached query vectors."""

    class Routed:
        short_heads_ = object()

        def __init__(self, max_words):
            self.short_max_words_ = max_words

        def embed_texts(self, texts, progress=False):
            return np.array([[float(len(texts[0].split()) <= self.short_max_words_), 1.0]])

    sq = sqm.ShortQuerySet(photos=[], paths=[], queries=[sqm.Query("a black dog", "noun", [])],
                           relevant=np.zeros((1, 0), bool), digest="d")
    photos_file = tmp_path / f"short-queries-m@1-{sq.digest}-photos.npy"
    np.save(photos_file, np.zeros((0, 2), np.float32))
    _, three = sqm.embed(sq, Routed(3), "m@1", tmp_path, phrased=False)
    _, two = sqm.embed(sq, Routed(2), "m@1", tmp_path, phrased=False)
    assert three[0, 0] == 1.0 and two[0, 0] == 0.0
    assert len(list(tmp_path.glob("short-queries-m@1-*-queries.npy"))) == 2
