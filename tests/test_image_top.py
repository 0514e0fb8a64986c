"""The tunable top of the image tower: the folded head conv equals the network's own layers, and
the activation cache below it resumes where a killed run stopped."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def lite2_prehead():
    """Activations below the head conv and the pooled features of the real Lite2 network."""
    from xmodal.features.image_encoder import load_efficientnet

    net = load_efficientnet("lite2")
    x = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (2, 3, 260, 260))
                         .astype(np.float32))
    with torch.inference_mode():
        h = net._swish(net._bn0(net._conv_stem(x)))
        for block in net._blocks:
            h = block(h)
        pooled = net.extract_features(x).mean(dim=(2, 3))
    return h.flatten(2).transpose(1, 2).numpy(), pooled.numpy()


def test_folded_head_conv_gives_the_networks_pooled_features(lite2_prehead):
    from xmodal.models.image_top import pretrained_top, top_pooled

    prehead, pooled = lite2_prehead
    assert prehead.shape == (2, 81, 352)
    got = top_pooled(prehead, pretrained_top("lite2"))
    np.testing.assert_allclose(got, pooled, atol=2e-4, rtol=1e-4)
    assert np.abs(pooled).max() > 0.5  # not a trivially zero comparison


def test_torch_top_equals_numpy_top_and_learns(lite2_prehead):
    from xmodal.models.image_top import pretrained_top, top_pooled, tunable_top

    prehead, _ = lite2_prehead
    arrays = pretrained_top("lite2")
    top = tunable_top(arrays)
    out = top(torch.from_numpy(prehead))
    np.testing.assert_allclose(out.detach().numpy(), top_pooled(prehead, arrays), atol=1e-5)
    out.sum().backward()
    assert top.weight.grad is not None and top.weight.grad.abs().sum() > 0
    assert set(top.arrays()) == {"weight", "bias"}


def test_prehead_cache_resumes_after_a_killed_run(tmp_path, monkeypatch):
    from PIL import Image

    from xmodal.recipes.dual_finetune import prehead_activations

    monkeypatch.setenv("XMODAL_FINETUNE_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(1)
    paths = []
    for i in range(5):
        p = tmp_path / f"im{i}.png"
        Image.fromarray(rng.integers(0, 255, (40, 60, 3), dtype=np.uint8)).save(p)
        paths.append(p)
    pre, logits = prehead_activations(paths, "t", batch=2)
    full_pre, full_logits = np.array(pre), np.array(logits)
    assert full_pre.shape == (5, 81, 352) and np.abs(full_pre[4]).sum() > 0
    # a run killed after its first batch: later rows never written, the marker says 2
    done = tmp_path / "cache" / "t_lite2.done"
    state = json.loads(done.read_text())
    done.write_text(json.dumps({**state, "done": 2}))
    mm = np.load(tmp_path / "cache" / "t_lite2.prehead.npy", mmap_mode="r+")
    mm[2:] = 0
    mm.flush()
    del mm
    pre2, logits2 = prehead_activations(paths, "t", batch=2)
    np.testing.assert_array_equal(np.array(pre2), full_pre)
    np.testing.assert_array_equal(np.array(logits2), full_logits)
    # a different image list is not mistaken for the cached one
    pre3, _ = prehead_activations(paths[:3], "t", batch=2)
    assert pre3.shape[0] == 3
