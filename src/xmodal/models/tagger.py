"""Keyword tagging of any image: the engine behind ``xmodal tag`` and the server's tag endpoint.

The tagging model, ``keyword_head`` (:class:`KeywordHead`), is a multi-label logistic regression
on pooled EfficientNet-Lite features (1280-d), one sigmoid per keyword (it beats the CRM on
Flickr8K keywords and is small). It is saved in the one model-directory format
(:mod:`xmodal.models.modeldir`).

    from xmodal.models.tagger import load_default_tagger
    tagger = load_default_tagger()
    tagger.tag("photo.jpg", n=5)        # [("dog", 0.91), ("grass", 0.52), ...]

The default model lives in ``xmodal/assets/tag/`` (Flickr8K + Conceptual Captions, Lite2
features, 1,023 words; trained by ``xmodal reproduce tagger``, ``reports/tagger.md``); the
Flickr8K-only tagger shipped before, the neural row of the relevance report, in
``xmodal/assets/tag-flickr8k/``;
:func:`xmodal.recipes.tagger.train_keyword_tagger` (``xmodal train tagger``) trains one on your
own captioned photos.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

from xmodal.errors import XmodalError
from xmodal.models.modeldir import read_config, read_model_dir, write_model_dir

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "assets" / "tag"
# The Flickr8K-only tagger shipped before: the relevance report's neural row and the MITL
# ``tagger-lemmas`` annotator are measured with it, so their numbers stay those of the report.
FLICKR8K_MODEL_DIR = DEFAULT_MODEL_DIR.with_name("tag-flickr8k")

ImageInput = str | os.PathLike | Image.Image


class KeywordHead:
    """Multi-label logistic regression from image feature vectors to keywords.

    Features are standardised; weights are fit by full-batch L-BFGS on the mean binary
    cross-entropy plus ``l2`` * ||W||^2. ``prior_power`` g ranks words by
    P(w|x) / P(w)^g (g = 0: by probability), which favours rarer words.
    """

    kind = "keyword_head"

    def __init__(self, l2: float = 1e-4, prior_power: float = 0.0, max_iter: int = 60,
                 seed: int = 0):
        self.l2 = l2
        self.prior_power = prior_power
        self.max_iter = max_iter
        self.seed = seed

    def fit(self, features, labels, vocabulary: Sequence[str] | None = None) -> KeywordHead:
        import torch

        x = np.asarray(features, dtype=np.float32)
        y = np.asarray(labels, dtype=np.float32)
        if x.ndim != 2 or y.ndim != 2 or len(x) != len(y):
            raise XmodalError(f"features {x.shape} and labels {y.shape} do not match")
        self.mean_ = x.mean(0)
        self.scale_ = x.std(0) + 1e-6
        xs = torch.from_numpy((x - self.mean_) / self.scale_)
        yt = torch.from_numpy(y)
        torch.manual_seed(self.seed)
        w = torch.zeros(x.shape[1], y.shape[1], requires_grad=True)
        p = y.mean(0).clip(1e-4, 1 - 1e-4)
        b = torch.tensor(np.log(p / (1 - p)), dtype=torch.float32, requires_grad=True)
        opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=self.max_iter,
                                line_search_fn="strong_wolfe")
        loss_fn = torch.nn.BCEWithLogitsLoss()

        def closure():
            opt.zero_grad()
            loss = loss_fn(xs @ w + b, yt) + self.l2 * (w**2).sum()
            loss.backward()
            return loss

        threads = torch.get_num_threads()
        if x.shape[0] * x.shape[1] * y.shape[1] < 5_000_000:
            torch.set_num_threads(1)  # small problems: thread start-up costs more than it saves
        try:
            opt.step(closure)
        finally:
            torch.set_num_threads(threads)
        self.coef_ = w.detach().numpy()
        self.intercept_ = b.detach().numpy()
        self.word_prior_ = (y.sum(0) + 1.0) / (len(y) + 2.0)
        self.vocabulary_ = (list(vocabulary) if vocabulary is not None
                            else [f"w{i}" for i in range(y.shape[1])])
        return self

    def _check(self, x) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise XmodalError("KeywordHead is not fitted; call fit() or load()")
        x = np.atleast_2d(np.asarray(x, dtype=np.float32))
        if x.shape[1] != self.coef_.shape[0]:
            raise XmodalError(f"expected {self.coef_.shape[0]}-d features, got {x.shape[1]}")
        return x

    def logits(self, features) -> np.ndarray:
        x = self._check(features)
        return ((x - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def probabilities(self, features) -> np.ndarray:
        """(n_images, n_words) P(word mentioned | image), independent sigmoids."""
        return 1.0 / (1.0 + np.exp(-self.logits(features)))

    def word_scores(self, features) -> np.ndarray:
        """(n_images, n_words) ranking scores for annotation."""
        p = self.probabilities(features)
        return p / self.word_prior_**self.prior_power if self.prior_power else p

    def query_scores(self, queries, features) -> np.ndarray:
        """(n_queries, n_images) sum over query words of log P(word | image)."""
        from xmodal.models.relevance import parse_queries

        q = parse_queries(queries, self.vocabulary_)
        z = self.logits(features)
        log_p = -np.logaddexp(0.0, -z)  # log sigmoid
        return np.asarray(q @ log_p.T)

    SAVE_VERSION = 1
    FEATURES = "efficientnet-lite0-pooled"  # the default: pooled EfficientNet-Lite0 features
    features_ = FEATURES  # what the model reads (set before save for another backbone)

    def get_params(self) -> dict:
        return {"l2": self.l2, "prior_power": self.prior_power, "max_iter": self.max_iter,
                "seed": self.seed}

    def save(self, path: str | os.PathLike, provenance: dict | None = None) -> Path:
        arrays = {"coef": self.coef_.astype(np.float16),
                  "intercept": self.intercept_.astype(np.float32),
                  "mean": self.mean_.astype(np.float32),
                  "scale": self.scale_.astype(np.float32),
                  "word_prior": self.word_prior_.astype(np.float32)}
        return write_model_dir(path, type=self.kind, version=self.SAVE_VERSION,
                               params=self.get_params(), arrays=arrays,
                               state={"features": self.features_,
                                      "vocabulary": list(self.vocabulary_)},
                               provenance=provenance)

    @classmethod
    def load(cls, path: str | os.PathLike) -> KeywordHead:
        saved = read_model_dir(path, cls.kind, cls.SAVE_VERSION, "tagging")
        m = cls(**saved.params)
        z = saved.arrays
        m.coef_ = z["coef"].astype(np.float32)
        m.intercept_ = z["intercept"].astype(np.float32)
        m.mean_ = z["mean"].astype(np.float32)
        m.scale_ = z["scale"].astype(np.float32)
        m.word_prior_ = z["word_prior"].astype(np.float32)
        m.vocabulary_ = list(saved.state["vocabulary"])
        m.features_ = saved.state.get("features", cls.FEATURES)
        return m


class Tagger:
    """A tagging model plus the feature extractor it needs; works on any readable image."""

    def __init__(self, model, features: str, path: Path | None = None):
        self.model = model
        self.features = features
        self.path = path

    @property
    def vocabulary(self) -> list[str]:
        return list(self.model.vocabulary_)

    def image_features(self, images: Sequence[ImageInput]):
        for im in images:
            if not isinstance(im, Image.Image) and not Path(im).is_file():
                raise XmodalError(f"image not found: {im}")
        return pooled_features(list(images), backbone_of(self.features), cache=False,
                               progress=False)

    def scores(self, images: Sequence[ImageInput]) -> np.ndarray:
        """(n_images, n_words) tag scores; XmodalError names the first unreadable image."""
        if not len(images):
            return np.zeros((0, len(self.vocabulary)))
        feats = self.image_features(images)
        if isinstance(self.model, KeywordHead):
            return self.model.probabilities(feats)
        return self.model.word_scores(feats)

    def tag_many(self, images: Sequence[ImageInput], n: int = 5) -> list[list[tuple[str, float]]]:
        if n < 1:
            raise XmodalError("the number of tags must be at least 1")
        feats = self.image_features(images)
        if isinstance(self.model, KeywordHead):
            shown = self.model.probabilities(feats)
            rank = self.model.word_scores(feats)
        else:
            shown = rank = self.model.word_scores(feats)
        vocab = self.model.vocabulary_
        out = []
        for i in range(len(images)):
            top = np.argsort(-rank[i], kind="stable")[:n]
            out.append([(vocab[j], float(shown[i, j])) for j in top])
        return out

    def tag(self, image: ImageInput, n: int = 5) -> list[tuple[str, float]]:
        """The top ``n`` (keyword, score) pairs for one image (a path or a PIL image)."""
        return self.tag_many([image], n)[0]


def load_tagger(path: str | os.PathLike) -> Tagger:
    """A tagger from a saved ``keyword_head`` model directory."""
    kind = read_config(path, "tagging").get("type")
    if kind != KeywordHead.kind:
        raise XmodalError(f"{Path(path) / 'config.json'}: not a tagging model (type {kind!r}); "
                          "train one with `xmodal train tagger`")
    model = KeywordHead.load(path)
    backbone_of(model.features_)  # an unknown feature name fails here, not at tagging time
    return Tagger(model, model.features_, Path(path))


def features_name(backbone: str = "lite0") -> str:
    """The tagger feature name of a backbone: ``efficientnet-lite0-pooled``."""
    return f"efficientnet-{backbone}-pooled"


def backbone_of(features: str) -> str:
    """The backbone of a tagger feature name (``efficientnet-liteN-pooled`` -> ``liteN``)."""
    m = re.fullmatch(r"efficientnet-(lite\d)-pooled", features or "")
    if not m:
        raise XmodalError(f"unknown tagger features {features!r}")
    return m.group(1)


def pooled_features(images, backbone: str = "lite0", **kwargs) -> np.ndarray:
    """(n, 1280) pooled features through :func:`xmodal.features.extract_image_features`
    (``backbone`` passed on when it is not the default Lite0)."""
    from xmodal.features import extract_image_features

    if backbone == "lite0":
        return extract_image_features(list(images), **kwargs).pooled
    import inspect

    if "backbone" not in inspect.signature(extract_image_features).parameters:
        raise XmodalError(f"this xmodal's image encoder has no {backbone} backbone")
    return extract_image_features(list(images), backbone=backbone, **kwargs).pooled


def _load_shipped(folder: Path) -> Tagger:
    if not (folder / "config.json").is_file():
        raise XmodalError(f"the shipped tagging model is missing from {folder}; "
                          "reinstall xmodal or pass --model DIR")
    return load_tagger(folder)


@lru_cache(maxsize=1)
def load_default_tagger() -> Tagger:
    """The shipped keyword tagger, Flickr8K + Conceptual Captions (loaded once per process)."""
    return _load_shipped(DEFAULT_MODEL_DIR)


@lru_cache(maxsize=1)
def load_flickr8k_tagger() -> Tagger:
    """The Flickr8K-only keyword tagger shipped before (reports measured with it)."""
    return _load_shipped(FLICKR8K_MODEL_DIR)
