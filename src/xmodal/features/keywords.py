"""Keyword vocabularies from captions: lemmatized content words above a frequency threshold.

The captions go through :mod:`xmodal.features.captions` (spaCy ``en_core_web_md`` tokenizer,
POS tagger and lemmatizer, spelling fixes, stop-word removal; cached on disk). A keyword is a
lemma tagged as one of ``pos`` (nouns, verbs, adjectives by default) that appears in the captions
of at least ``min_images`` training images. The keywords of an image are the vocabulary lemmas
found in at least ``min_captions`` of its captions (1 = any caption).

    vocab = build_keyword_vocabulary(flickr, flickr.split("train"))
    Y = image_keyword_matrix(flickr, flickr.split("test"), vocab)   # (n_images, n_words) bool

Several datasets at once (e.g. Flickr8K's 5 captions an image and Conceptual Captions' one
alt-text), through :class:`CaptionSources`; every caption goes through the same pipeline::

    both = CaptionSources(flickr, cc)
    vocab = build_keyword_vocabulary(both, flickr.split("train") + cc.split("train"))
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xmodal.errors import XmodalError

CONTENT_POS = ("NOUN", "VERB", "ADJ")
# Lemmas the tagger marks as content words that say nothing about what is visible.
GENERIC = {"be", "have", "do", "get", "go", "look", "stand", "wear", "sit", "hold", "front",
           "other", "one", "two", "three", "four", "several", "many", "another", "pose"}


@dataclass
class KeywordVocabulary:
    words: list[str]
    document_frequency: list[int]  # training images whose captions contain the word
    pos: tuple[str, ...]
    min_images: int
    min_captions: int

    def __len__(self) -> int:
        return len(self.words)

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def describe(self) -> str:
        return (f"{len(self.words)} lemmas ({'/'.join(self.pos)}) in the captions of >= "
                f"{self.min_images} training images; an image's keywords are those in >= "
                f"{self.min_captions} of its captions; generic words removed")


class CaptionSources:
    """The captions of several datasets as one (``captions_of``), for vocabularies and labels
    over their union. Image ids must be distinct across the datasets."""

    def __init__(self, *datasets) -> None:
        self.datasets = datasets
        self._owner: dict[str, int] = {}
        for n, ds in enumerate(datasets):
            for i in ds.image_ids:
                if self._owner.setdefault(i, n) != n:
                    raise XmodalError(f"image id {i!r} is in two caption sources")

    def captions_of(self, image_id: str) -> list:
        n = self._owner.get(image_id)
        return [] if n is None else self.datasets[n].captions_of(image_id)


def caption_lemmas(data, image_ids: Sequence[str], pos: Sequence[str] = CONTENT_POS):
    """``image id -> [set of content lemmas of each caption]`` (cached spaCy preprocessing)."""
    from xmodal.features.captions import preprocess_tagged

    caps = [c for i in image_ids for c in data.captions_of(i)]
    if not caps:
        raise XmodalError("no captions for the given images")
    tagged = preprocess_tagged([c.text for c in caps])
    pos = set(pos)
    out: dict[str, list[set[str]]] = defaultdict(list)
    for c, toks in zip(caps, tagged):
        out[c.image_id].append({lemma for lemma, p in toks if p in pos and lemma not in GENERIC
                                and lemma.isascii() and len(lemma) > 1})
    return out


def build_keyword_vocabulary(
    data,
    train_ids: Sequence[str],
    min_images: int = 25,
    min_captions: int = 1,
    pos: Sequence[str] = CONTENT_POS,
) -> KeywordVocabulary:
    """Keywords: content lemmas in the captions of >= ``min_images`` training images."""
    lem = caption_lemmas(data, train_ids, pos)
    df: Counter[str] = Counter()
    for sets in lem.values():
        df.update(_image_words(sets, min_captions))
    words = sorted(w for w, n in df.items() if n >= min_images)
    if not words:
        raise XmodalError(f"no keyword reaches {min_images} training images; lower min_images")
    return KeywordVocabulary(words, [df[w] for w in words], tuple(pos), min_images, min_captions)


def _image_words(caption_sets: list[set[str]], min_captions: int) -> set[str]:
    counts = Counter(w for s in caption_sets for w in s)
    return {w for w, n in counts.items() if n >= min_captions}


def image_keyword_matrix(data, image_ids: Sequence[str], vocab: KeywordVocabulary) -> np.ndarray:
    """(n_images, n_words) bool: the image's captions contain the keyword."""
    lem = caption_lemmas(data, image_ids, vocab.pos)
    index = vocab.index()
    y = np.zeros((len(image_ids), len(vocab)), dtype=bool)
    for i, image_id in enumerate(image_ids):
        for w in _image_words(lem.get(image_id, []), vocab.min_captions):
            j = index.get(w)
            if j is not None:
                y[i, j] = True
    return y
