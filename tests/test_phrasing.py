"""Short queries reach the text encoder as sentences (issue 40 item 3): xmodal.index.phrasing,
and the search pipeline applying it to every text term."""

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


def test_search_embeds_the_phrased_query(tmp_path):
    from xmodal.index import PhotoIndex

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
    assert RecordingModel.texts == ["a red is in the picture.", "a red car on the road"]
