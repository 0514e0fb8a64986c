"""Hodosh systems: NN5 idf-F1 by hand, dev selection, registry hooks, the CLI command."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xmodal.models.nearest_neighbour import IdfF1, NearestNeighbour

TRAIN = [["dog", "run", "grass"], ["dog", "ball"], ["cat"]]


def test_idf_f1_hand_computed():
    f1 = IdfF1().fit(TRAIN)
    # idf = log(N / (df + 1)): dog appears in 2 of 3 documents -> log(3/3) = 0
    assert f1.idf_[f1.vocabulary_["dog"]] == pytest.approx(0.0)
    assert f1.idf_[f1.vocabulary_["run"]] == pytest.approx(math.log(1.5))
    sim = f1.similarity([["dog", "ball"], ["run", "ball"]], TRAIN)
    # [dog, ball] vs [dog, ball]: only "ball" carries weight -> P = R = 1
    assert sim[0, 1] == pytest.approx(1.0)
    # [run, ball] vs [dog, run, grass]: overlap l_run; W(q) = 2 l, W(d) = 2 l -> F1 = 0.5
    assert sim[1, 0] == pytest.approx(0.5)
    assert sim[0, 2] == 0.0


def test_nearest_neighbour_both_tasks():
    nn = NearestNeighbour().fit(TRAIN)
    # 2 gallery images x 3 training images
    k_img = np.array([[0.9, 0.1, 0.3], [0.2, 0.4, 0.8]])
    caps = [["run", "grass"], ["cat"], ["ball"]]
    s_t2i = nn.score_t2i(k_img, caps)
    # caption 0 matches training doc 0 -> column 0 of k_img; caption 1 -> doc 2; caption 2 -> doc 1
    np.testing.assert_allclose(s_t2i, k_img[:, [0, 2, 1]])
    s_i2t = nn.score_i2t(k_img, caps)
    # image 0's nearest training image is 0 ([dog, run, grass]); image 1's is 2 ([cat])
    f1 = IdfF1().fit(TRAIN)
    np.testing.assert_allclose(s_i2t[0], f1.similarity([TRAIN[0]], caps)[0])
    np.testing.assert_allclose(s_i2t[1], [0.0, 1.0, 0.0])


def test_select_settings_takes_top5_per_metric():
    from xmodal.models.hodosh import select_settings

    rows = []
    for n in range(8):
        m = {"R@1": n / 10, "R@5": (8 - n) / 10, "R@10": 0.5, "medR": 10 + n}
        rows.append({"kappa": 0.5, "n": n, "i2t": m, "t2i": m})
    chosen = select_settings(rows, "i2t")
    assert len(chosen) == 15
    assert [c["n"] for c in chosen[:5]] == [7, 6, 5, 4, 3]  # best R@1
    assert [c["n"] for c in chosen[5:10]] == [0, 1, 2, 3, 4]  # best R@5
    # R@10 all tied -> lower median rank wins
    assert [c["n"] for c in chosen[10:]] == [0, 1, 2, 3, 4]


def test_borda_of_identical_systems_keeps_order():
    from xmodal.eval.stats import borda

    s = np.array([[0.1, 0.9, 0.5], [0.3, 0.2, 0.1]])
    agg = borda([s, s, s])
    np.testing.assert_array_equal(np.argsort(-agg, 1), np.argsort(-s, 1))


def test_registry_exports():
    from xmodal.recipes import flickr8k

    assert {"hodosh-nn", "hodosh-bow5", "hodosh-tri5sem"} <= {s.name for s in flickr8k.SETTINGS}
    from xmodal.factory import SAVED_TYPES, list_models

    assert SAVED_TYPES["hodosh-kcca"].scorer == "xmodal.recipes.flickr8k:saved_hodosh_scorer"

    assert "hodosh-tri5sem" in list_models()


def test_train_kcca_cli_help():
    from typer.testing import CliRunner

    from xmodal.cli import app

    result = CliRunner().invoke(app, ["train", "kcca", "--help"])
    assert result.exit_code == 0
    assert "--text-kernel" in result.output and "Example" in result.output


def test_saved_system_roundtrip(tmp_path):
    """A HodoshKCCA saved and loaded scores identically from kernel values."""
    from xmodal.models.hodosh import HodoshKCCA
    from xmodal.models.kcca import KCCA

    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    y = x @ rng.normal(size=(4, 3)) + 0.1 * rng.normal(size=(60, 3))
    sys_ = HodoshKCCA("bow5", "pyramid")
    m = KCCA(kappa=0.5, rank=20).fit(x @ x.T, y @ y.T)
    sys_.model_ = m
    sys_.weights_ = {0.5: (m.wx_, m.wy_)}
    sys_.selected_ = {
        t: [{"kappa": 0.5, "n": n, "by": "R@1"} for n in (1, 2, 3)] for t in ("i2t", "t2i")
    }
    sys_.landmarks_, sys_.pivot_cols_, sys_.pivot_items_ = ["a"], [0], [0]
    sys_.dev_grid_, sys_.fit_seconds_ = [], 1.0

    class _HD:
        train_ids = ["a"]

    sys_.hd_ = _HD()
    sys_.save(tmp_path / "sys")
    loaded = HodoshKCCA.load(tmp_path / "sys", hd=_HD())
    kx, ky = x[:10] @ x[m.pivots_x_].T, y[:10] @ y[m.pivots_y_].T
    a, b = sys_.score_kernels(kx, ky), loaded.score_kernels(kx, ky)
    for t in ("i2t", "t2i"):
        np.testing.assert_allclose(a[t], b[t])  # float32 storage: same rankings (Borda)
    # search ensembles rank images per caption: the t2i matrix is images x texts too
    assert a["t2i"].shape == (10, 10)


def test_scorers_are_per_direction():
    """Annotation and search use separate Borda ensembles: the runner must not share S."""
    from xmodal.recipes import get_setting

    scorer = get_setting("hodosh-bow5").scorer("flickr8k-hodosh")
    assert getattr(scorer, "per_direction", False) is True


def _hodosh_data(tokens: dict):
    from types import SimpleNamespace

    from xmodal.models.hodosh import HodoshData

    return HodoshData(SimpleNamespace(root=None), ["a"], [], [], tokens_of=lambda root: tokens)


def test_caches_follow_the_caption_tokens(monkeypatch, tmp_path):
    """A change in caption preprocessing gives trained systems and text kernels new cache keys,
    instead of serving the ones built from the old tokens."""
    from xmodal.models.hodosh import TextSide
    from xmodal.recipes import flickr8k

    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))
    old, new = (_hodosh_data({"a#0": [[w, "NOUN"]]}) for w in ("floggers", "flagger"))
    assert old.tokens_digest != new.tokens_digest
    assert flickr8k.system_dir("bow5", old) != flickr8k.system_dir("bow5", new)
    grams = []
    for hd in (old, new):
        side = TextSide.__new__(TextSide)
        side.hd, side.name, side.train_docs = hd, "bow1", [[["x", "NOUN"]]]
        side._cached = lambda tag, compute: grams.append(tag)
        side.train()
    assert grams[0] != grams[1]


def test_full_kernel_variant_is_built_with_its_sizes(monkeypatch, tmp_path):
    """``tri5sem-full`` trains on every training image (exact kernels) at rank 3,000 and caches
    apart from the 1,500-landmark Tri5Sem."""
    from xmodal.models import hodosh
    from xmodal.recipes import flickr8k

    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))
    hd = _hodosh_data({"a#0": [["dog", "NOUN"]]})
    assert flickr8k.system_dir("tri5sem-full", hd) != flickr8k.system_dir("tri5sem", hd)
    built = {}

    def fake_fit(self, hd):
        built.update(self.config())
        raise RuntimeError("stop before training")

    monkeypatch.setattr(hodosh.HodoshKCCA, "fit", fake_fit)
    with pytest.raises(RuntimeError, match="stop before training"):
        flickr8k.get_system("tri5sem-full", hd=hd)
    assert built["n_landmarks"] == 6000 and built["rank"] == 3000
    assert built["text_kernel"] == "tri5sem" and built["diag_factor"] == 4.0
    assert not built["text_landmarks"]  # the full Tri5Sem Gram matrix, not a Nystrom block
    assert max(built["n_grid"]) == 3000
    built.clear()
    with pytest.raises(RuntimeError):
        flickr8k.get_system("tri5sem", hd=hd)
    assert built["n_landmarks"] == 1500 and built["rank"] == 1500 and built["text_landmarks"]


def test_low_resolution_ablation_uses_its_own_visual_words(monkeypatch, tmp_path):
    """``pyramid112`` / ``pyramid448`` compute visual words on resized images, cached apart."""
    from xmodal.errors import XmodalError
    from xmodal.features import visual_words
    from xmodal.models import hodosh

    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path))
    seen = []

    class FakeCache:
        def __init__(self, name, cfg=None, root=None):
            self.cfg = cfg or visual_words.VisualWordConfig()
            seen.append(self.cfg.size)

        def words(self, ids, paths, train_paths=None):
            raise RuntimeError("stop")

    monkeypatch.setattr(visual_words, "VisualWordCache", FakeCache)

    class _HD:
        train_ids = ["a"]

        def image_path(self, i):
            return tmp_path / f"{i}.jpg"

    for kind, size in (("pyramid", 224), ("pyramid112", 112), ("pyramid448", 448)):
        with pytest.raises(RuntimeError, match="stop"):
            hodosh.ImageSide(_HD(), kind)._histograms(["a"], "colour")
        assert seen[-1] == size
    with pytest.raises(XmodalError):
        hodosh.ImageSide(_HD(), "pyramid64")


def test_train_kcca_cli_defaults_follow_the_text_kernel(monkeypatch, tmp_path):
    """d defaults to 4 for tri5sem (indefinite kernel) and 1 otherwise; the dev grid of n
    reaches the rank."""
    from typer.testing import CliRunner

    from xmodal.cli import app
    from xmodal.models import hodosh

    seen = []

    def fake_fit(self, hd):
        seen.append(self.config())
        raise RuntimeError("stop")

    monkeypatch.setattr(hodosh.HodoshKCCA, "fit", fake_fit)
    monkeypatch.setattr("xmodal.recipes.flickr8k.load_hodosh_data", lambda data=None: object())
    runner = CliRunner()
    for kernel, rank, d in (("tri5sem", 3000, 4.0), ("bow5", 1500, 1.0)):
        result = runner.invoke(app, ["train", "kcca", "--text-kernel", kernel, "--rank", str(rank),
                                     "--out", str(tmp_path / kernel)])
        assert isinstance(result.exception, RuntimeError)
        assert seen[-1]["diag_factor"] == d and seen[-1]["rank"] == rank
        assert max(seen[-1]["n_grid"]) == max(rank, 2000)
