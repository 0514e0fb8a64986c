"""Positives files in the ``eccv-caption`` package's JSON layout, and evaluating against them.

A positives directory holds ``image_to_caption.json`` ({image id: [caption ids]}, the i2t
positives) and ``caption_to_image.json`` ({caption id: [image ids]}, the t2i positives), the
layout of ``eccv_caption/data/*_image_to_caption.json``; ``xmodal mitl export`` writes one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol, pairs_to_relevance

I2T_FILE = "image_to_caption.json"
T2I_FILE = "caption_to_image.json"
EXPORT_FILE = "mitl_export.json"  # where the positives come from ('xmodal mitl export')


def positives_digest(path: str | Path) -> str:
    """SHA-256 over the two positives files (name, length and bytes of each, in order)."""
    h = hashlib.sha256()
    for name in (I2T_FILE, T2I_FILE):
        data = (Path(path) / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _read(path: Path) -> dict[str, list[str]]:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise XmodalError(f"positives file not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise XmodalError(f"{path}: not a positives JSON file ({exc})") from exc
    if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
        raise XmodalError(f"{path}: expected an object mapping each id to a list of ids")
    return {str(k): [str(x) for x in v] for k, v in raw.items()}


def load_positives(path: str | Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(image -> captions, caption -> images) from a positives directory."""
    path = Path(path)
    if not path.is_dir():
        raise XmodalError(f"{path}: expected a positives directory holding {I2T_FILE} and "
                          f"{T2I_FILE} (written by 'xmodal mitl export')")
    return _read(path / I2T_FILE), _read(path / T2I_FILE)


def write_positives(path: str | Path, image_to_caption: dict[str, list[str]],
                    caption_to_image: dict[str, list[str]]) -> Path:
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for name, data in ((I2T_FILE, image_to_caption), (T2I_FILE, caption_to_image)):
        tmp = path / (name + ".tmp")
        tmp.write_text(json.dumps({k: sorted(v) for k, v in sorted(data.items())}, indent=1))
        tmp.replace(path / name)
    return path


def apply_positives(protocol: Protocol, image_to_caption: dict[str, list[str]],
                    caption_to_image: dict[str, list[str]], source: str = "") -> Protocol:
    """``protocol`` with each direction's relevance replaced by these positives."""
    directions = {}
    for name, d in protocol.directions.items():
        pairs = ([(i, c) for i, cs in image_to_caption.items() for c in cs] if name == "i2t"
                 else [(i, c) for c, is_ in caption_to_image.items() for i in is_])
        rel = pairs_to_relevance(d.image_ids, d.text_ids, pairs)
        if rel.nnz == 0:
            raise XmodalError(f"{source or 'positives'}: no {name} positive matches an image and "
                              f"a text of protocol {protocol.name!r} (ids from another protocol?)")
        directions[name] = replace(d, relevance=rel)
    notes = f"{protocol.notes} Positives replaced by {source or 'extended positives'}."
    return replace(protocol, directions=directions, notes=notes.strip())


def positives_record(path: str | Path) -> dict:
    """What an evaluation report records about the positives it used: the folder, the files'
    digest, and the export record that ``xmodal mitl export`` wrote beside them (if any)."""
    path = Path(path)
    record: dict = {"source": str(path.resolve()), "sha256": positives_digest(path)}
    meta = path / EXPORT_FILE
    if meta.is_file():
        try:
            exported = json.loads(meta.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            exported = None
        if isinstance(exported, dict):
            record["export"] = {k: exported.get(k) for k in (
                "campaign", "protocol", "aggregate", "dropped_workers", "sha256",
                "exported_at")}
            record["matches_export"] = exported.get("sha256") == record["sha256"]
    return record


def with_positives(protocol: Protocol, path: str | Path) -> Protocol:
    """``protocol`` with its relevance replaced by the positives directory ``path``; its
    ``extra["positives"]`` (source, digest, export record) goes into the evaluation report."""
    out = apply_positives(protocol, *load_positives(path), source=str(path))
    return replace(out, extra={**out.extra, "positives": positives_record(path)})
