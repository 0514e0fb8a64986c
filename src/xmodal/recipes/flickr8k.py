"""Flickr8K: the Hodosh et al. (2013) systems and the dual encoder, as named settings.

Hodosh systems (``hodosh-NAME``) pair a text kernel with an image kernel
(:class:`xmodal.models.hodosh.HodoshKCCA`); a trained system is cached as a saved model directory
under ``$XMODAL_CACHE/hodosh/systems`` (keyed by its hyperparameters), so a second evaluation is
fast. ``hodosh-nn`` is the paper's NN5 baseline (:class:`xmodal.models.nearest_neighbour.
NearestNeighbour`). ``dual`` is the shipped dual encoder (``xmodal/assets/dual``) and
``efficientnet-minilm-zeroshot`` its training-free bridge; ``fast`` the same recipe on
EfficientNet-Lite0 + MiniLM (``xmodal/assets/fast``).
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.recipes.querybank import QUERYBANK_BETA
from xmodal.recipes.settings import Setting, frozen

HODOSH = "Hodosh et al. 2013"
DEV = ("kappa and n selected on the dev pool (5 best by R@1, R@5, R@10 per task, Borda "
       "ensemble; reports/hodosh.md)")
IMAGE_FEATURES = {
    "pyramid": "colour + texture + SIFT spatial-pyramid kernels (224-px images)",
    "pyramid112": "spatial-pyramid kernels on images resized to 112 px",
    "pyramid448": "spatial-pyramid kernels on images resized to 448 px",
    "effnet": "EfficientNet-Lite0 pooled features (cosine kernel)",
}


@lru_cache(maxsize=2)
def _load_flickr(data: str | None):
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_flickr8k(data)


@lru_cache(maxsize=2)
def caption_tokens(root) -> dict[str, list]:
    """``{caption id: tagged tokens}`` of the Flickr8K release at ``root`` (the text kernels'
    preprocessing, :func:`xmodal.features.captions.flickr8k_tokens`), computed once a process."""
    from xmodal.features.captions import flickr8k_tokens

    return flickr8k_tokens(_load_flickr(str(root)), tagged=True)


def load_hodosh_data(data=None):
    """Flickr8K as Hodosh et al. use it (:class:`xmodal.models.hodosh.HodoshData`): the official
    splits of ``data`` (a loaded release, its folder, or None for the default one)."""
    from xmodal.models.hodosh import HodoshData

    ds = data if hasattr(data, "captions_of") else _load_flickr(None if data is None else str(data))
    return HodoshData(ds, list(ds.split("train")), list(ds.split("dev")), list(ds.split("test")),
                      tokens_of=caption_tokens)


def _hodosh_scorer_for(get):
    """A Hodosh scorer; ``get(hd, images, docs, key)`` gives ``{"i2t": S, "t2i": S}``."""
    from xmodal.models.hodosh import config_hash

    cache: dict[str, dict[str, np.ndarray]] = {}

    def scorer(protocol, direction, seed=0):
        hd = load_hodosh_data(getattr(protocol, "dataset", None))
        images, docs = direction_inputs(hd, direction)
        key = config_hash(images, list(direction.text_ids))
        if key not in cache:
            cache[key] = get(hd, images, docs, key)
        return cache[key][direction.name]

    # Annotation and search use different Borda ensembles (as in the paper), so the two
    # directions of one pool must not share a score matrix.
    scorer.per_direction = True
    return scorer


def direction_inputs(hd, direction) -> tuple[list[str], list]:
    """Flickr8K image ids and one-caption token docs of a direction."""
    from xmodal.features.captions import preprocess_tagged

    tok = hd.tokens
    ids = list(direction.text_ids)
    if all(t in tok for t in ids):
        docs = [[tok[t]] for t in ids]
    else:
        docs = [[t] for t in preprocess_tagged(list(direction.texts))]
    missing = [i for i in direction.image_ids if not hd.image_path(i).is_file()]
    if missing:
        raise XmodalError(f"Hodosh systems score Flickr8K images; {missing[0]} is not one")
    return list(direction.image_ids), docs


def nn_scores(hd, image_ids, docs, image_kernel: str = "pyramid",
              power: float = 2.0) -> dict[str, np.ndarray]:
    """NN5^idf_F1 scores per task for Flickr8K images and one-caption docs."""
    from xmodal.models.hodosh import ImageSide
    from xmodal.models.nearest_neighbour import NearestNeighbour

    tok = hd.tokens
    lemma = lambda t: t[0] if isinstance(t, (list, tuple)) else t  # noqa: E731
    train_docs = [
        [lemma(t) for c in hd.data.captions_of(i) for t in tok[c.id]] for i in hd.train_ids
    ]
    caps = [[lemma(t) for cap in doc for t in cap] for doc in docs]
    k_img = ImageSide(hd, image_kernel, power).block(list(image_ids), hd.train_ids)
    nn = NearestNeighbour().fit(train_docs)
    return {"i2t": nn.score_i2t(k_img, caps), "t2i": nn.score_t2i(k_img, caps)}


def system_dir(name: str, hd):
    """Where the trained system of setting ``name`` on the data ``hd`` is cached (keyed by its
    hyperparameters and the captions' tokens)."""
    from xmodal.models.hodosh import HodoshKCCA, cache_root, config_hash

    setting = get_hodosh_setting(name)
    key = config_hash(dict(setting.params), HodoshKCCA.SAVE_VERSION, hd.tokens_digest)
    return cache_root() / "systems" / f"{setting.name.removeprefix('hodosh-')}-{key}"


def get_hodosh_setting(name: str) -> Setting:
    for s in SETTINGS:
        if s.family == "kcca" and name in (s.name, s.name.removeprefix("hodosh-")):
            return s
    kcca = [s.name.removeprefix("hodosh-") for s in SETTINGS if s.family == "kcca"]
    raise XmodalError(f"unknown Hodosh KCCA system {name!r}; choose from {kcca}")


def get_system(name: str, hd=None, retrain: bool = False):
    """A trained KCCA system by setting name, loaded from the cache or trained (and cached)."""
    from xmodal.models.hodosh import HodoshKCCA
    from xmodal.provenance import provenance

    setting = get_hodosh_setting(name)
    hd = hd or load_hodosh_data()
    d = system_dir(name, hd)
    if (d / "config.json").is_file() and not retrain:
        return HodoshKCCA.load(d, hd)
    system = setting.build().fit(hd)
    system.save(d, provenance=provenance(setting=setting.name))
    return system


def _hodosh_named(setting: Setting, protocol_name: str):
    if setting.family != "kcca":
        p = setting.feature_params
        return _hodosh_scorer_for(lambda hd, images, docs, key: nn_scores(
            hd, images, docs, p["image_kernel"], p["power"]))
    return _hodosh_scorer_for(
        lambda hd, images, docs, key: get_system(setting.name, hd).score(images, docs,
                                                                         f"pool-{key}"))


def saved_hodosh_scorer(model: Any, path: Any, protocol_name: str):
    def get(hd, images, docs, key):
        model.hd_ = hd
        return model.score(images, docs, f"pool-{key}")

    return _hodosh_scorer_for(get)


def _dual_scorer(setting: Setting, protocol_name: str):
    from xmodal.models.dual import named

    return embedding_scorer(named(setting.feature_params["spec"]))


def _dual_qb_scorer(setting: Setting, protocol_name: str):
    """The default model's cosines, querybank-normalised against its own training data."""
    from xmodal.models.dual import named
    from xmodal.models.querybank import QuerybankNorm
    from xmodal.recipes.querybank import check_disjoint, training_bank

    spec = setting.feature_params["spec"]
    model = named(spec)

    def scorer(protocol, direction, seed: int = 0) -> np.ndarray:
        paths = _image_paths(protocol, direction)
        bank_images, bank_texts, bank_paths = training_bank(model, cache_key=spec)
        check_disjoint(bank_paths, paths)
        qb = QuerybankNorm(**setting.params).fit(bank_images, bank_texts)
        return qb.normalize(model.embed_images(paths), model.embed_texts(list(direction.texts)))

    return scorer


def embedding_scorer(model: Any, path: Any = None, protocol_name: str = ""):
    """A scorer for any joint-space model (dual encoder, open_clip) on a protocol with images."""

    def scorer(protocol, direction, seed: int = 0) -> np.ndarray:
        return model.score(_image_paths(protocol, direction), list(direction.texts))

    return scorer


def _image_paths(protocol, direction) -> list:
    """The image files of a direction (embedding models read pixels)."""
    ds = protocol.dataset
    if ds is None or not hasattr(ds, "image_path"):
        raise XmodalError(
            f"protocol {protocol.name!r} has no image files; embedding models need images"
        )
    return [ds.image_path(i) for i in direction.image_ids]


def tagger_caption_scores(tagger: Any, paths: list, texts: list[str]) -> np.ndarray:
    """Images x texts: mean log P(word | image) over each caption's keyword lemmas under the
    tagger's independent word models; a caption with no keyword ranks last for every image."""
    from xmodal.features.captions import preprocess_tagged

    index = {w: n for n, w in enumerate(tagger.vocabulary)}
    feats = tagger.image_features(paths) if paths else np.zeros((0, 0))
    log_p = -np.logaddexp(0.0, -tagger.model.logits(feats))  # (n_images, n_words)
    words = np.zeros((len(index), len(texts)))
    for j, toks in enumerate(preprocess_tagged(texts)):
        hits = [index[lemma] for lemma, _ in toks if lemma in index]
        for w in hits:
            words[w, j] += 1.0 / len(hits)
    scores = log_p @ words
    empty = words.sum(0) == 0
    if empty.any():
        scores[:, empty] = (scores[:, ~empty].min() if (~empty).any() else 0.0) - 1.0
    return scores


def _tagger_scorer(setting: Setting, protocol_name: str):
    from xmodal.models.tagger import load_flickr8k_tagger

    tagger = load_flickr8k_tagger()

    def scorer(protocol, direction, seed: int = 0) -> np.ndarray:
        ds = protocol.dataset
        if ds is None or not hasattr(ds, "image_path"):
            raise XmodalError(f"protocol {protocol.name!r} has no image files; the tagger needs "
                              "images")
        return tagger_caption_scores(tagger, [ds.image_path(i) for i in direction.image_ids],
                                     list(direction.texts))

    return scorer


def _kcca(name: str, text: str, image: str, diag: float, provenance: str, *,
          text_landmarks: bool = False, full: bool = False) -> Setting:
    from xmodal.models.hodosh import KAPPAS, N_GRID, n_grid_for

    rank, landmarks = (3000, 6000) if full else (1500, 1500)
    params = {"text_kernel": text, "image_kernel": image, "power": 2.0, "diag_factor": diag,
              "rank": rank, "n_landmarks": landmarks, "text_landmarks": text_landmarks,
              "kappas": list(KAPPAS), "n_grid": list(n_grid_for(rank) if full else N_GRID),
              "seed": 0}
    size = ("exact kernels on all 6,000 training images, rank 3,000" if full else
            "image kernel against 1,500 seeded landmark training images, rank 1,500"
            + (", text kernel against the landmarks too" if text_landmarks else ""))
    features = f"Flickr8K: {text} text kernel; {IMAGE_FEATURES[image]}; {size}"
    return Setting(f"hodosh-{name}", "kcca", "xmodal.models.hodosh:HodoshKCCA", frozen(params),
                   features, f"{provenance}; {DEV}", (), _hodosh_named)


def _hodosh_settings() -> list[Setting]:
    tri5sem_d = ("d = 4 chosen on dev (the max-combined Tri5Sem kernel is indefinite; the "
                 "diagonal factor restores a full-rank factorisation)")
    paper = {k: f"{HODOSH} system {k}" for k in ("BoW1", "BoW5", "TagRank", "Tri5", "Tri5Sem")}
    rows = [
        ("bow1", "bow1", "pyramid", 1.0, paper["BoW1"], {}),
        ("bow5", "bow5", "pyramid", 1.0, paper["BoW5"], {}),
        ("tagrank", "tagrank", "pyramid", 1.0, paper["TagRank"], {}),
        ("tri5", "tri5", "pyramid", 1.0, paper["Tri5"], {}),
        ("tri5sem", "tri5sem", "pyramid", 4.0, f"{paper['Tri5Sem']}; {tri5sem_d}",
         {"text_landmarks": True}),
        ("tri5sem-effnet", "tri5sem", "effnet", 4.0, "ours: Tri5Sem with modern image features",
         {"text_landmarks": True}),
        ("bow5-effnet", "bow5", "effnet", 1.0, "ours: BoW5 with modern image features", {}),
        ("tri5-landmarks", "tri5", "pyramid", 1.0,
         "ablation: Tri5 with its text kernel on the landmarks only", {"text_landmarks": True}),
        ("bow5-112", "bow5", "pyramid112", 1.0, "ablation: image resolution 112 px", {}),
        ("bow5-448", "bow5", "pyramid448", 1.0, "ablation: image resolution 448 px", {}),
        ("tri5sem-448", "tri5sem", "pyramid448", 4.0, "ablation: image resolution 448 px",
         {"text_landmarks": True}),
    ]
    for text in ("tri5sem", "bow5", "tagrank", "tri5"):
        for image, tag in (("pyramid", ""), ("pyramid448", "-448")):
            diag = 4.0 if text == "tri5sem" else 1.0
            rows.append((f"{text}{tag}-full", text, image, diag,
                         f"{HODOSH} system {text} with exact kernels (as the paper)"
                         + (", images at 448 px" if tag else ""), {"full": True}))
    return [_kcca(n, t, i, d, p, **kw) for n, t, i, d, p, kw in rows]


SETTINGS = [
    Setting("hodosh-nn", "", "xmodal.models.nearest_neighbour:NearestNeighbour", frozen(),
            f"Flickr8K: idf-weighted F1 of caption words; {IMAGE_FEATURES['pyramid']}",
            f"{HODOSH} NN5^idf_F1 baseline (no hyperparameters)",
            (), _hodosh_named,
            frozen(image_kernel="pyramid", power=2.0)),
    *_hodosh_settings(),
    Setting("dual", "dual", "xmodal.models.dual:DualEncoder",
            frozen(dim=256, hidden=512, dropout=0.4, bridge_weight=0.0, bridge_temperature=1.0,
                   image_input="pooled+bridge", image_backbone="lite2", text_encoder="mpnet"),
            "EfficientNet-Lite2 activations below its head conv + ImageNet-class bridge; "
            "MPNet sentence embeddings",
            "the shipped model (xmodal/assets/dual, `xmodal train dual`): three heads trained "
            "on Flickr8K + Conceptual Captions 18k train with mirrored images and "
            "hard negatives (stage 1), then EfficientNet-Lite2's head conv tuned with them "
            "(stage 2); variant, epochs and bridge weight selected on Flickr8K dev + CC dev "
            "(reports/dual_encoder.md, fourth and fifth rounds)",
            (), _dual_scorer, frozen(spec="dual")),
    Setting("fast", "", "xmodal.models.dual:DualEncoder",
            frozen(dim=256, hidden=512, dropout=0.4, bridge_weight=0.1, bridge_temperature=1.0,
                   image_input="pooled+bridge", image_backbone="lite0", text_encoder="minilm",
                   image_int8=True),
            "EfficientNet-Lite0 pooled features + ImageNet-class bridge; MiniLM sentence "
            "embeddings",
            "the fast model (xmodal/assets/fast, `xmodal train dual --image-backbone lite0 "
            "--text-encoder minilm`): the shipped recipe's stage 1 (three heads, Flickr8K + "
            "Conceptual Captions 18k train, mirrored images, hard negatives; epochs and bridge "
            "weight selected on Flickr8K dev + CC dev), no stage 2 (Lite2 only); its image "
            "tower in int8 (stem and blocks 0-2 fp32; accepted on dev, benchmarks/results/"
            "int8_fast.json)",
            (), _dual_scorer, frozen(spec="fast")),
    Setting("dual-qb", "", "xmodal.models.querybank:QuerybankNorm",
            frozen(beta=QUERYBANK_BETA),
            "the default dual encoder's embeddings; a querybank of its training data (Flickr8K "
            "+ CC18k train: 22,643 images, 46,643 captions, embedded by the same model)",
            "ours: querybank normalisation (inverted softmax, Bogolin et al. 2022) of the "
            "default model; beta selected on Flickr8K dev + CC dev (reports/dual_encoder.md, "
            "sixth round); needs Flickr8K and CC18k",
            (), _dual_qb_scorer, frozen(spec="dual")),
    Setting("efficientnet-minilm-zeroshot", "", "xmodal.models.dual:DualEncoder",
            frozen(bridge_weight=1.0),
            "EfficientNet-Lite0 ImageNet logits; MiniLM embeddings of the class names",
            "training-free bridge: no fitted parameters (reports/dual_encoder.md)",
            (), _dual_scorer, frozen(spec="efficientnet-minilm-zeroshot")),
    Setting("tagger-lemmas", "", "xmodal.models.tagger:KeywordHead", frozen(),
            "the Flickr8K-only keyword tagger (EfficientNet-Lite0 pooled features, "
            "xmodal/assets/tag-flickr8k); "
            "captions as their spaCy keyword lemmas",
            "ours: a caption scores the mean log-probability of its keyword lemmas under the "
            "Flickr8K-only tagger (no fitted parameters beyond the tagger's)",
            (), _tagger_scorer),
]
