"""ECCV Caption, CxC and original COCO-5K positives, read from the ``eccv-caption`` package's JSON.

Only ids ship with the package (no images, no caption texts): 5,000 COCO test images and their
25,000 captions. Each source gives separate image->captions and caption->images positives.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError

SOURCES = {"eccv": "eccv", "cxc": "cxc", "coco5k": "original"}


@dataclass
class CocoPositives:
    source: str
    image_ids: list[str]  # the 5,000 COCO test images (sorted)
    caption_ids: list[str]  # the 25,000 COCO test captions (package order)
    image_to_captions: dict[str, list[str]]  # i2t queries -> positive captions
    caption_to_images: dict[str, list[str]]  # t2i queries -> positive images


def _package_dir() -> Path:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the package warns when ujson is missing
            import eccv_caption
    except ImportError as exc:
        raise XmodalError("the eccv-caption package is not installed (pip install eccv-caption)") from exc
    return Path(eccv_caption.__file__).parent / "data"


def _read(path: Path) -> dict[str, list[str]]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise XmodalError(f"{path}: cannot read positives ({exc})") from exc
    return {str(k): [str(v) for v in vs] for k, vs in raw.items()}


def load_coco_positives(name: str) -> CocoPositives:
    """Positives of ``name`` in {"eccv", "cxc", "coco5k"} over the full COCO 5K test gallery."""
    if name not in SOURCES:
        raise XmodalError(f"unknown positives {name!r}; choose from {sorted(SOURCES)}")
    d = _package_dir()
    prefix = SOURCES[name]
    caption_ids = [str(i) for i in np.load(d / "coco_test_ids.npy")]
    original = _read(d / "original_caption_to_image.json")
    image_ids = sorted({v[0] for v in original.values()}, key=int)
    return CocoPositives(
        name,
        image_ids,
        caption_ids,
        _read(d / f"{prefix}_image_to_caption.json"),
        _read(d / f"{prefix}_caption_to_image.json"),
    )
