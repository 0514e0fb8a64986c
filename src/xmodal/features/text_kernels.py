"""Text kernels of Hodosh et al. (2013, §3.4-3.5): BoW, TagRank, trigram, trigram + lexical similarity.

A **doc** is one training/test item: a list of captions, each a list of preprocessed tokens
(``xmodal.features.captions.preprocess``). Tokens may also be ``(lemma, POS)`` pairs (from
``preprocess_tagged``); the kernels use only the lemma, the alignment similarity uses the POS.

Every kernel is a scikit-learn style object::

    k = make_text_kernel("tri5sem").fit(train_docs)    # statistics from the training items
    K = k.kernel(docs_a, docs_b)                       # dense float64, len(docs_a) x len(docs_b)

``max_captions`` truncates every doc to its first captions (BoW1/Tri1 use one "arbitrarily chosen"
caption: the first). Names understood by :func:`make_text_kernel`:

==================  =======================================================================
``bow1``            cosine of word counts, first caption only
``bow5``            cosine of word counts, the captions of a doc merged into one document
``bow{1,5}-idf``    counts reweighted by IDF ``lambda_w = log((N+1)/(df_w+1))``
``bow{1,5}-sqrtidf`` counts reweighted by ``sqrt(lambda_w)`` (the paper's best BoW5)
``tagrank``         Hwang & Grauman absolute/relative tag-rank chi^2 kernels, averaged over the
                    caption pairs of two docs (``tagrank-abs`` / ``tagrank-rel``: one of the two)
``tri1``/``tri5``   trigram (ordered subsequences k <= 3, gaps free, lambda = 0.5), the kernel
                    responses summed over the cross product of captions, then normalised
``tri5-idf``        sequence weight = geometric mean of the word IDFs (``-sqrtidf``: of sqrt IDF)
``tri5sem``         ``tri5-sqrtidf`` + max(alignment, mean(in-corpus PMI, GloVe)) word similarity
``tri5-align`` ...  see ``TRI_SIMILARITIES`` for every similarity combination
==================  =======================================================================
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import scipy.sparse as sp

from xmodal.errors import XmodalError

# Bump when a kernel's values change, so that callers' disk caches of kernel matrices miss.
KERNELS_VERSION = "1"

Doc = Sequence[Sequence[Any]]  # captions -> tokens (str or (lemma, pos))


# ----------------------------------------------------------------------------- helpers
def _lemma(tok: Any) -> str:
    return tok if isinstance(tok, str) else tok[0]


def _clean_docs(docs: Sequence[Doc], max_captions: int | None) -> list[list[list[str]]]:
    if isinstance(docs, (str, bytes)):
        raise XmodalError("docs must be a list of captions (token lists), not a string")
    out = []
    for d in docs:
        if isinstance(d, str) or (len(d) and isinstance(d[0], str)):
            raise XmodalError(
                "a doc is a list of captions, each a list of tokens; wrap a single caption as [tokens]"
            )
        caps = list(d)[:max_captions] if max_captions else list(d)
        out.append([[_lemma(t) for t in c] for c in caps])
    return out


def idf_weights(docs: Sequence[Doc]) -> dict[str, float]:
    """``lambda_w = log((N + 1) / (df_w + 1))`` with ``df_w`` the number of docs whose captions
    contain ``w`` (the paper's numerator is lost in the extraction; this keeps weights >= 0).
    Words never seen in training get ``log(N + 1)``: see :func:`idf_of`."""
    clean = _clean_docs(docs, None)
    n = len(clean)
    df = Counter(w for d in clean for w in {t for c in d for t in c})
    return {w: math.log((n + 1) / (c + 1)) for w, c in df.items()} | {"<unseen>": math.log(n + 1)}


def idf_of(weights: dict[str, float], word: str) -> float:
    return weights.get(word, weights["<unseen>"])


class _Vocab:
    """A growing word -> id map shared by the two sides of one kernel call."""

    def __init__(self, words: Sequence[str] = ()):
        self.ids: dict[str, int] = {}
        for w in words:
            self.id(w)

    def id(self, w: str) -> int:
        i = self.ids.get(w)
        if i is None:
            i = self.ids[w] = len(self.ids)
        return i

    def __len__(self) -> int:
        return len(self.ids)

    def words(self) -> list[str]:
        return list(self.ids)


def _normalize(K: np.ndarray, da: np.ndarray, db: np.ndarray) -> np.ndarray:
    den = np.sqrt(np.outer(da, db))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, K / np.where(den > 0, den, 1.0), 0.0)
    return out


class TextKernel:
    """Base class: ``fit(train_docs) -> self``; ``kernel(docs_a, docs_b) -> ndarray``."""

    name = "text"

    def fit(self, train_docs: Sequence[Doc]) -> TextKernel:
        return self

    def kernel(self, docs_a: Sequence[Doc], docs_b: Sequence[Doc] | None = None) -> np.ndarray:
        raise NotImplementedError

    def gram(self, docs: Sequence[Doc]) -> np.ndarray:
        return self.kernel(docs, None)

    def _check_fitted(self, attr: str) -> None:
        if not hasattr(self, attr):
            raise XmodalError(f"{type(self).__name__} is not fitted: call .fit(train_docs) first")


# ----------------------------------------------------------------------------- BoW
class BowKernel(TextKernel):
    """Cosine of (optionally IDF / sqrt-IDF reweighted) word-count vectors; captions merged."""

    def __init__(self, idf: str | None = None, max_captions: int | None = None):
        if idf not in (None, "idf", "sqrt"):
            raise XmodalError(f"idf must be None, 'idf' or 'sqrt', got {idf!r}")
        self.idf = idf
        self.max_captions = max_captions

    def fit(self, train_docs: Sequence[Doc]) -> BowKernel:
        self.idf_ = idf_weights(
            [d[: self.max_captions] if self.max_captions else d for d in train_docs]
        )
        return self

    def _weight(self, w: str) -> float:
        if self.idf is None:
            return 1.0
        lam = idf_of(self.idf_, w)
        return lam if self.idf == "idf" else math.sqrt(lam)

    def vectors(self, docs: Sequence[Doc], vocab: _Vocab) -> sp.csr_matrix:
        clean = _clean_docs(docs, self.max_captions)
        rows, cols, vals = [], [], []
        for i, d in enumerate(clean):
            for w, c in Counter(t for cap in d for t in cap).items():
                rows.append(i)
                cols.append(vocab.id(w))
                vals.append(c * self._weight(w))
        return sp.csr_matrix((vals, (rows, cols)), shape=(len(clean), len(vocab) or 1))

    def kernel(self, docs_a, docs_b=None) -> np.ndarray:
        if self.idf is not None:
            self._check_fitted("idf_")
        vocab = _Vocab()
        A = self.vectors(docs_a, vocab)
        B = A if docs_b is None else self.vectors(docs_b, vocab)
        A.resize((A.shape[0], len(vocab) or 1))
        B.resize((B.shape[0], len(vocab) or 1))
        K = np.asarray((A @ B.T).todense(), dtype=np.float64)
        da = np.asarray(A.multiply(A).sum(1)).ravel()
        db = np.asarray(B.multiply(B).sum(1)).ravel()
        return _normalize(K, da, db)


# ----------------------------------------------------------------------------- TagRank
class TagRankKernel(TextKernel):
    """Hwang & Grauman's tag-rank kernel over caption word positions (paper §3.4.2).

    Per sentence, over the words it contains (1-based position ``p``, averaged if repeated):
    absolute rank ``a(w) = 1 / log2(1 + p)``; relative rank
    ``r(w) = 1 - sum_{k <= p} n_wk / sum_k n_wk`` (the share of the word's training occurrences
    after position ``p``; ``0.5`` for a word never seen in training). The kernel is
    ``(exp(-chi2(r, r')/Omega_r) + exp(-chi2(a, a')/Omega_a)) / 2`` with
    ``chi2(x, y) = sum_k (x_k - y_k)^2 / (x_k + y_k)`` and ``Omega`` the mean chi^2 distance between
    training sentences. For docs with several captions the sentence-pair values are averaged.
    """

    def __init__(self, max_captions: int | None = None, ranks: str = "both", seed: int = 0):
        if ranks not in ("both", "absolute", "relative"):
            raise XmodalError(f"ranks must be 'both', 'absolute' or 'relative', got {ranks!r}")
        self.max_captions = max_captions
        self.ranks = ranks
        self.seed = seed

    @staticmethod
    def _positions(sent: Sequence[str]) -> dict[str, float]:
        pos: dict[str, list[int]] = {}
        for k, w in enumerate(sent, start=1):
            pos.setdefault(w, []).append(k)
        return {w: sum(v) / len(v) for w, v in pos.items()}

    def fit(self, train_docs: Sequence[Doc]) -> TagRankKernel:
        sents = [c for d in _clean_docs(train_docs, self.max_captions) for c in d]
        hist: dict[str, Counter] = {}
        for s in sents:
            for k, w in enumerate(s, start=1):
                hist.setdefault(w, Counter())[k] += 1
        self.cdf_ = {}
        for w, h in hist.items():
            ks = np.array(sorted(h))
            cum = np.cumsum([h[k] for k in ks]) / sum(h.values())
            self.cdf_[w] = (ks, cum)
        self.omega_r_, self.omega_a_ = 1.0, 1.0
        rng = np.random.default_rng(self.seed)
        if len(sents) > 1:
            m = min(len(sents), 2000)
            pick = rng.choice(len(sents), size=m, replace=False)
            sample = [sents[i] for i in pick]
            (ra, aa), _ = self._sentence_vectors(sample)
            Dr = self._chi2(ra, ra)
            Da = self._chi2(aa, aa)
            iu = np.triu_indices(m, 1)
            self.omega_r_ = float(Dr[iu].mean()) or 1.0
            self.omega_a_ = float(Da[iu].mean()) or 1.0
        return self

    def _relative(self, w: str, p: float) -> float:
        entry = self.cdf_.get(w)
        if entry is None:
            return 0.5
        ks, cum = entry
        j = np.searchsorted(ks, p, side="right")
        return 1.0 - (float(cum[j - 1]) if j > 0 else 0.0)

    def _sentence_vectors(self, sents: Sequence[Sequence[str]], vocab: _Vocab | None = None):
        vocab = vocab if vocab is not None else _Vocab()
        rows, cols, rv, av = [], [], [], []
        for i, s in enumerate(sents):
            for w, p in self._positions(s).items():
                rows.append(i)
                cols.append(vocab.id(w))
                rv.append(self._relative(w, p))
                av.append(1.0 / math.log2(1.0 + p))
        shape = (len(sents), max(len(vocab), 1))
        r = sp.csc_matrix((rv, (rows, cols)), shape=shape)
        a = sp.csc_matrix((av, (rows, cols)), shape=shape)
        return (r, a), vocab

    @staticmethod
    def _chi2(X: sp.csc_matrix, Y: sp.csc_matrix) -> np.ndarray:
        """Dense chi^2 distances between the rows of X and Y (same column space, >= 0 entries)."""
        X = X.tocsc()
        Y = Y.tocsc()
        ncol = max(X.shape[1], Y.shape[1])
        X.resize((X.shape[0], ncol))
        Y.resize((Y.shape[0], ncol))
        sx = np.asarray(X.sum(1)).ravel()
        sy = np.asarray(Y.sum(1)).ravel()
        D = sx[:, None] + sy[None, :]
        for j in range(ncol):
            xa, xb = X.indptr[j], X.indptr[j + 1]
            ya, yb = Y.indptr[j], Y.indptr[j + 1]
            if xa == xb or ya == yb:
                continue
            xi, xv = X.indices[xa:xb], X.data[xa:xb]
            yi, yv = Y.indices[ya:yb], Y.data[ya:yb]
            num = 4.0 * np.outer(xv, yv)
            den = xv[:, None] + yv[None, :]
            D[np.ix_(xi, yi)] -= np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        return np.maximum(D, 0.0)

    def sentence_kernel(self, sents_a, sents_b) -> np.ndarray:
        self._check_fitted("cdf_")
        vocab = _Vocab()
        (ra, aa), _ = self._sentence_vectors(sents_a, vocab)
        (rb, ab), _ = self._sentence_vectors(sents_b, vocab)
        if self.ranks == "relative":
            return np.exp(-self._chi2(ra, rb) / self.omega_r_)
        Ka = np.exp(-self._chi2(aa, ab) / self.omega_a_)
        if self.ranks == "absolute":
            return Ka
        return 0.5 * (np.exp(-self._chi2(ra, rb) / self.omega_r_) + Ka)

    def kernel(self, docs_a, docs_b=None, chunk: int = 2000) -> np.ndarray:
        A = _clean_docs(docs_a, self.max_captions)
        B = A if docs_b is None else _clean_docs(docs_b, self.max_captions)
        sb = [c for d in B for c in d]
        Mb = _membership(B)
        out = np.zeros((len(A), len(B)))
        start = 0
        while start < len(A):
            stop, n_sent = start, 0
            while stop < len(A) and (n_sent == 0 or n_sent + len(A[stop]) <= chunk):
                n_sent += len(A[stop])
                stop += 1
            block = A[start:stop]
            sa = [c for d in block for c in d]
            Ks = self.sentence_kernel(sa, sb) if sa and sb else np.zeros((len(sa), len(sb)))
            Ma = _membership(block)
            out[start:stop] = np.asarray(Ma @ (Mb @ Ks.T).T)
            start = stop
        return out


def _membership(docs: list[list[list[str]]]) -> sp.csr_matrix:
    """docs x sentences matrix with ``1/n_captions`` entries (row-averaging over captions)."""
    rows = [i for i, d in enumerate(docs) for _ in d]
    vals = [1.0 / len(d) for d in docs for _ in d]
    n = len(rows)
    return sp.csr_matrix((vals, (rows, np.arange(n))), shape=(len(docs), n))


# ----------------------------------------------------------------------------- trigram
_COMBOS: dict[tuple[int, int], np.ndarray] = {}


def _combos(n: int, l: int) -> np.ndarray:
    key = (n, l)
    if key not in _COMBOS:
        _COMBOS[key] = np.array(list(combinations(range(n), l)), dtype=np.int64).reshape(-1, l)
    return _COMBOS[key]


def subsequence_features(
    docs: list[list[list[int]]], k: int
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """All ordered subsequences (gaps allowed) of length ``l <= k`` of every caption.

    Returns ``{l: (doc_rows, words)}`` with ``words`` of shape (n_matches, l): one row per
    embedding ``i_1 < ... < i_l``, so summing equal rows gives the match counts ``m_{s,w}``.
    """
    by_len: dict[int, list[tuple[int, list[int]]]] = {}
    for i, d in enumerate(docs):
        for cap in d:
            if cap:
                by_len.setdefault(len(cap), []).append((i, cap))
    out: dict[int, tuple[list, list]] = {l: ([], []) for l in range(1, k + 1)}
    for n, items in by_len.items():
        rows = np.array([i for i, _ in items], dtype=np.int64)
        toks = np.array([c for _, c in items], dtype=np.int64)
        for l in range(1, min(k, n) + 1):
            cmb = _combos(n, l)
            words = toks[:, cmb].reshape(-1, l)
            out[l][0].append(np.repeat(rows, len(cmb)))
            out[l][1].append(words)
    return {
        l: (
            np.concatenate(r) if r else np.zeros(0, np.int64),
            np.concatenate(w) if w else np.zeros((0, l), np.int64),
        )
        for l, (r, w) in out.items()
    }


def _encode(words: np.ndarray, base: int) -> np.ndarray:
    code = np.zeros(len(words), dtype=np.int64)
    for j in range(words.shape[1]):
        code = code * base + words[:, j]
    return code


def _decode(code: np.ndarray, base: int, l: int) -> np.ndarray:
    words = np.empty((len(code), l), dtype=np.int64)
    c = code.copy()
    for j in range(l - 1, -1, -1):
        words[:, j] = c % base
        c //= base
    return words


def _coalesce(rows: np.ndarray, codes: np.ndarray, vals: np.ndarray):
    """Sum values of equal (row, code) pairs."""
    if len(rows) == 0:
        return rows, codes, vals
    span = int(codes.max()) + 1
    if (int(rows.max()) + 1) * span < 2**62:  # one int64 key: much faster than lexsort
        order = np.argsort(rows * span + codes)
    else:
        order = np.lexsort((codes, rows))
    rows, codes, vals = rows[order], codes[order], vals[order]
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1]) | (codes[1:] != codes[:-1])
    starts = np.flatnonzero(new)
    return rows[starts], codes[starts], np.add.reduceat(vals, starts)


def _expand(words: np.ndarray, vals: np.ndarray, rows: np.ndarray, pos: int, S: sp.csr_matrix):
    """Replace the word at ``pos`` by each of its similarity neighbours (value times similarity)."""
    w = words[:, pos]
    deg = S.indptr[w + 1] - S.indptr[w]
    idx = np.repeat(np.arange(len(words)), deg)
    starts = np.repeat(S.indptr[w], deg)
    offs = np.arange(len(idx)) - np.repeat(np.cumsum(deg) - deg, deg) + starts
    new = words[idx].copy()
    new[:, pos] = S.indices[offs]
    return new, vals[idx] * S.data[offs], rows[idx]


class TrigramKernel(TextKernel):
    """Truncated string kernel over ordered subsequences of length <= ``k`` (paper §3.4.3, §3.5).

    ``K(s, s') = sum_{w, w'} sigma(w, w') m_{s,w} m_{s',w'} lam^{2 l(w)} sqrt(lam_w lam_w')``:
    ``m_{s,w}`` counts the embeddings of ``w`` in ``s`` (gaps not penalised), ``lam = 0.5``,
    ``lam_w`` is the sequence IDF weight (geometric mean of its words' IDF, or of sqrt-IDF, or 1),
    and ``sigma(w, w') = prod_i kappa(w_i, w'_i)`` with ``kappa`` a sparse word-similarity matrix
    (identity when ``similarity`` is None: exact matches, the plain Tri kernel). Multiple captions
    are summed over the cross product before the cosine normalisation
    ``K(A, B) / sqrt(K(A, A) K(B, B))``.

    ``similarity`` is a :class:`xmodal.features.lexical_similarity.WordSimilarity` or a spec
    string (``"align"``, ``"dic"``, ``"glove"``, ``"dist"`` = mean(dic, glove), ``"align+dist"``,
    ``"lin"``, ...) built from the training docs in :meth:`fit`.
    """

    def __init__(
        self,
        k: int = 3,
        lam: float = 0.5,
        idf: str | None = None,
        similarity: Any = None,
        max_captions: int | None = None,
        normalize: bool = True,
        max_neighbors: int | None = 10,
        chunk_nnz: int = 4_000_000,
    ):
        if idf not in (None, "idf", "sqrt"):
            raise XmodalError(f"idf must be None, 'idf' or 'sqrt', got {idf!r}")
        if k < 1:
            raise XmodalError("k must be >= 1")
        self.k = k
        self.lam = lam
        self.idf = idf
        self.similarity = similarity
        self.max_captions = max_captions
        self.normalize = normalize
        self.max_neighbors = max_neighbors
        self.chunk_nnz = chunk_nnz

    def fit(self, train_docs: Sequence[Doc]) -> TrigramKernel:
        docs = [d[: self.max_captions] if self.max_captions else d for d in train_docs]
        self.idf_ = idf_weights(docs)
        sim = self.similarity
        if isinstance(sim, str):
            from xmodal.features.lexical_similarity import build_similarity

            sim = build_similarity(sim, train_docs, max_neighbors=self.max_neighbors)
        self.similarity_ = sim
        self._diag_cache: dict[str, np.ndarray] = {}  # self-kernels of recently seen doc sets
        return self

    # -- features
    def _word_weights(self, vocab: _Vocab) -> np.ndarray:
        if self.idf is None:
            return np.ones(len(vocab))
        lam = np.array([idf_of(self.idf_, w) for w in vocab.words()])
        return lam if self.idf == "idf" else np.sqrt(lam)

    def _features(self, docs: list[list[list[str]]], vocab: _Vocab):
        ids = [[[vocab.id(t) for t in c] for c in d] for d in docs]
        return subsequence_features(ids, self.k)

    def _side(self, feats, base: int, weights: np.ndarray, l: int):
        """Coalesced (rows, words, vals) of the length-``l`` features of one side."""
        rows, words = feats[l]
        # side value: lam^l * sqrt(seq weight), seq weight = geometric mean of the word weights
        if self.idf is None:
            vals = np.full(len(words), self.lam**l)
        else:
            logw = np.log(np.maximum(weights, 1e-300))
            vals = self.lam**l * np.exp(logw[words].sum(1) / (2 * l))
        rows, codes, vals = _coalesce(rows, _encode(words, base), vals)
        return rows, _decode(codes, base, l), vals

    def _sim_matrix(self, vocab: _Vocab) -> sp.csr_matrix | None:
        if self.similarity_ is None:
            return None
        return self.similarity_.restrict(vocab.words())

    def kernel(self, docs_a, docs_b=None) -> np.ndarray:
        self._check_fitted("idf_")
        A = _clean_docs(docs_a, self.max_captions)
        B = A if docs_b is None else _clean_docs(docs_b, self.max_captions)
        vocab = _Vocab()
        fa = self._features(A, vocab)
        fb = fa if docs_b is None else self._features(B, vocab)
        base = max(len(vocab), 1)
        if base**self.k >= 2**62:
            raise XmodalError("vocabulary too large for the trigram feature codes")
        weights = self._word_weights(vocab)
        S = self._sim_matrix(vocab)
        K = np.zeros((len(A), len(B)))
        key_a = _digest(A)
        key_b = key_a if docs_b is None else _digest(B)
        cache = self.__dict__.setdefault("_diag_cache", {})
        need_a = self.normalize and docs_b is not None and key_a not in cache
        need_b = self.normalize and docs_b is not None and key_b not in cache
        da = np.zeros(len(A))
        db = np.zeros(len(B))
        for l in range(1, self.k + 1):
            sa = self._side(fa, base, weights, l)
            sb = sa if docs_b is None else self._side(fb, base, weights, l)
            if docs_b is not None and S is not None and len(B) > len(A):
                # the heavy expansion costs ~deg^2 per feature: give it to the smaller side
                # (kappa is symmetric, so K(A, B) = K(B, A)^T)
                K += self._cross(sb, sa, len(B), len(A), base, l, S).T
            else:
                K += self._cross(sa, sb, len(A), len(B), base, l, S)
            if need_a:
                da += self._self(sa, len(A), base, l, S)
            if need_b:
                db += self._self(sb, len(B), base, l, S)
        if docs_b is None:
            cache[key_a] = np.diag(K).copy()
        else:
            if need_a:
                cache[key_a] = da
            if need_b:
                cache[key_b] = db
        if len(cache) > 8:  # keep the most recent few
            for old in list(cache)[: len(cache) - 8]:
                del cache[old]
        if not self.normalize:
            return K
        return _normalize(K, cache[key_a], cache[key_b])

    # -- the split expansion: side A expanded at its last position(s), side B at the first ones
    def _light(self, side, l, S):
        rows, words, vals = side
        n_light = l // 2
        for p in range(l - n_light, l) if S is not None else ():
            words, vals, rows = _expand(words, vals, rows, p, S)
        return rows, words, vals

    def _heavy(self, side, l, S, ends: np.ndarray | None = None, base: int = 0, by_row=False):
        """Expand the first ``ceil(l/2)`` positions; with ``ends`` (sorted codes of the
        (first, last) word pairs present on the other side), prune after the first expansion."""
        rows, words, vals = side
        n_heavy = l - l // 2
        for p in range(n_heavy) if S is not None else ():
            words, vals, rows = _expand(words, vals, rows, p, S)
            if p == 0 and n_heavy > 1 and ends is not None and len(words):
                key = words[:, 0] * base + words[:, -1]
                if by_row:  # self-kernels: only pairs of the same row can match
                    key = key + rows * (base * base)
                keep = _isin_sorted(key, ends)
                words, vals, rows = words[keep], vals[keep], rows[keep]
        return rows, words, vals

    def _cross(self, sa, sb, na, nb, base, l, S) -> np.ndarray:
        ra, wa, va = self._light(sa, l, S)
        ra, ca, va = _coalesce(ra, _encode(wa, base), va)
        uniq = _unique(ca)
        ends = _unique(wa[:, 0] * base + wa[:, -1]) if l >= 3 and S is not None else None
        Xa = sp.csr_matrix((va, (ra, _locate(uniq, ca)[0])), shape=(na, len(uniq)))
        out = np.zeros((na, nb))
        for lo, hi in self._row_chunks(sb, l, S):
            rb, wb, vb = self._heavy(_rows_slice(sb, lo, hi), l, S, ends, base)
            cb = _encode(wb, base)
            j, keep = _locate(uniq, cb)
            Yb = sp.csr_matrix(
                (vb[keep], (rb[keep] - lo, j[keep])), shape=(hi - lo, max(len(uniq), 1))
            )
            if len(uniq):
                out[:, lo:hi] = (Xa @ Yb.T).toarray()
        return out

    def _self(self, side, n, base, l, S) -> np.ndarray:
        out = np.zeros(n)
        for lo, hi in self._row_chunks(side, l, S):
            part = _rows_slice(side, lo, hi)
            ra, wa, va = self._light(part, l, S)
            ends = None
            if l >= 3 and S is not None:
                ends = _unique(wa[:, 0] * base + wa[:, -1] + ra * (base * base))
            rb, wb, vb = self._heavy(part, l, S, ends, base, by_row=True)
            ra, ca, va = _coalesce(ra, _encode(wa, base), va)
            # row-wise dot products of the two expansions over the light side's code space
            uniq = _unique(ca)
            cb = _encode(wb, base)
            j, keep = _locate(uniq, cb)
            Xa = sp.csr_matrix((va, (ra - lo, _locate(uniq, ca)[0])), shape=(hi - lo, len(uniq)))
            Xb = sp.csr_matrix((vb[keep], (rb[keep] - lo, j[keep])), shape=(hi - lo, len(uniq)))
            out[lo:hi] = np.asarray(Xa.multiply(Xb).sum(1)).ravel()
        return out

    def _row_chunks(self, side, l, S):
        rows = side[0]
        n = int(rows.max()) + 1 if len(rows) else 0
        if n == 0:
            return [(0, 0)]
        counts = np.bincount(rows, minlength=n).astype(np.float64)
        if S is not None:
            deg = np.diff(S.indptr).astype(np.float64)
            growth = np.ones(len(rows))
            for p in range(l - l // 2):
                growth *= deg[side[1][:, p]]
            counts = np.bincount(rows, weights=growth, minlength=n)
        bounds, lo, acc = [], 0, 0.0
        for i in range(n):
            acc += counts[i]
            if acc > self.chunk_nnz:
                bounds.append((lo, i + 1))
                lo, acc = i + 1, 0.0
        if lo < n:
            bounds.append((lo, n))
        return bounds


def _unique(x: np.ndarray) -> np.ndarray:
    """Sorted unique values (sort-based: faster than numpy's hash unique for big int64 arrays)."""
    if len(x) == 0:
        return x
    x = np.sort(x)
    keep = np.empty(len(x), dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _digest(docs: list[list[list[str]]]) -> str:
    import hashlib

    h = hashlib.sha1()
    for d in docs:
        h.update("\x1e".join("\x1f".join(c) for c in d).encode())
        h.update(b"\x1d")
    return h.hexdigest()


def _locate(sorted_uniq: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``x`` in ``sorted_uniq`` and whether each is present. The needles are sorted
    first: binary search with sorted needles is cache-friendly (10x faster for millions)."""
    if len(sorted_uniq) == 0 or len(x) == 0:
        return np.zeros(len(x), dtype=np.int64), np.zeros(len(x), dtype=bool)
    order = np.argsort(x, kind="stable")
    js = np.searchsorted(sorted_uniq, x[order])
    js[js >= len(sorted_uniq)] = 0
    j = np.empty_like(js)
    j[order] = js
    return j, sorted_uniq[j] == x


def _isin_sorted(x: np.ndarray, sorted_uniq: np.ndarray) -> np.ndarray:
    return _locate(sorted_uniq, x)[1]


def _rows_slice(side, lo, hi):
    rows, words, vals = side
    a = np.searchsorted(rows, lo, side="left")
    b = np.searchsorted(rows, hi, side="left")
    return rows[a:b], words[a:b], vals[a:b]


# ----------------------------------------------------------------------------- factory
TRI_SIMILARITIES = {
    "tri5-align": "align",
    "tri5-dic": "dic",
    "tri5-glove": "glove",
    "tri5-dist": "dist",
    "tri5-lin": "lin",
    "tri5-align-dist": "align+dist",
}


def make_text_kernel(name: str, **overrides: Any) -> TextKernel:
    """A text kernel by name (see the module docstring); ``overrides`` go to the constructor."""
    key = name.lower()
    if key.startswith("bow"):
        base, _, var = key.partition("-")
        if base not in ("bow1", "bow5") or var not in ("", "idf", "sqrtidf"):
            raise XmodalError(f"unknown text kernel {name!r}")
        idf = {"": None, "idf": "idf", "sqrtidf": "sqrt"}[var]
        kw: dict[str, Any] = {"idf": idf, "max_captions": 1 if base == "bow1" else None}
        return BowKernel(**(kw | overrides))
    if key.startswith("tagrank"):
        base, _, var = key.partition("-")
        if base not in ("tagrank", "tagrank5", "tagrank1") or var not in ("", "abs", "rel"):
            raise XmodalError(f"unknown text kernel {name!r}")
        kw = {
            "max_captions": 1 if base == "tagrank1" else None,
            "ranks": {"": "both", "abs": "absolute", "rel": "relative"}[var],
        }
        return TagRankKernel(**(kw | overrides))
    if key.startswith("tri"):
        kw = {"max_captions": 1 if key.startswith("tri1") else None}
        rest = key[4:] if key[:4] in ("tri1", "tri5") else None
        if rest is None:
            raise XmodalError(f"unknown text kernel {name!r}")
        if rest == "sem":
            kw |= {"idf": "sqrt", "similarity": "align+dist"}
        elif rest == "lin":
            kw |= {"similarity": "lin"}
        else:
            parts = [p for p in rest.split("-") if p]
            sims = []
            for p in parts:
                if p == "idf":
                    kw["idf"] = "idf"
                elif p == "sqrtidf":
                    kw["idf"] = "sqrt"
                elif p in ("align", "dic", "glove", "dist", "lin"):
                    sims.append(p)
                else:
                    raise XmodalError(f"unknown text kernel {name!r} (part {p!r})")
            if sims:
                kw["similarity"] = "+".join(sims)
        return TrigramKernel(**(kw | overrides))
    raise XmodalError(
        f"unknown text kernel {name!r}; try bow1, bow5, bow5-idf, bow5-sqrtidf, tagrank, "
        "tri1, tri5, tri5-sqrtidf, tri5-align-dist-sqrtidf, tri5sem"
    )


KERNEL_NAMES = (
    "bow1",
    "bow5",
    "bow1-idf",
    "bow5-idf",
    "bow1-sqrtidf",
    "bow5-sqrtidf",
    "tagrank",
    "tagrank-abs",
    "tagrank-rel",
    "tri1",
    "tri5",
    "tri5-idf",
    "tri5-sqrtidf",
    "tri5-align",
    "tri5-dist",
    "tri5-lin",
    "tri5-align-dist",
    "tri5-align-dist-sqrtidf",
    "tri5sem",
)
