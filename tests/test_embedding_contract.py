"""Every embedding spec the factory builds here satisfies the embedding contract
(:class:`xmodal.models.embedding.EmbeddingModel`): the protocol, the keyword options, shapes and
unit rows, for paths and PIL images alike; and the factory refuses objects that break it."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.test_openclip import tiny_clip  # noqa: F401 - the fixture, shared
from xmodal.errors import XmodalError
from xmodal.factory import get_scorer, load_embedding_model
from xmodal.models.embedding import EmbeddingModel

TEXTS = ["a red square", "a blue square on a white wall", "two dogs run on the beach"]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Two PIL images and one image file (the contract takes both)."""
    folder = tmp_path_factory.mktemp("contract")
    rng = np.random.default_rng(3)
    path = folder / "noise.png"
    Image.fromarray(rng.integers(0, 255, (90, 120, 3), dtype=np.uint8)).save(path)
    return [Image.new("RGB", (64, 48), (220, 20, 20)), Image.new("RGB", (50, 70), (20, 20, 220)),
            str(path)]


@pytest.fixture(scope="module")
def saved_dual(tmp_path_factory):
    """A saved dual-encoder directory, written in this test from the shipped model."""
    from xmodal.models.dual import named

    return str(named("dual").save(tmp_path_factory.mktemp("saved") / "dual"))


@pytest.fixture(scope="module")
def tiny_openclip(tiny_clip):  # noqa: F811 - the fixture imported above
    """``openclip:CONFIG:CHECKPOINT`` of a randomly initialised one-layer CLIP."""
    config, checkpoint, _ = tiny_clip
    return f"openclip:{config}:{checkpoint}"


SPECS = ["dual", "fast", "efficientnet-minilm-zeroshot", "python:tests.fake_models:ColourModel",
         "saved_dual", "tiny_openclip"]


@pytest.mark.parametrize("which", SPECS)
def test_every_embedding_spec_keeps_the_contract(which, images, request):
    spec = request.getfixturevalue(which) if which in ("saved_dual", "tiny_openclip") else which
    model = load_embedding_model(spec)
    assert isinstance(model, EmbeddingModel)
    dim = int(model.dim)
    E = model.embed_images(images, progress=False, cache=False)
    T = model.embed_texts(TEXTS, progress=False)
    assert E.shape == (len(images), dim) and T.shape == (len(TEXTS), dim)
    assert E.dtype == np.float32 and T.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(T, axis=1), 1.0, atol=1e-4)
    # the defaults of the keyword options give the same vectors
    np.testing.assert_allclose(model.embed_texts(TEXTS[:1]), T[:1], atol=1e-5)
    # and the same spec scores evaluation protocols through the factory
    assert callable(get_scorer(spec, "folder"))


def test_the_saved_directory_is_the_model_it_was_saved_from(saved_dual, images):
    shipped, saved = load_embedding_model("dual"), load_embedding_model(saved_dual)
    assert saved is not shipped and saved.dim == shipped.dim
    np.testing.assert_allclose(saved.embed_texts(TEXTS, progress=False),
                               shipped.embed_texts(TEXTS, progress=False), atol=1e-6)


class NoTexts:
    dim = 2

    def embed_images(self, images, *, progress=True, cache=True):
        return np.ones((len(images), 2), np.float32) / np.sqrt(2)


class NoCacheOption(NoTexts):
    def embed_images(self, images, progress=True):
        return super().embed_images(images)

    def embed_texts(self, texts, *, progress=True):
        return np.ones((len(texts), 2), np.float32) / np.sqrt(2)


class AnyOptions(NoTexts):
    def embed_images(self, images, **options):
        return super().embed_images(images)

    def embed_texts(self, texts, **options):
        return np.ones((len(texts), 2), np.float32) / np.sqrt(2)


def test_the_factory_refuses_objects_that_break_the_contract(tmp_path):
    with pytest.raises(XmodalError, match="not an embedding model: it lacks embed_texts"):
        load_embedding_model("python:tests.test_embedding_contract:NoTexts")
    with pytest.raises(XmodalError, match="embed_images must accept the keyword options "
                                          "progress, cache .missing: cache"):
        load_embedding_model("python:tests.test_embedding_contract:NoCacheOption")
    model = load_embedding_model("python:tests.test_embedding_contract:AnyOptions")
    assert model.embed_images([None], progress=False, cache=False).shape == (1, 2)
    from xmodal.models.kcca import KCCA

    x = np.random.default_rng(0).normal(size=(12, 3))
    kcca_dir = KCCA(kappa=0.5, rank=4).fit(x @ x.T, x @ x.T).save(tmp_path / "kcca")
    with pytest.raises(XmodalError, match="does not embed images and sentences"):
        load_embedding_model(str(kcca_dir))
    with pytest.raises(XmodalError, match="unknown model 'no-such-model'"):
        load_embedding_model("no-such-model")
