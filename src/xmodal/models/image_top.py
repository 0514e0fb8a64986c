"""The top of an EfficientNet-Lite image tower as a layer that training can tune.

The last layers of EfficientNet-Lite are a 1x1 head convolution, batch norm, ReLU6 and a global
average pool. With the batch norm folded into the convolution they are one affine map per
feature-map cell: ``pooled = mean over cells of relu6(x @ weight.T + bias)``, where ``x`` is the
(cells, C) activation the last block gives (C = 352 for Lite2, 320 for Lite0). Tuning that map
is the cheapest way to fine-tune the image encoder itself: the activations below it are cached
once, and a training step costs one (cells x C) @ (C x 1280) product per image.

Numpy computes it at inference (no torch to search); :class:`TunableTop` is the torch twin used
in training. Arrays: ``weight`` (1280, C) and ``bias`` (1280,).
"""

from __future__ import annotations

import numpy as np


def pretrained_top(backbone: str | None = None) -> dict[str, np.ndarray]:
    """The pretrained head conv with its batch norm folded in: {weight (1280, C), bias (1280,)}."""
    from xmodal.features.image_encoder import load_efficientnet

    net = load_efficientnet(backbone)
    bn = net._bn1
    scale = (bn.weight / (bn.running_var + bn.eps).sqrt()).detach().numpy()
    weight = net._conv_head.weight.detach().numpy()[:, :, 0, 0] * scale[:, None]
    bias = bn.bias.detach().numpy() - bn.running_mean.detach().numpy() * scale
    return {"weight": weight.astype(np.float32), "bias": bias.astype(np.float32)}


def top_pooled(prehead: np.ndarray, top: dict[str, np.ndarray], batch: int = 256) -> np.ndarray:
    """(n, 1280) float32 pooled features from (n, cells, C) activations below the head conv."""
    w = np.asarray(top["weight"], np.float32).T
    b = np.asarray(top["bias"], np.float32)
    out = np.empty((len(prehead), w.shape[1]), np.float32)
    for s in range(0, len(prehead), batch):
        x = np.asarray(prehead[s : s + batch], np.float32)
        out[s : s + batch] = np.clip(x @ w + b, 0.0, 6.0).mean(axis=1)
    return out


def tunable_top(top: dict[str, np.ndarray]):
    """A torch module computing :func:`top_pooled`, initialised from ``top``."""
    import torch
    from torch import nn

    class TunableTop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.from_numpy(np.asarray(top["weight"], np.float32)))
            self.bias = nn.Parameter(torch.from_numpy(np.asarray(top["bias"], np.float32)))

        def forward(self, prehead: torch.Tensor) -> torch.Tensor:  # (b, cells, C)
            return torch.clamp(prehead @ self.weight.T + self.bias, 0.0, 6.0).mean(dim=1)

        def arrays(self) -> dict[str, np.ndarray]:
            return {"weight": self.weight.detach().numpy().copy(),
                    "bias": self.bias.detach().numpy().copy()}

    return TunableTop()
