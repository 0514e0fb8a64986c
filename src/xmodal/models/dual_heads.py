"""The trainable heads of the dual encoder (torch): a residual MLP per modality.

Each head standardises its input with statistics of the training set, then adds a linear map and
a one-hidden-layer MLP; outputs are L2-normalised. With ``text_identity`` the sentence side stays MiniLM's own (locked) space and only the image
head learns (as in LiT, with the roles swapped). The image head can optionally attend over the
7x7 EfficientNet feature-map cells (a learned query, softmax over cells) and add that summary to
the pooled vector. Weights round-trip as plain float arrays (no pickle).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


class _Head(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int, dropout: float) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(d_in))
        self.register_buffer("std", torch.ones(d_in))
        self.linear = nn.Linear(d_in, d_out)
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, d_out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        x = self.drop(x)
        return self.linear(x) + self.fc2(self.drop(F.gelu(self.fc1(x))))


class _CellAttention(nn.Module):
    """Attention pooling over feature-map cells: softmax(cells . q) weighted mean, then linear."""

    def __init__(self, channels: int, d_out: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(channels))
        self.register_buffer("std", torch.ones(channels))
        self.query = nn.Linear(channels, 1)
        self.out = nn.Linear(channels, d_out)

    def forward(self, maps: torch.Tensor) -> torch.Tensor:  # (b, cells, c)
        x = (maps - self.mean) / self.std
        a = torch.softmax(self.query(x).squeeze(-1), dim=1)  # (b, cells)
        return self.out((a.unsqueeze(-1) * x).sum(1))


class DualHeads(nn.Module):
    def __init__(
        self,
        image_dim: int = 1280,
        text_dim: int = 384,
        dim: int = 256,
        hidden: int = 1024,
        dropout: float = 0.2,
        use_maps: bool = False,
        text_identity: bool = False,
        map_dim: int = 1280,
    ) -> None:
        super().__init__()
        if text_identity:
            dim = text_dim  # the joint space is MiniLM's own space
        self.cfg = dict(
            image_dim=image_dim,
            text_dim=text_dim,
            dim=dim,
            hidden=hidden,
            dropout=dropout,
            use_maps=use_maps,
            text_identity=text_identity,
            map_dim=map_dim,
        )
        self.image = _Head(image_dim, hidden, dim, dropout)
        self.text = None if text_identity else _Head(text_dim, hidden, dim, dropout)
        self.cells = _CellAttention(map_dim, dim) if use_maps else None
        self.log_scale = nn.Parameter(torch.tensor(float(np.log(1 / 0.05))))

    @property
    def uses_maps(self) -> bool:
        return self.cells is not None

    # torch side (training) -----------------------------------------------------------------
    def image_forward(self, pooled: torch.Tensor, maps: torch.Tensor | None = None):
        z = self.image(pooled)
        if self.cells is not None and maps is not None:
            z = z + self.cells(maps.flatten(1, 2) if maps.dim() == 4 else maps)
        return F.normalize(z, dim=-1)

    def text_forward(self, text: torch.Tensor) -> torch.Tensor:
        if self.text is None:  # locked text side: sentences keep their MiniLM embedding
            return F.normalize(text, dim=-1)
        return F.normalize(self.text(text), dim=-1)

    # numpy side (inference) ----------------------------------------------------------------
    def _run(self, fn, *arrays, batch: int = 4096) -> np.ndarray:
        self.eval()
        if any(a is not None and np.ndim(a) > 2 for a in arrays):
            batch = 256  # feature maps: keep the float32 copy small
        outs = []
        n = len(arrays[0])
        with torch.inference_mode():
            for s in range(0, n, batch):
                ts = [
                    None if a is None else torch.from_numpy(np.asarray(a[s : s + batch], np.float32))
                    for a in arrays
                ]
                outs.append(fn(*ts).numpy())
        if not outs:
            return np.zeros((0, self.cfg["dim"]), np.float32)
        return np.concatenate(outs).astype(np.float32)

    def embed_images(self, pooled: np.ndarray, maps: np.ndarray | None = None) -> np.ndarray:
        if self.uses_maps and maps is None:
            raise ValueError("these heads attend over feature maps: pass maps")
        return self._run(self.image_forward, pooled, maps if self.uses_maps else None)

    def embed_texts(self, text: np.ndarray) -> np.ndarray:
        return self._run(self.text_forward, text)

    # persistence -----------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return dict(self.cfg)

    def state_arrays(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().numpy() for k, v in self.state_dict().items()}

    @classmethod
    def from_arrays(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> DualHeads:
        heads = cls(**config)
        state = {k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in arrays.items()}
        heads.load_state_dict(state, strict=True)
        heads.eval()
        return heads


class EnsembleHeads:
    """K :class:`DualHeads` trained with different seeds, used as one set of heads.

    The members' spaces are not aligned (each seed learns its own rotation), so their embeddings
    are not averaged: an ensemble embedding is the concatenation of the members' L2-normalised
    embeddings divided by sqrt(K), a unit vector whose dot product is the mean of the members'
    cosines. The ensemble keeps the single heads' interface (``embed_images``, ``embed_texts``,
    ``cfg`` with ``dim`` = K x member dim, ``uses_maps``, ``config``, ``state_arrays``) and saves
    as plain arrays (``m{i}.`` prefixes).
    """

    def __init__(self, members: list[DualHeads]) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = list(members)
        self.cfg = dict(members[0].cfg)
        self.cfg["dim"] = sum(m.cfg["dim"] for m in self.members)

    @property
    def uses_maps(self) -> bool:
        return any(m.uses_maps for m in self.members)

    @staticmethod
    def _mean(parts: list[np.ndarray]) -> np.ndarray:
        return (np.concatenate(parts, axis=1) / np.sqrt(len(parts))).astype(np.float32)

    def embed_images(self, pooled: np.ndarray, maps: np.ndarray | None = None) -> np.ndarray:
        return self._mean([m.embed_images(pooled, maps) for m in self.members])

    def embed_texts(self, text: np.ndarray) -> np.ndarray:
        return self._mean([m.embed_texts(text) for m in self.members])

    def eval(self) -> EnsembleHeads:
        for m in self.members:
            m.eval()
        return self

    def config(self) -> dict[str, Any]:
        return {"members": [m.config() for m in self.members]}

    def state_arrays(self) -> dict[str, np.ndarray]:
        return {f"m{i}.{k}": v for i, m in enumerate(self.members) for k, v in m.state_arrays().items()}

    @classmethod
    def from_arrays(cls, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> EnsembleHeads:
        members = []
        for i, cfg in enumerate(config["members"]):
            prefix = f"m{i}."
            sub = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
            members.append(DualHeads.from_arrays(cfg, sub))
        return cls(members)


def heads_from_arrays(config: dict[str, Any], arrays: dict[str, np.ndarray]):
    """DualHeads or EnsembleHeads, whichever ``config`` (from ``.config()``) describes."""
    if "members" in config:
        return EnsembleHeads.from_arrays(config, arrays)
    return DualHeads.from_arrays(config, arrays)
