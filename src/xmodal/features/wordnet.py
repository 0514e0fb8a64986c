"""Offline WordNet 3.0 for NLTK: ``ensure_wordnet()`` then ``from nltk.corpus import wordnet``.

The database files come from the Debian packages ``wordnet-base`` + ``wordnet-sense-index``
(``/usr/share/wordnet``; install with ``apt-get install wordnet-base wordnet-sense-index``) or from
``$XMODAL_WORDNET``. NLTK expects them under ``<dir>/corpora/wordnet/`` together with a
``lexnames`` file that Debian leaves out, so :func:`ensure_wordnet` copies the files once into
``cache_dir()/nltk_data/corpora/wordnet/``, writes the standard 45-line ``lexnames`` (see
lexnames(5WN)), and puts that folder on ``nltk.data.path`` (and ``$NLTK_DATA``). Nothing is
downloaded. Used by the Lin similarity (``xmodal.features.lexical_similarity``) and gist detection.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.paths import cache_dir

# lexnames(5WN): file number, name, syntactic category (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_POS_NUM = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
REQUIRED = (
    "data.noun",
    "index.noun",
    "data.verb",
    "index.verb",
    "data.adj",
    "index.adj",
    "data.adv",
    "index.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
)


def lexnames_text() -> str:
    """The 45-line ``lexnames`` file: ``NN<TAB>lexname<TAB>pos``."""
    return "".join(
        f"{i:02d}\t{name}\t{_POS_NUM[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)
    )


def _source_dir(source: str | os.PathLike | None) -> Path:
    candidates = [Path(source)] if source is not None else []
    if os.environ.get("XMODAL_WORDNET"):
        candidates.append(Path(os.environ["XMODAL_WORDNET"]))
    candidates.append(Path("/usr/share/wordnet"))
    for c in candidates:
        if all((c / f).is_file() for f in ("data.noun", "index.noun")):
            return c
    raise XmodalError(
        "WordNet 3.0 database files not found in "
        + ", ".join(map(str, candidates))
        + "; install them with `apt-get install wordnet-base wordnet-sense-index` "
        "or set XMODAL_WORDNET to a folder holding data.noun and index.noun"
    )


def ensure_wordnet(
    source: str | os.PathLike | None = None, root: str | os.PathLike | None = None
) -> Path:
    """Make ``nltk.corpus.wordnet`` work offline; returns the NLTK data folder it set up.

    Idempotent and cheap after the first call (the copy is about 30 MB, done once).
    """
    target_root = Path(root) if root is not None else cache_dir() / "nltk_data"
    wn_dir = target_root / "corpora" / "wordnet"
    if not (wn_dir / "lexnames").is_file() or not (wn_dir / "data.noun").is_file():
        src = _source_dir(source)
        tmp = wn_dir.with_name(f"wordnet.tmp{os.getpid()}")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                shutil.copy2(f, tmp / f.name)
        (tmp / "lexnames").write_text(lexnames_text())
        missing = [f for f in REQUIRED if not (tmp / f).is_file()]
        if missing:
            shutil.rmtree(tmp)
            raise XmodalError(f"WordNet files missing in {src}: {', '.join(missing)}")
        if wn_dir.exists():
            shutil.rmtree(tmp)  # another process finished first
        else:
            try:
                tmp.rename(wn_dir)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
    import nltk

    if str(target_root) not in nltk.data.path:
        nltk.data.path.insert(0, str(target_root))
    paths = os.environ.get("NLTK_DATA", "").split(os.pathsep)
    if str(target_root) not in paths:
        os.environ["NLTK_DATA"] = os.pathsep.join([str(target_root)] + [p for p in paths if p])
    return target_root


def wordnet():
    """The NLTK WordNet corpus reader, set up offline by :func:`ensure_wordnet`."""
    ensure_wordnet()
    from nltk.corpus import wordnet as wn

    wn.ensure_loaded()
    return wn
