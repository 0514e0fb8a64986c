"""Generic captioned-image sources: webdataset tar shards, Hugging Face ``datasets`` folders or
Parquet files, and a CSV / JSONL of image paths and captions.

- :func:`load_tar_shards`: a folder of webdataset ``.tar`` shards, read with :mod:`tarfile`
  (the ``webdataset`` package is not needed). Members sharing a key (the path up to the first
  dot of the file name) form a sample: an image (``jpg``, ``jpeg``, ``png``, ``webp``) and its
  captions in ``txt`` / ``caption`` (one per line) or ``json`` (``"caption"``: a string or a
  list).
- :func:`load_hf_table`: a folder written by ``datasets.Dataset.save_to_disk`` (``*.arrow``
  files, read with pyarrow; the ``datasets`` package is not needed) or Parquet files (e.g. a
  Hub dataset's ``data/test-*.parquet``). Columns: an image (the ``Image`` feature's
  ``{bytes, path}``, raw bytes or a path), a caption (a string or a list of strings) and an
  optional id. When some files are named after the split (``test``), only those are read.
- :func:`load_caption_file`: CSV / TSV / JSONL of (image, caption), image paths relative to
  the file's folder or absolute (:mod:`xmodal.data.caption_files`).

Images held inside archives are written once to the cache, named by their content
(:func:`xmodal.data.captioned.materialise_image`). Image ids are the sample keys, the id
column, or the image paths as written; caption ids are ``IMAGE_ID#N``.
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

from xmodal.data.captioned import CaptionedImages, captions_from, materialise_image
from xmodal.errors import XmodalError

TAR_IMAGE = ("jpg", "jpeg", "png", "webp")
TAR_CAPTION = ("txt", "caption")
IMAGE_COLUMNS = ("image", "img", "jpg", "png", "picture")
CAPTION_COLUMNS = ("caption", "captions", "text", "sentences", "sentence", "raw", "txt")
ID_COLUMNS = ("id", "image_id", "key", "__key__", "filename", "file_name", "img_id")


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, dict):  # e.g. {"raw": ...}
        return _texts(value.get("raw", value.get("caption")))
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return [str(value)]


def _build(name: str, root: Path, samples: list[tuple[str, Path, list[str]]],
           notes: list[str]) -> CaptionedImages:
    """From (image id, file, captions) samples; samples without a caption are skipped."""
    seen: set[str] = set()
    order, files, triples = [], {}, []
    skipped = 0
    for image_id, path, captions in samples:
        if not captions:
            skipped += 1
            continue
        if image_id in seen:
            raise XmodalError(f"{root}: image id {image_id!r} occurs twice")
        seen.add(image_id)
        order.append(image_id)
        files[image_id] = path
        triples += [(f"{image_id}#{n}", image_id, c) for n, c in enumerate(captions)]
    if not order:
        raise XmodalError(f"{root}: no sample has both an image and a caption")
    if skipped:
        notes = [*notes, f"{skipped} samples without a caption skipped"]
    return CaptionedImages(name, root, order, captions_from(triples), files, notes)


# ------------------------------------------------------------------------------ tar shards

def load_tar_shards(path: str | os.PathLike | None) -> CaptionedImages:
    """Every sample of the webdataset ``.tar`` shards under ``path`` (sorted, recursive)."""
    if path is None:
        raise XmodalError("the webdataset protocol needs the folder of .tar shards (--data DIR)")
    root = Path(path).expanduser()
    shards = [root] if root.is_file() else sorted(root.rglob("*.tar")) if root.is_dir() else []
    if not shards:
        raise XmodalError(f"no webdataset shards: expected {root}/*.tar (e.g. 00000.tar holding "
                          "KEY.jpg + KEY.txt per sample)")
    samples: list[tuple[str, Path, list[str]]] = []
    no_image = 0
    for shard in shards:
        groups: dict[str, dict[str, bytes]] = {}
        try:
            with tarfile.open(shard) as tar:
                for m in tar:
                    if not m.isfile():
                        continue
                    p = PurePosixPath(m.name)
                    base, dot, ext = p.name.partition(".")
                    if not dot or base.startswith("."):
                        continue
                    key = str(p.parent / base) if str(p.parent) != "." else base
                    data = tar.extractfile(m).read()  # type: ignore[union-attr]
                    groups.setdefault(key, {})[ext.lower()] = data
        except (tarfile.TarError, OSError) as exc:
            raise XmodalError(f"{shard}: not a readable tar shard ({exc})") from exc
        for key, parts in groups.items():
            image_ext = next((e for e in TAR_IMAGE if e in parts), None)
            if image_ext is None:
                no_image += 1
                continue
            captions: list[str] = []
            for e in TAR_CAPTION:
                if e in parts:
                    captions += _texts(parts[e].decode("utf-8", "replace").splitlines())
            if not captions and "json" in parts:
                try:
                    captions = _texts(json.loads(parts["json"]).get("caption"))
                except (json.JSONDecodeError, AttributeError):
                    pass
            samples.append((key, materialise_image(parts[image_ext], "." + image_ext), captions))
    notes = [f"{len(shards)} tar shards"]
    if no_image:
        notes.append(f"{no_image} samples without an image skipped")
    return _build("webdataset", root, samples, notes)


# -------------------------------------------------------------------------- HF / Parquet

def _read_tables(root: Path, split: str) -> tuple[list[Any], list[Path]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(root.rglob("*.parquet")) or sorted(root.rglob("*.arrow"))
    if root.is_file():
        files = [root]
    if not files:
        raise XmodalError(f"no Hugging Face dataset under {root}: expected a folder written by "
                          "save_to_disk (state.json + data-*.arrow) or Parquet files "
                          "(e.g. data/test-00000-of-00001.parquet)")
    named = [f for f in files if split in f.stem.split("-")[0].split("_")
             or (root.is_dir() and split in f.relative_to(root).parts[:-1])]
    files = named or files
    tables = []
    for f in files:
        try:
            if f.suffix == ".parquet":
                tables.append(pq.read_table(f))
            else:
                try:
                    with pa.ipc.open_stream(f) as reader:
                        tables.append(reader.read_all())
                except pa.ArrowInvalid:
                    with pa.ipc.open_file(f) as reader:
                        tables.append(reader.read_all())
        except (OSError, pa.ArrowException) as exc:
            raise XmodalError(f"{f}: cannot read the table ({exc})") from exc
    return tables, files


def _column(names: list[str], wanted: tuple[str, ...], what: str, where: Path,
            required: bool = True) -> str | None:
    lower = {n.lower(): n for n in names}
    for w in wanted:
        if w in lower:
            return lower[w]
    if required:
        raise XmodalError(f"{where}: no {what} column (looked for {', '.join(wanted)}; the "
                          f"columns are {', '.join(names)})")
    return None


def load_hf_table(path: str | os.PathLike | None, split: str = "test") -> CaptionedImages:
    """Images and captions from a ``save_to_disk`` folder or Parquet files under ``path``."""
    if path is None:
        raise XmodalError("the hf-dataset protocol needs the dataset folder (--data DIR)")
    root = Path(path).expanduser()
    if not root.exists():
        raise XmodalError(f"Hugging Face dataset folder not found: {root}")
    tables, files = _read_tables(root, split)
    samples: list[tuple[str, Path, list[str]]] = []
    for table, f in zip(tables, files):
        names = table.column_names
        image_col = _column(names, IMAGE_COLUMNS, "image", f)
        caption_col = _column(names, CAPTION_COLUMNS, "caption", f)
        id_col = _column(names, ID_COLUMNS, "id", f, required=False)
        rows = table.select([c for c in (image_col, caption_col, id_col) if c]).to_pylist()
        for n, row in enumerate(rows):
            image, label = row[image_col], None
            if isinstance(image, dict):  # the Image feature: {"bytes": ..., "path": ...}
                label = image.get("path")
                data, ref = image.get("bytes"), image.get("path")
            elif isinstance(image, bytes):
                data, ref = image, None
            else:
                data, ref = None, image
            if data:
                file = materialise_image(data, Path(label or "x.jpg").suffix)
            elif ref:
                file = Path(ref) if Path(ref).is_absolute() else root / ref
                if not file.is_file():
                    raise XmodalError(f"{f}: row {n}: image file not found: {file}")
            else:
                raise XmodalError(f"{f}: row {n}: the {image_col!r} column holds no image")
            image_id = str(row[id_col]) if id_col else (label or f"{f.stem}/{n}")
            samples.append((image_id, file, _texts(row[caption_col])))
    kind = "Parquet" if files[0].suffix == ".parquet" else "Arrow (save_to_disk)"
    return _build("hf-dataset", root, samples,
                  [f"{len(files)} {kind} files: {', '.join(f.name for f in files)}"])


# --------------------------------------------------------------------------- caption file

def load_caption_file(path: str | os.PathLike | None) -> CaptionedImages:
    """A CSV / TSV / JSONL of (image path, caption); relative paths are from the file's folder."""
    from xmodal.data.caption_files import read_caption_pairs

    if path is None:
        raise XmodalError("the caption-file protocol needs the CSV / JSONL file (--data FILE)")
    file = Path(path).expanduser()
    if not file.is_file():
        raise XmodalError(f"caption file not found: {file} (CSV with a header image,caption, "
                          "TSV or JSONL of {\"image\": ..., \"caption\": ...})")
    pairs = read_caption_pairs(file)
    missing = []
    samples = []
    for image, captions in pairs.items():
        p = Path(image).expanduser()
        p = p if p.is_absolute() else file.parent / p
        if not p.is_file():
            missing.append(str(p))
        # IMAGE#N numbers an image's captions in text order, not line order, so a caption keeps
        # its id (and `xmodal compare` its pairing) in a reordered copy of the file
        samples.append((image, p, sorted(captions)))
    if missing:
        raise XmodalError(f"{len(missing)} of the {len(pairs)} images named in {file} are "
                          f"missing; the first: {missing[0]}")
    return _build("caption-file", file, samples, [f"captions from {file.name}"])
