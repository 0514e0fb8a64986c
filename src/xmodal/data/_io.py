"""Small helpers shared by the loaders: reading tab-separated lines with file:line errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from xmodal.errors import XmodalError


def require_file(path: Path) -> Path:
    if not path.is_file():
        raise XmodalError(f"missing file: {path}")
    return path


def tsv_rows(path: Path, n_fields: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) for each non-blank line; wrong field counts raise XmodalError."""
    with open(require_file(path), encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\n\r")
            if not line.strip():
                continue
            fields = line.split("\t")
            if n_fields is not None and len(fields) != n_fields:
                raise XmodalError(
                    f"{path}:{lineno}: expected {n_fields} tab-separated fields, got {len(fields)}"
                )
            yield lineno, fields


def parse_number(value: str, kind: type, path: Path, lineno: int):
    try:
        return kind(value)
    except ValueError:
        raise XmodalError(f"{path}:{lineno}: not a number: {value!r}") from None
