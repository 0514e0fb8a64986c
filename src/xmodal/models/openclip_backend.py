"""CLIP models from open_clip, loaded from a local checkpoint: ``openclip:ARCH:CHECKPOINT_PATH``.

``ARCH`` is an open_clip architecture name (``ViT-B-32``, ``RN50``, ...) or the path of an
open_clip model-config JSON file (registered under its file stem); ``CHECKPOINT_PATH`` is a
local ``.pt`` / ``.bin`` / ``.safetensors`` state dict. Nothing is downloaded.

open_clip is an optional extra. Its PyPI package depends on torchvision, which does not work with
the torch xmodal pins, so install it without dependencies::

    pip install --no-deps open-clip-torch
    pip install ftfy        # optional: open_clip's text cleaning (a no-op stand-in is used without)

open_clip imports a few torchvision names at import time (transform classes and
``FrozenBatchNorm2d``) but needs none of them to build and run a model. When torchvision is
missing, this module imports open_clip with inert stand-ins for exactly those names, removes them
from ``sys.modules`` afterwards, and does the image preprocessing itself with PIL (resize the
short side, centre crop, normalise with the model's mean/std), following the model's
``preprocess_cfg``.
"""

from __future__ import annotations

import enum
import importlib
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.quiet import dropped_logs

_STUB_MODULES = (
    "torchvision",
    "torchvision.transforms",
    "torchvision.transforms.functional",
    "torchvision.ops",
    "torchvision.ops.misc",
)


