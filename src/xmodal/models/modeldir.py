"""The one saved-model format: a directory with ``config.json`` and ``arrays.npz``.

``config.json`` holds ``type`` (which estimator class), ``version`` (of that class's layout),
``params`` (constructor hyperparameters), ``state`` (small learned values that are not arrays,
e.g. a vocabulary) and ``provenance`` (what produced the model). ``arrays.npz`` holds every learned
array; it is read with ``allow_pickle=False``. Nothing else is written, nothing is pickled.

Each estimator class declares ``SAVE_TYPE`` / ``SAVE_VERSION`` and implements ``save(path)`` /
``load(path)`` with :func:`write_model_dir` / :func:`read_model_dir`;
:func:`xmodal.factory.load_saved_model` opens any saved model by its ``type`` (the table of
types is :data:`xmodal.factory.SAVED_TYPES`).
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError

CONFIG_FILE = "config.json"
ARRAYS_FILE = "arrays.npz"

@dataclass(frozen=True)
class SavedModel:
    """What :func:`read_model_dir` found in a model directory."""

    path: Path
    type: str
    version: int
    params: dict[str, Any]
    state: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


def write_model_dir(
    path: str | os.PathLike,
    *,
    type: str,
    version: int,
    params: dict[str, Any],
    arrays: dict[str, np.ndarray],
    state: dict[str, Any] | None = None,
    provenance: dict[str, Any] | None = None,
) -> Path:
    """Write a model directory (created if needed) and return its path."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    config = {"type": type, "version": int(version), "params": params, "state": state or {},
              "provenance": provenance or {}}
    # uncompressed: int8 / float16 weights barely compress (the default model: 14.8 MB against
    # 12.6) and inflating them cost every cold search 55 ms
    np.savez(out / ARRAYS_FILE, **{k: np.asarray(v) for k, v in arrays.items()})
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n")
    return out


def read_config(path: str | os.PathLike, what: str = "xmodal") -> dict[str, Any]:
    """The parsed ``config.json`` of a model directory (XmodalError if there is none)."""
    d = Path(path)
    cfg_file = d / CONFIG_FILE
    if not cfg_file.is_file():
        raise XmodalError(f"{d} is not a saved {what} model (needs {CONFIG_FILE} and "
                          f"{ARRAYS_FILE})")
    try:
        config = json.loads(cfg_file.read_text())
    except json.JSONDecodeError as exc:
        raise XmodalError(f"{cfg_file}: invalid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise XmodalError(f"{cfg_file}: expected a JSON object")
    return config


def read_model_dir(
    path: str | os.PathLike, type: str | None = None, version: int | None = None,
    what: str | None = None,
) -> SavedModel:
    """Read a model directory; with ``type`` / ``version`` given, anything else is an error."""
    d = Path(path)
    config = read_config(d, what or type or "xmodal")
    got = config.get("type")
    if type is not None and got != type:
        raise XmodalError(f"{d} holds a {got!r} model, not {type!r}")
    if "version" not in config or "params" not in config:
        raise XmodalError(f"{d / CONFIG_FILE}: written by an older xmodal (no format version); "
                          "retrain the model or re-save it with this version")
    if version is not None and config["version"] != version:
        raise XmodalError(f"{d / CONFIG_FILE}: {got} format version {config['version']} is not "
                          f"supported (this xmodal reads version {version}); retrain the model")
    if not (d / ARRAYS_FILE).is_file():
        raise XmodalError(f"{d} is not a saved {what or got} model (no {ARRAYS_FILE})")
    try:
        with np.load(d / ARRAYS_FILE, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise XmodalError(f"{d / ARRAYS_FILE}: unreadable ({exc})") from None
    return SavedModel(d, got, config["version"], config["params"], config.get("state", {}),
                      config.get("provenance", {}), arrays)


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 2-d array stored small: int8 codes and one float16 scale per row (each row's largest
    absolute value maps to 127). :func:`dequantize_rows` gives back the approximate rows."""
    matrix = np.asarray(matrix, np.float64)
    scales = (np.abs(matrix).max(axis=1) / 127.0).astype(np.float16)
    scales[scales == 0] = 1.0  # an all-zero row (or one below float16's range) codes as zeros
    codes = np.round(matrix / scales.astype(np.float64)[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales


def dequantize_rows(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """(rows, d) float32 from :func:`quantize_rows`' codes and scales."""
    return codes.astype(np.float32) * scales.astype(np.float32)[:, None]
