"""The one caption-file reader: CLI (`index`, `describe`, `eval -p folder`) and server alike.

The format is sniffed from the content, not the file name:

- **JSONL**: the first non-empty line is a JSON object; objects with an image (``image``, ``id``,
  ``file_name``, ``filename`` or ``path``) and a caption (``caption``, ``text``, ``sentence`` or
  ``raw``) (a pool may give the caption alone, with an optional ``id``);
- **TSV**: a tab on any of the first lines; ``image<TAB>caption`` per line (the first tab
  splits, so captions may hold commas and further tabs); a header line such as
  ``image<TAB>caption`` is skipped;
- **CSV**: a header naming ``image`` and ``caption`` columns, or (for image-caption pairs) two
  columns per row;
- **plain lines** (caption pools only): one caption per line.

Errors name the source and the line. A UTF-8 byte-order mark is ignored.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from xmodal.errors import XmodalError

SNIFF_LINES = 20


def _text(source: str | os.PathLike | bytes, name: str | None) -> tuple[str, str]:
    if isinstance(source, bytes):
        data, label = source, name or "caption file"
    else:
        path = Path(source)
        if not path.is_file():
            raise XmodalError(f"captions file not found: {path}")
        data, label = path.read_bytes(), name or str(path)
    try:
        return data.decode("utf-8-sig"), label
    except UnicodeDecodeError:
        raise XmodalError(f"{label}: not UTF-8 text") from None


JSONL_IMAGE_KEYS = ("image", "id", "file_name", "filename", "path")
JSONL_CAPTION_KEYS = ("caption", "text", "sentence", "raw")
HEADER_IMAGE = {"image", "image_name", "image_id", "filename", "file_name", "file", "path", "img",
                "id"}
HEADER_CAPTION = {"caption", "captions", "text", "sentence", "comment", "description"}


def _first_key(obj: dict, keys: tuple[str, ...]):
    return next((obj[k] for k in keys if k in obj), None)


def sniff(text: str) -> str:
    """"jsonl", "tsv", "csv" or "lines"."""
    lines = [ln for ln in text.splitlines() if ln.strip()][:SNIFF_LINES]
    if not lines:
        return "lines"
    if lines[0].lstrip().startswith("{"):
        try:
            if isinstance(json.loads(lines[0]), dict):
                return "jsonl"
        except json.JSONDecodeError:
            pass  # e.g. an image name that starts with a brace
    if any("\t" in ln for ln in lines):
        return "tsv"
    header = [c.strip().lower() for c in next(csv.reader([lines[0]]))]
    if "image" in header and "caption" in header:
        return "csv"
    return "csv-or-lines"


def records(source: str | os.PathLike | bytes, pairs: bool, name: str | None = None
            ) -> tuple[list[tuple[str | None, str, int]], str]:
    """(image or id or None, caption, line number) per caption, and the source's label.

    ``pairs=True``: every caption must name its image (TSV, CSV, JSONL); ``False``: a pool,
    where plain lines are captions without ids."""
    text, label = _text(source, name)
    kind = sniff(text)
    out: list[tuple[str | None, str, int]] = []

    def add(key, caption, lineno: int) -> None:
        if key is not None and (not isinstance(key, str) or not key.strip()):
            raise XmodalError(f"{label}:{lineno}: missing image name")
        if not isinstance(caption, str) or not caption.strip():
            raise XmodalError(f"{label}:{lineno}: missing caption")
        if pairs and key is None:
            raise XmodalError(f"{label}:{lineno}: expected an image name and a caption")
        out.append((None if key is None else key.strip(), caption.strip(), lineno))

    lines = text.splitlines()
    if kind == "jsonl":
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise XmodalError(f"{label}:{lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise XmodalError(f"{label}:{lineno}: expected an object with image and caption")
            caption = _first_key(obj, JSONL_CAPTION_KEYS)
            if caption is None:
                raise XmodalError(f"{label}:{lineno}: no caption: the object has "
                                  f"{', '.join(map(repr, obj)) or 'no keys'}; the caption key is "
                                  f"one of {', '.join(JSONL_CAPTION_KEYS)} and the image key one "
                                  f"of {', '.join(JSONL_IMAGE_KEYS)}")
            add(_first_key(obj, JSONL_IMAGE_KEYS), caption, lineno)
    elif kind == "tsv":
        header_line = next((n for n, ln in enumerate(lines) if ln.strip()), None)
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if lineno - 1 == header_line and _tsv_header(line):
                continue  # "image<TAB>caption": a header, not an image called "image"
            if "\t" not in line:
                if pairs:
                    raise XmodalError(f"{label}:{lineno}: expected image<TAB>caption")
                add(None, line, lineno)
                continue
            key, caption = line.split("\t", 1)
            add(key, caption, lineno)
    elif kind == "csv" or (kind == "csv-or-lines" and pairs):
        rows = list(csv.reader(io.StringIO(text)))
        header = [c.strip().lower() for c in rows[0]] if rows else []
        if "image" in header and "caption" in header:
            ii, ci, body, first = header.index("image"), header.index("caption"), rows[1:], 2
        else:
            ii, ci, body, first = 0, 1, rows, 1
        for lineno, row in enumerate(body, start=first):
            if not any(c.strip() for c in row):
                continue
            if len(row) <= max(ii, ci):
                raise XmodalError(f"{label}:{lineno}: expected image and caption columns "
                                  "(CSV with a header 'image,caption', TSV or JSONL)")
            add(row[ii], row[ci], lineno)
    else:  # a pool of plain lines: commas are part of the captions
        for lineno, line in enumerate(lines, start=1):
            if line.strip():
                add(None, line, lineno)
    return out, label


def _tsv_header(line: str) -> bool:
    cells = [c.strip().lower() for c in line.split("\t")]
    return len(cells) >= 2 and cells[0] in HEADER_IMAGE and cells[1] in HEADER_CAPTION


def read_caption_pairs(source: str | os.PathLike | bytes) -> dict[str, list[str]]:
    """``image -> [captions]`` from a CSV, TSV or JSONL file of (image, caption)."""
    out: dict[str, list[str]] = {}
    for image, caption, _ in records(source, pairs=True)[0]:
        out.setdefault(image, []).append(caption)
    return out


def read_caption_pool(source: str | os.PathLike | bytes, name: str | None = None
                      ) -> tuple[list[str], list[str]]:
    """(ids, captions) of a pool: plain lines (ids ``line N``), ``id<TAB>caption``, or a
    CSV/JSONL of (image, caption) (the image is the id). An empty pool is an error."""
    rows, label = records(source, pairs=False, name=name)
    if not rows:
        raise XmodalError(f"{label}: no captions in the file (one caption per line)")
    ids = [key if key is not None else f"line {lineno}" for key, _, lineno in rows]
    return ids, [caption for _, caption, _ in rows]
