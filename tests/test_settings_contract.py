"""The contract every registered model keeps, walked over the whole settings table.

Each entry builds from its record, scores a tiny protocol with S of shape (n_images, n_texts)
oriented images x texts (permuting a direction's items permutes S the same way), saves, loads and
scores the same again. Real features are expensive for some families, so each recipe gets tiny
synthetic inputs of the same kind: Wikipedia-like histograms and topics, Corel-like blob and
keyword sets, kernel values for the Hodosh systems (their kernels come from Flickr8K pixels),
encoder features for the dual encoder. Entries without a saved form (random, hodosh-nn) are
checked for shape and orientation only.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import sparse

from xmodal.eval.protocols import Direction, Protocol
from xmodal.factory import load_saved_model as load
from xmodal.factory import get_scorer
from xmodal.recipes import all_settings

SETTINGS = all_settings()
N_IMG, N_TXT = 7, 5  # a direction: 7 images x 5 texts (not square: orientation shows)


def _directions(image_ids, text_ids, texts, seed=0):
    """An i2t and a t2i direction over a subset, plus the same with permuted items."""
    rng = np.random.default_rng(seed)
    ii = rng.choice(len(image_ids), N_IMG, replace=False)
    tt = rng.choice(len(text_ids), N_TXT, replace=False)
    pi, pt = rng.permutation(N_IMG), rng.permutation(N_TXT)
    rel = sparse.csr_matrix((N_IMG, N_TXT), dtype=bool)

    def make(name, i, t):
        return Direction(name, [image_ids[k] for k in i], [text_ids[k] for k in t],
                         [texts[k] for k in t], rel)

    plain = {n: make(n, ii, tt) for n in ("i2t", "t2i")}
    permuted = {n: make(n, ii[pi], tt[pt]) for n in ("i2t", "t2i")}
    return plain, permuted, pi, pt


def _check_scorer(scorer, protocol, plain, permuted, pi, pt, permute_images=True):
    out = {}
    for name in ("i2t", "t2i"):
        s = np.asarray(scorer(protocol, plain[name], 0))
        assert s.shape == (N_IMG, N_TXT) and np.isfinite(s).all()
        sp = np.asarray(scorer(protocol, permuted[name], 0))
        ref = s[pi] if permute_images else s
        np.testing.assert_allclose(sp, ref[:, pt], rtol=1e-9, atol=1e-12)
        out[name] = s
    return out


def _names(recipe: str) -> list[str]:
    module = f"xmodal.recipes.{recipe}"
    return [n for n, s in SETTINGS.items() if s.make_scorer.__module__ == module]


def test_the_table_is_covered():
    covered = set(WIKI) | set(COREL) | set(HODOSH_KCCA) | set(OTHERS)
    assert covered == set(SETTINGS)


# -- Wikipedia ----------------------------------------------------------------------------------
WIKI = _names("wikipedia")


def _wikipedia_protocol():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 40)
    centres_i, centres_t = rng.dirichlet(np.ones(16), 3) * 5, rng.dirichlet(np.ones(10), 3) * 5
    image = np.stack([rng.dirichlet(centres_i[c] + 0.5) for c in y])
    text = np.stack([rng.dirichlet(centres_t[c] + 0.5) for c in y])
    tr, te = np.arange(0, 120, 2), np.arange(1, 120, 2)
    ds = SimpleNamespace(
        root="contract-wikipedia", image_train=image[tr], text_train=text[tr],
        labels_train=y[tr], image_test=image[te], text_test=text[te], labels_test=y[te],
        image_ids_test=[f"i{k}" for k in te], text_ids_test=[f"t{k}" for k in te])
    return ds, Protocol("wikipedia", {}, ds)


@pytest.mark.parametrize("name", WIKI)
def test_wikipedia_setting_contract(name, tmp_path):
    from xmodal.recipes import wikipedia as wiki

    setting = SETTINGS[name]
    ds, protocol = _wikipedia_protocol()
    plain, permuted, pi, pt = _directions(ds.image_ids_test, ds.text_ids_test,
                                          list(ds.text_ids_test))
    wiki.clear_fitted()
    named = _check_scorer(setting.scorer("wikipedia"), protocol, plain, permuted, pi, pt)
    model = wiki.fit_on_wikipedia(setting, ds)
    assert model.get_params() == dict(setting.params)
    saved = get_scorer(str(model.save(tmp_path / name)), "wikipedia")
    for d in ("i2t", "t2i"):
        np.testing.assert_array_equal(saved(protocol, plain[d], 0), named[d])
    assert type(load(tmp_path / name)) is type(model)
    wiki.clear_fitted()


# -- Corel5K ------------------------------------------------------------------------------------
COREL = _names("corel5k")


def _corel_protocol():
    rng = np.random.default_rng(1)
    n_blobs, words = 12, [f"w{k}" for k in range(6)]
    topics = rng.integers(0, 3, 60)
    blobs = rng.random((60, n_blobs)) < 0.15 + 0.5 * (np.arange(n_blobs) % 3 == topics[:, None])
    labels = rng.random((60, 6)) < 0.1 + 0.6 * (np.arange(6) % 3 == topics[:, None])
    blobs[:, 0] |= ~blobs.any(1)
    labels[:, 0] |= ~labels.any(1)
    ds = SimpleNamespace(keywords=words, blobs_train=blobs[:40], labels_train=labels[:40],
                         blobs_test=blobs[40:], labels_test=labels[40:],
                         ids_test=[f"c{k}" for k in range(20)])
    return ds, Protocol("corel5k", {}, ds)


@pytest.mark.parametrize("name", COREL)
def test_corel5k_setting_contract(name, tmp_path):
    from xmodal.recipes import corel5k

    setting = SETTINGS[name]
    ds, protocol = _corel_protocol()
    queries = ["w0", "w1 w2", "w3", "w4 w5", "w2"]
    # the corel5k scorer reads the 20 test images in dataset order; directions permute texts
    rel = sparse.csr_matrix((20, N_TXT), dtype=bool)
    plain = {"i2t": Direction("i2t", ds.ids_test, ds.keywords[:5], ds.keywords[:5], rel),
             "t2i": Direction("t2i", ds.ids_test, queries, queries, rel)}
    pt = np.random.default_rng(0).permutation(N_TXT)
    permuted = {n: Direction(n, ds.ids_test, [d.text_ids[k] for k in pt],
                             [d.texts[k] for k in pt], rel) for n, d in plain.items()}
    scorer = setting.scorer("corel5k")
    named = {}
    for d in ("i2t", "t2i"):
        s = scorer(protocol, plain[d], 0)
        assert s.shape == (20, N_TXT) and np.isfinite(s).all()
        np.testing.assert_allclose(scorer(protocol, permuted[d], 0), s[:, pt], rtol=1e-12)
        named[d] = s
    if setting.family == "crm":
        model, emb = corel5k.fit_corel_crm(ds, setting)
        corel5k.save_corel_crm(model, emb, tmp_path / name)
    else:
        corel5k.fit_corel_cmrm(ds, setting).save(tmp_path / name)
    saved = get_scorer(str(tmp_path / name), "corel5k")
    again = get_scorer(str(tmp_path / name), "corel5k")
    for d in ("i2t", "t2i"):
        s = saved(protocol, plain[d], 0)
        np.testing.assert_array_equal(again(protocol, plain[d], 0), s)  # load is deterministic
        if setting.family == "crm":  # float16 region storage: close, same top ranks
            np.testing.assert_allclose(s, named[d], rtol=5e-3, atol=1e-6)
        else:
            np.testing.assert_array_equal(s, named[d])


# -- Flickr8K: Hodosh KCCA systems (kernel values stand in for Flickr8K pixels) --------------------
HODOSH_KCCA = [n for n in _names("flickr8k") if SETTINGS[n].family == "kcca"]


@pytest.mark.parametrize("name", HODOSH_KCCA)
def test_hodosh_setting_contract(name, tmp_path):
    from xmodal.models.hodosh import HodoshKCCA
    from xmodal.models.kcca import KCCA

    setting = SETTINGS[name]
    system = setting.build()
    assert isinstance(system, HodoshKCCA)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    y = x @ rng.normal(size=(4, 3)) + 0.1 * rng.normal(size=(60, 3))
    m = KCCA(kappa=0.5, rank=20, diag_factor=system.diag_factor).fit(x @ x.T, y @ y.T)
    system.model_, system.weights_ = m, {0.5: (m.wx_, m.wy_)}
    system.selected_ = {t: [{"kappa": 0.5, "n": n, "by": "R@1"} for n in (1, 2, 3)]
                        for t in ("i2t", "t2i")}
    system.landmarks_, system.pivot_cols_, system.pivot_items_ = ["a"], [0], [0]
    system.dev_grid_, system.fit_seconds_ = [], 0.0
    system.hd_ = SimpleNamespace(train_ids=["a"])
    kx, ky = x[:N_IMG] @ x[m.pivots_x_].T, y[:N_TXT] @ y[m.pivots_y_].T
    s = system.score_kernels(kx, ky)
    rng = np.random.default_rng(1)
    pi, pt = rng.permutation(N_IMG), rng.permutation(N_TXT)
    # Borda counts tie and ties keep item order, so permute the items that are not ranked:
    # the images of an annotation matrix (rows), the captions of a search matrix (columns)
    np.testing.assert_allclose(system.score_kernels(kx[pi], ky)["i2t"], s["i2t"][pi])
    np.testing.assert_allclose(system.score_kernels(kx, ky[pt])["t2i"], s["t2i"][:, pt])
    for task in ("i2t", "t2i"):
        assert s[task].shape == (N_IMG, N_TXT)
    loaded = load(system.save(tmp_path / name))
    assert loaded.get_params() == system.get_params() == {**setting.params}
    loaded.hd_ = system.hd_
    s2 = loaded.score_kernels(kx, ky)
    for task in ("i2t", "t2i"):
        np.testing.assert_allclose(s2[task], s[task])  # float32 storage: the same Borda ranks


# -- the rest: random, the NN baseline, the dual encoder ------------------------------------------
OTHERS = ["random", "hodosh-nn", "dual", "fast", "dual-qb", "efficientnet-minilm-zeroshot",
          "tagger-lemmas"]


def test_random_contract():
    ids = [f"x{k}" for k in range(10)]
    plain, permuted, _, _ = _directions(ids, ids, ids)
    scorer = get_scorer("random", "any-protocol")
    for d in ("i2t", "t2i"):
        s = scorer(None, plain[d], 3)
        assert s.shape == (N_IMG, N_TXT)
        np.testing.assert_array_equal(scorer(None, plain[d], 3), s)  # the seed decides


def test_nearest_neighbour_contract():
    from xmodal.models.nearest_neighbour import NearestNeighbour

    nn = SETTINGS["hodosh-nn"].build()
    assert isinstance(nn, NearestNeighbour)
    docs = [["dog", "runs"], ["cat", "sleeps"], ["dog", "swims"], ["bird", "flies"]]
    nn.fit(docs)
    rng = np.random.default_rng(0)
    k_img = rng.random((N_IMG, len(docs)))
    caps = [["dog"], ["cat"], ["bird", "sky"], ["dog", "swims"], ["fish"]]
    pi, pt = rng.permutation(N_IMG), rng.permutation(N_TXT)
    for score in (nn.score_i2t, nn.score_t2i):
        s = score(k_img, caps)
        assert s.shape == (N_IMG, N_TXT)
        np.testing.assert_allclose(score(k_img[pi], [caps[k] for k in pt]), s[pi][:, pt])


@pytest.mark.parametrize("name", ["dual", "fast", "efficientnet-minilm-zeroshot"])
def test_dual_setting_contract(name, tmp_path):
    from xmodal.factory import load_embedding_model
    from xmodal.models.dual import DualEncoder

    setting = SETTINGS[name]
    model = load_embedding_model(setting.feature_params["spec"])
    assert isinstance(model, DualEncoder) and type(setting.build()) is DualEncoder
    assert model.get_params() == {**setting.build().get_params(), **setting.params}
    from xmodal.features.text_encoder import text_dim

    rng = np.random.default_rng(0)
    d_text = text_dim(model.text_encoder)  # the sentence encoder's width (MiniLM 384, MPNet 768)
    if model.class_text_ is None:  # the zero-shot bridge: stand-in class-name embeddings
        model.class_text_ = rng.normal(size=(1000, d_text)).astype(np.float16).astype(np.float32)
    pooled = rng.normal(size=(N_IMG, 1280)).astype(np.float32)
    logits = rng.normal(size=(N_IMG, 1000)).astype(np.float32)
    text = rng.normal(size=(N_TXT, d_text)).astype(np.float32)
    # a tuned head conv (the default model's stage 2) reads the activations below it
    prehead = (rng.random((N_IMG, 81, model.image_top_["weight"].shape[1]), np.float32)
               if model.image_top_ is not None else None)

    def scores(m):
        return (m.embed_image_features(pooled, logits, prehead=prehead)
                @ m.embed_text_features(text).T)

    s = scores(model)
    assert s.shape == (N_IMG, N_TXT)
    loaded = load(model.save(tmp_path / name))
    np.testing.assert_array_equal(scores(loaded), s)


def test_dual_qb_contract():
    """The querybank-normalised default model: the estimator of its record, on a stand-in bank
    (the real one is the model's training data); no saved form (the bank is rebuilt)."""
    from xmodal.models.querybank import QuerybankNorm

    setting = SETTINGS["dual-qb"]
    qb = setting.build()
    assert isinstance(qb, QuerybankNorm) and qb.beta == setting.params["beta"]
    rng = np.random.default_rng(0)

    def unit(n):
        x = rng.normal(size=(n, 12))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    images, texts = unit(N_IMG), unit(N_TXT)
    qb.fit(unit(40), unit(60))
    s = qb.normalize(images, texts)
    assert s.shape == (N_IMG, N_TXT) and np.isfinite(s).all()
    pi, pt = rng.permutation(N_IMG), rng.permutation(N_TXT)
    np.testing.assert_allclose(qb.normalize(images[pi], texts[pt]), s[pi][:, pt], rtol=1e-6)


def test_tagger_lemmas_contract():
    """A caption scores the mean log-probability of its keyword lemmas under the tagger."""
    from xmodal.models.tagger import KeywordHead, Tagger
    from xmodal.recipes.flickr8k import tagger_caption_scores

    rng = np.random.default_rng(0)
    vocab = ["dog", "cat", "bird", "sky", "run"]
    x = rng.normal(size=(40, 6)).astype(np.float32)
    y = rng.random((40, len(vocab))) < 0.4
    head = KeywordHead(max_iter=20).fit(x, y, vocab)
    feats = rng.normal(size=(N_IMG, 6)).astype(np.float32)
    tagger = Tagger(head, KeywordHead.FEATURES)
    tagger.image_features = lambda paths: feats[[int(p) for p in paths]]
    caps = ["a dog runs", "the cat", "a bird in the sky", "dogs run under the sky", "hello"]
    paths = [str(k) for k in range(N_IMG)]
    s = tagger_caption_scores(tagger, paths, caps)
    assert s.shape == (N_IMG, N_TXT) and np.isfinite(s).all()
    log_p = -np.logaddexp(0.0, -head.logits(feats))
    np.testing.assert_allclose(s[:, 0], log_p[:, [0, 4]].mean(1), rtol=1e-6)
    np.testing.assert_allclose(s[:, 2], log_p[:, [2, 3]].mean(1), rtol=1e-6)
    assert (s[:, 4] < s[:, :4].min()).all()  # no keyword: ranked last
    pi, pt = rng.permutation(N_IMG), rng.permutation(N_TXT)
    sp = tagger_caption_scores(tagger, [paths[k] for k in pi], [caps[k] for k in pt])
    np.testing.assert_allclose(sp, s[pi][:, pt], rtol=1e-9)
