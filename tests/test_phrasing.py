"""Short queries as sentences (issue 40 item 3): xmodal.index.phrasing's rule, and the search
pipeline applying it to every text term when it is on (it is off by default)."""

import pytest
from PIL import Image

from tests.fake_models import ColourModel
from xmodal.index.phrasing import phrase


@pytest.mark.parametrize("query, sentence", [
    ("dog", "a dog is in the picture."),
    ("black dog", "a black dog is in the picture."),
    ("apple", "an apple is in the picture."),
    ("a man", "a man is in the picture."),
    ("dogs", "dogs is in the picture."),
    ("people", "people is in the picture."),
    ("running", "running is in the picture."),
    ("  traffic light ", "a traffic light is in the picture."),
    ("a dog on the beach", "a dog on the beach"),  # four words: a sentence already
    ("a dog.", "a dog."),  # punctuated: as typed
    ("", ""),
])
def test_short_queries_become_captions_and_sentences_stay(query, sentence):
    assert phrase(query) == sentence


class RecordingModel(ColourModel):
    texts: list = []

    def embed_texts(self, texts, *, progress=False):
        RecordingModel.texts.extend(texts)
        return super().embed_texts(texts)


@pytest.mark.parametrize("enabled", [False, True])
def test_search_embeds_the_query_as_typed_unless_phrasing_is_on(tmp_path, monkeypatch, enabled):
    from xmodal.index import PhotoIndex, phrasing

    monkeypatch.setattr(phrasing, "ENABLED", enabled)
    folder = tmp_path / "photos"
    folder.mkdir()
    Image.new("RGB", (32, 32), (255, 0, 0)).save(folder / "red.png")
    index = PhotoIndex(tmp_path / "p.db", model=RecordingModel())
    try:
        index.update(folder, progress=False)
        RecordingModel.texts.clear()
        assert [r.path for r in index.search("red", k=1)] == [str(folder / "red.png")]
        index.find("a red car on the road", k=1)
    finally:
        index.close()
    first = "a red is in the picture." if enabled else "red"
    assert RecordingModel.texts == [first, "a red car on the road"]


def test_phrasing_is_off_by_default():
    """It ranked out-of-domain photos worse (benchmarks.cutoff_ood: 9 of 13 first, not 11)."""
    from xmodal.index import phrasing

    assert phrasing.ENABLED is False and phrasing.search_text(" dog ") == "dog"


def test_the_variant_benchmark_measures_the_shipped_rule_and_its_variants():
    """benchmarks.phrasing_variants: its "phrased" row is phrasing.phrase itself; a form rule
    sends queries with an article to their own template and leaves sentences alone."""
    from benchmarks.phrasing_variants import VARIANTS, _by_kind, _kind

    queries = ["dog", "black dog", "apple", "a man", "dogs", "running", "a dog on the beach",
               "a dog."]
    assert [VARIANTS["phrased (shipped rule, off)"](q) for q in queries] == \
        [[(phrase(q), 1.0)] for q in queries]
    assert [_kind(q) for q in ("a clock", "the moon", "running", "old coins", "green grass")] \
        == ["article", "article", "activity", "plural", "other"]
    rule = _by_kind(article="{} in the picture.")
    assert rule("a brick wall") == [("a brick wall in the picture.", 1.0)]
    assert rule("brick wall") == [("a brick wall is in the picture.", 1.0)]
    assert rule("an astronaut in a space suit") == [("an astronaut in a space suit", 1.0)]


def test_phrasing_is_on_only_when_a_recorded_variant_meets_both_targets():
    """Issue 40: phrasing ships when a variant raises the default model's short-query dev mAP
    by >= 0.08 and ranks no skimage-ood photo lower than raw queries do
    (benchmarks/results/phrasing_variants.json); recomputed here from the recorded numbers."""
    import json
    from pathlib import Path

    from xmodal.index import phrasing

    path = Path(__file__).resolve().parents[1] / "benchmarks/results/phrasing_variants.json"
    rows = json.loads(path.read_text())["results"]["models"]["dual"]["variants"]
    raw = rows["raw"]

    def meets(r):
        return (r["dev_map"] - raw["dev_map"] >= 0.08
                and all(r["ood_ranks"][n] <= rank for n, rank in raw["ood_ranks"].items()))

    assert len(rows) > 10 and not meets(raw)
    assert phrasing.ENABLED == any(meets(r) for r in rows.values())
