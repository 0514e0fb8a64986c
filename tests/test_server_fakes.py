"""Fakes for the server tests: a tiny photo index, embedding model and tagger with known answers.

Images are solid colours; an image embeds to its normalised mean RGB and a text embeds to the
colour words it contains, so the correct ranking of every query is known by hand.
(This module holds helpers for ``test_server_api.py`` and ``test_server_browser.py``, plus a check
that the fakes themselves behave as the tests assume.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

COLOURS = {
    "red": (220, 20, 20),
    "green": (20, 200, 30),
    "blue": (25, 30, 210),
    "yellow": (230, 220, 20),
    "purple": (150, 20, 170),
    "cyan": (20, 200, 210),
}
WORD_VECTORS = {name: np.asarray(rgb, dtype=np.float32) for name, rgb in COLOURS.items()}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-9)


class FakeModel:
    """embed_images: unit mean RGB; embed_texts: unit sum of the colour-word vectors it mentions."""

    def embed_images(self, images) -> np.ndarray:
        out = []
        for image in images:
            if not isinstance(image, Image.Image):
                image = Image.open(image)
            out.append(_unit(np.asarray(image.convert("RGB"), dtype=np.float32).mean(axis=(0, 1))))
        return np.stack(out)

    def embed_texts(self, texts) -> np.ndarray:
        out = []
        for text in texts:
            v = sum((WORD_VECTORS[w] for w in text.lower().split() if w in WORD_VECTORS),
                    np.ones(3, dtype=np.float32))
            out.append(_unit(v))
        return np.stack(out)


class FakeIndex:
    """A photo index over a folder of solid-colour images, ranking by the fake model."""

    def __init__(self, folder: Path, model: FakeModel) -> None:
        self.model = model
        self.paths = {p.name: p for p in sorted(Path(folder).glob("*.png"))}
        self.ids = list(self.paths)
        self.vectors = model.embed_images([Image.open(p) for p in self.paths.values()])
        self.search_calls = 0

    def _rank(self, query_vec: np.ndarray, k: int) -> list[dict]:
        scores = self.vectors @ query_vec
        order = np.argsort(-scores, kind="stable")[:k]
        return [{"id": self.ids[i], "score": float(scores[i]), "path": str(self.paths[self.ids[i]])}
                for i in order]

    def search(self, text: str, k: int = 10) -> list[dict]:
        self.search_calls += 1
        return self._rank(self.model.embed_texts([text])[0], k)

    def similar(self, item_id: str, k: int = 10) -> list[dict]:
        if item_id not in self.paths:
            from xmodal.errors import XmodalError

            raise XmodalError(f"no indexed image {item_id!r}")
        return self._rank(self.vectors[self.ids.index(item_id)], k)

    def path(self, item_id: str) -> str | None:
        p = self.paths.get(item_id)
        return str(p) if p else None

    def stats(self) -> dict:
        return {"n_images": len(self.ids), "n_captions": len(self.ids), "dim": 3}

    def captions(self) -> list[tuple[str, str]]:
        return [(i, f"a {i.split('_')[1].split('.')[0]} picture") for i in self.ids]


class FakeTagger:
    """Tags an image with the colour word nearest to its mean colour, then the others."""

    def tag(self, image: Image.Image, n: int = 5) -> list[tuple[str, float]]:
        v = FakeModel().embed_images([image])[0]
        scored = sorted(((w, float(_unit(c) @ v)) for w, c in WORD_VECTORS.items()),
                        key=lambda t: -t[1])
        return scored[:n]


def make_photo_folder(folder: Path, size: int = 96) -> Path:
    """Solid-colour PNGs named ``<n>_<colour>.png`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, (name, rgb) in enumerate(COLOURS.items()):
        Image.new("RGB", (size, size + 16 * n), rgb).save(folder / f"{n}_{name}.png")
    return folder


def fake_backends(folder: Path) -> dict:
    model = FakeModel()
    return {"index": FakeIndex(folder, model), "model": model, "tagger": FakeTagger()}


def test_fakes_rank_by_colour(tmp_path):
    parts = fake_backends(make_photo_folder(tmp_path / "photos"))
    assert parts["index"].search("a red car", 1)[0]["id"] == "0_red.png"
    assert parts["index"].similar("2_blue.png", 1)[0]["id"] == "2_blue.png"
    assert parts["tagger"].tag(Image.new("RGB", (8, 8), COLOURS["green"]), 1)[0][0] == "green"
