"""Image kernels: histogram intersection, spatial pyramid on toy grids, combination, words."""

from __future__ import annotations

import numpy as np
import pytest

from xmodal.errors import XmodalError
from xmodal.features.image_kernels import (
    combine_kernels,
    cosine_kernel,
    histogram_intersection,
    pyramid_histograms,
    pyramid_weights,
)
from xmodal.features.visual_words import (
    VisualWordConfig,
    colour_descriptors,
    nearest_word,
    sift_descriptors,
    texture_descriptors,
    word_maps,
)


def test_histogram_intersection_hand_computed():
    a = np.array([[0.5, 0.3, 0.2, 0.0]])
    b = np.array([[0.1, 0.6, 0.0, 0.3], [0.5, 0.3, 0.2, 0.0]])
    k = histogram_intersection(a, b)
    # min(.5,.1)+min(.3,.6)+min(.2,0)+min(0,.3) = .1+.3 = .4 ; identical histograms give 1
    np.testing.assert_allclose(k, [[0.4, 1.0]], atol=1e-7)
    np.testing.assert_allclose(histogram_intersection(b), [[1.0, 0.4], [0.4, 1.0]], atol=1e-7)
    with pytest.raises(XmodalError):
        histogram_intersection(-a, b)


def test_pyramid_weights_are_lazebnik():
    np.testing.assert_allclose(pyramid_weights(3), [0.25, 0.25, 0.5])
    np.testing.assert_allclose(pyramid_weights(2), [0.5, 0.5])


def test_pyramid_kernel_on_toy_grid():
    # Two 4x4 grids of 2 words. Image A: left half word 0, right half word 1.
    # Image B: the mirror (left word 1, right word 0).
    a = np.zeros((4, 4), int)
    a[:, 2:] = 1
    b = 1 - a
    h = pyramid_histograms(np.stack([a, b]), n_words=2, levels=3)
    assert h.shape == (2, 2 * (1 + 4 + 16))
    k = histogram_intersection(h)
    # Level 0: both are half/half -> I0 = 1. Level 1 (2x2 cells): every cell is pure and the
    # words differ -> I1 = 0. Level 2: likewise 0. K = 1/4*1 + 1/4*0 + 1/2*0 = 0.25.
    assert k[0, 1] == pytest.approx(0.25)
    assert k[0, 0] == pytest.approx(1.0)
    # Shifting A's boundary by one column: level 0 overlap = 3/4 (12 of 16 points agree in
    # counts), level 1: left cells agree fully (8/16), right cells half (4/16) -> 12/16;
    # level 2 (1x1-point cells): 12 agreeing points of 16 -> 12/16.
    c = np.zeros((4, 4), int)
    c[:, 3:] = 1
    h2 = pyramid_histograms(np.stack([a, c]), n_words=2, levels=3)
    k2 = histogram_intersection(h2)[0, 1]
    # level 0: hist A = (8, 8)/16, C = (12, 4)/16 -> min = (8+4)/16 = .75
    assert k2 == pytest.approx(0.25 * 0.75 + 0.25 * 0.75 + 0.5 * 0.75)


def test_pyramid_equals_new_match_form():
    rng = np.random.default_rng(0)
    grids = rng.integers(0, 5, size=(2, 8, 8))
    lv = [
        histogram_intersection(pyramid_histograms(grids, 5, levels=3, weighted=False)[:, s:e])
        for s, e in [(0, 5), (5, 25), (25, 105)]
    ]
    i0, i1, i2 = (x[0, 1] for x in lv)
    # Lazebnik: I^L + sum_{l<L} (I^l - I^{l+1}) / 2^(L-l)
    new_match = i2 + (i1 - i2) / 2 + (i0 - i1) / 4
    k = histogram_intersection(pyramid_histograms(grids, 5, levels=3))[0, 1]
    assert k == pytest.approx(new_match, abs=1e-6)


