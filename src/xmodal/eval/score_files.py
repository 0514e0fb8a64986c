"""Precomputed score files: ``.npy`` (one images x texts matrix) or ``.npz`` (``i2t``/``t2i``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol


def load_score_file(path: str | Path, protocol: Protocol | None = None) -> dict[str, np.ndarray]:
    """Score matrices by direction; with ``protocol``, each is checked against its shape."""
    path = Path(path)
    if not path.is_file():
        raise XmodalError(f"scores file not found: {path}")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise XmodalError(f"{path}: not a numpy .npy/.npz file ({exc})") from exc
    if isinstance(loaded, np.ndarray):
        scores = {"i2t": loaded, "t2i": loaded}
    else:
        arrays = dict(loaded)
        if not {"i2t", "t2i"} & set(arrays):
            raise XmodalError(f"{path}: expected arrays named 'i2t' and/or 't2i'")
        scores = {"i2t": arrays.get("i2t", arrays.get("t2i")),
                  "t2i": arrays.get("t2i", arrays.get("i2t"))}
    if protocol is not None:
        for name, d in protocol.directions.items():
            expected = (len(d.image_ids), len(d.text_ids))
            if scores[name].shape != expected:
                raise XmodalError(f"{path}: {name} scores have shape {scores[name].shape}, "
                                  f"protocol {protocol.name} needs {expected} (images x texts)")
            if not np.issubdtype(scores[name].dtype, np.number):
                raise XmodalError(f"{path}: {name} scores are not numbers")
    return scores
