"""The dual encoder: the contract, training on synthetic features, save/load, the registry."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from PIL import Image

from xmodal.errors import XmodalError
from xmodal.factory import load_embedding_model
from xmodal.models.dual import DualEncoder
from xmodal.models.dual_train import TrainConfig, TrainData, fit_heads, recall_5cap


def test_recall_5cap_hand_example():
    # 2 images, 4 captions; captions 0,1 belong to image 0, captions 2,3 to image 1
    img = np.array([[1.0, 0.0], [0.0, 1.0]])
    txt = np.array([[0.2, 0.9], [0.8, 0.1], [0.1, 1.0], [0.9, 0.3]])
    cap_img = np.array([0, 0, 1, 1])
    # S = [[.2 .8 .1 .9], [.9 .1 1. .3]]
    # i2t: image 0 best own caption scores .8, one caption (.9, not own) above -> rank 2
    #      image 1 best own caption 1.0 -> rank 1
    # t2i: caption 0 (own image 0 .2 < .9) rank 2; caption 1 (.8 > .1) rank 1;
    #      caption 2 (1.0 > .1) rank 1; caption 3 (.3 < .9) rank 2
    r = recall_5cap(img, txt, cap_img)
    assert r["i2t_R@1"] == 50.0 and r["i2t_R@5"] == 100.0
    assert r["t2i_R@1"] == 50.0 and r["t2i_R@5"] == 100.0
    assert r["i2t_medR"] == 1.5 and r["t2i_medR"] == 1.5


def _synthetic(n=300, d_img=24, d_txt=16, seed=0) -> TrainData:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 6))
    A, B = rng.normal(size=(6, d_img)), rng.normal(size=(6, d_txt))
    pooled = (z @ A + 0.3 * rng.normal(size=(n, d_img))).astype(np.float32)
    caption_image = np.repeat(np.arange(n), 5)
    text = (z[caption_image] @ B + 0.5 * rng.normal(size=(5 * n, d_txt))).astype(np.float32)
    text /= np.linalg.norm(text, axis=1, keepdims=True)
    logits = rng.normal(size=(n, 1000)).astype(np.float32)
    rows = np.arange(n)
    splits = {"train": rows[:200], "dev": rows[200:250], "test": rows[250:]}
    return TrainData(
        pooled, logits, None, None, None, text, caption_image, [f"{i}.jpg" for i in rows], splits
    )


@pytest.fixture(scope="module")
def trained():
    td = _synthetic()
    cfg = TrainConfig(dim=16, hidden=32, epochs=12, batch_images=100, lr=1e-2, eval_every=10)
    heads, history, best_epoch = fit_heads(td, cfg, log=lambda *_: None)
    model = DualEncoder(dim=16, hidden=32, bridge_weight=0.25)
    model.heads_ = heads
    rng = np.random.default_rng(1)
    model.class_text_ = rng.normal(size=(1000, td.text.shape[1])).astype(np.float32)
    return td, model, history


def test_training_learns_the_pairing(trained):
    td, model, history = trained
    assert history[-1]["loss"] < history[0]["loss"]
    test = td.splits["test"]
    caps = np.flatnonzero(np.isin(td.caption_image, test))
    cap_img = td.caption_image[caps] - test[0]
    heads = model.heads_
    r = recall_5cap(heads.embed_images(td.pooled[test]), heads.embed_texts(td.text[caps]), cap_img)
    # 50 held-out images: chance is R@1 = 2% (t2i) and about 10% (i2t)
    assert r["t2i_R@1"] > 30 and r["i2t_R@1"] > 40


def test_embeddings_blend_heads_and_bridge(trained):
    td, model, _ = trained
    E = model.embed_image_features(td.pooled[:5], td.logits[:5])
    T = model.embed_text_features(td.text[:7])
    assert E.shape == (5, 16 + 16) and T.shape == (7, 32) and model.dim == 32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    # oracle: (1 - w) cos(head) + w cos(bridge), each part computed by hand
    hi, ht = model.heads_.embed_images(td.pooled[:5]), model.heads_.embed_texts(td.text[:7])
    p = np.exp(td.logits[:5] - td.logits[:5].max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    bi = p @ model.class_text_
    bi /= np.linalg.norm(bi, axis=1, keepdims=True)
    bt = td.text[:7] / np.linalg.norm(td.text[:7], axis=1, keepdims=True)
    expected = 0.75 * hi @ ht.T + 0.25 * bi @ bt.T
    np.testing.assert_allclose(E @ T.T, expected, atol=1e-5)


def test_save_load_round_trip(trained, tmp_path):
    td, model, _ = trained
    model.save(tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["type"] == "dual-encoder"
    with np.load(tmp_path / "m" / "arrays.npz", allow_pickle=False) as z:
        assert all(z[k].dtype == np.float16 for k in z.files)
    loaded = load_embedding_model(tmp_path / "m")
    assert isinstance(loaded, DualEncoder) and loaded.dim == model.dim
    assert loaded.bridge_weight == model.bridge_weight
    for a, b in (
        (model.embed_image_features(td.pooled, td.logits), loaded.embed_image_features(td.pooled, td.logits)),
        (model.embed_text_features(td.text), loaded.embed_text_features(td.text)),
    ):
        np.testing.assert_allclose(a, b, atol=1e-2)  # float16 storage
    # the factory finds saved models by their config type
    from xmodal.factory import get_scorer

    assert callable(get_scorer(str(tmp_path / "m"), "flickr8k-5cap"))


def test_load_errors(tmp_path):
    with pytest.raises(XmodalError):
        load_embedding_model(str(tmp_path / "nope"))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.json").write_text('{"type": "kcca"}')
    with pytest.raises(XmodalError, match="dual-encoder"):
        DualEncoder.load(tmp_path / "x")


def test_registry_names():
    from xmodal.factory import SAVED_TYPES, list_models

    assert "dual" in list_models() and "efficientnet-minilm-zeroshot" in list_models()
    assert "openclip:ViT-B-32:/x.pt" not in list_models()  # resolved lazily, not listed
    assert SAVED_TYPES["dual-encoder"].embeds


def test_default_model_contract_on_images():
    """The shipped default on real pixels: shapes, unit rows, S = E T^T, a cat finds the cat."""
    skdata = pytest.importorskip("skimage.data")
    model = load_embedding_model()
    images = [Image.fromarray(skdata.chelsea()), Image.fromarray(skdata.coffee())]
    texts = ["a cat", "a cup of coffee", "a ginger tabby cat looking at the camera"]
    E = model.embed_images(images, progress=False)
    T = model.embed_texts(texts, progress=False)
    assert E.shape == (2, model.dim) and T.shape == (3, model.dim)
    assert E.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    # the shipped querybank: S = E T^T minus each caption's offset (a constant per column)
    offsets = model.caption_offsets(T)
    assert offsets.shape == (3,) and np.ptp(offsets) > 0
    np.testing.assert_allclose(model.score(images, texts, progress=False),
                               E @ T.T - offsets[None, :], atol=1e-5)
    S = E @ T.T
    assert S[0, 0] > S[1, 0] and S[1, 1] > S[0, 1] and S[0, 2] > S[1, 2]
    assert model.embed_texts([], progress=False).shape == (0, model.dim)


def test_cell_attention_heads_round_trip():
    import torch

    from xmodal.models.dual_heads import DualHeads

    torch.manual_seed(0)
    heads = DualHeads(image_dim=8, text_dim=4, dim=4, hidden=8, use_maps=True, map_dim=8).eval()
    rng = np.random.default_rng(0)
    pooled = rng.normal(size=(3, 8)).astype(np.float32)
    maps = rng.normal(size=(3, 7, 7, 8)).astype(np.float32)
    E = heads.embed_images(pooled, maps)
    again = DualHeads.from_arrays(heads.config(), heads.state_arrays())
    np.testing.assert_allclose(again.embed_images(pooled, maps), E, atol=1e-6)
    with pytest.raises(ValueError):
        heads.embed_images(pooled)
    # with a zero query the attention is uniform: the cell summary is the mean cell
    with torch.no_grad():
        heads.cells.query.weight.zero_()
        heads.cells.query.bias.zero_()
        x = torch.from_numpy(maps.reshape(3, 49, 8))
        got = heads.cells(x).numpy()
        expected = heads.cells.out(x.mean(1)).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_ensemble_heads_average_and_round_trip(tmp_path):
    import torch

    from xmodal.models.dual_heads import DualHeads, EnsembleHeads

    rng = np.random.default_rng(0)
    pooled = rng.normal(size=(4, 8)).astype(np.float32)
    text = rng.normal(size=(3, 6)).astype(np.float32)
    members = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        members.append(DualHeads(image_dim=8, text_dim=6, dim=4, hidden=8).eval())
    ens = EnsembleHeads(members)
    # oracle: the ensemble's cosine is the mean of the members' cosines, computed by hand
    cos = [m.embed_images(pooled) @ m.embed_texts(text).T for m in members]
    np.testing.assert_allclose(
        ens.embed_images(pooled) @ ens.embed_texts(text).T, (cos[0] + cos[1]) / 2, atol=1e-6
    )
    np.testing.assert_allclose(np.linalg.norm(ens.embed_images(pooled), axis=1), 1.0, atol=1e-6)
    assert ens.cfg["dim"] == 8
    assert not np.allclose(members[0].embed_images(pooled), members[1].embed_images(pooled))
    model = DualEncoder(dim=4, hidden=8, bridge_weight=0.0)
    model.heads_ = ens
    assert model.dim == 8
    model.class_text_ = rng.normal(size=(1000, 6)).astype(np.float32)
    model.save(tmp_path / "m")
    again = DualEncoder.load(tmp_path / "m")
    assert len(again.heads_.config()["members"]) == 2 and again.heads_.cfg["dim"] == 8
    np.testing.assert_allclose(  # float16 storage
        again.heads_.embed_texts(text), ens.embed_texts(text), atol=5e-3
    )
    np.testing.assert_allclose(again.heads_.embed_images(pooled), ens.embed_images(pooled),
                               atol=5e-3)


@pytest.mark.parametrize("options", [{}, {"use_maps": True}, {"text_identity": True}])
def test_numpy_heads_compute_what_the_torch_heads_compute(options):
    """The inference heads (numpy, no torch) against the training heads (torch)."""
    import torch

    from xmodal.models.dual_heads import DualHeads
    from xmodal.models.head_inference import NumpyHeads

    torch.manual_seed(0)
    heads = DualHeads(image_dim=12, text_dim=10, dim=6, hidden=16, map_dim=12, **options).eval()
    with torch.no_grad():  # non-trivial standardisation statistics
        for name, buf in heads.named_buffers():
            buf.copy_(torch.rand_like(buf) + (0.5 if name.endswith("std") else -0.5))
    ours = NumpyHeads(heads.config(), heads.state_arrays())
    rng = np.random.default_rng(0)
    pooled = rng.normal(size=(9, 12)).astype(np.float32)
    maps = rng.normal(size=(9, 7, 7, 12)).astype(np.float32)
    text = rng.normal(size=(5, 10)).astype(np.float32)
    np.testing.assert_allclose(ours.embed_images(pooled, maps), heads.embed_images(pooled, maps),
                               atol=1e-5)
    np.testing.assert_allclose(ours.embed_texts(text), heads.embed_texts(text), atol=1e-5)
    assert ours.cfg["dim"] == heads.cfg["dim"] and ours.uses_maps == heads.uses_maps


def test_hard_negative_weighting_still_learns():
    td = _synthetic()
    cfg = TrainConfig(dim=16, hidden=32, epochs=12, batch_images=100, lr=1e-2,
                      hard_negative_beta=5.0)
    heads, history, _ = fit_heads(td, cfg, log=lambda *_: None)
    assert history[-1]["loss"] < history[0]["loss"]
    test = td.splits["test"]
    caps = np.flatnonzero(np.isin(td.caption_image, test))
    r = recall_5cap(heads.embed_images(td.pooled[test]), heads.embed_texts(td.text[caps]),
                    td.caption_image[caps] - test[0])
    assert r["t2i_R@1"] > 30 and r["i2t_R@1"] > 40


def test_training_with_one_caption_images_learns_the_pairing():
    """Web alt-text images (one caption) beside Flickr8K-style images (five) in one batch."""
    td = _synthetic()
    keep = np.ones(len(td.caption_image), bool)
    one_caption = np.arange(100, 200)  # train images 100..199 keep only their first caption
    for r in one_caption:
        keep[np.flatnonzero(td.caption_image == r)[1:]] = False
    td.text, td.caption_image = td.text[keep], td.caption_image[keep]
    assert np.bincount(td.caption_image)[one_caption].max() == 1
    cfg = TrainConfig(dim=16, hidden=32, epochs=12, batch_images=100, lr=1e-2, eval_every=10)
    heads, history, _ = fit_heads(td, cfg, log=lambda *_: None)
    assert history[-1]["loss"] < history[0]["loss"]
    rows = td.splits["test"]
    caps = np.flatnonzero(np.isin(td.caption_image, rows))
    pos = {int(r): i for i, r in enumerate(rows)}
    r = recall_5cap(heads.embed_images(td.pooled[rows]), heads.embed_texts(td.text[caps]),
                    np.array([pos[int(c)] for c in td.caption_image[caps]]))
    assert r["i2t_R@5"] > 3 * 100 * 5 / len(rows) and r["t2i_R@5"] > 3 * 100 * 5 / len(rows)


def test_encoder_names_are_saved_and_checked(trained, tmp_path):
    td, model, _ = trained
    model2 = DualEncoder(dim=16, hidden=32, bridge_weight=0.25, image_backbone="lite2",
                         text_encoder="mpnet")
    model2.heads_, model2.class_text_ = model.heads_, model.class_text_
    loaded = DualEncoder.load(model2.save(tmp_path / "m"))
    assert loaded.image_backbone == "lite2" and loaded.text_encoder == "mpnet"
    saved = json.loads((tmp_path / "m" / "config.json").read_text())["params"]
    assert saved["image_backbone"] == "lite2" and saved["text_encoder"] == "mpnet"
    with pytest.raises(XmodalError, match="image backbone"):
        DualEncoder(image_backbone="resnet50")
    with pytest.raises(XmodalError, match="text encoder"):
        DualEncoder(text_encoder="bert")


def test_tuned_image_top_is_used_saved_and_loaded(trained, tmp_path):
    """A model with a tuned head conv computes pooled features from the activations below it,
    saves them as format version 3 and loads them back."""
    from xmodal.models.image_top import top_pooled

    td, model, _ = trained
    rng = np.random.default_rng(3)
    prehead = rng.normal(size=(len(td.pooled), 4, 8)).astype(np.float32)
    top = {"weight": rng.normal(size=(td.pooled.shape[1], 8)).astype(np.float32),
           "bias": rng.normal(size=td.pooled.shape[1]).astype(np.float32)}
    plain = model.embed_image_features(top_pooled(prehead, top), td.logits)
    model.image_top_ = top
    try:
        tuned = model.embed_image_features(td.pooled, td.logits, prehead=prehead)
        np.testing.assert_allclose(tuned, plain, atol=1e-6)  # pooled comes from the top
        with pytest.raises(XmodalError, match="prehead"):
            model.embed_image_features(td.pooled, td.logits)
        model.save(tmp_path / "m")
    finally:
        model.image_top_ = None
    assert json.loads((tmp_path / "m" / "config.json").read_text())["version"] == 3
    loaded = DualEncoder.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.image_top_["weight"], top["weight"], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(loaded.embed_image_features(None, td.logits, prehead=prehead),
                               tuned, atol=2e-2)  # float16 storage
    # a model without a top stays version 2, readable by older versions
    model.save(tmp_path / "plain")
    assert json.loads((tmp_path / "plain" / "config.json").read_text())["version"] == 2


def test_pretrained_top_on_real_images_reproduces_the_default_embeddings():
    """The prehead path with the network's own head conv = the pooled path (real Lite2 pixels)."""
    skdata = pytest.importorskip("skimage.data")
    from xmodal.models.dual import DEFAULT_MODEL_DIR
    from xmodal.models.image_top import pretrained_top

    model = DualEncoder.load(DEFAULT_MODEL_DIR)  # a fresh copy: the shared default stays as is
    images = [Image.fromarray(skdata.chelsea()), Image.fromarray(skdata.coffee())]
    model.image_top_ = None  # the pooled path of the pretrained network
    plain = model.embed_images(images, progress=False, cache=False)
    model.image_top_ = pretrained_top(model.image_backbone)
    via_top = model.embed_images(images, progress=False, cache=False)
    assert (plain * via_top).sum(1).min() > 0.9999