def test_combine_and_cosine():
    k1, k2, k3 = np.full((2, 2), 0.2), np.full((2, 2), 0.5), np.full((2, 2), 0.8)
    np.testing.assert_allclose(combine_kernels([k1, k2, k3], 2), np.full((2, 2), 0.25))
    np.testing.assert_allclose(combine_kernels([k1, k2, k3], 3), np.full((2, 2), 0.125))
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(cosine_kernel(a), [[1, 2**-0.5], [2**-0.5, 1]], atol=1e-6)


def test_descriptors_and_words_on_synthetic_image():
    img = np.zeros((224, 224, 3), np.uint8)
    img[:, 112:] = (0, 0, 255)  # right half red (BGR)
    lab = colour_descriptors(img)
    assert lab.shape == (56, 56, 3)
    assert lab[0, 0, 0] == pytest.approx(0.0, abs=1e-3)  # black: L = 0
    assert lab[0, -1, 1] > 50  # red: large positive a*
    tex = texture_descriptors(img)
    assert tex.shape == (56, 56, 16)
    # a vertical edge responds most to the horizontal derivative (orientation 0)
    edge = tex[28, 27:29].max(0)
    assert edge[0] == edge[:8].max() and edge[0] > 0
    assert tex[28, 5].max() == pytest.approx(0.0, abs=1e-6)
    sift = sift_descriptors(img)
    assert sift.shape == (28, 28, 128)
    books = {
        "colour": np.array([[0, 0, 0], [53, 80, 67]], np.float32),
        "texture": np.zeros((2, 16), np.float32) + np.eye(2, 16, dtype=np.float32),
        "sift": np.zeros((2, 128), np.float32),
    }
    maps = word_maps(img, books, VisualWordConfig())
    assert maps["colour"][0, 0] == 0 and maps["colour"][0, -1] == 1
    assert maps["sift"].shape == (28, 28)
    np.testing.assert_array_equal(nearest_word(np.array([[0.9, 0.1]]), np.eye(2)), [0])


def test_dense_sift_is_translation_equivariant_and_normalised():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, size=(224, 224, 3), dtype=np.uint8)
    shifted = np.roll(img, 8, axis=1)  # one grid step to the right
    a, b = sift_descriptors(img), sift_descriptors(shifted)
    np.testing.assert_allclose(b[3:-3, 4:-3], a[3:-3, 3:-4], atol=1e-3)
    norms = np.linalg.norm(a.reshape(-1, 128), axis=1)
    np.testing.assert_allclose(norms, 512.0, rtol=1e-4)
    # a vertical step edge puts its energy in the horizontal-gradient orientation bin (0)
    edge = np.zeros((224, 224, 3), np.uint8)
    edge[:, 116:] = 255
    d = sift_descriptors(edge)[14, 14].reshape(4, 4, 8)
    assert d[..., 0].sum() > 5 * d[..., 1:].sum()


def test_load_image_resizes_both_ways(tmp_path):
    """Shrinking averages pixels (area); enlarging interpolates (cubic), so a sharp edge is
    spread over several pixels instead of kept as one jump (nearest-neighbour blocks)."""
    import cv2

    from xmodal.features.visual_words import load_image

    img = np.zeros((224, 224, 3), dtype=np.uint8)
    img[:, 112:] = 200
    img[:, :2] = 100  # a 2-pixel stripe: its 2x2 area average in the shrunk image is 100
    cv2.imwrite(str(tmp_path / "edge.png"), img)
    small, big = load_image(tmp_path / "edge.png", 112), load_image(tmp_path / "edge.png", 448)
    assert small.shape == (112, 112, 3) and big.shape == (448, 448, 3)
    assert small[50, 0, 0] == 100 and small[50, 60, 0] == 200
    steps = np.abs(np.diff(big[200, :, 0].astype(int)))
    assert steps.max() < 180  # nearest-neighbour enlargement would keep the full 200 jump
    assert big[200, 300, 0] == 200 and big[200, 100, 0] == 0
