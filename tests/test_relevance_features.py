"""Grid region descriptors and caption keyword vocabularies for the relevance models."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from xmodal.data.flickr8k import Caption
from xmodal.errors import XmodalError
from xmodal.features.regions import DIM, grid_descriptors, grid_regions, pool_cells


def test_uniform_colour_cells_by_hand():
    rgb = np.zeros((224, 224, 3), np.uint8)
    rgb[:, :112] = (255, 0, 0)  # left half pure red
    rgb[:, 112:] = (0, 0, 255)  # right half pure blue
    d = grid_descriptors(rgb, grid=2)
    assert d.shape == (4, DIM)
    from skimage.color import rgb2lab

    red_lab = rgb2lab(np.array([[[1.0, 0.0, 0.0]]]))[0, 0] / np.array([100, 128, 128])
    np.testing.assert_allclose(d[0, :3], red_lab, atol=0.02)  # top-left cell: red
    np.testing.assert_allclose(d[0, 3:6], 0.0, atol=0.02)  # uniform: no spread (float32)
    # hue histogram weighted by saturation: red is hue 0 (bin 0), blue is 240 deg (bin 5)
    np.testing.assert_allclose(d[0, 6:14], np.eye(8)[0], atol=1e-6)
    np.testing.assert_allclose(d[1, 6:14], np.eye(8)[5], atol=1e-6)
    np.testing.assert_allclose(d[0, 14:16], [1.0, 1.0], atol=1e-6)  # saturation, value
    # cell positions (x, y): row-major cells
    np.testing.assert_allclose(d[:, -2:], [[0.25, 0.25], [0.75, 0.25], [0.25, 0.75], [0.75, 0.75]])


def test_texture_responds_to_stripes_and_orientation():
    flat = np.full((224, 224, 3), 128, np.uint8)
    vertical = flat.copy()
    vertical[:, ::8] = 255  # vertical lines: horizontal gradients, orientation bin 0
    d_flat = grid_descriptors(flat, grid=1)[0]
    d_vert = grid_descriptors(vertical, grid=1)[0]
    tex_flat, tex_vert = d_flat[16:28], d_vert[16:28]
    np.testing.assert_allclose(tex_flat[:11], 0.0, atol=1e-6)  # no gradients, edges, Laplacian
    assert tex_vert[8] > 0 and tex_vert[9] > 0  # mean magnitude, edge fraction
    assert np.argmax(tex_vert[:8]) == 0


def test_grid_regions_reads_files_and_rejects_bad_ones(tmp_path):
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (50, 70, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    Image.fromarray(rng.integers(0, 255, (30, 30), dtype=np.uint8)).save(tmp_path / "g.jpg")
    x = grid_regions([tmp_path / "a.png", tmp_path / "g.jpg"], cache=False)
    assert x.shape == (2, 16, DIM) and np.isfinite(x).all()
    (tmp_path / "bad.jpg").write_text("nope")
    with pytest.raises(XmodalError, match="cannot read image"):
        grid_regions([tmp_path / "bad.jpg"], cache=False)


def test_pool_cells_averages_overlapping_windows():
    maps = np.arange(2 * 7 * 7 * 1, dtype=np.float32).reshape(2, 7, 7, 1)
    p = pool_cells(maps, 3)
    assert p.shape == (2, 9, 1)
    # window edges over 7 cells: [0, 3), [2, 5), [4, 7)
    assert p[0, 0, 0] == pytest.approx(maps[0, 0:3, 0:3, 0].mean())
    assert p[1, 4, 0] == pytest.approx(maps[1, 2:5, 2:5, 0].mean())
    assert p[0, 8, 0] == pytest.approx(maps[0, 4:7, 4:7, 0].mean())


class _FakeCaptions:
    def __init__(self, caps: dict[str, list[str]]):
        self._caps = {
            i: [Caption(f"{i}#{k}", i, k, t) for k, t in enumerate(texts)]
            for i, texts in caps.items()
        }

    def captions_of(self, image_id):
        return self._caps.get(image_id, [])


def test_keyword_vocabulary_and_image_keywords():
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix

    data = _FakeCaptions({
        "a": ["A dog runs on the grass .", "Two dogs are running ."],
        "b": ["A brown dog sits in the snow .", "The dog is sitting ."],
        "c": ["A girl climbs a rock .", "The girl climbs up a wall ."],
    })
    vocab = build_keyword_vocabulary(data, ["a", "b", "c"], min_images=2)
    # only "dog" (images a, b) reaches two images; "sit" is a generic word, "run" is in one image
    assert vocab.words == ["dog"]
    assert vocab.document_frequency == [2]
    y = image_keyword_matrix(data, ["a", "b", "c"], vocab)
    np.testing.assert_array_equal(y[:, 0], [True, True, False])
    vocab1 = build_keyword_vocabulary(data, ["a", "b", "c"], min_images=1)
    assert {"dog", "run", "grass", "girl", "climb", "rock", "snow"} <= set(vocab1.words)
    assert not {"a", "the", "two", "sit"} & set(vocab1.words)
    both = build_keyword_vocabulary(data, ["a", "b", "c"], min_images=1, min_captions=2)
    assert set(both.words) == {"dog", "run", "girl", "climb"}
    with pytest.raises(XmodalError, match="no keyword"):
        build_keyword_vocabulary(data, ["a", "b", "c"], min_images=5)
