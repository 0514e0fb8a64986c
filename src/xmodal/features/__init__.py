"""Pretrained encoders with disk caches: EfficientNet-Lite0 for images, MiniLM for sentences.

Cached features of the whole Flickr8K dataset (computed once, by any caller or by
``nice -n 5 python scripts/train_dual_features.py``; afterwards loading takes seconds)::

    from xmodal.features import flickr8k_image_features, flickr8k_text_features
    image_ids, f = flickr8k_image_features()          # 8,091 sorted image file names
    f.pooled   # (8091, 1280) float32 pooled EfficientNet-Lite0 features
    f.logits   # (8091, 1000) float32 ImageNet logits (names: imagenet_class_names())
    image_ids, f = flickr8k_image_features(maps=True)
    f.maps     # (8091, 7, 7, 1280) float16 feature-map cells (about 1 GB)
    caption_ids, T = flickr8k_text_features()          # 40,455 ids "<image>#<k>", (40455, 384)

Row ``i`` of every array belongs to ``image_ids[i]``; use ``dataset.split("train")`` etc. to pick
rows. Images and texts are cached by content hash under ``xmodal.paths.cache_dir()/features``.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from xmodal.features.image_encoder import (
    ImageFeatures,
    encode_image_paths,
    extract_image_features,
    imagenet_class_names,
)
from xmodal.features.text_encoder import encode_texts

__all__ = [
    "ImageFeatures",
    "encode_image_paths",
    "encode_texts",
    "extract_image_features",
    "flickr8k_image_features",
    "flickr8k_text_features",
    "imagenet_class_names",
]


def _load(data):
    from xmodal.data import load_flickr8k
    from xmodal.data.flickr8k import Flickr8k

    if isinstance(data, Flickr8k):
        return data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_flickr8k(data, judgments=False)


def flickr8k_image_features(
    data: "str | os.PathLike | object | None" = None,
    *,
    maps: bool = False,
    flip: bool = False,
    progress: bool = True,
) -> tuple[list[str], ImageFeatures]:
    """EfficientNet-Lite0 features of all Flickr8K images, rows in ``dataset.image_ids`` order.

    ``data`` is a data root, the flickr8k folder, or an already loaded ``Flickr8k``.
    """
    ds = _load(data)
    paths = [ds.image_path(i) for i in ds.image_ids]
    return list(ds.image_ids), extract_image_features(
        paths, maps=maps, flip=flip, progress=progress
    )


def flickr8k_text_features(
    data: "str | os.PathLike | object | None" = None, *, progress: bool = True
) -> tuple[list[str], np.ndarray]:
    """MiniLM embeddings of all Flickr8K captions, rows in ``dataset.captions`` order."""
    ds = _load(data)
    ids = [c.id for c in ds.captions]
    return ids, encode_texts([c.text for c in ds.captions], progress=progress)
