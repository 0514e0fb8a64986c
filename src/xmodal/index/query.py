"""Combined queries: sentences and example images, each with a weight, and terms to push away.

One expression, written as separate words on the command line or as one string::

    "2:golden retriever" + pool.jpg - people
    "a golden retriever + ~/Pictures/pool.jpg - people"

A term is an image when it names an existing image file (or an indexed photo), else a sentence;
a term written as an image file's path that names no file is an error.
``W:`` in front of a term weighs it (default 1). The query vector is the weighted sum of the
terms' unit vectors, the ``-`` terms subtracted, normalised again: photos are ranked by their
cosine similarity to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.data.folder import IMAGE_EXTENSIONS
from xmodal.errors import XmodalError

# "2:a dog" weighs "a dog" by 2; "12:30 lunch" starts with a time of day, not a weight
_WEIGHT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*:(?!//|\d)(.+)$", re.S)
_OPERATOR = re.compile(r"(?:^|\s)([+-])(?=\s|$)")


@dataclass(frozen=True)
class Term:
    """One part of a query: a sentence or an image (path, or uploaded PIL image)."""

    value: Any
    kind: str = "text"  # "text" or "image"
    weight: float = 1.0  # negative: push away

    def describe(self) -> str:
        sign = "-" if self.weight < 0 else "+"
        name = self.value if isinstance(self.value, str) else "an uploaded image"
        w = abs(self.weight)
        return f"{sign} {'' if w == 1 else f'{w:g}:'}{name}"


def looks_like_image(text: str) -> bool:
    path = Path(text).expanduser()
    return path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()


def looks_like_path(text: str) -> bool:
    """Whether a term is written as an image file's name or path, whether or not the file
    exists: an image extension, and no space unless it starts as a path does (``pool.jpg``,
    ``~/Pictures/at the pool.jpg``); "a cat.jpg" with a space is a sentence."""
    text = text.strip()
    if Path(text).suffix.lower() not in IMAGE_EXTENSIONS:
        return False
    return text.startswith(("/", "~", "./", "../")) or not any(c.isspace() for c in text)


def term(text: str, sign: float = 1.0, kind: str | None = None,
         check_files: bool = True) -> Term:
    """A term from its written form, ``W:`` weight included. With ``check_files``, a term
    written as an image file's path (:func:`looks_like_path`) that names no file is an error
    rather than a sentence (a mistyped file name used to be searched as words)."""
    weight, body = 1.0, text.strip()
    m = _WEIGHT.match(body)
    if m:
        weight, body = float(m[1]), m[2].strip()
    if not body:
        raise XmodalError(f"empty query term in {text!r}")
    if not weight > 0:
        raise XmodalError(f"the weight of {body!r} must be above 0 (use '- {body}' to push it "
                          "away)")
    if kind is None and check_files and looks_like_path(body) and not looks_like_image(body):
        raise XmodalError(f"no image file {body!r} (in {text.strip()!r}): check its name and "
                          "folder; to search for the words, leave out the file extension")
    kind = kind or ("image" if looks_like_image(body) else "text")
    return Term(str(Path(body).expanduser()) if kind == "image" else body, kind, sign * weight)


def parse_query(parts: str | list[str], check_files: bool = True) -> list[Term]:
    """Terms of a query written as one string or as command-line words (``+`` and ``-`` on their
    own, or surrounded by spaces inside one string, join terms). ``check_files``: see
    :func:`term` (the server passes False: it answers missing and unindexed files alike)."""
    words = [parts] if isinstance(parts, str) else list(parts)
    tokens: list[str] = []
    for word in words:
        if word.strip() in ("+", "-"):
            tokens.append(word.strip())
        else:
            tokens += [t for t in _OPERATOR.split(" " + word + " ") if t.strip()]
    groups: list[tuple[float, list[str]]] = []
    for tok in tokens:
        if tok.strip() in ("+", "-"):
            if groups and not groups[-1][1]:
                raise XmodalError(f"two operators in a row in {' '.join(words)!r}")
            groups.append((-1.0 if tok.strip() == "-" else 1.0, []))
        elif groups:
            groups[-1][1].append(tok.strip())
        else:
            groups.append((1.0, [tok.strip()]))
    if not groups or not groups[-1][1]:
        raise XmodalError("the search query is empty or ends with an operator: give a sentence "
                          "such as 'a dog on a beach'")
    terms = [term(" ".join(ws), sign, check_files=check_files) for sign, ws in groups]
    if not any(t.weight > 0 for t in terms):
        raise XmodalError("the query only pushes away: add something to look for, e.g. "
                          "'a beach - people'")
    return terms


def combine(vectors: np.ndarray, weights: list[float]) -> np.ndarray:
    """The query vector: sum of weight x unit vector, normalised (shape ``(1, dim)``)."""
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    q = (np.asarray(weights, dtype=np.float64)[:, None] * v).sum(0)
    norm = np.linalg.norm(q)
    if not norm > 1e-9:
        raise XmodalError("the query's terms cancel each other out: change a weight")
    return (q / norm).astype(np.float32)[None, :]
