"""Calibrated relevance for photo search: the probability that a person calls a photo a match.

A :class:`Calibrator` maps the raw score of ``xmodal search`` (the inner product of the text
vector and the indexed image vector) to the probability that a person would call the photo a
match for the sentence. It is a monotone step function stored as breakpoints and evaluated with
linear interpolation between them (clipped at both ends), so searching needs numpy only.

Each shipped model's calibrator ships beside it as ``xmodal/assets/<name>/calibration.json``
(``dual``, the default, and ``fast``); it is fitted on Flickr8K's crowd and expert judgments by
:mod:`xmodal.recipes.calibration` (``xmodal reproduce calibration --model NAME``).
:func:`load_calibrator` returns one only for the model it was fitted for: scores of another model
mean something else, so other models get ``None`` (no cutoff).

Use::

    cal = load_calibrator(index.model_id)
    if cal is not None:
        p = cal.probability(np.array([r.score for r in results]))
        shown = p >= (min_score if min_score is not None else cal.default_cutoff(p.max()))

The default cutoff is the calibrated ``threshold``, raised to ``relative`` times the best match's
probability when that is higher: a library whose best photo is a clear match (73%) does not
also show the photos at 1-9% below it. ``relative`` is chosen with the threshold on the
short-query dev benchmark (:mod:`xmodal.eval.short_queries`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError

ASSETS = Path(__file__).resolve().parents[1] / "assets"
ASSET = ASSETS / "dual" / "calibration.json"  # the default model's


def asset_path(model_id: str) -> Path | None:
    """Where the shipped calibrator of ``model_id`` ("<name>@<digest>") would be:
    ``assets/<name>/calibration.json``; None for an id that names no plain asset folder."""
    name = str(model_id).split("@", 1)[0]
    return ASSETS / name / "calibration.json" if re.fullmatch(r"[a-z0-9_]+", name) else None


@dataclass
class Calibrator:
    """Breakpoints of a non-decreasing map from raw scores to match probabilities."""

    model_id: str
    scores: list[float]  # strictly increasing raw scores
    probabilities: list[float]  # non-decreasing, in [0, 1], one per score
    threshold: float  # the default minimum probability for a result to be shown
    provenance: dict[str, Any] = field(default_factory=dict)
    relative: float = 0.0  # ... and the default minimum share of the best match's probability

    def __post_init__(self) -> None:
        s = np.asarray(self.scores, dtype=np.float64)
        p = np.asarray(self.probabilities, dtype=np.float64)
        if s.ndim != 1 or s.shape != p.shape or len(s) < 1:
            raise XmodalError("calibration: scores and probabilities must be two lists of the "
                              "same non-zero length")
        if not (np.all(np.isfinite(s)) and np.all(np.isfinite(p))):
            raise XmodalError("calibration: breakpoints must be finite numbers")
        if np.any(np.diff(s) <= 0):
            raise XmodalError("calibration: breakpoint scores must be strictly increasing")
        if np.any(np.diff(p) < 0) or p[0] < 0 or p[-1] > 1:
            raise XmodalError("calibration: probabilities must be non-decreasing within [0, 1]")
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise XmodalError("calibration: the threshold is a probability in [0, 1]")
        if not 0.0 <= float(self.relative) < 1.0:
            raise XmodalError("calibration: relative is a share of the best match, in [0, 1)")
        self._s, self._p = s, p

    def probability(self, scores: np.ndarray) -> np.ndarray:
        """Match probabilities of raw scores (any shape), interpolated between the breakpoints
        and held constant beyond the first and last."""
        x = np.asarray(scores, dtype=np.float64)
        return np.clip(np.interp(x, self._s, self._p), 0.0, 1.0)

    def default_cutoff(self, best: float) -> float:
        """The minimum probability shown by default when the best match has ``best``."""
        return max(float(self.threshold), float(self.relative) * float(best))

    def min_raw_score(self, min_probability: float | None = None) -> float:
        """The smallest raw score whose probability reaches ``min_probability`` (default: the
        threshold); ``inf`` when no score does."""
        t = self.threshold if min_probability is None else float(min_probability)
        reach = np.flatnonzero(self._p >= t)
        if not len(reach):
            return float("inf")
        j = int(reach[0])
        if j == 0 or self._p[j] == self._p[j - 1]:
            return float(self._s[j])
        # linear piece between breakpoints j-1 and j
        frac = (t - self._p[j - 1]) / (self._p[j] - self._p[j - 1])
        return float(self._s[j - 1] + frac * (self._s[j] - self._s[j - 1]))

    def to_json(self) -> str:
        d = asdict(self)
        d["scores"] = [float(x) for x in self.scores]
        d["probabilities"] = [float(x) for x in self.probabilities]
        d["threshold"] = float(self.threshold)
        d["relative"] = float(self.relative)
        return json.dumps(d, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Calibrator:
        try:
            d = json.loads(text)
            return cls(model_id=str(d["model_id"]), scores=list(d["scores"]),
                       probabilities=list(d["probabilities"]), threshold=float(d["threshold"]),
                       provenance=dict(d.get("provenance") or {}),
                       relative=float(d.get("relative", 0.0)))
        except (ValueError, KeyError, TypeError) as exc:
            raise XmodalError(f"calibration file is not well formed: {exc}") from exc


def load_calibrator(model_id: str, path: str | Path | None = None) -> Calibrator | None:
    """The calibrator at ``path`` (default: the one shipped for the model, see
    :func:`asset_path`) when it was fitted for ``model_id``, else ``None`` (no cutoff)."""
    path = path or asset_path(model_id)
    if path is None:
        return None
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    cal = Calibrator.from_json(text)
    return cal if cal.model_id == model_id else None