def test_int8_weights_and_an_image_querybank_round_trip(trained, tmp_path):
    """The shipped format (version 4): int8 weight matrices with a scale per row, and a
    compressed bank of training images that score() subtracts from each caption."""
    from xmodal.models.querybank import QuerybankNorm, compress_bank, expand_bank

    td, model, _ = trained
    model.save(tmp_path / "f16")
    model.save(tmp_path / "q8", weights="int8")
    with np.load(tmp_path / "q8" / "arrays.npz", allow_pickle=False) as z:
        assert z["heads.image.fc1.weight.q8"].dtype == np.int8
        assert z["heads.image.fc1.weight.q8scale"].shape == (32,)
    assert json.loads((tmp_path / "q8" / "config.json").read_text())["version"] == 4
    f16, q8 = DualEncoder.load(tmp_path / "f16"), DualEncoder.load(tmp_path / "q8")
    a = f16.embed_image_features(td.pooled, td.logits)
    b = q8.embed_image_features(td.pooled, td.logits)
    assert (a * b).sum(1).min() > 0.999  # int8 rows: cosines to the float16 model's embeddings

    bank = q8.embed_image_features(td.pooled[:200], td.logits[:200])
    q8.set_querybank(compress_bank(bank, 8), 10.0)
    texts = q8.embed_text_features(td.text[:30])
    offsets = q8.caption_offsets(texts)
    want = QuerybankNorm(10.0).fit(expand_bank(compress_bank(bank, 8)), None).text_offsets(texts)
    np.testing.assert_allclose(offsets, want, rtol=1e-5)
    assert offsets.std() > 0
    q8.save(tmp_path / "qb", weights="int8")
    loaded = DualEncoder.load(tmp_path / "qb")
    assert loaded.querybank_["beta"] == 10.0 and len(loaded.querybank_["codes"]) == 200
    np.testing.assert_array_equal(loaded.caption_offsets(texts), offsets)
    np.testing.assert_array_equal(loaded.embed_image_features(td.pooled, td.logits), b)
    loaded.save(tmp_path / "again")  # a loaded int8 model saves back to the same arrays
    with (np.load(tmp_path / "qb" / "arrays.npz") as one,
          np.load(tmp_path / "again" / "arrays.npz") as two):
        assert sorted(one.files) == sorted(two.files)
        assert all(np.array_equal(one[k], two[k]) for k in one.files)
    with pytest.raises(XmodalError, match="'float16' or 'int8'"):
        loaded.save(tmp_path / "x", weights="int4")


