"""Conceptual Captions, 18,643 web images (256x256) with their alt-text captions ("CC18K").

The images are a slice of Google's Conceptual Captions (Sharma et al. 2018) as downloaded by
img2dataset: one caption per image, ``KEY.jpg`` (the image, 256x256), ``KEY.txt`` (the
alt-text caption) and ``KEY.json`` (url, original size, EXIF; not read here) in five shard
folders ``00000`` ... ``00004``.

Getting the data (419 MB; keep it outside the repository, by default ``../data/cc18k``)::

    git clone https://github.com/heon01px2020/csci1470-prismer-final-project cc-src
    mkdir -p ../data/cc18k
    git -C cc-src archive e059e1606aef04521e399c2b421438a46658a018 \\
        data/00000 data/00001 data/00002 data/00003 data/00004 | tar -x -C ../data/cc18k

(with the search tool's ``fetch github:heon01px2020/csci1470-prismer-final-project``, run the
same ``git archive`` in the fetched git directory). The result is
``../data/cc18k/data/0000{0..4}/KEY.{jpg,txt,json}``.

Where it is looked for: the ``path`` argument, then ``$XMODAL_CC_DATA``, then ``../data/cc18k``
beside the repository. The folder holding ``data/``, the folder of shards, or a data root with a
``cc18k/`` folder all work.

The split is fixed once and for all from the keys, not from file order or a random generator:
every key found (a ``.jpg`` or a ``.txt``) is ordered by ``sha1("cc18k-split-v1:" + key)``;
the first 1,000 are ``test`` (held out: never trained or selected on), the next 1,000 ``dev``,
the rest ``train``. A key whose pair is broken (image or caption missing, empty caption, image
not a JPEG) is skipped and counted (``n_skipped``) after the split is made, so a broken file
removes only itself and never moves another image between splits.

Typical use::

    from xmodal.data.conceptual_captions import load_conceptual_captions
    cc = load_conceptual_captions()
    ids = cc.split("test")                     # 1,000 keys
    cc.image_path(ids[0]), cc.captions_of(ids[0])[0].text
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from xmodal.data.flickr8k import Caption
from xmodal.data.image_files import JPEG_MAGIC
from xmodal.errors import XmodalError

ENV = "XMODAL_CC_DATA"
DEFAULT_DIR = Path(__file__).resolve().parents[3].parent / "data" / "cc18k"
SOURCE_REPO = "heon01px2020/csci1470-prismer-final-project"
SOURCE_COMMIT = "e059e1606aef04521e399c2b421438a46658a018"
SHARDS = ("00000", "00001", "00002", "00003", "00004")
SPLIT_SALT = "cc18k-split-v1:"
N_TEST = 1000
N_DEV = 1000
SPLIT_NAMES = ("train", "dev", "test")


@dataclass
class ConceptualCaptions:
    root: Path  # the folder of shard folders
    image_ids: list[str]  # keys, sorted
    captions: list[Caption]  # one per image: id "KEY#0"
    splits: dict[str, list[str]]  # name -> keys in split order (sha1 order)
    files: dict[str, str] = field(default_factory=dict)  # key -> "SHARD/KEY" (no suffix)
    n_skipped: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # key -> reason

    def __post_init__(self) -> None:
        self._by_image = {c.image_id: c for c in self.captions}

    def image_path(self, image_id: str) -> Path:
        try:
            return self.root / f"{self.files[image_id]}.jpg"
        except KeyError:
            raise XmodalError(f"unknown Conceptual Captions key: {image_id}") from None

    def captions_of(self, image_id: str) -> list[Caption]:
        c = self._by_image.get(image_id)
        return [c] if c is not None else []

    def caption(self, caption_id: str) -> Caption:
        key, _, _ = caption_id.rpartition("#")
        c = self._by_image.get(key)
        if c is None or c.id != caption_id:
            raise XmodalError(f"unknown Conceptual Captions caption id: {caption_id}")
        return c

    def split(self, name: str) -> list[str]:
        if name not in self.splits:
            raise XmodalError(f"unknown split {name!r}; choose from {list(SPLIT_NAMES)}")
        return self.splits[name]


def cc_dir(path: str | os.PathLike | None = None) -> Path:
    """The folder of shard folders: ``path``, then ``$XMODAL_CC_DATA``, then the default; a
    folder holding ``data/`` is accepted too. Missing data is a clear error with the recipe."""
    if path is not None:
        root, origin = Path(path).expanduser(), "the given path"
    elif os.environ.get(ENV):
        root, origin = Path(os.environ[ENV]).expanduser(), f"${ENV}"
    else:
        root, origin = DEFAULT_DIR, "the default location"
    for candidate in (root / "cc18k" / "data", root / "cc18k", root / "data", root):
        if candidate.is_dir() and any((candidate / s).is_dir() for s in SHARDS):
            return candidate
    raise XmodalError(
        f"Conceptual Captions (CC18K) not found at {root} ({origin}): expected "
        f"data/{SHARDS[0]}/KEY.jpg|KEY.txt there. Fetch it with `git clone "
        f"https://github.com/{SOURCE_REPO}` and `git archive {SOURCE_COMMIT} data/00000 ... "
        f"data/00004 | tar -x -C DIR` (see xmodal.data.conceptual_captions), then pass the "
        f"folder or set {ENV}"
    )


def split_order(keys) -> list[str]:
    """``keys`` in the fixed split order: by ``sha1(SPLIT_SALT + key)`` (ties by key)."""
    return sorted(keys, key=lambda k: (hashlib.sha1((SPLIT_SALT + k).encode()).hexdigest(), k))


def assign_splits(keys) -> dict[str, list[str]]:
    """The fixed split of ``keys``: the first N_TEST in split order are test, then N_DEV dev."""
    order = split_order(keys)
    return {"test": order[:N_TEST], "dev": order[N_TEST:N_TEST + N_DEV],
            "train": order[N_TEST + N_DEV:]}


def _broken(stem: Path, exts: set[str]) -> tuple[str | None, str]:
    """(reason or None, caption) for one key's files."""
    if ".jpg" not in exts:
        return "image missing", ""
    if ".txt" not in exts:
        return "caption missing", ""
    try:
        with open(stem.with_suffix(".jpg"), "rb") as f:
            if f.read(3) != JPEG_MAGIC:
                return "image is not a JPEG", ""
        text = stem.with_suffix(".txt").read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})", ""
    text = " ".join(text.split())
    if not text:
        return "empty caption", ""
    return None, text


