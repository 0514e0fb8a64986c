"""Flickr8K (Hodosh et al. 2013) in its official layout: images, captions, splits, judgments."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from xmodal.data._io import parse_number, require_file, tsv_rows
from xmodal.errors import XmodalError
from xmodal.paths import dataset_dir

IMAGE_DIR = "Flicker8k_Dataset"
TEXT_DIR = "Flickr8k_text"
SPLIT_FILES = {
    "train": "Flickr_8k.trainImages.txt",
    "dev": "Flickr_8k.devImages.txt",
    "test": "Flickr_8k.testImages.txt",
}


@dataclass(frozen=True)
class Caption:
    id: str  # "<image id>#<0-4>", e.g. "1000268201_693b08cb0e.jpg#2"
    image_id: str
    index: int
    text: str


@dataclass(frozen=True)
class ExpertJudgment:
    image_id: str
    caption_id: str
    scores: tuple[int, int, int]  # three experts, 1-4 (4 = describes the image without errors)

    @property
    def mean(self) -> float:
        return sum(self.scores) / 3.0


@dataclass(frozen=True)
class CrowdJudgment:
    image_id: str
    caption_id: str
    yes_fraction: float
    n_yes: int
    n_no: int


@dataclass
class Flickr8k:
    root: Path
    image_ids: list[str]
    captions: list[Caption]
    splits: dict[str, list[str]]
    expert: list[ExpertJudgment] = field(default_factory=list)
    crowd: list[CrowdJudgment] = field(default_factory=list)
    n_skipped_captions: int = 0

    def __post_init__(self) -> None:
        self._by_image: dict[str, list[Caption]] = {}
        for c in self.captions:
            self._by_image.setdefault(c.image_id, []).append(c)
        self._by_id = {c.id: c for c in self.captions}

    def image_path(self, image_id: str) -> Path:
        return self.root / IMAGE_DIR / image_id

    def captions_of(self, image_id: str) -> list[Caption]:
        return self._by_image.get(image_id, [])

    def caption(self, caption_id: str) -> Caption:
        try:
            return self._by_id[caption_id]
        except KeyError:
            raise XmodalError(f"unknown Flickr8K caption id: {caption_id}") from None

    def split(self, name: str) -> list[str]:
        if name not in self.splits:
            raise XmodalError(f"unknown split {name!r}; choose from {sorted(self.splits)}")
        return self.splits[name]


def load_flickr8k(path: str | os.PathLike | None = None, judgments: bool = True) -> Flickr8k:
    """Load Flickr8K from ``path`` (the data root or the ``flickr8k`` folder itself).

    Caption ids whose image file is missing are skipped and counted in a warning.
    """
    root = dataset_dir("flickr8k", path)
    text = root / TEXT_DIR
    image_dir = root / IMAGE_DIR
    if not image_dir.is_dir():
        raise XmodalError(f"missing image folder: {image_dir}")
    present = {p.name for p in image_dir.iterdir() if p.is_file()}

    captions: list[Caption] = []
    skipped = 0
    token_file = text / "Flickr8k.token.txt"
    for lineno, (cid, sentence) in tsv_rows(token_file, 2):
        image_id, sep, idx = cid.rpartition("#")
        if not sep or not idx.isdigit():
            raise XmodalError(f"{token_file}:{lineno}: malformed caption id {cid!r}")
        if image_id not in present:
            skipped += 1
            continue
        captions.append(Caption(cid, image_id, int(idx), sentence.strip()))
    if skipped:
        warnings.warn(
            f"Flickr8K: skipped {skipped} caption(s) whose image file is missing", stacklevel=2
        )

    with_captions = {c.image_id for c in captions}
    image_ids = sorted(with_captions)
    splits = {}
    for name, fname in SPLIT_FILES.items():
        ids = [fields[0].strip() for _, fields in tsv_rows(text / fname, 1)]
        splits[name] = [i for i in ids if i in with_captions]

    expert: list[ExpertJudgment] = []
    crowd: list[CrowdJudgment] = []
    if judgments:
        efile = require_file(text / "ExpertAnnotations.txt")
        for lineno, f in tsv_rows(efile, 5):
            scores = tuple(parse_number(s, int, efile, lineno) for s in f[2:5])
            expert.append(ExpertJudgment(f[0], f[1], scores))  # type: ignore[arg-type]
        cfile = require_file(text / "CrowdFlowerAnnotations.txt")
        for lineno, f in tsv_rows(cfile, 5):
            crowd.append(
                CrowdJudgment(
                    f[0],
                    f[1],
                    parse_number(f[2], float, cfile, lineno),
                    parse_number(f[3], int, cfile, lineno),
                    parse_number(f[4], int, cfile, lineno),
                )
            )
    return Flickr8k(root, image_ids, captions, splits, expert, crowd, skipped)
