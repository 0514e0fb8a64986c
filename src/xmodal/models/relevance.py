"""Relevance models for keyword annotation and keyword retrieval (CMRM and CRM).

Both treat the training images as hidden generators J (uniform prior). An image A and a word
sequence w are generated jointly by picking J, then words from a smoothed multinomial P(w|J)
and image tokens or regions from P(.|J)::

    P(w_1..w_m, A) = 1/|T| sum_J  prod_b P(w_b|J)  prod_a P(a|J)

- :class:`CMRM` (Jeon, Lavrenko & Manmatha 2003): A is a bag of discrete *blob* tokens;
  P(w|J) and P(b|J) are Jelinek-Mercer (``smoothing="jm"``, default) or Dirichlet smoothed
  relative frequencies over the joint bag of J's words and blobs; an optional posterior
  ``temperature`` (not in the paper) flattens P(J | blobs).
- :class:`CRM` (Lavrenko, Manmatha & Jeon 2003): A is a set of continuous region feature
  vectors; P(r|J) is a Gaussian kernel density with bandwidth ``beta`` over J's regions
  (Sigma = beta * I on standardised features) and P(w|J) = (mu p_w + N_wJ) / (mu + |w_J|).

Annotation ranks words by P(w|A) = sum_J P(J|A) P(w|J) (``word_scores``); retrieval ranks images
by the query likelihood log P(q|A) = log sum_J P(J|A) prod_{w in q} P(w|J) (``query_scores``).
All scoring is vectorized: a (test x train) log-likelihood matrix, then one matrix product for
annotation and one "log-matmul-exp" for retrieval over all queries at once.

:func:`blob_regions` turns Corel5K blob presence vectors into region sets for the CRM, so the
CRM can run (approximately) on data that only has blob ids: every blob becomes a point in a
continuous space learned from training blob-word co-occurrence (see the function).

Models save to a directory with ``config.json`` + ``arrays.npz`` (no pickle).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.special import logsumexp

from xmodal.errors import XmodalError
from xmodal.models.modeldir import read_config, read_model_dir, write_model_dir

_LOG_FLOOR = -700.0  # exp() of anything below this is 0 in float64


# --------------------------------------------------------------------------- region sets


@dataclass
class RegionSets:
    """Variable-size sets of region feature vectors, packed: image i owns
    ``features[offsets[i]:offsets[i + 1]]``."""

    features: np.ndarray  # (n_regions, dim) float
    offsets: np.ndarray  # (n_images + 1,) int64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def image_of_region(self) -> np.ndarray:
        return np.repeat(np.arange(len(self)), self.counts)

    def subset(self, index: Sequence[int] | np.ndarray) -> RegionSets:
        index = np.asarray(index, dtype=np.int64)
        parts = [self.features[self.offsets[i] : self.offsets[i + 1]] for i in index]
        counts = self.counts[index]
        feats = np.concatenate(parts) if parts else self.features[:0]
        return RegionSets(feats, np.r_[0, np.cumsum(counts)].astype(np.int64))

    @classmethod
    def from_list(cls, regions: Sequence[np.ndarray]) -> RegionSets:
        arrays = [np.atleast_2d(np.asarray(r, dtype=np.float64)) for r in regions]
        if not arrays:
            raise XmodalError("no images given")
        dims = {a.shape[1] for a in arrays}
        if len(dims) != 1:
            raise XmodalError(f"all regions must have the same dimension, got {sorted(dims)}")
        counts = [len(a) for a in arrays]
        return cls(np.concatenate(arrays), np.r_[0, np.cumsum(counts)].astype(np.int64))

    @classmethod
    def from_grid(cls, cells: np.ndarray) -> RegionSets:
        """From a (n_images, n_cells, dim) array: every image has the same number of regions."""
        cells = np.asarray(cells)
        if cells.ndim != 3:
            raise XmodalError(f"expected (images, cells, dim) regions, got shape {cells.shape}")
        n, c, _ = cells.shape
        return cls(cells.reshape(n * c, -1), np.arange(0, n * c + 1, c, dtype=np.int64))


def as_region_sets(regions) -> RegionSets:
    if isinstance(regions, RegionSets):
        return regions
    if isinstance(regions, np.ndarray) and regions.ndim == 3:
        return RegionSets.from_grid(regions)
    return RegionSets.from_list(list(regions))


def blob_embedding(
    blobs: np.ndarray, labels: np.ndarray, dim: int | None = 36, eps: float = 0.01
) -> np.ndarray:
    """A continuous feature vector per blob id, learned from training blob-word co-occurrence.

    Each blob is represented by the Hellinger map (square root) of its smoothed word distribution
    P(w | blob) over the training images that contain it, centred, reduced to ``dim``
    dimensions by SVD and scaled (median squared distance between blobs = ``dim``). Blobs that
    co-occur with the same words end up close, which gives the CRM kernel something to smooth
    over. Returns (n_blobs, dim).
    """
    b = np.asarray(blobs, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    co = b.T @ y + eps
    e = np.sqrt(co / co.sum(1, keepdims=True))
    e = e - e.mean(0)
    if dim is not None and dim < min(e.shape):
        u, s, _ = np.linalg.svd(e, full_matrices=False)
        e = u[:, :dim] * s[:dim]
    # scale so that the median squared distance between two blobs is the dimension: the CRM
    # kernel exp(-d / (beta * dim)) then has a bandwidth beta relative to typical distances
    sq = (e**2).sum(1)
    d = sq[:, None] + sq[None, :] - 2 * e @ e.T
    med = np.median(d[np.triu_indices(len(e), 1)]) if len(e) > 1 else 1.0
    return e * np.sqrt(e.shape[1] / max(med, 1e-12))


def blob_regions(blobs: np.ndarray, embedding: np.ndarray) -> RegionSets:
    """Region sets from blob presence (or count) vectors: one region per blob occurrence, whose
    feature vector is the blob's row of ``embedding``. An image without blobs gets the mean."""
    blobs = np.asarray(blobs)
    rows, cols = np.nonzero(blobs)
    reps = np.asarray(blobs[rows, cols], dtype=np.int64) if blobs.dtype != bool else 1
    rows = np.repeat(rows, reps)
    cols = np.repeat(cols, reps)
    counts = np.bincount(rows, minlength=len(blobs))
    feats = embedding[cols]
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        # give empty images one neutral region so that every image has a likelihood
        rows = np.r_[rows, empty]
        feats = np.r_[feats, np.repeat(embedding.mean(0, keepdims=True), len(empty), 0)]
        order = np.argsort(rows, kind="stable")
        feats = feats[order]
        counts = np.bincount(rows, minlength=len(blobs))
    return RegionSets(feats, np.r_[0, np.cumsum(counts)].astype(np.int64))


