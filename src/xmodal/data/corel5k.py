"""Corel5K as packaged by Mulan (sparse ARFF): binary blob presence and keyword labels."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse

from xmodal.data._io import require_file
from xmodal.errors import XmodalError
from xmodal.paths import dataset_dir

N_BLOBS = 499


@dataclass
class Corel5k:
    root: Path
    keywords: list[str]  # 374 keyword names, column order of the label matrices
    blobs_train: np.ndarray  # (4500, 499) bool: image has a region of blob cluster k
    labels_train: np.ndarray  # (4500, 374) bool
    blobs_test: np.ndarray  # (500, 499) bool
    labels_test: np.ndarray  # (500, 374) bool
    ids_train: list[str]
    ids_test: list[str]


def read_sparse_arff(path: Path) -> tuple[list[str], sparse.csr_matrix]:
    """Read a sparse ARFF file of 0/1 attributes: (attribute names, CSR matrix)."""
    names: list[str] = []
    rows, cols = [], []
    n_rows = 0
    in_data = False
    attr = re.compile(r"@attribute\s+('[^']*'|\"[^\"]*\"|\S+)\s+", re.IGNORECASE)
    with open(require_file(path), encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if not in_data:
                low = s.lower()
                if low.startswith("@attribute"):
                    m = attr.match(s)
                    if not m:
                        raise XmodalError(f"{path}:{lineno}: malformed @attribute line")
                    names.append(m.group(1).strip("'\""))
                elif low.startswith("@data"):
                    in_data = True
                continue
            if not (s.startswith("{") and s.endswith("}")):
                raise XmodalError(f"{path}:{lineno}: expected a sparse row in braces")
            body = s[1:-1].strip()
            for item in body.split(",") if body else []:
                parts = item.split()
                if len(parts) != 2 or not parts[0].isdigit():
                    raise XmodalError(f"{path}:{lineno}: malformed sparse entry {item!r}")
                col, value = int(parts[0]), parts[1]
                if col >= len(names):
                    raise XmodalError(f"{path}:{lineno}: attribute index {col} out of range")
                if value not in ("0", "1"):
                    raise XmodalError(f"{path}:{lineno}: expected 0/1, got {value!r}")
                if value == "1":
                    rows.append(n_rows)
                    cols.append(col)
            n_rows += 1
    if not in_data:
        raise XmodalError(f"{path}: no @data section")
    matrix = sparse.csr_matrix(
        (np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n_rows, len(names))
    )
    return names, matrix


def _keyword_names(xml_path: Path) -> list[str]:
    try:
        tree = ET.parse(require_file(xml_path))
    except ET.ParseError as exc:
        raise XmodalError(f"{xml_path}: malformed XML ({exc})") from exc
    return [el.attrib["name"] for el in tree.getroot().iter() if el.tag.endswith("label")]


def load_corel5k(path: str | os.PathLike | None = None) -> Corel5k:
    root = dataset_dir("corel5k", path)
    keywords = _keyword_names(root / "Corel5k.xml")
    parts = {}
    for split in ("train", "test"):
        p = root / f"Corel5k-{split}-sparse.arff"
        names, m = read_sparse_arff(p)
        if len(names) != N_BLOBS + len(keywords):
            raise XmodalError(
                f"{p}: expected {N_BLOBS} blob + {len(keywords)} keyword attributes, got {len(names)}"
            )
        dense = m.toarray()
        parts[split] = (dense[:, :N_BLOBS], dense[:, N_BLOBS:])
    return Corel5k(
        root,
        keywords,
        parts["train"][0],
        parts["train"][1],
        parts["test"][0],
        parts["test"][1],
        [f"train-{i:04d}" for i in range(len(parts["train"][0]))],
        [f"test-{i:04d}" for i in range(len(parts["test"][0]))],
    )
