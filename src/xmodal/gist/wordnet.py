"""WordNet 3.0 as a knowledge graph: noun and verb synsets, read straight from the database files.

Nodes are synsets named as NLTK names them (``dog.n.01``); edges are hypernym/hyponym (and their
instance variants), member/part/substance meronym and holonym, and derivational links (collapsed
from words to synsets). Node text = lemmas + gloss; the prior is ``log(1 + tagged sense count)``
from ``index.sense`` (WordNet's analogue of a Wikipedia in-degree prominence prior).

The files come from the Debian packages ``wordnet-base`` + ``wordnet-sense-index``
(``/usr/share/wordnet``), ``$XMODAL_WORDNET``, or an NLTK data folder (``corpora/wordnet``). They
are parsed directly (no NLTK needed), cached on disk under ``cache_dir()/gist`` and memoised per
process.
ImageNet ids (``n02084071``) map to synsets by offset: :meth:`WordNetGraph.from_wnid`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.gist.graph import KnowledgeGraph, normalize_key
from xmodal.paths import cache_dir

POINTERS = {
    "@": "hypernym",
    "@i": "instance_hypernym",
    "~": "hyponym",
    "~i": "instance_hyponym",
    "#m": "member_holonym",
    "#s": "substance_holonym",
    "#p": "part_holonym",
    "%m": "member_meronym",
    "%s": "substance_meronym",
    "%p": "part_meronym",
    "+": "derivation",
}
POS = {"n": "noun", "v": "verb"}
# Morphy's detachment rules (WordNet morphy(7WN)).
_RULES = {
    "n": [
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ],
    "v": [
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ],
}


def wordnet_dir(path: str | os.PathLike | None = None) -> Path:
    """Folder holding ``data.noun`` etc.: the argument, ``$XMODAL_WORDNET``, NLTK_DATA, Debian."""
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    if os.environ.get("XMODAL_WORDNET"):
        candidates.append(Path(os.environ["XMODAL_WORDNET"]))
    for d in os.environ.get("NLTK_DATA", "").split(os.pathsep):
        if d:
            candidates.append(Path(d) / "corpora" / "wordnet")
    candidates.append(Path("/usr/share/wordnet"))
    for c in candidates:
        if (c / "data.noun").is_file() and (c / "index.noun").is_file():
            return c
    raise XmodalError(
        "WordNet 3.0 database files not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); install them with `apt-get install wordnet-base wordnet-sense-index` "
        "or set XMODAL_WORDNET to a folder holding data.noun and index.noun"
    )


class WordNetGraph(KnowledgeGraph):
    """WordNet nouns and verbs as a :class:`KnowledgeGraph`, with morphology-aware lookup."""

    def __init__(self, *args, offsets: dict[tuple[str, int], str], exceptions: dict, **kw):
        super().__init__(*args, **kw)
        self.offsets = offsets  # (pos, offset) -> synset name
        self.exceptions = exceptions  # (pos, inflected) -> [base forms]

    def from_wnid(self, wnid: str) -> str | None:
        """ImageNet/WordNet id like ``n02084071`` -> synset name (``dog.n.01``), or None."""
        m = re.fullmatch(r"([nv])(\d{8})", wnid.strip())
        if not m:
            return None
        return self.offsets.get((m.group(1), int(m.group(2))))

    def lemmas(self, text: str) -> list[str]:
        key = normalize_key(text)
        out = [key]
        for pos in ("n", "v"):
            out.extend(self.exceptions.get((pos, key), []))
            for suffix, repl in _RULES[pos]:
                if key.endswith(suffix) and len(key) > len(suffix) + 1:
                    out.append(key[: -len(suffix)] + repl)
        seen: list[str] = []
        for k in out:
            if k in self.lexicon and k not in seen:
                seen.append(k)
        return seen or [key]

    def lookup(self, text: str, max_senses: int | None = None, pos: str | None = None) -> list[str]:
        """Synsets for a word or phrase, most frequent sense first; ``pos`` 'n' or 'v' filters."""
        found = super().lookup(text)
        if pos is not None:
            found = [s for s in found if s.split(".")[-2] == pos]
        return found[:max_senses] if max_senses is not None else found

    def display_name(self, node: str) -> str:
        return self.label(node)

    @property
    def candidate_mask(self) -> np.ndarray:
        """Noun synsets only: gists are concepts; verbs still link them via derivations."""
        mask = getattr(self, "_noun_mask", None)
        if mask is None:
            mask = np.array([".n." in i for i in self.ids], dtype=bool)
            self._noun_mask = mask
        return mask

    def _extra_state(self) -> dict:
        return {
            "offsets": [[p, o, s] for (p, o), s in self.offsets.items()],
            "exceptions": [[p, k, v] for (p, k), v in self.exceptions.items()],
        }

    def _restore_extra(self, extra: dict) -> None:
        self.offsets = {(p, int(o)): s for p, o, s in extra["offsets"]}
        self.exceptions = {(p, k): v for p, k, v in extra["exceptions"]}


def _parse(root: Path) -> WordNetGraph:
    ids: list[str] = []
    labels: list[str] = []
    texts: list[str] = []
    lexicon: dict[str, list[str]] = {}
    offsets: dict[tuple[str, int], str] = {}
    # Sense order of each lemma from index.<pos>: names synsets like NLTK and orders the lexicon.
    order: dict[str, dict[str, list[int]]] = {}
    for pos, name in POS.items():
        lem: dict[str, list[int]] = {}
        with open(root / f"index.{name}", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" "):
                    continue
                parts = line.split()
                lemma, n_syn, p_cnt = parts[0], int(parts[2]), int(parts[3])
                syn = parts[6 + p_cnt : 6 + p_cnt + n_syn]
                lem[lemma] = [int(s) for s in syn]
        order[pos] = lem
    counts: dict[tuple[str, int], int] = {}
    sense_file = root / "index.sense"
    if sense_file.is_file():
        with open(sense_file, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 4:
                    continue
                ss_type = parts[0].split("%")[1][:1]
                pos = {"1": "n", "2": "v"}.get(ss_type)
                if pos is None:
                    continue
                k = (pos, int(parts[1]))
                counts[k] = counts.get(k, 0) + int(parts[3])
    raw_edges: list[tuple[str, int, str, int, str]] = []
    for pos, name in POS.items():
        with open(root / f"data.{name}", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" "):
                    continue
                body, _, gloss = line.partition("|")
                parts = body.split()
                offset = int(parts[0])
                w_cnt = int(parts[3], 16)
                words = [parts[4 + 2 * i] for i in range(w_cnt)]
                words = [re.sub(r"\(.*\)$", "", w) for w in words]  # adjective markers
                j = 4 + 2 * w_cnt
                p_cnt = int(parts[j])
                j += 1
                for _ in range(p_cnt):
                    sym, tgt, tpos = parts[j], int(parts[j + 1]), parts[j + 2]
                    j += 4
                    tpos = "n" if tpos == "n" else ("v" if tpos == "v" else None)
                    if sym in POINTERS and tpos is not None:
                        raw_edges.append((pos, offset, POINTERS[sym], 0, f"{tpos}{tgt}"))
                first = words[0].lower()
                senses = order[pos].get(first, [])
                sense_no = senses.index(offset) + 1 if offset in senses else 1
                sid = f"{first}.{pos}.{sense_no:02d}"
                offsets[(pos, offset)] = sid
                ids.append(sid)
                labels.append(words[0].replace("_", " "))
                lemma_text = ", ".join(w.replace("_", " ") for w in words)
                texts.append(f"{lemma_text}: {gloss.strip()}")
    prior = [0.0] * len(ids)
    idx = {sid: i for i, sid in enumerate(ids)}
    for (pos, off), sid in offsets.items():
        prior[idx[sid]] = math.log1p(counts.get((pos, off), 0))
    edges = []
    for pos, off, rel, _, tgt in raw_edges:
        t = offsets.get((tgt[0], int(tgt[1:])))
        if t is not None:
            edges.append((offsets[(pos, off)], rel, t))
    for pos, lem in order.items():
        for lemma, offs in lem.items():
            lexicon.setdefault(lemma, []).extend(
                offsets[(pos, o)] for o in offs if (pos, o) in offsets
            )
    exceptions: dict[tuple[str, str], list[str]] = {}
    for pos, name in (("n", "noun"), ("v", "verb")):
        exc = root / f"{name}.exc"
        if exc.is_file():
            with open(exc, encoding="utf-8", errors="replace") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2:
                        exceptions[(pos, normalize_key(parts[0]))] = [
                            normalize_key(p) for p in parts[1:]
                        ]
    # Labels are added to the lexicon by the base class; keep WordNet's own sense order first.
    g = WordNetGraph(
        ids,
        labels,
        texts,
        edges,
        lexicon=lexicon,
        prior=prior,
        offsets=offsets,
        exceptions=exceptions,
    )
    return g


_CACHE_VERSION = 2


@lru_cache(maxsize=2)
def _load(root: str) -> WordNetGraph:
    files = [Path(root) / f for f in ("data.noun", "data.verb", "index.noun", "index.verb")]
    stamp = "-".join(str(f.stat().st_size) + "_" + str(int(f.stat().st_mtime)) for f in files)
    key = hashlib.sha1(f"{root}|{stamp}|{_CACHE_VERSION}".encode()).hexdigest()[:16]
    folder = cache_dir() / "gist" / f"wordnet-{key}"
    if (folder / "graph.json").is_file():
        try:
            return WordNetGraph.load_state(folder)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache: rebuild it below
    g = _parse(Path(root))
    from xmodal.gist.ql import collection_stats

    collection_stats(g)  # computed once, saved with the graph
    try:
        g.save_state(folder)
    except OSError:
        pass  # read-only cache: still usable, just slower next time
    return g


def load_wordnet_graph(path: str | os.PathLike | None = None) -> WordNetGraph:
    """Parse (once per process) the WordNet 3.0 noun and verb graph."""
    return _load(str(wordnet_dir(path).resolve()))