# --------------------------------------------------------------------------- queries


def parse_queries(queries, vocabulary: Sequence[str]) -> sparse.csr_matrix:
    """A (n_queries, n_words) count matrix from queries given as strings (words joined by
    spaces), sequences of words or word indices, or already as a matrix."""
    n_words = len(vocabulary)
    if sparse.issparse(queries) or isinstance(queries, np.ndarray) and queries.ndim == 2:
        m = sparse.csr_matrix(queries, dtype=np.float64)
        if m.shape[1] != n_words:
            raise XmodalError(f"query matrix has {m.shape[1]} words, the model {n_words}")
        return m
    index = {w: i for i, w in enumerate(vocabulary)}
    rows, cols = [], []
    for q, query in enumerate(queries):
        terms = query.split() if isinstance(query, str) else list(query)
        if not terms:
            raise XmodalError(f"query {q} is empty")
        for t in terms:
            if isinstance(t, (int, np.integer)):
                if not 0 <= t < n_words:
                    raise XmodalError(f"query word index {t} out of range")
                cols.append(int(t))
            elif t in index:
                cols.append(index[t])
            else:
                raise XmodalError(f"query word {t!r} is not in the model's vocabulary")
            rows.append(q)
    return sparse.csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=(len(queries) if rows else 0, n_words)
    )