def test_training_runs_on_the_configured_device(monkeypatch):
    """fit_heads trains on torch_runtime.device() and hands back CPU heads; --device reaches it
    from the CLI (CUDA refused with the reason where torch sees no GPU)."""
    import torch
    from typer.testing import CliRunner

    from xmodal.cli import app
    from xmodal.models import torch_runtime

    seen = []
    real_to = torch.nn.Module.to

    def spy(self, *args, **kwargs):
        seen.append(str(args[0]) if args else str(kwargs.get("device")))
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.nn.Module, "to", spy)
    td = _synthetic(n=260)
    cfg = TrainConfig(dim=8, hidden=16, epochs=2, batch_images=100, lr=1e-2, eval_every=1)
    torch_runtime.configure("cpu")
    heads, _, _ = fit_heads(td, cfg, log=lambda *_: None,
                            eval_fn=lambda h: float(next(h.parameters()).device.type == "cpu"))
    assert "cpu" in seen and next(heads.parameters()).device.type == "cpu"
    monkeypatch.undo()
    if not torch.cuda.is_available():
        r = CliRunner().invoke(app, ["train", "dual", "--out", "/tmp/none", "--device", "cuda"])
        assert r.exit_code != 0 and "torch sees no CUDA GPU" in str(r.exception)
    torch_runtime.configure()


