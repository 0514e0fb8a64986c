"""The Wikipedia cross-modal dataset of Rasiwasia et al. 2010: SIFT BoW images, LDA texts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xmodal.data._io import parse_number, require_file, tsv_rows
from xmodal.errors import XmodalError
from xmodal.paths import dataset_dir


@dataclass
class Wikipedia:
    root: Path
    categories: list[str]  # label order; labels below are 0-based indices into this list
    image_train: np.ndarray  # (2173, 128) SIFT bag-of-visual-words histograms
    image_test: np.ndarray  # (693, 128)
    text_train: np.ndarray  # (2173, 10) LDA topic proportions
    text_test: np.ndarray  # (693, 10)
    labels_train: np.ndarray  # (2173,) int, 0-based
    labels_test: np.ndarray  # (693,)
    text_ids_train: list[str]
    image_ids_train: list[str]
    text_ids_test: list[str]
    image_ids_test: list[str]


def _read_list(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    texts, images, labels = [], [], []
    for lineno, f in tsv_rows(path, 3):
        texts.append(f[0])
        images.append(f[1])
        labels.append(parse_number(f[2], int, path, lineno) - 1)
    return texts, images, np.asarray(labels, dtype=np.int64)


def load_wikipedia(path: str | os.PathLike | None = None) -> Wikipedia:
    from scipy.io import loadmat

    root = dataset_dir("wikipedia", path)
    mat_path = require_file(root / "raw_features.mat")
    try:
        mat = loadmat(mat_path)
    except Exception as exc:  # scipy raises several types for corrupt files
        raise XmodalError(f"{mat_path}: cannot read MATLAB file ({exc})") from exc
    for key in ("I_tr", "I_te", "T_tr", "T_te"):
        if key not in mat:
            raise XmodalError(f"{mat_path}: missing variable {key}")
    categories = [f[0].strip() for _, f in tsv_rows(root / "categories.list")]
    t_tr, i_tr, y_tr = _read_list(root / "trainset_txt_img_cat.list")
    t_te, i_te, y_te = _read_list(root / "testset_txt_img_cat.list")
    data = Wikipedia(
        root,
        categories,
        np.asarray(mat["I_tr"], dtype=np.float64),
        np.asarray(mat["I_te"], dtype=np.float64),
        np.asarray(mat["T_tr"], dtype=np.float64),
        np.asarray(mat["T_te"], dtype=np.float64),
        y_tr,
        y_te,
        t_tr,
        i_tr,
        t_te,
        i_te,
    )
    if len(data.image_train) != len(y_tr) or len(data.image_test) != len(y_te):
        raise XmodalError(f"{root}: feature rows do not match the train/test lists")
    return data
