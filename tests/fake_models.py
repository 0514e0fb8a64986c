"""Deterministic stand-in embedding models for store and CLI tests (no network, no weights).

Images embed as their mean colour; texts embed the colour words they contain, so "red" finds the
red image. Loaded by the CLI through ``--model python:tests.fake_models:ColourModel``.
"""

from __future__ import annotations

import time

import numpy as np
from PIL import Image

COLOURS = {
    "red": (255, 0, 0),
    "green": (0, 255, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "white": (255, 255, 255),
    "black": (0, 0, 0),
}


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)).astype(np.float32)


class ColourModel:
    dim = 4
    model_id = "test-colour-v1"

    def embed_images(self, images, *, progress=False, cache=True):
        rows = []
        for im in images:
            if not isinstance(im, Image.Image):
                im = Image.open(im)
            rgb = np.asarray(im.convert("RGB"), dtype=np.float64).reshape(-1, 3).mean(0) / 255
            rows.append([*rgb, 0.1])
        return _unit(np.array(rows, dtype=np.float64).reshape(-1, 4))

    def embed_texts(self, texts, *, progress=False):
        rows = []
        for t in texts:
            v = np.zeros(4)
            for word in t.lower().split():
                if word in COLOURS:
                    v[:3] += np.array(COLOURS[word]) / 255
            v[3] = 0.1
            rows.append(v)
        return _unit(np.array(rows))


class SlowColourModel(ColourModel):
    """Takes 0.1 s per image, so a test can kill indexing midway."""

    def embed_images(self, images, *, progress=False, cache=True):
        time.sleep(0.1 * len(images))
        return super().embed_images(images)


class CountingColourModel(ColourModel):
    """Counts the images it embeds (class-wide), so a test can tell re-embedding from reuse."""

    embedded = 0

    def embed_images(self, images, *, progress=False, cache=True):
        CountingColourModel.embedded += len(images)
        return super().embed_images(images)