def load_conceptual_captions(path: str | os.PathLike | None = None,
                             warn: bool = True) -> ConceptualCaptions:
    """Load CC18K from ``path`` (see :func:`cc_dir`): keys, image paths, one caption each, and
    the fixed train/dev/test split. Broken or half pairs are skipped and counted in a warning."""
    root = cc_dir(path)
    found: dict[str, tuple[str, set[str]]] = {}
    for shard in sorted(p for p in root.iterdir() if p.is_dir() and p.name.isdigit()):
        for f in shard.iterdir():
            if f.suffix in (".jpg", ".txt") and not f.name.startswith("."):
                entry = found.setdefault(f.stem, (shard.name, set()))
                if entry[0] != shard.name:
                    raise XmodalError(f"key {f.stem} is in two shards: {entry[0]} and "
                                      f"{shard.name}")
                entry[1].add(f.suffix)
    if not found:
        raise XmodalError(f"no KEY.jpg / KEY.txt files in the shard folders of {root}")
    splits = assign_splits(found)
    captions: dict[str, Caption] = {}
    skipped: dict[str, str] = {}
    for key, (shard, exts) in found.items():
        reason, text = _broken(root / shard / key, exts)
        if reason:
            skipped[key] = reason
        else:
            captions[key] = Caption(f"{key}#0", key, 0, text)
    if skipped and warn:
        reasons: dict[str, int] = {}
        for r in skipped.values():
            reasons[r] = reasons.get(r, 0) + 1
        warnings.warn(f"Conceptual Captions: skipped {len(skipped)} key(s) with a broken pair ("
                      + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) + ")",
                      stacklevel=2)
    image_ids = sorted(captions)
    return ConceptualCaptions(
        root, image_ids, [captions[k] for k in image_ids],
        {name: [k for k in keys if k in captions] for name, keys in splits.items()},
        {k: f"{found[k][0]}/{k}" for k in image_ids}, len(skipped), skipped,
    )