def test_short_query_heads_route_short_queries_only_and_round_trip(trained, tmp_path,
                                                                     monkeypatch):
    """Stage 3 (xmodal.recipes.dual_phrases): queries of up to ``short_max_words_`` words
    without sentence punctuation go through the short-query heads; sentences and photos stay
    as they were; the route length is the model's own and is saved with it."""
    from xmodal.features import text_encoder
    from xmodal.models.dual import is_short_query
    from xmodal.models.head_inference import NumpyHeads

    td, model, _ = trained
    assert [is_short_query(t) for t in ("dog", "black dog", "a black dog", "a dog.", "",
                                        "dogs, cats")] == [
        True, True, False, False, False, False]
    assert [is_short_query(t, 3) for t in ("a black dog", "black dog running fast")] == [
        True, False]
    rng = np.random.default_rng(3)
    state = {k: v + 0.5 * rng.normal(size=v.shape).astype(np.float32)
             if k.startswith(("text.linear.", "text.fc2.")) else v
             for k, v in model.heads_.state_arrays().items() if k.startswith("text.")}
    tuned = copy.copy(model)
    tuned.short_heads_ = NumpyHeads(model.heads_.config(), state)
    tuned.short_mix_ = 0.5
    texts = ["dog", "a black dog running on the grass", "a black dog"]
    feats = td.text[:3]
    monkeypatch.setattr(text_encoder, "encode_texts", lambda t, **kw: feats[:len(t)])
    sentence = model.embed_text_features(feats)
    two = tuned.embed_texts(texts)
    assert tuned.short_max_words_ == 2
    np.testing.assert_allclose(two[1:], sentence[1:], atol=1e-6)  # three words: as a sentence
    tuned.short_max_words_ = 3
    got = tuned.embed_texts(texts)
    np.testing.assert_allclose(got[1], sentence[1], atol=1e-6)  # a sentence: unchanged
    assert (got[[0, 2]] * sentence[[0, 2]]).sum(1).max() < 0.999  # short queries: moved
    np.testing.assert_allclose(two[0], got[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    tuned.save(tmp_path / "s", weights="int8")
    with np.load(tmp_path / "s" / "arrays.npz") as z:  # what equals the text heads: once
        assert "short.text.linear.weight.q8" in z.files and "short.text.fc2.bias" in z.files
        assert not [k for k in z.files if k.startswith(("short.text.fc1", "short.text.mean"))]
    loaded = DualEncoder.load(tmp_path / "s")
    assert loaded.short_mix_ == 0.5 and loaded.short_max_words_ == 3
    np.testing.assert_allclose(loaded.embed_texts(texts), got, atol=0.02)  # int8 weights
    np.testing.assert_array_equal(loaded.embed_image_features(td.pooled, td.logits),
                                  DualEncoder.load(tmp_path / "s").embed_image_features(
                                      td.pooled, td.logits))
    model.save(tmp_path / "plain", weights="int8")
    np.testing.assert_array_equal(  # the image side saved exactly as the plain model's
        loaded.embed_image_features(td.pooled, td.logits),
        DualEncoder.load(tmp_path / "plain").embed_image_features(td.pooled, td.logits))