class _Unavailable:
    """Stand-in for a torchvision class: importing works, using it says why it cannot."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise XmodalError(
            "this open_clip feature needs torchvision, which xmodal does not use; "
            "xmodal preprocesses images itself"
        )


class _InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


def _torchvision_stubs() -> dict[str, types.ModuleType]:
    tv = types.ModuleType("torchvision")
    transforms = types.ModuleType("torchvision.transforms")
    functional = types.ModuleType("torchvision.transforms.functional")
    ops = types.ModuleType("torchvision.ops")
    misc = types.ModuleType("torchvision.ops.misc")
    for name in (
        "Normalize",
        "Compose",
        "RandomResizedCrop",
        "ToTensor",
        "Resize",
        "CenterCrop",
        "ColorJitter",
        "Grayscale",
    ):
        setattr(transforms, name, type(name, (_Unavailable,), {}))
    transforms.InterpolationMode = _InterpolationMode
    functional.InterpolationMode = _InterpolationMode
    transforms.functional = functional
    misc.FrozenBatchNorm2d = type("FrozenBatchNorm2d", (_Unavailable,), {})
    ops.misc = misc
    tv.transforms = transforms
    tv.ops = ops
    tv.__xmodal_stub__ = True
    return {
        "torchvision": tv,
        "torchvision.transforms": transforms,
        "torchvision.transforms.functional": functional,
        "torchvision.ops": ops,
        "torchvision.ops.misc": misc,
    }


def _ftfy_stub() -> types.ModuleType:
    ftfy = types.ModuleType("ftfy")
    ftfy.fix_text = lambda text, *a, **k: text
    ftfy.__xmodal_stub__ = True
    return ftfy


def import_open_clip():
    """Import open_clip, standing in for torchvision (and ftfy) only if they are missing."""
    if "open_clip" in sys.modules:
        return sys.modules["open_clip"]
    added: list[str] = []
    try:  # transformers probes for torchvision on import: let it see the truth first
        importlib.import_module("transformers")
    except Exception:
        pass
    try:
        importlib.import_module("torchvision")
    except Exception:  # missing, or broken against this torch
        for name in _STUB_MODULES:
            sys.modules.pop(name, None)
        for name, mod in _torchvision_stubs().items():
            sys.modules[name] = mod
            added.append(name)
    try:
        importlib.import_module("ftfy")
    except ImportError:
        sys.modules["ftfy"] = _ftfy_stub()
        added.append("ftfy")
    try:
        import open_clip
    except ImportError as exc:
        raise XmodalError(
            f"open_clip is not installed ({exc}); run: pip install --no-deps open-clip-torch"
        ) from None
    finally:
        for name in added:
            sys.modules.pop(name, None)
    return open_clip


def parse_spec(spec: str) -> tuple[str, Path]:
    """``openclip:ARCH:PATH`` -> (ARCH, PATH); ARCH has no colon, PATH may."""
    if not spec.startswith("openclip:"):
        raise XmodalError(f"not an open_clip spec: {spec!r} (expected openclip:ARCH:PATH)")
    arch, sep, path = spec[len("openclip:") :].partition(":")
    if not arch or not sep or not path:
        raise XmodalError(
            f"bad open_clip spec {spec!r}: use openclip:ARCH:CHECKPOINT_PATH, "
            "e.g. openclip:ViT-B-32:/models/vit-b-32.pt"
        )
    return arch, Path(path).expanduser()


class OpenClipModel:
    """An open_clip CLIP behind the xmodal embedding-model surface."""

    def __init__(self, model: Any, tokenizer: Any, arch: str, checkpoint: Path,
                 device: str | None = None, batch_size: int | None = None) -> None:
        from xmodal.models import torch_runtime

        self.device = torch_runtime.check_device(device) if device else torch_runtime.device()
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.arch = arch
        self.checkpoint = checkpoint
        cfg = getattr(model.visual, "preprocess_cfg", {}) or {}
        size = cfg.get("size", getattr(model.visual, "image_size", 224))
        self.image_size = tuple(size) if isinstance(size, list | tuple) else (size, size)
        self.mean = np.array(cfg.get("mean", (0.48145466, 0.4578275, 0.40821073)), np.float32)
        self.std = np.array(cfg.get("std", (0.26862954, 0.26130258, 0.27577711)), np.float32)
        self.interpolation = cfg.get("interpolation", "bicubic")
        self.resize_mode = cfg.get("resize_mode", "shortest")
        self.batch_size = batch_size or torch_runtime.batch_size(32)  # images per forward pass
        self.text_batch_size = batch_size or torch_runtime.batch_size(256)

    @property
    def dim(self) -> int:
        import torch

        with torch.inference_mode():
            return int(self.model.encode_text(self.tokenizer(["a"]).to(self.device)).shape[-1])

    def preprocess(self, image: Any) -> np.ndarray:
        """(3, H, W) float32: resize the short side (or squash), centre crop, normalise."""
        from PIL import Image

        from xmodal.features.image_encoder import open_image

        im = open_image(image)
        h, w = self.image_size
        resample = Image.BICUBIC if self.interpolation == "bicubic" else Image.BILINEAR
        if self.resize_mode == "squash":
            im = im.resize((w, h), resample)
        else:
            scale = max(h / im.height, w / im.width)
            nw, nh = max(w, round(im.width * scale)), max(h, round(im.height * scale))
            im = im.resize((nw, nh), resample)
            left, top = (nw - w) // 2, (nh - h) // 2
            im = im.crop((left, top, left + w, top + h))
        x = np.asarray(im, dtype=np.float32) / 255.0
        x = (x - self.mean) / self.std
        return np.ascontiguousarray(x.transpose(2, 0, 1))

    def embed_images(self, images: list[Any], *, progress: bool = True, **_: Any) -> np.ndarray:
        import torch
        from tqdm.auto import tqdm

        images = list(images)
        out = []
        bar = tqdm(total=len(images), desc="open_clip images", unit="img", disable=not progress)
        with torch.inference_mode():
            for s in range(0, len(images), self.batch_size):
                batch = np.stack([self.preprocess(im) for im in images[s : s + self.batch_size]])
                z = self.model.encode_image(torch.from_numpy(batch).to(self.device))
                out.append(torch.nn.functional.normalize(z.float(), dim=-1).cpu().numpy())
                bar.update(len(batch))
        bar.close()
        if not out:
            return np.zeros((0, self.dim), np.float32)
        return np.concatenate(out).astype(np.float32)

    def embed_texts(self, texts: list[str], *, progress: bool = True, **_: Any) -> np.ndarray:
        import torch

        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise XmodalError("embed_texts expects a list of strings")
        out = []
        with torch.inference_mode():
            step = self.text_batch_size
            for s in range(0, len(texts), step):
                z = self.model.encode_text(self.tokenizer(texts[s : s + step]).to(self.device))
                out.append(torch.nn.functional.normalize(z.float(), dim=-1).cpu().numpy())
        if not out:
            return np.zeros((0, self.dim), np.float32)
        return np.concatenate(out).astype(np.float32)

    def score(self, images: list[Any], texts: list[str], *, progress: bool = True) -> np.ndarray:
        return self.embed_images(images, progress=progress) @ self.embed_texts(texts).T


def load_openclip(arch: str, checkpoint: str | Path) -> OpenClipModel:
    """Build open_clip architecture ``arch`` and load the local state dict ``checkpoint``."""
    checkpoint = Path(checkpoint).expanduser()
    if not checkpoint.is_file():
        raise XmodalError(f"open_clip checkpoint not found: {checkpoint}")
    open_clip = import_open_clip()
    if arch.endswith(".json"):
        config = Path(arch).expanduser()
        if not config.is_file():
            raise XmodalError(f"open_clip model config not found: {config}")
        open_clip.add_model_config(config)
        arch = config.stem
    if arch not in open_clip.list_models():
        raise XmodalError(
            f"unknown open_clip architecture {arch!r}; e.g. ViT-B-32, ViT-B-16, RN50 "
            "(or pass a model-config .json path)"
        )
    try:
        with dropped_logs(lambda r: "initialized randomly" in r.getMessage()):
            # open_clip logs it before the weights come, next, from the checkpoint
            model = open_clip.create_model(arch, pretrained=None, load_weights=False,
                                           device="cpu")
        open_clip.load_checkpoint(model, str(checkpoint))
    except XmodalError:
        raise
    except Exception as exc:
        raise XmodalError(
            f"cannot load open_clip checkpoint {checkpoint} into {arch}: {type(exc).__name__}: "
            f"{exc}"
        ) from None
    try:
        tokenizer = open_clip.get_tokenizer(arch)
    except Exception as exc:
        raise XmodalError(
            f"cannot build the tokenizer of {arch} offline: {type(exc).__name__}: {exc}"
        ) from None
    return OpenClipModel(model, tokenizer, arch, checkpoint)


def load_openclip_spec(spec: str) -> OpenClipModel:
    arch, path = parse_spec(spec)
    return load_openclip(arch, path)