def log_matmul_exp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[i, j] = log sum_t exp(a[i, t] + b[j, t])`` via one matrix product with row shifts;
    entries that underflow are recomputed exactly."""
    ma = a.max(1, keepdims=True)
    mb = b.max(1, keepdims=True)
    ma = np.where(np.isfinite(ma), ma, 0.0)
    mb = np.where(np.isfinite(mb), mb, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(a - ma) @ np.exp(b - mb).T) + ma + mb.T
    bad = np.argwhere(~np.isfinite(out))
    for i, j in bad:
        out[i, j] = logsumexp(a[i] + b[j])
    return out


# --------------------------------------------------------------------------- base model


class _RelevanceModel:
    """Shared scoring given a (test x train) log-likelihood of the image part."""

    kind = ""  # the saved-model type (xmodal.models.modeldir)
    SAVE_VERSION = 1
    vocabulary_: list[str]
    log_pw_: np.ndarray  # (n_train, n_words) log P(w|J)

    def _check_fitted(self) -> None:
        if not hasattr(self, "log_pw_"):
            raise XmodalError(f"{type(self).__name__} is not fitted; call fit() or load()")

    def _image_loglik(self, images) -> np.ndarray:  # (n_images, n_train)
        raise NotImplementedError

    def log_posterior(self, images) -> np.ndarray:
        """log P(J | image) for every test image (rows) and training image J (columns).

        With ``temperature`` t != 1 (not in the papers; default 1) the posterior is
        proportional to P(image | J)^t: t < 1 flattens an over-confident posterior, which
        changes both annotation and retrieval."""
        self._check_fitted()
        ll = self._image_loglik(images)
        t = getattr(self, "temperature", 1.0)
        if t != 1.0:
            ll = ll * t
        return ll - logsumexp(ll, axis=1, keepdims=True)

    def word_scores(self, images) -> np.ndarray:
        """(n_images, n_words) P(w | image), rows sum to 1: rank a row to annotate.

        With ``prior_power`` g > 0 (not in the papers; default 0) the scores are divided by
        the training frequency of each word to the power g, which trades a little precision on
        frequent words for recall on rare ones."""
        return self.word_scores_from_posterior(self.log_posterior(images))

    def word_scores_from_posterior(self, log_posterior: np.ndarray) -> np.ndarray:
        s = np.exp(log_posterior) @ np.exp(self.log_pw_)
        g = getattr(self, "prior_power", 0.0)
        if g:
            s = s / self.word_prior_**g
        return s / s.sum(1, keepdims=True)

    def annotate(self, images, n: int = 5) -> list[list[tuple[str, float]]]:
        """The top ``n`` (word, probability) pairs of every image."""
        s = self.word_scores(images)
        top = np.argsort(-s, axis=1, kind="stable")[:, :n]
        return [[(self.vocabulary_[j], float(s[i, j])) for j in row] for i, row in enumerate(top)]

    def query_scores(self, queries, images) -> np.ndarray:
        """(n_queries, n_images) log P(query | image); higher = rank first.

        ``queries``: strings of space-separated words, word lists, index tuples, or a
        (n_queries, n_words) count matrix."""
        return self.query_scores_from_posterior(queries, self.log_posterior(images))

    def query_scores_from_posterior(self, queries, log_posterior: np.ndarray) -> np.ndarray:
        """:meth:`query_scores` given :meth:`log_posterior` of the images (reuse it)."""
        self._check_fitted()
        q = parse_queries(queries, self.vocabulary_)
        q_ll = np.asarray(q @ self.log_pw_.T)  # (n_queries, n_train)
        return log_matmul_exp(q_ll, log_posterior)

    def rank_images(self, queries, images) -> np.ndarray:
        """(n_queries, n_images) image indices, best first, for each query."""
        return np.argsort(-self.query_scores(queries, images), axis=1, kind="stable")

    # -- persistence
    def get_params(self) -> dict:
        raise NotImplementedError

    def _arrays(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def save(self, path: str | os.PathLike, provenance: dict | None = None) -> Path:
        self._check_fitted()
        return write_model_dir(path, type=self.kind, version=self.SAVE_VERSION,
                               params=self.get_params(), arrays=self._arrays(),
                               state={"vocabulary": list(self.vocabulary_)},
                               provenance=provenance)


def _as_labels(labels, n_images: int) -> np.ndarray:
    y = labels.toarray() if sparse.issparse(labels) else np.asarray(labels)
    if y.ndim != 2 or len(y) != n_images:
        raise XmodalError(f"labels must be (n_images={n_images}, n_words), got {y.shape}")
    return y.astype(np.float64)


def _word_prior(y: np.ndarray) -> np.ndarray:
    """Smoothed fraction of training images annotated with each word."""
    return (y.astype(bool).sum(0) + 1.0) / (len(y) + 2.0)


def _vocabulary(vocabulary, n_words: int) -> list[str]:
    if vocabulary is None:
        return [f"w{i}" for i in range(n_words)]
    vocabulary = [str(v) for v in vocabulary]
    if len(vocabulary) != n_words:
        raise XmodalError(f"vocabulary has {len(vocabulary)} words, labels {n_words} columns")
    return vocabulary


# --------------------------------------------------------------------------- CMRM


class CMRM(_RelevanceModel):
    """Cross-media relevance model over discrete blob tokens (Jeon et al. 2003).

    ``smoothing="jm"``: P(x|J) = (1 - a) #(x, J)/|J| + a #(x, T)/|T| with a = ``alpha`` for
    words and ``beta`` for blobs, where |J| counts J's words and blobs together (as in the paper).
    ``smoothing="dirichlet"``: P(x|J) = (#(x, J) + m p_x) / (|J| + m) with m = ``alpha`` for
    words and ``beta`` for blobs.

    ``temperature`` t (not in the paper; default 1 = Jeon et al.) flattens (t < 1) or sharpens
    (t > 1) the posterior over training images: P(J | b_1..b_m) is proportional to
    (prod_i P(b_i|J))^t. With blob *presence* vectors (Corel5K as distributed) the product over
    ~8 correlated blobs makes the posterior over-confident; t < 1 spreads it. It changes both
    annotation and retrieval. ``prior_power`` divides the word scores by the word's training
    frequency to that power (annotation only).
    """

    kind = "cmrm"

    def __init__(
        self, alpha: float = 0.1, beta: float = 0.9, smoothing: str = "jm",
        prior_power: float = 0.0, temperature: float = 1.0,
    ):
        self.alpha = alpha
        self.beta = beta
        self.smoothing = smoothing
        self.prior_power = prior_power
        self.temperature = temperature

    def fit(self, blobs, labels, vocabulary: Sequence[str] | None = None) -> CMRM:
        b = np.asarray(blobs.toarray() if sparse.issparse(blobs) else blobs, dtype=np.float64)
        if b.ndim != 2:
            raise XmodalError(f"blobs must be (n_images, n_blobs), got {b.shape}")
        y = _as_labels(labels, len(b))
        if self.smoothing not in ("jm", "dirichlet"):
            raise XmodalError(f"smoothing must be 'jm' or 'dirichlet', not {self.smoothing!r}")
        if not self.temperature > 0:
            raise XmodalError(f"temperature must be > 0, not {self.temperature!r}")
        size = (b.sum(1) + y.sum(1))[:, None]
        size = np.maximum(size, 1.0)
        pb_bg = b.sum(0) / max(b.sum(), 1.0)
        pw_bg = y.sum(0) / max(y.sum(), 1.0)
        if self.smoothing == "jm":
            pb = (1 - self.beta) * b / size + self.beta * pb_bg
            pw = (1 - self.alpha) * y / size + self.alpha * pw_bg
        else:
            pb = (b + self.beta * pb_bg) / (size + self.beta)
            pw = (y + self.alpha * pw_bg) / (size + self.alpha)
        with np.errstate(divide="ignore"):
            self.log_pb_ = np.maximum(np.log(pb), _LOG_FLOOR)
            self.log_pw_ = np.maximum(np.log(pw), _LOG_FLOOR)
        self.word_prior_ = _word_prior(y)
        self.vocabulary_ = _vocabulary(vocabulary, y.shape[1])
        return self

    def _image_loglik(self, blobs) -> np.ndarray:
        b = np.asarray(blobs.toarray() if sparse.issparse(blobs) else blobs, dtype=np.float64)
        if b.ndim != 2 or b.shape[1] != self.log_pb_.shape[1]:
            raise XmodalError(
                f"expected blobs of shape (n, {self.log_pb_.shape[1]}), got {b.shape}"
            )
        return b @ self.log_pb_.T

    def get_params(self) -> dict:
        return {"alpha": self.alpha, "beta": self.beta, "smoothing": self.smoothing,
                "prior_power": self.prior_power, "temperature": self.temperature}

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"log_pb": self.log_pb_, "log_pw": self.log_pw_, "word_prior": self.word_prior_}

    @classmethod
    def load(cls, path: str | os.PathLike) -> CMRM:
        saved = read_model_dir(path, cls.kind, cls.SAVE_VERSION)
        m, arrays = cls(**saved.params), saved.arrays
        m.log_pb_ = arrays["log_pb"].astype(np.float64)
        m.log_pw_ = arrays["log_pw"].astype(np.float64)
        m.word_prior_ = arrays["word_prior"].astype(np.float64)
        m.vocabulary_ = saved.state["vocabulary"]
        return m


# --------------------------------------------------------------------------- CRM


class CRM(_RelevanceModel):
    """Continuous-space relevance model (Lavrenko, Manmatha & Jeon 2003).

    ``fit(regions, labels)``: ``regions`` is a :class:`RegionSets`, a list of (n_i, dim) arrays
    or a (n_images, n_cells, dim) array; ``labels`` a (n_images, n_words) 0/1 or count matrix.
    Features are standardised with the training mean and standard deviation (``standardize``),
    then P(r|J) = 1/n_J sum_i exp(-||r - g_i||^2 / (beta * dim)) up to a constant (dividing by
    the dimension makes ``beta`` comparable across feature sets). ``mu`` is the Dirichlet prior
    mass of the word model. ``temperature`` and ``prior_power`` (not in the paper) are the
    posterior flattening and word-prior normalisation of :class:`CMRM`. ``chunk`` bounds memory:
    test regions handled at once.
    """

    kind = "crm"

    def __init__(
        self,
        beta: float = 1.0,
        mu: float = 1.0,
        standardize: bool = True,
        prior_power: float = 0.0,
        chunk: int = 2048,
        temperature: float = 1.0,
    ):
        self.beta = beta
        self.mu = mu
        self.standardize = standardize
        self.prior_power = prior_power
        self.chunk = chunk
        self.temperature = temperature
        # Corel5K only: the blob embedding its region vectors were made with (save_corel_crm)
        self.blob_embedding_: np.ndarray | None = None

    def fit(self, regions, labels, vocabulary: Sequence[str] | None = None) -> CRM:
        r = as_region_sets(regions)
        y = _as_labels(labels, len(r))
        if np.any(r.counts == 0):
            raise XmodalError("every training image needs at least one region")
        if not self.temperature > 0:
            raise XmodalError(f"temperature must be > 0, not {self.temperature!r}")
        feats = np.asarray(r.features, dtype=np.float64)
        if self.standardize:
            self.mean_ = feats.mean(0)
            std = feats.std(0)
            self.scale_ = np.where(std > 1e-12, std, 1.0)
        else:
            self.mean_ = np.zeros(feats.shape[1])
            self.scale_ = np.ones(feats.shape[1])
        self.regions_ = ((feats - self.mean_) / self.scale_).astype(np.float32)
        self.offsets_ = r.offsets.copy()
        self._set_words(y)
        self.vocabulary_ = _vocabulary(vocabulary, y.shape[1])
        return self

    def _set_words(self, y: np.ndarray) -> None:
        self.word_counts_ = y.astype(np.float32)
        self.word_prior_ = _word_prior(y)
        p = y.sum(0) / max(y.sum(), 1.0)
        pw = (self.mu * p + y) / (self.mu + y.sum(1, keepdims=True))
        with np.errstate(divide="ignore"):
            self.log_pw_ = np.maximum(np.log(pw), _LOG_FLOOR)

    def set_params(self, **params) -> CRM:
        """Change ``beta`` / ``mu`` of a fitted model without refitting the region store."""
        for k, v in params.items():
            if k not in ("beta", "mu", "standardize", "prior_power", "chunk", "temperature"):
                raise XmodalError(f"unknown CRM parameter {k!r}")
            setattr(self, k, v)
        if "mu" in params and hasattr(self, "word_counts_"):
            self._set_words(self.word_counts_.astype(np.float64))
        return self

    def _region_image_loglik(self, feats: np.ndarray) -> np.ndarray:
        """(n_regions, n_train) log P(r | J), up to a constant shared by all J."""
        g = self.regions_
        n_train = len(self.offsets_) - 1
        counts = np.diff(self.offsets_)
        owner = np.repeat(np.arange(n_train), counts)
        pool = sparse.csr_matrix(
            (1.0 / counts[owner], (np.arange(len(g)), owner)), shape=(len(g), n_train)
        )
        g_sq = (g.astype(np.float64) ** 2).sum(1)
        scale = 1.0 / (self.beta * g.shape[1])
        out = np.empty((len(feats), n_train))
        # test regions per block: ``chunk``, capped so a block's kernel matrix stays ~160 MB
        step = max(1, min(self.chunk, 20_000_000 // max(len(g), 1)))
        for a in range(0, len(feats), step):
            x = feats[a : a + step]
            d = (x**2).sum(1)[:, None] + g_sq[None, :] - 2.0 * (x @ g.T).astype(np.float64)
            logk = np.maximum(d, 0.0)
            logk *= -scale
            shift = logk.max(1, keepdims=True)
            dens = np.asarray((pool.T @ np.exp(logk - shift).T).T)
            with np.errstate(divide="ignore"):
                out[a : a + len(x)] = np.maximum(np.log(dens), _LOG_FLOOR) + shift
        return out

    def _image_loglik(self, regions) -> np.ndarray:
        r = as_region_sets(regions)
        if r.features.shape[1] != self.regions_.shape[1]:
            raise XmodalError(
                f"regions have dimension {r.features.shape[1]}, the model {self.regions_.shape[1]}"
            )
        feats = ((np.asarray(r.features, np.float64) - self.mean_) / self.scale_).astype(
            np.float32
        )
        # identical regions (e.g. the same blob id in many images) are scored once
        uniq, inverse = np.unique(feats, axis=0, return_inverse=True)
        if len(uniq) < 0.8 * len(feats):
            per_region = self._region_image_loglik(uniq)[inverse.ravel()]
        else:
            per_region = self._region_image_loglik(feats)
        summed = np.zeros((len(r), per_region.shape[1]))
        np.add.at(summed, r.image_of_region, per_region)
        return summed

    def get_params(self) -> dict:
        return {"beta": self.beta, "mu": self.mu, "standardize": self.standardize,
                "prior_power": self.prior_power, "temperature": self.temperature}

    def _arrays(self) -> dict[str, np.ndarray]:
        # float16 keeps saved models small; scoring runs in float32/float64
        return {
            "regions": self.regions_.astype(np.float16),
            "offsets": self.offsets_,
            "mean": self.mean_,
            "scale": self.scale_,
            "word_counts": sparse.csr_matrix(self.word_counts_).toarray().astype(np.uint8),
        } | ({} if self.blob_embedding_ is None else {"blob_embedding": self.blob_embedding_})

    @classmethod
    def load(cls, path: str | os.PathLike) -> CRM:
        saved = read_model_dir(path, cls.kind, cls.SAVE_VERSION)
        m, arrays = cls(**saved.params), saved.arrays
        m.regions_ = arrays["regions"].astype(np.float32)
        m.offsets_ = arrays["offsets"].astype(np.int64)
        m.mean_ = arrays["mean"].astype(np.float64)
        m.scale_ = arrays["scale"].astype(np.float64)
        m._set_words(arrays["word_counts"].astype(np.float64))
        m.vocabulary_ = saved.state["vocabulary"]
        if "blob_embedding" in arrays:
            m.blob_embedding_ = arrays["blob_embedding"].astype(np.float64)
        return m


def load_model(path: str | os.PathLike) -> CMRM | CRM:
    """Load a saved CMRM or CRM directory."""
    kind = read_config(path, "relevance").get("type")
    if kind == "cmrm":
        return CMRM.load(path)
    if kind == "crm":
        return CRM.load(path)
    raise XmodalError(f"{path}: not a relevance model type: {kind!r}")
