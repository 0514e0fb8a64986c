"""Standard retrieval benchmarks from a user's local copies: COCO, Flickr30K, Crossmodal-3600.

Nothing is downloaded: each loader takes the folder a user already has and reads the layouts
people actually keep on disk. A missing file is an error naming what was expected and where.

- **COCO** (:func:`load_coco`): the images (``val2014/`` ..., directly or under ``images/``) with
  Karpathy's ``dataset_coco.json`` (``DIR`` or ``DIR/caption_datasets/``), or the official
  ``annotations/captions_*.json`` plus a split file (``DIR/karpathy_test.txt`` or
  ``DIR/test.txt``: one image id or file name per line; without one, the 5,000 test images of
  the ``eccv-caption`` package, which are Karpathy's test split in his order). Image ids are COCO
  image ids, caption ids COCO annotation ids (Karpathy's ``sentid`` for COCO *is* the
  annotation id), so the ECCV Caption / CxC positives of :mod:`xmodal.data.eccv` apply as they
  are. Five captions of each image are kept (the 5K / 25K convention): for the standard test
  images, the five the eccv-caption package lists (a few images have six or seven), otherwise
  the first five.
- **Flickr30K** (:func:`load_flickr30k`): Karpathy's ``dataset_flickr30k.json`` or the
  official ``results_20130124.token`` (``NAME.jpg#N<TAB>caption``) or Kaggle's ``results.csv``
  (``image_name| comment_number| comment``), images in ``DIR`` or ``DIR/flickr30k-images``.
  Caption ids are ``NAME.jpg#N`` as in Flickr8K.
- **Crossmodal-3600** (:func:`load_xm3600`): ``captions.jsonl`` (one image per line:
  ``{"image/key": KEY, "en": {"caption": [...]}, ...}``) and ``images/KEY.jpg``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from xmodal.data.captioned import CaptionedImages, captions_from, find_file, resolve_images
from xmodal.errors import XmodalError

COCO_KARPATHY = ["dataset_coco.json", "caption_datasets/dataset_coco.json",
                 "annotations/dataset_coco.json"]
SPLIT_FILES = ["karpathy_{split}.txt", "{split}.txt", "splits/{split}.txt"]
F30K_KARPATHY = ["dataset_flickr30k.json", "caption_datasets/dataset_flickr30k.json"]
F30K_IMAGE_DIRS = ["", "flickr30k-images/", "flickr30k_images/", "images/",
                   "flickr30k_images/flickr30k_images/"]
XM3600_CAPTIONS = ["captions.jsonl", "annotations/captions.jsonl"]


def _folder(path: str | os.PathLike | None, what: str) -> Path:
    if path is None:
        raise XmodalError(f"the {what} protocols read your local copy: pass --data DIR")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise XmodalError(f"{what} folder not found: {root}")
    return root


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise XmodalError(f"{path}: cannot read JSON ({exc})") from exc


def _karpathy_images(path: Path, split: str) -> list[dict]:
    raw = read_json(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("images"), list):
        raise XmodalError(f"{path}: not a Karpathy split file (expected {{'images': [...]}})")
    images = [im for im in raw["images"] if im.get("split") == split]
    if not images:
        found = sorted({str(im.get("split")) for im in raw["images"]})
        raise XmodalError(f"{path}: no image in split {split!r} (splits: {found})")
    return images


def _split_file(root: Path, split: str) -> Path | None:
    for pattern in SPLIT_FILES:
        p = root / pattern.format(split=split)
        if p.is_file():
            return p
    return None


def _read_lines(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text(encoding="utf-8-sig").splitlines() if ln.strip()]


# --------------------------------------------------------------------------------------- COCO

def load_coco(path: str | os.PathLike | None, split: str = "test",
              max_captions: int = 5) -> CaptionedImages:
    """COCO from ``path`` (see the module docstring for the layouts)."""
    root = _folder(path, "COCO")
    for rel in COCO_KARPATHY:
        if (root / rel).is_file():
            return _coco_karpathy(root, root / rel, split, max_captions)
    official = sorted({*root.glob("captions_*.json"), *root.glob("annotations/captions_*.json")})
    if official:
        return _coco_official(root, official, split, max_captions)
    raise XmodalError(
        f"no COCO captions under {root}: expected Karpathy's split file ("
        + " or ".join(str(root / r) for r in COCO_KARPATHY[:2])
        + f") or the official captions ({root / 'annotations/captions_val2014.json'}) with a "
        f"split file ({root / 'karpathy_test.txt'})")


def _coco_karpathy(root: Path, path: Path, split: str, max_captions: int) -> CaptionedImages:
    images = _karpathy_images(path, split)
    order, wanted, triples = [], {}, []
    for im in images:
        if "cocoid" not in im or "filename" not in im:
            raise XmodalError(f"{path}: an image has no 'cocoid' / 'filename' (is this "
                              "dataset_coco.json?)")
        iid = str(im["cocoid"])
        order.append(iid)
        fp, fn = im.get("filepath", ""), im["filename"]
        wanted[iid] = [f"{fp}/{fn}", f"images/{fp}/{fn}", fn, f"images/{fn}"]
        triples += [(str(s["sentid"]), iid,
                     str(s.get("raw", " ".join(s.get("tokens", [])))).strip())
                    for s in im.get("sentences", [])]
    files = resolve_images(root, wanted, "COCO")
    triples, note = _five_captions(triples, max_captions)
    return CaptionedImages("coco", root, order, captions_from(triples), files,
                           [f"Karpathy split {split!r} from {path.name}", note])


def _five_captions(triples: list[tuple[str, str, str]], max_captions: int
                   ) -> tuple[list[tuple[str, str, str]], str]:
    """At most ``max_captions`` captions per image: for an image of the standard 5K test set
    whose five captions (the eccv-caption package's ids) are all present, exactly those (a few
    COCO images have six or seven), otherwise the first ones."""
    from xmodal.data.eccv import load_coco_positives

    standard = load_coco_positives("coco5k").image_to_captions if max_captions == 5 else {}
    by_image: dict[str, list[tuple[str, str, str]]] = {}
    for t in triples:
        by_image.setdefault(t[1], []).append(t)
    out, n_standard = [], 0
    for image_id, caps in by_image.items():
        keep = set(standard.get(image_id, []))
        if len(keep) == max_captions and keep <= {c for c, _, _ in caps}:
            caps = [t for t in caps if t[0] in keep]
            n_standard += 1
        out += caps[:max_captions]
    return out, (f"{max_captions} captions per image ({n_standard} images with the standard "
                 "five of the 5K test set)")


def _package_test_images() -> list[str]:
    """The eccv-caption package's 5,000 COCO test images in its (Karpathy's) order."""
    from xmodal.data.eccv import load_coco_positives

    pos = load_coco_positives("coco5k")
    order: dict[str, None] = {}
    for cid in pos.caption_ids:
        order.setdefault(pos.caption_to_images[cid][0], None)
    return list(order)


def _coco_official(root: Path, files: list[Path], split: str, max_captions: int
                   ) -> CaptionedImages:
    names: dict[str, str] = {}  # image id -> file name
    folders: dict[str, str] = {}  # image id -> images folder (val2014, ...)
    caps: dict[str, list[tuple[int, str]]] = {}
    for f in files:
        raw = read_json(f)
        if not isinstance(raw, dict) or "annotations" not in raw or "images" not in raw:
            raise XmodalError(f"{f}: not an official COCO captions file (expected 'images' and "
                              "'annotations')")
        folder = f.stem.removeprefix("captions_")
        for im in raw["images"]:
            names[str(im["id"])] = im["file_name"]
            folders[str(im["id"])] = folder
        for a in raw["annotations"]:
            caps.setdefault(str(a["image_id"]), []).append((int(a["id"]), str(a["caption"])))
    split_path = _split_file(root, split)
    notes = [f"official captions from {', '.join(f.name for f in files)}"]
    if split_path is not None:
        by_name = {fn: iid for iid, fn in names.items()}
        order = []
        for line in _read_lines(split_path):
            key = line.rsplit("/", 1)[-1]
            iid = key if key in names else by_name.get(key)
            if iid is None:
                raise XmodalError(f"{split_path}: image {line!r} is in none of "
                                  f"{', '.join(str(f) for f in files)}")
            order.append(iid)
        notes.append(f"split from {split_path.name}")
    elif split == "test":
        order = _package_test_images()
        notes.append("no split file: the 5,000 Karpathy test images listed by eccv-caption")
    else:
        raise XmodalError(f"COCO split {split!r} needs a split file: "
                          + " or ".join(str(root / p.format(split=split)) for p in SPLIT_FILES))
    absent = [i for i in order if i not in names]
    if absent:
        raise XmodalError(f"{len(absent)} of the {len(order)} split images (e.g. {absent[0]}) are "
                          f"not in {', '.join(str(f) for f in files)}; the 5K test split is in "
                          "captions_val2014.json")
    wanted = {i: [f"{folders[i]}/{names[i]}", f"images/{folders[i]}/{names[i]}", names[i],
                  f"images/{names[i]}"] for i in order}
    image_files = resolve_images(root, wanted, "COCO")
    triples = [(str(aid), i, text.strip()) for i in order for aid, text in sorted(caps.get(i, []))]
    triples, note = _five_captions(triples, max_captions)
    return CaptionedImages("coco", root, order, captions_from(triples), image_files,
                           [*notes, note])


# ---------------------------------------------------------------------------------- Flickr30K

def load_flickr30k(path: str | os.PathLike | None, split: str = "test") -> CaptionedImages:
    """Flickr30K from ``path`` (see the module docstring for the layouts)."""
    root = _folder(path, "Flickr30K")
    for rel in F30K_KARPATHY:
        if (root / rel).is_file():
            images = _karpathy_images(root / rel, split)
            order = [im["filename"] for im in images]
            triples = [(f"{im['filename']}#{n}", im["filename"],
                        str(s.get("raw", " ".join(s.get("tokens", [])))).strip())
                       for im in images for n, s in enumerate(im.get("sentences", []))]
            notes = [f"Karpathy split {split!r} from {rel}"]
            break
    else:
        token = _flickr30k_token_file(root)
        pairs = _read_flickr30k_captions(token)
        split_path = _split_file(root, split)
        if split_path is not None:
            order = [ln.rsplit("/", 1)[-1] for ln in _read_lines(split_path)]
            unknown = [i for i in order if i not in pairs]
            if unknown:
                raise XmodalError(f"{split_path}: image {unknown[0]!r} has no caption in {token}")
            notes = [f"captions from {token.name}, split from {split_path.name}"]
        else:
            order = list(pairs)
            notes = [f"captions from {token.name}; no split file ({root / f'{split}.txt'}): all "
                     f"{len(order)} images"]
        triples = [(f"{i}#{n}", i, text) for i in order for n, text in enumerate(pairs[i])]
    wanted = {i: [d + i for d in F30K_IMAGE_DIRS] for i in order}
    files = resolve_images(root, wanted, "Flickr30K")
    return CaptionedImages("flickr30k", root, order, captions_from(triples), files, notes)


def _flickr30k_token_file(root: Path) -> Path:
    found = sorted({*root.glob("results*.token"), *root.glob("results*.csv"),
                    *root.glob("flickr30k_images/results*.csv")})
    if found:
        return found[0]
    raise XmodalError(
        f"no Flickr30K captions under {root}: expected Karpathy's {root / F30K_KARPATHY[0]}, the "
        f"official {root / 'results_20130124.token'} or Kaggle's {root / 'results.csv'}")


def _read_flickr30k_captions(path: Path) -> dict[str, list[str]]:
    """``image -> captions`` in caption-number order, from the token file or Kaggle's CSV."""
    text = path.read_text(encoding="utf-8-sig")
    rows: list[tuple[str, int, str]] = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Kaggle's CSV: a header "image_name| comment_number| comment", then rows split by "|"
    # (one known row lacks its second "|": "2199200615.jpg| 4   A dog runs ...")
    if lines and "|" in lines[0] and "\t" not in lines[0]:
        for lineno, line in enumerate(lines[1:], start=2):
            name, _, rest = line.partition("|")
            m = re.match(r"\s*(\d+)\s*\|?\s*(.*)$", rest)
            if not name.strip() or m is None or not m.group(2).strip():
                raise XmodalError(f"{path}:{lineno}: expected image_name| comment_number| comment")
            rows.append((name.strip(), int(m.group(1)), m.group(2).strip()))
    else:
        for lineno, line in enumerate(lines, start=1):
            key, sep, caption = line.partition("\t")
            name, hash_, number = key.rpartition("#")
            if not sep or not hash_ or not number.strip().isdigit():
                raise XmodalError(f"{path}:{lineno}: expected NAME.jpg#N<TAB>caption")
            rows.append((name.strip(), int(number), caption.strip()))
    out: dict[str, list[str]] = {}
    for name, _, caption in sorted(rows, key=lambda r: (r[0], r[1])):
        out.setdefault(name, []).append(caption)
    return out


# ---------------------------------------------------------------------------- Crossmodal-3600

def load_xm3600(path: str | os.PathLike | None, language: str = "en") -> CaptionedImages:
    """Crossmodal-3600: every image with its captions in ``language`` (3,600 images)."""
    root = _folder(path, "Crossmodal-3600")
    jsonl = find_file(root, XM3600_CAPTIONS, "Crossmodal-3600 captions file")
    order, triples = [], []
    for lineno, line in enumerate(jsonl.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            key = str(obj["image/key"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise XmodalError(f"{jsonl}:{lineno}: expected an object with 'image/key' ({exc})"
                              ) from None
        captions = (obj.get(language) or {}).get("caption") or []
        if not captions:
            continue
        order.append(key)
        triples += [(f"{key}#{language}{n}", key, str(c).strip()) for n, c in enumerate(captions)]
    if not order:
        raise XmodalError(f"{jsonl}: no image has captions in language {language!r}")
    wanted = {k: [f"images/{k}.jpg", f"{k}.jpg"] for k in order}
    files = resolve_images(root, wanted, "Crossmodal-3600")
    return CaptionedImages("xm3600", root, order, captions_from(triples), files,
                           [f"{language} captions from {jsonl.name}"])
