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
:func:`train_keyword_tagger` (``xmodal train tagger``) trains one on your own captioned photos.
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


def select_keyword_head(x_train, y_train, x_dev, y_dev, words, l2s=(1e-5, 1e-4, 1e-3),
                        powers=(0.0, 0.25, 0.5, 0.75, 1.0)) -> tuple[dict, list[dict]]:
    """(best row, all rows): each L2 penalty x word-prior power, scored by mean per-word F1 of
    top-5 annotation on the dev images (first best wins ties)."""
    best, rows, _ = select_keyword_head_on(x_train, y_train, {"dev": (x_dev, y_dev)}, words,
                                           l2s, powers)
    return best, rows


METRIC_KEYS = ("mean_P", "mean_R", "mean_F1")


def select_keyword_head_on(x_train, y_train, devs: dict, words, l2s=(1e-5, 1e-4, 1e-3),
                           powers=(0.0, 0.25, 0.5, 0.75, 1.0)) -> tuple[dict, list[dict],
                                                                         KeywordHead]:
    """(best row, all rows, best model fit on the training images): each L2 penalty x
    word-prior power, scored by mean per-word F1 of top-5 annotation on each dev set of
    ``devs`` (``name -> (features, labels)``) and averaged over the sets, each set weighing the
    same (first best wins ties). With several sets a row also holds each set's metrics."""
    from xmodal.eval.metrics import annotation_metrics

    rows, best, best_model = [], None, None
    for l2 in l2s:
        m = KeywordHead(l2=l2).fit(x_train, y_train, words)
        for g in powers:
            m.prior_power = g
            per = {}
            for name, (x_dev, y_dev) in devs.items():
                r = annotation_metrics(m.word_scores(x_dev), y_dev, n=5, best=None)
                per[name] = {**{k: round(float(r[k]), 4) for k in METRIC_KEYS},
                             **{k: int(r[k]) for k in ("n_words_recall_gt0", "n_words")}}
            row = {"l2": l2, "prior_power": g}
            if len(per) == 1:
                row.update(next(iter(per.values())))
            else:
                row.update({k: round(float(np.mean([v[k] for v in per.values()])), 4)
                            for k in METRIC_KEYS})
                row["dev_sets"] = per
            rows.append(row)
            if best is None or row["mean_F1"] > best["mean_F1"]:
                best, best_model = row, m
    best_model.prior_power = best["prior_power"]
    return best, rows, best_model


def train_keyword_tagger(
    folder: str | os.PathLike,
    captions: str | os.PathLike,
    out: str | os.PathLike,
    min_images: int = 5,
    held_out: float = 0.2,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Train a keyword tagger on your own captioned photos and save it to ``out``.

    The keywords are the content lemmas (nouns, verbs, adjectives) in the captions of at least
    ``min_images`` photos; a logistic head on pooled EfficientNet-Lite0 features predicts them,
    as in the shipped tagger. Its L2 penalty and word-prior power are chosen by mean
    per-word F1 of top-5 tags on a random ``held_out`` share of the photos; the final model is
    then fit on all of them. Returns a summary (vocabulary, selection table, held-out scores).
    """
    from xmodal.data.folder import load_image_folder
    from xmodal.features.image_encoder import extract_image_features
    from xmodal.features.keywords import build_keyword_vocabulary, image_keyword_matrix
    from xmodal.provenance import provenance

    data = load_image_folder(folder, captions)
    ids = [i for i in data.image_ids if data.captions.get(i)]
    unknown = sorted(set(data.captions) - set(data.image_ids))
    if len(ids) < 10:
        raise XmodalError(f"{len(ids)} photos under {folder} have captions in {captions}; "
                          "a tagger needs at least 10 (caption image names are paths relative "
                          "to the folder)" + (f"; unmatched names: {unknown[:3]}" if unknown else ""))
    if not 0.0 < held_out < 1.0:
        raise XmodalError(f"held_out must be between 0 and 1, not {held_out}")
    vocab = build_keyword_vocabulary(data, ids, min_images=min_images)
    y = image_keyword_matrix(data, ids, vocab)
    x = extract_image_features([data.image_path(i) for i in ids], progress=progress).pooled
    perm = np.random.default_rng(seed).permutation(len(ids))
    n_va = max(1, int(round(held_out * len(ids))))
    va, tr = np.sort(perm[:n_va]), np.sort(perm[n_va:])
    best, rows = select_keyword_head(x[tr], y[tr], x[va], y[va], vocab.words)
    model = KeywordHead(l2=best["l2"], prior_power=best["prior_power"]).fit(x, y, vocab.words)
    summary = {"photos": len(ids), "keywords": len(vocab), "vocabulary": vocab.describe(),
               "selected": {"l2": best["l2"], "prior_power": best["prior_power"]},
               "held_out": {k: best[k] for k in ("mean_P", "mean_R", "mean_F1",
                                                  "n_words_recall_gt0", "n_words")},
               "selection": rows}
    model.save(out, provenance=provenance(
        trained_on=f"{len(ids)} captioned photos under {Path(folder).resolve()}",
        keyword_vocabulary=vocab.describe(), selection=rows,
        held_out_annotation=summary["held_out"]))
    return summary


def flickr8k_pooled_features(data) -> dict:
    """Pooled EfficientNet-Lite0 features of all Flickr8K images (cached):
    ``{"pooled": (n, 1280), "index": {image id: row}}``."""
    from xmodal.features import flickr8k_image_features

    ids, f = flickr8k_image_features(data)
    return {"pooled": f.pooled, "index": {i: n for n, i in enumerate(ids)}}
