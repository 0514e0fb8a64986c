"""Stage 3 of the dual encoder (xmodal.recipes.dual_phrases): phrases from training captions,
the text-only tuning, and a tuned model whose photo vectors are the shipped model's."""

from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from xmodal.recipes import dual_phrases as dp  # noqa: E402


def _per(nouns=(), verbs=(), pairs=(), ing=(), nns=()):
    return {"nouns": set(nouns), "verbs": set(verbs), "pairs": set(pairs),
            "ing": Counter({x: 1 for x in ing}), "nns": Counter({x: 1 for x in nns})}


def test_phrases_come_from_the_training_captions_with_their_photos():
    per = ([_per(nouns=["dog"], nns=[("dog", "dogs")], pairs=["black dog"])] * 3
           + [_per(nouns=["puppy"])] * 2
           + [_per(nouns=["background", "man"], verbs=["run"], ing=[("run", "running")])] * 3
           + [_per(nouns=["water"])] * 3)
    ph = dp.make_phrases(per, min_photos=3)
    got = dict(zip(ph.texts, ph.kinds))
    assert got["dog"] == "noun" and got["a dog"] == "a noun" and got["dogs"] == "plural"
    assert got["running"] == "activity" and got["black dog"] == "adjective noun"
    assert got["a man"] == "a noun"
    assert "background" not in got  # no visible subject
    assert "water" in got and "a water" not in got  # a mass noun gets no article
    assert "puppy" not in got  # named by 2 photos only
    # "dog" is relevant to the photos that name a synonym ("puppy") too
    assert list(ph.photos[ph.texts.index("dog")]) == [0, 1, 2, 3, 4]
    assert list(ph.photos[ph.texts.index("running")]) == [5, 6, 7]


def _toy(seed=0, n=96, d_text=12, d=8):
    """Photos in 4 classes; captions and phrases are noisy text features of their class."""
    rng = np.random.default_rng(seed)
    cls = np.arange(n) % 4
    centers_t = rng.normal(size=(4, d_text))
    photos = rng.normal(size=(4, 3 * d))[cls] + 0.3 * rng.normal(size=(n, 3 * d))
    photos /= np.linalg.norm(photos, axis=1, keepdims=True)
    caps = centers_t[cls] + 0.5 * rng.normal(size=(n, d_text))
    phrase_feats = centers_t + 0.2 * rng.normal(size=(4, d_text))
    phrases = dp.Phrases([f"c{k}" for k in range(4)], ["noun"] * 4,
                         [np.flatnonzero(cls == k) for k in range(4)])
    from xmodal.models.dual_heads import DualHeads

    members = torch.nn.ModuleList([DualHeads(image_dim=4, text_dim=d_text, dim=d, hidden=16,
                                             dropout=0.0).text for _ in range(3)])
    return members, photos.astype(np.float32), caps.astype(np.float32), np.arange(n), \
        phrase_feats.astype(np.float32), phrases, cls


def _phrase_map(members, photos, phrase_feats, cls):
    from xmodal.eval.short_queries import average_precision

    S = dp.embed_text_features(members, phrase_feats) @ photos.T
    return np.mean([average_precision(S[k], cls == k) for k in range(4)])


def test_the_phrase_loss_teaches_phrases_to_find_their_photos():
    members, photos, caps, owner, pf, phrases, cls = _toy()
    before = _phrase_map(members, photos, pf, cls)
    hist = dp.tune(members, photos, caps, owner, pf, phrases, phrase_weight=1.0, epochs=30,
                   lr=3e-3, batch_images=32, seed=0)
    assert [h[0] for h in hist] == list(range(31))
    after = _phrase_map(members, photos, pf, cls)
    assert after > before + 0.2 and after > 0.9


def test_the_ensemble_text_vector_matches_the_numpy_heads():
    from xmodal.models.head_inference import NumpyHeads

    members, *_ = _toy()
    rng = np.random.default_rng(1)
    for m in members:  # non-trivial standardisation too
        m.mean.copy_(torch.from_numpy(rng.normal(size=12).astype(np.float32)))
    state = {f"m{i}.text.{k}": v.numpy() for i, m in enumerate(members)
             for k, v in m.state_dict().items()}
    cfg = {"members": [{"image_dim": 4, "text_dim": 12, "dim": 8, "hidden": 16,
                        "dropout": 0.0, "use_maps": False, "text_identity": False}] * 3}
    x = rng.normal(size=(5, 12)).astype(np.float32)
    want = NumpyHeads(cfg, state).embed_texts(x)
    np.testing.assert_allclose(dp.embed_text_features(members, x), want, atol=1e-5)
