"""The dual encoder's trained heads at inference time, in numpy: no torch import to search.

Reads the same arrays as :class:`xmodal.models.dual_heads.DualHeads` (its ``state_dict`` names)
and computes the same function: standardise, a linear map plus a one-hidden-layer GELU MLP,
optionally attention pooling over feature-map cells, L2-normalise. An ensemble concatenates its
members' unit embeddings divided by sqrt(K), as :class:`~xmodal.models.dual_heads.EnsembleHeads`.
Torch stays for training; tests check both give the same embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _normalize(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), in numpy: importing scipy.special for
    it took 0.1-0.3 s of every cold search."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                       + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:  # the exact (erf) GELU, torch's default
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


class _Member:
    """One set of heads (one :class:`DualHeads`)."""

    def __init__(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.cfg = dict(config)
        if self.cfg.get("text_identity"):
            self.cfg["dim"] = self.cfg["text_dim"]
        self.a = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
        self.uses_maps = bool(self.cfg.get("use_maps"))

    def _head(self, prefix: str, x: np.ndarray) -> np.ndarray:
        a = self.a
        x = (x - a[f"{prefix}.mean"]) / a[f"{prefix}.std"]
        hidden = _gelu(x @ a[f"{prefix}.fc1.weight"].T + a[f"{prefix}.fc1.bias"])
        return (x @ a[f"{prefix}.linear.weight"].T + a[f"{prefix}.linear.bias"]
                + hidden @ a[f"{prefix}.fc2.weight"].T + a[f"{prefix}.fc2.bias"])

    def _cells(self, maps: np.ndarray) -> np.ndarray:
        a = self.a
        x = (maps - a["cells.mean"]) / a["cells.std"]  # (b, cells, c)
        logit = (x @ a["cells.query.weight"].T)[..., 0] + a["cells.query.bias"]
        w = np.exp(logit - logit.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        return (w[..., None] * x).sum(1) @ a["cells.out.weight"].T + a["cells.out.bias"]

    def embed_images(self, pooled: np.ndarray, maps: np.ndarray | None = None) -> np.ndarray:
        z = self._head("image", np.asarray(pooled, np.float32))
        if self.uses_maps:
            if maps is None:
                raise ValueError("these heads attend over feature maps: pass maps")
            m = np.asarray(maps, np.float32)
            z = z + self._cells(m.reshape(len(m), -1, m.shape[-1]) if m.ndim == 4 else m)
        return _normalize(z).astype(np.float32)

    def embed_texts(self, text: np.ndarray) -> np.ndarray:
        text = np.asarray(text, np.float32)
        if self.cfg.get("text_identity"):
            return _normalize(text).astype(np.float32)
        return _normalize(self._head("text", text)).astype(np.float32)


class NumpyHeads:
    """Trained heads (one set, or an ensemble) with the torch heads' inference interface."""

    def __init__(self, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self._config = config
        self._arrays = arrays
        if "members" in config:
            self.members = []
            for i, cfg in enumerate(config["members"]):
                prefix = f"m{i}."
                sub = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
                self.members.append(_Member(cfg, sub))
        else:
            self.members = [_Member(config, arrays)]
        self.cfg = dict(self.members[0].cfg)
        self.cfg["dim"] = sum(m.cfg["dim"] for m in self.members)

    @property
    def uses_maps(self) -> bool:
        return any(m.uses_maps for m in self.members)

    def _join(self, parts: list[np.ndarray]) -> np.ndarray:
        if len(parts) == 1:
            return parts[0]
        return (np.concatenate(parts, axis=1) / np.sqrt(len(parts))).astype(np.float32)

    def embed_images(self, pooled: np.ndarray, maps: np.ndarray | None = None) -> np.ndarray:
        return self._join([m.embed_images(pooled, maps) for m in self.members])

    def embed_texts(self, text: np.ndarray) -> np.ndarray:
        return self._join([m.embed_texts(text) for m in self.members])

    def config(self) -> dict[str, Any]:
        return self._config

    def state_arrays(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)
