"""Caption preprocessing: compounds, spelling, stop words, lemmas, POS, disk cache."""

from __future__ import annotations

import pytest

from xmodal.features import captions
from xmodal.features.captions import normalize_compounds, preprocess, preprocess_tagged


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))


def test_compound_variants_are_one_form():
    for text in ["a t shirt", "a tee-shirt", "a tshirt", "a T-Shirt", "a tee shirt"]:
        assert normalize_compounds(text) == "a t-shirt"
    assert normalize_compounds("two tee shirts") == "two t-shirts"
    assert normalize_compounds("a skate board") == "a skateboard"
    assert normalize_compounds("shirts and shorts") == "shirts and shorts"


def test_preprocess_lemmas_stopwords_compounds_and_spelling():
    out = preprocess(
        [
            "A dog in a red tee shirt runs on the beach .",
            "Two men in pink t-shirts are climbing into a wooden playhouse .",
            "A bicylce rider jumps over the ramp",
        ]
    )
    assert out[0] == ["dog", "red", "t-shirt", "run", "beach"]
    assert out[1] == ["two", "man", "pink", "t-shirt", "climb", "wooden", "playhouse"]
    assert out[2] == ["bicycle", "rider", "jump", "ramp"]  # "bicylce" corrected


def test_tags_and_domain_words_protected_from_correction():
    texts = ["A boy rides a wakeboard ."] * 3 + ["A girl is swimming ."]
    tagged = preprocess_tagged(texts)
    assert tagged[0] == [("boy", "NOUN"), ("ride", "VERB"), ("wakeboard", "NOUN")]
    # "wakeboard" occurs 3 times: kept, not "corrected" to "washboard"; "rides" -> "ride" (not "rid")
    assert tagged[3] == [("girl", "NOUN"), ("swim", "VERB")]
    alone = preprocess(["A boy rides a wakeboard ."], use_cache=False)
    assert alone[0][-1] != "wakeboard"  # a single occurrence is treated as a typo


def test_a_small_batch_never_serves_its_corrections_to_a_corpus():
    """A word is protected by its count in the batch, so the cache answers per batch: one
    caption alone has "wakeboard" corrected; in a corpus where it repeats it stays."""
    caption = "A boy rides a wakeboard ."
    alone = preprocess([caption])
    corpus = preprocess([caption, "A girl on a wakeboard .", "Wakeboard tricks ."])
    assert alone[0][-1] != "wakeboard" and corpus[0][-1] == "wakeboard"
    assert corpus == preprocess([caption, "A girl on a wakeboard .", "Wakeboard tricks ."],
                                use_cache=False)


def test_spelling_ties_are_broken_the_same_way_in_every_process():
    """Tied corrections ("flaggers": "flagger" and "floggers", 50 occurrences each) do not
    depend on the hash seed of the process (pyspellchecker's own choice does)."""
    import os
    import subprocess
    import sys

    code = ("from xmodal.features.captions import correct_word; "
            "print([correct_word(w) for w in ('flaggers', 'tobaggons', 'bigwheels')])")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(6)}
    assert len(seen) == 1 and "'flagger'" in seen.pop()


def test_results_come_from_the_disk_cache(monkeypatch):
    first = preprocess(["The black dog is running through the grass ."])

    def boom(*a, **k):
        raise AssertionError("should have been cached")

    monkeypatch.setattr(captions, "_process", boom)
    assert preprocess(["The black dog is running through the grass ."]) == first
    assert first == [["black", "dog", "run", "grass"]]


def test_flickr8k_slice_captions_of_one_image_match_each_other(flickr8k):
    from xmodal.features.text_kernels import make_text_kernel

    ids = flickr8k.split("train")[:30]
    caps = [flickr8k.captions_of(i) for i in ids]
    tokens = preprocess([c.text for cs in caps for c in cs])
    assert all(tokens), "every caption keeps at least one content word"
    it = iter(tokens)
    docs = [[next(it) for _ in cs] for cs in caps]
    queries = [[d[0]] for d in docs]
    gallery = [d[1:] for d in docs]
    for name in ("bow5", "tri5"):
        S = make_text_kernel(name).fit(gallery).kernel(queries, gallery)
        top1 = (S.argmax(1) == range(len(ids))).mean()
        assert top1 > 0.4, (name, top1)  # chance is 1/30
