"""A captioned image collection read from a user's local copy of a benchmark.

Every local-benchmark loader (:mod:`xmodal.data.benchmarks_local`,
:mod:`xmodal.data.generic_sources`) returns one :class:`CaptionedImages`: the images in the
benchmark's order, the image file of each, and the captions (each naming its image). Images that
live inside archives (tar shards, Parquet / Arrow tables) are written once to a content-addressed
folder of the cache (:func:`materialise_image`), so every model reads plain files.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from xmodal.data.flickr8k import Caption
from xmodal.errors import XmodalError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")


@dataclass
class CaptionedImages:
    name: str  # "coco", "flickr30k", "xm3600", "webdataset", "hf-dataset", "caption-file"
    root: Path  # the folder (or file) it was read from
    image_ids: list[str]  # in the benchmark's order
    captions: list[Caption]  # each caption names its image; ids unique
    files: dict[str, Path]  # image id -> image file
    notes: list[str] = field(default_factory=list)  # what the loader skipped or assumed

    def __post_init__(self) -> None:
        self._by_image: dict[str, list[Caption]] = {}
        for c in self.captions:
            self._by_image.setdefault(c.image_id, []).append(c)

    def image_path(self, image_id: str) -> Path:
        return self.files[image_id]

    def captions_of(self, image_id: str) -> list[Caption]:
        return list(self._by_image.get(image_id, []))


def captions_from(pairs: list[tuple[str, str, str]]) -> list[Caption]:
    """Caption records from ``(caption id, image id, text)`` triples, numbered per image."""
    count: dict[str, int] = {}
    out = []
    for cid, image_id, text in pairs:
        n = count.get(image_id, 0)
        count[image_id] = n + 1
        out.append(Caption(cid, image_id, n, text))
    return out


def find_file(root: Path, names: list[str], what: str) -> Path:
    """The first of ``root / name`` that exists, or an error naming every place looked."""
    for name in names:
        if (root / name).is_file():
            return root / name
    raise XmodalError(f"{what} not found: expected one of "
                      + ", ".join(str(root / n) for n in names))


def resolve_images(root: Path, wanted: dict[str, list[str]], what: str) -> dict[str, Path]:
    """``image id -> file`` trying each id's candidate relative paths under ``root``; an error
    naming the first missing image and where it was looked for when any is missing."""
    files: dict[str, Path] = {}
    missing: list[tuple[str, list[str]]] = []
    for image_id, candidates in wanted.items():
        for rel in candidates:
            p = root / rel
            if p.is_file():
                files[image_id] = p
                break
        else:
            missing.append((image_id, candidates))
    if missing:
        image_id, candidates = missing[0]
        raise XmodalError(
            f"{len(missing)} of {len(wanted)} {what} images are missing under {root}; the first, "
            f"{image_id!r}, was expected at one of: "
            + ", ".join(str(root / c) for c in candidates))
    return files


def materialised_dir() -> Path:
    from xmodal.paths import cache_dir

    return cache_dir() / "benchmark-images"


def materialise_image(data: bytes, suffix: str = ".jpg") -> Path:
    """Write image bytes once to the cache, named by their SHA-1 (same bytes, same file)."""
    if not data:
        raise XmodalError("an image entry holds no bytes")
    digest = hashlib.sha1(data).hexdigest()
    suffix = suffix.lower() if suffix.lower() in IMAGE_SUFFIXES else ".jpg"
    path = materialised_dir() / digest[:2] / f"{digest}{suffix}"
    if not path.is_file() or path.stat().st_size != len(data):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path
