"""A generic folder of images with an optional captions file (CSV or JSONL: image, caption)."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from xmodal.errors import XmodalError

IMAGE_EXTENSIONS = {
    ".jpg",
    ".jpeg",
    ".png",
    ".gif",
    ".bmp",
    ".tif",
    ".tiff",
    ".webp",
    ".jfif",
    ".pgm",
    ".ppm",
    ".heic",  # iPhone photos (HEIF, read through pillow-heif)
    ".heif",
    ".avif",
}



@dataclass
class ImageFolder:
    root: Path
    image_ids: list[str]  # paths relative to root, with forward slashes
    captions: dict[str, list[str]] = field(default_factory=dict)  # image id -> captions

    def image_path(self, image_id: str) -> Path:
        return self.root / image_id

    def captions_of(self, image_id: str) -> list:
        """The image's captions as :class:`xmodal.data.flickr8k.Caption` records."""
        from xmodal.data.flickr8k import Caption

        return [Caption(f"{image_id}#{n}", image_id, n, text)
                for n, text in enumerate(self.captions.get(image_id, []))]


def read_captions(path: str | os.PathLike) -> dict[str, list[str]]:
    """Captions from a CSV (header with ``image`` and ``caption`` columns, or two columns) or a
    JSONL file (objects with ``image`` and ``caption``). Errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise XmodalError(f"captions file not found: {path}")
    out: dict[str, list[str]] = {}

    def add(image: object, caption: object, lineno: int) -> None:
        if not isinstance(image, str) or not image.strip():
            raise XmodalError(f"{path}:{lineno}: missing image name")
        if not isinstance(caption, str) or not caption.strip():
            raise XmodalError(f"{path}:{lineno}: missing caption")
        out.setdefault(image.strip(), []).append(caption.strip())

    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise XmodalError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise XmodalError(f"{path}:{lineno}: expected an object with image and caption")
                add(obj.get("image"), obj.get("caption"), lineno)
        return out
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return out
    header = [c.strip().lower() for c in rows[0]]
    if "image" in header and "caption" in header:
        ii, ci, body, first = header.index("image"), header.index("caption"), rows[1:], 2
    else:
        ii, ci, body, first = 0, 1, rows, 1
    for lineno, row in enumerate(body, start=first):
        if not any(c.strip() for c in row):
            continue
        if len(row) <= max(ii, ci):
            raise XmodalError(f"{path}:{lineno}: expected image and caption columns")
        add(row[ii], row[ci], lineno)
    return out


def load_image_folder(
    root: str | os.PathLike, captions: str | os.PathLike | None = None
) -> ImageFolder:
    """Every image file under ``root`` (recursive, sorted) and, optionally, their captions."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise XmodalError(f"not a folder: {root}")
    ids = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix.lower() in IMAGE_EXTENSIONS
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    caps = read_captions(captions) if captions is not None else {}
    return ImageFolder(root, ids, caps)
