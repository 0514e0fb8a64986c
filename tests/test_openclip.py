"""The open_clip backend: a randomly initialised tiny CLIP saved to a temporary checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from xmodal.errors import XmodalError
from xmodal.models.openclip_backend import parse_spec

TINY = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 1, "width": 64, "patch_size": 16},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def test_parse_spec():
    assert parse_spec("openclip:ViT-B-32:/m/ck.pt") == ("ViT-B-32", __import__("pathlib").Path("/m/ck.pt"))
    arch, path = parse_spec("openclip:RN50:C:/models/a.pt")
    assert arch == "RN50" and str(path) == "C:/models/a.pt"
    for bad in ("openclip:", "openclip:ViT-B-32", "openclip::x.pt", "clip:ViT:x"):
        with pytest.raises(XmodalError):
            parse_spec(bad)


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    import importlib.util

    import torch

    if importlib.util.find_spec("open_clip") is None:
        pytest.skip("optional extra open-clip-torch not installed (pip install --no-deps open-clip-torch)")

    from xmodal.models.openclip_backend import import_open_clip

    open_clip = import_open_clip()
    folder = tmp_path_factory.mktemp("clip")
    config = folder / "xmodal-tiny-clip.json"
    config.write_text(json.dumps(TINY))
    open_clip.add_model_config(config)
    torch.manual_seed(0)
    reference = open_clip.create_model("xmodal-tiny-clip", pretrained=None).eval()
    ckpt = folder / "tiny.pt"
    torch.save({"state_dict": reference.state_dict()}, ckpt)
    return config, ckpt, reference


def test_openclip_loads_checkpoint_and_matches_reference(tiny_clip):
    import torch

    from xmodal.factory import load_embedding_model

    config, ckpt, reference = tiny_clip
    model = load_embedding_model(f"openclip:{config}:{ckpt}")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (80, 100, 3), dtype=np.uint8)) for _ in range(3)]
    texts = ["a dog runs on the grass", "two people on a mountain"]
    E, T = model.embed_images(images, progress=False), model.embed_texts(texts)
    assert E.shape == (3, 32) and T.shape == (2, 32) and model.dim == 32
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(T, axis=1), 1.0, atol=1e-5)
    # independent oracle: the reference module on hand-made inputs (short-side resize, centre crop)
    im = images[0].resize((80, 64), Image.BICUBIC).crop((8, 0, 72, 64))
    x = (np.asarray(im, np.float32) / 255 - np.array(reference.visual.preprocess_cfg["mean"])) / np.array(
        reference.visual.preprocess_cfg["std"]
    )
    with torch.no_grad():
        ref = reference.encode_image(torch.from_numpy(x.transpose(2, 0, 1)[None].astype(np.float32)))
        ref_t = reference.encode_text(__import__("open_clip").get_tokenizer("xmodal-tiny-clip")(texts))
    ref = (ref / ref.norm(dim=-1, keepdim=True)).numpy()[0]
    ref_t = (ref_t / ref_t.norm(dim=-1, keepdim=True)).numpy()
    np.testing.assert_allclose(E[0], ref, atol=1e-4)
    np.testing.assert_allclose(T, ref_t, atol=1e-4)
    np.testing.assert_allclose(model.score(images, texts, progress=False), E @ T.T, atol=1e-5)


def test_openclip_errors(tiny_clip, tmp_path):
    from xmodal.factory import load_embedding_model

    config, ckpt, _ = tiny_clip
    with pytest.raises(XmodalError, match="not found"):
        load_embedding_model(f"openclip:{config}:{tmp_path / 'missing.pt'}")
    with pytest.raises(XmodalError, match="unknown open_clip architecture"):
        load_embedding_model(f"openclip:No-Such-Arch:{ckpt}")
    with pytest.raises(XmodalError, match="cannot load"):
        load_embedding_model(f"openclip:ViT-B-32:{ckpt}")  # wrong architecture for the weights


def test_openclip_says_nothing_of_random_weights_it_replaces(tiny_clip, caplog):
    """open_clip logs "Model initialized randomly" while building the architecture; the
    checkpoint loads right after, so xmodal drops that message (and only that one)."""
    import logging

    from xmodal.factory import load_embedding_model

    config, ckpt, _ = tiny_clip
    with caplog.at_level(logging.INFO):
        load_embedding_model(f"openclip:{config}:{ckpt}")
    assert not any("initialized randomly" in r.getMessage() for r in caplog.records)
    logging.getLogger().warning("No pretrained weights ... other")
    assert any("other" in r.getMessage() for r in caplog.records)  # the filter is gone


def test_device_and_batch_size_for_torch_models(tiny_clip, monkeypatch):
    """--device / --batch-size reach the open_clip model: CPU by default, the batch size
    honoured, CUDA refused with a reason where torch sees no GPU."""
    import torch

    from xmodal.factory import load_embedding_model
    from xmodal.models import torch_runtime

    config, ckpt, _ = tiny_clip
    try:
        torch_runtime.configure("cpu", 2)
        model = load_embedding_model(f"openclip:{config}:{ckpt}")
        assert model.device == "cpu" and model.batch_size == 2
        calls = []
        real = model.model.encode_image
        monkeypatch.setattr(model.model, "encode_image",
                            lambda x: calls.append(len(x)) or real(x))
        images = [Image.new("RGB", (40, 30), (k * 40, 0, 0)) for k in range(5)]
        E = model.embed_images(images, progress=False)
        assert calls == [2, 2, 1] and E.shape == (5, 32)
        torch_runtime.configure()  # the defaults: cpu, the model's own batch size
        full = load_embedding_model(f"openclip:{config}:{ckpt}")
        assert full.batch_size == 32
        np.testing.assert_allclose(full.embed_images(images, progress=False), E, atol=1e-5)
        with pytest.raises(XmodalError, match="--device must be cpu, cuda or cuda:N"):
            torch_runtime.configure("gpu")
        with pytest.raises(XmodalError, match="--batch-size must be at least 1"):
            torch_runtime.configure("cpu", 0)
        if not torch.cuda.is_available():
            with pytest.raises(XmodalError, match="torch sees no CUDA GPU"):
                torch_runtime.configure("cuda")
    finally:
        torch_runtime.configure()
