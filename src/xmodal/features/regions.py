"""Image regions for the relevance models: a regular grid of cells, each with a feature vector.

Two region extractors:

- ``grid`` (:func:`grid_regions`): the image is resized to 224x224 and cut into ``grid x grid``
  cells (default 4x4 = 16 regions). Each cell gets a 30-d descriptor in the spirit of the
  CRM paper's colour / texture / position features:

  * colour (16): CIE Lab mean (3) and standard deviation (3); an 8-bin hue histogram weighted by
    saturation (8); mean saturation and mean value (HSV) (2);
  * texture (12): an 8-bin gradient-orientation histogram weighted by magnitude (8), mean
    gradient magnitude, fraction of edge pixels, mean absolute Laplacian and the standard
    deviation of lightness (4);
  * position (2): the cell centre (x, y) in [0, 1].

- ``effnet`` (:func:`effnet_cells`): EfficientNet-Lite0's 7x7x1280 last feature map
  (:mod:`xmodal.features.image_encoder`), average-pooled to 3x3 cells.

:func:`flickr8k_region_features` returns either for all Flickr8K images, cached on disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from PIL import Image

from xmodal.errors import XmodalError

SIZE = 224
GRID = 4
DIM = 30
VERSION = "regions_grid_v1"


def _open_rgb(image) -> np.ndarray:
    if isinstance(image, Image.Image):
        im = image.convert("RGB")
    else:
        from xmodal.features.image_encoder import open_image

        im = open_image(image)
    return np.asarray(im.resize((SIZE, SIZE), Image.BILINEAR), dtype=np.uint8)


def _block_mean(x: np.ndarray, grid: int) -> np.ndarray:
    """Mean over each of grid x grid blocks of an (H, W, ...) map -> (grid*grid, ...)."""
    h, w = x.shape[:2]
    bh, bw = h // grid, w // grid
    x = x[: bh * grid, : bw * grid]
    rest = x.shape[2:]
    blocks = x.reshape(grid, bh, grid, bw, *rest).mean(axis=(1, 3))
    return blocks.reshape(grid * grid, *rest)


def grid_descriptors(rgb: np.ndarray, grid: int = GRID) -> np.ndarray:
    """(grid*grid, 30) float32 descriptors of an RGB uint8 array (see the module docstring)."""
    import cv2

    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise XmodalError(f"expected an RGB image array, got shape {rgb.shape}")
    f = rgb.astype(np.float32) / 255.0
    lab = cv2.cvtColor(f, cv2.COLOR_RGB2Lab)  # L in [0, 100], a/b roughly [-127, 127]
    lab = lab / np.array([100.0, 128.0, 128.0], np.float32)
    hsv = cv2.cvtColor(f, cv2.COLOR_RGB2HSV)  # H in [0, 360), S, V in [0, 1]
    hue_bin = np.minimum((hsv[..., 0] / 45.0).astype(np.int64), 7)
    hue_hist = np.eye(8, dtype=np.float32)[hue_bin] * hsv[..., 1:2]
    gray = lab[..., 0]
    gx = cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(gray, cv2.CV_32F, 0, 1, ksize=3)
    mag = np.sqrt(gx**2 + gy**2)
    ori = (np.arctan2(gy, gx) % np.pi) / np.pi  # unsigned orientation in [0, 1)
    ori_bin = np.minimum((ori * 8).astype(np.int64), 7)
    ori_hist = np.eye(8, dtype=np.float32)[ori_bin] * mag[..., None]
    lap = np.abs(cv2.Laplacian(gray, cv2.CV_32F, ksize=3))
    edges = (mag > 0.25).astype(np.float32)

    # float32 moments (as the cached Flickr8K features were computed): the standard deviation
    # of a uniform cell comes out at ~0.01 instead of 0 from cancellation; harmless for the CRM
    lab_mean = _block_mean(lab, grid)
    lab_sq = _block_mean(lab**2, grid)
    lab_std = np.sqrt(np.maximum(lab_sq - lab_mean**2, 0.0))
    sv = _block_mean(hsv[..., 1:3], grid)
    hue = _block_mean(hue_hist, grid)
    ori_h = _block_mean(ori_hist, grid)
    texture = np.stack(
        [_block_mean(mag, grid), _block_mean(edges, grid), _block_mean(lap, grid), lab_std[:, 0]],
        axis=1,
    )
    centres = (np.arange(grid) + 0.5) / grid
    cy, cx = np.meshgrid(centres, centres, indexing="ij")
    pos = np.stack([cx.ravel(), cy.ravel()], axis=1)
    out = np.concatenate([lab_mean, lab_std, hue, sv, ori_h, texture, pos], axis=1)
    return out.astype(np.float32)


def grid_regions(
    images: Sequence[str | os.PathLike | Image.Image],
    grid: int = GRID,
    cache: bool = True,
    progress: bool = False,
) -> np.ndarray:
    """(n_images, grid*grid, 30) grid-cell descriptors; XmodalError names an unreadable file."""
    from tqdm.auto import tqdm

    from xmodal.features._cache import ArrayCache, file_hash

    store = None
    keys: list[str | None] = [None] * len(images)
    if cache:
        store = ArrayCache(f"{VERSION}_g{grid}", {"cells": ((grid * grid, DIM), "float32")})
        for i, im in enumerate(images):
            if not isinstance(im, Image.Image):
                try:
                    keys[i] = file_hash(im)
                except OSError as exc:
                    raise XmodalError(f"cannot read image {im}: {exc}") from None
        hits = store.get_many([k for k in keys if k is not None])
    else:
        hits = {}
    out = np.zeros((len(images), grid * grid, DIM), np.float32)
    new = []
    for i, im in enumerate(tqdm(images, desc="grid regions", disable=not progress)):
        k = keys[i]
        if k is not None and k in hits:
            out[i] = hits[k]["cells"]
            continue
        out[i] = grid_descriptors(_open_rgb(im), grid)
        if k is not None:
            new.append((k, {"cells": out[i]}))
        if store is not None and len(new) >= 256:
            store.put_many(new)
            new = []
    if store is not None and new:
        store.put_many(new)
    return out


def pool_cells(maps: np.ndarray, cells: int = 3) -> np.ndarray:
    """Average-pool (n, 7, 7, C) feature maps to (n, cells*cells, C) with overlapping windows."""
    n, h, w, c = maps.shape
    edges_h = np.linspace(0, h, cells + 1)
    edges_w = np.linspace(0, w, cells + 1)
    out = np.empty((n, cells * cells, c), np.float32)
    for a in range(cells):
        h0, h1 = int(np.floor(edges_h[a])), int(np.ceil(edges_h[a + 1]))
        for b in range(cells):
            w0, w1 = int(np.floor(edges_w[b])), int(np.ceil(edges_w[b + 1]))
            out[:, a * cells + b] = maps[:, h0:h1, w0:w1].astype(np.float32).mean(axis=(1, 2))
    return out


def effnet_cells(images, cells: int = 3, progress: bool = False) -> np.ndarray:
    """(n_images, cells*cells, 1280) pooled EfficientNet-Lite0 feature-map cells."""
    from xmodal.features.image_encoder import extract_image_features

    f = extract_image_features(list(images), maps=True, progress=progress)
    return pool_cells(f.maps, cells)


def flickr8k_region_features(data, kind: str = "grid", pca_dim: int = 64) -> dict:
    """Regions of all Flickr8K images: ``{"cells": (n, c, d), "index": {image id: row}}``.

    ``kind="grid"``: 4x4 cells of 30-d colour/texture/position descriptors. ``kind="effnet"``:
    3x3 EfficientNet-Lite0 cells reduced to ``pca_dim`` dimensions by PCA fitted on the
    official training split (the 1280-d cells are too wide for a kernel density).
    """
    ids = list(data.image_ids)
    index = {i: n for n, i in enumerate(ids)}
    if kind == "grid":
        cells = grid_regions([data.image_path(i) for i in ids], progress=True)
    elif kind == "effnet":
        from xmodal.features import flickr8k_image_features

        enc_ids, f = flickr8k_image_features(maps=True)
        pos = {i: n for n, i in enumerate(enc_ids)}
        rows = np.array([pos[i] for i in ids])
        cells = pool_cells(f.maps[rows], 3)
        del f
        tr = np.array([index[i] for i in data.split("train")])
        x = cells[tr].reshape(-1, cells.shape[2])
        mean = x.mean(0)
        _, _, vt = np.linalg.svd(x[:: max(1, len(x) // 20000)] - mean, full_matrices=False)
        cells = ((cells - mean) @ vt[:pca_dim].T).astype(np.float32)
    else:
        raise XmodalError(f"unknown region kind {kind!r}; choose 'grid' or 'effnet'")
    return {"cells": cells, "index": index, "ids": ids}
