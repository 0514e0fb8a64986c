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
    """embed_images: unit mean RGB; embed_texts: unit sum of the colour-word vectors it mentions
    (plus a (1, 1, 1) bias so a text without colour words still has a direction)."""

    dim = 3
    model_id = "fake-colour-v1"

    def embed_images(self, images, *, progress=False, cache=True) -> np.ndarray:
        out = []
        for image in images:
            if not isinstance(image, Image.Image):
                image = Image.open(image)
            out.append(_unit(np.asarray(image.convert("RGB"), dtype=np.float32).mean(axis=(0, 1))))
        return np.stack(out)

    def embed_texts(self, texts, *, progress=False) -> np.ndarray:
        out = []
        for text in texts:
            v = sum((WORD_VECTORS[w] for w in text.lower().split() if w in WORD_VECTORS),
                    np.ones(3, dtype=np.float32))
            out.append(_unit(v))
        return np.stack(out)


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


def build_index(folder: Path, db: Path, model: FakeModel | None = None) -> Path:
    """A real ``xmodal.index.PhotoIndex`` over ``folder`` (fake model), one caption per image."""
    from xmodal.index import PhotoIndex

    captions = {p.name: [f"a {p.stem.split('_')[1]} picture"] for p in folder.glob("*.png")}
    index = PhotoIndex(db, model=model or FakeModel())
    index.update(folder, captions=captions, progress=False)
    index.close()
    return db


def fake_backends(root: Path) -> tuple[Path, dict]:
    """(db path, {"model", "tagger"}) for ``create_app``: a colour index under ``root``."""
    model = FakeModel()
    db = build_index(make_photo_folder(root / "photos"), root / "photos.db", model)
    return db, {"model": model, "tagger": FakeTagger()}


def test_fakes_rank_by_colour(tmp_path):
    from xmodal.index import PhotoIndex

    db, parts = fake_backends(tmp_path)
    index = PhotoIndex(db, model=parts["model"], create=False)
    assert Path(index.search("a red car", 1)[0].path).name == "0_red.png"
    blue = str((tmp_path / "photos" / "2_blue.png").resolve())
    assert blue not in [h.path for h in index.similar(blue, 5)]
    assert len(index.captions()) == 6
    assert parts["tagger"].tag(Image.new("RGB", (8, 8), COLOURS["green"]), 1)[0][0] == "green"
