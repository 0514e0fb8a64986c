"""A generic folder of images with an optional captions file (CSV or JSONL: image, caption)."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from xmodal.data.image_files import RAW_EXTENSIONS
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
} | RAW_EXTENSIONS  # RAW camera files, read through LibRaw (rawpy)



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
    """``image -> [captions]`` from a CSV, TSV or JSONL caption file (the one reader,
    :func:`xmodal.data.caption_files.read_caption_pairs`; errors name the file and line)."""
    from xmodal.data.caption_files import read_caption_pairs

    return read_caption_pairs(path)


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
