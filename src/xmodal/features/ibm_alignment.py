"""IBM Models 1 and 2 (Brown et al. 1993) by EM, vectorised with numpy: word translation tables.

Used for the alignment-based word similarity of Hodosh et al. (2013, §3.5.4), which aligns pairs of
captions of the same image (nouns and verbs separately) instead of GIZA++.

``IBMAlignment(n_iter_model1=5, n_iter_model2=5).fit(pairs)`` with ``pairs`` a list of
``(source_tokens, target_tokens)``; then ``t_`` is a sparse ``source x target`` matrix of
``P(target word | source word)`` over the co-occurring pairs, ``source_vocab_`` / ``target_vocab_``
name its rows and columns. Model 2 adds the alignment distribution ``a(i | j, l, m)``; Model 1's
table initialises it (uniform alignments), as in GIZA++'s 1 -> 2 schedule. ``use_null`` adds the
NULL source word (row ``"<null>"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from xmodal.errors import XmodalError

NULL = "<null>"


class IBMAlignment:
    """EM training of IBM Model 1 then Model 2 on a parallel corpus of token lists."""

    def __init__(self, n_iter_model1: int = 5, n_iter_model2: int = 5, use_null: bool = True):
        self.n_iter_model1 = n_iter_model1
        self.n_iter_model2 = n_iter_model2
        self.use_null = use_null

    def fit(self, pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> IBMAlignment:
        src_vocab: dict[str, int] = {NULL: 0} if self.use_null else {}
        tgt_vocab: dict[str, int] = {}
        link_pair, link_e, link_f, link_i, link_j, link_l, link_m = ([] for _ in range(7))
        n_pairs = 0
        for src, tgt in pairs:
            if not tgt or (not src and not self.use_null):
                continue
            e_ids = ([0] if self.use_null else []) + [
                src_vocab.setdefault(w, len(src_vocab)) for w in src
            ]
            f_ids = [tgt_vocab.setdefault(w, len(tgt_vocab)) for w in tgt]
            l_, m_ = len(src), len(tgt)
            i_pos = np.arange(len(e_ids)) + (0 if self.use_null else 1)  # NULL is position 0
            for j, f in enumerate(f_ids, start=1):
                link_pair.append(np.full(len(e_ids), n_pairs * 1024 + j))
                link_e.append(np.asarray(e_ids))
                link_f.append(np.full(len(e_ids), f))
                link_i.append(i_pos)
                link_j.append(np.full(len(e_ids), j))
                link_l.append(np.full(len(e_ids), l_))
                link_m.append(np.full(len(e_ids), m_))
            n_pairs += 1
        if n_pairs == 0:
            raise XmodalError("IBM alignment needs at least one non-empty sentence pair")
        cat = lambda xs: np.concatenate(xs).astype(np.int64)
        group = np.unique(cat(link_pair), return_inverse=True)[1]
        e, f = cat(link_e), cat(link_f)
        i, j, l_, m_ = cat(link_i), cat(link_j), cat(link_l), cat(link_m)
        nf = len(tgt_vocab)
        ef_codes, ef = np.unique(e * nf + f, return_inverse=True)
        ef_e = ef_codes // nf
        t = np.full(len(ef_codes), 1.0 / nf)
        if max(int(l_.max()), int(m_.max())) >= 255:
            raise XmodalError("IBM alignment supports sentences of at most 254 tokens")
        # alignment parameters a(i | j, l, m): one code per (i, j, l, m), grouped by (j, l, m)
        a_codes, a_idx = np.unique(((i * 256 + j) * 256 + l_) * 256 + m_, return_inverse=True)
        jlm_idx = np.unique(a_codes % 256**3, return_inverse=True)[1]
        a = np.ones(len(a_codes))  # constant within a (j, l, m) group: uniform, i.e. Model 1
        n_groups = int(group.max()) + 1

        def em(t: np.ndarray, a: np.ndarray, update_a: bool):
            w = t[ef] * a[a_idx]
            den = np.bincount(group, weights=w, minlength=n_groups)
            c = w / den[group]
            cef = np.bincount(ef, weights=c, minlength=len(t))
            ce = np.bincount(ef_e, weights=cef, minlength=len(src_vocab))
            t_new = cef / ce[ef_e]
            if update_a:
                ca = np.bincount(a_idx, weights=c, minlength=len(a))
                cjlm = np.bincount(jlm_idx, weights=ca)
                a = ca / cjlm[jlm_idx]
            return t_new, a

        for _ in range(self.n_iter_model1):
            t, _a = em(t, a, False)
        # Model 2: start from uniform a(i | j, l, m) = 1 / (l + 1) (constant within a group)
        for _ in range(self.n_iter_model2):
            t, a = em(t, a, True)
        self.source_vocab_ = list(src_vocab)
        self.target_vocab_ = list(tgt_vocab)
        self.t_ = sp.csr_matrix((t, (ef_e, ef_codes % nf)), shape=(len(src_vocab), len(tgt_vocab)))
        self.a_codes_, self.a_ = a_codes, a
        self._src_index = src_vocab
        self._tgt_index = tgt_vocab
        return self

    def prob(self, target: str, source: str) -> float:
        """``P(target | source)`` (0 for unseen pairs)."""
        if not hasattr(self, "t_"):
            raise XmodalError("IBMAlignment is not fitted: call .fit(pairs) first")
        i = self._src_index.get(source)
        j = self._tgt_index.get(target)
        if i is None or j is None:
            return 0.0
        return float(self.t_[i, j])

    def alignment_prob(self, i: int, j: int, l: int, m: int) -> float:
        """Model 2's ``a(i | j, l, m)`` (source position ``i``, 0 = NULL; target position ``j``)."""
        code = ((i * 256 + j) * 256 + l) * 256 + m
        k = np.searchsorted(self.a_codes_, code)
        if k < len(self.a_codes_) and self.a_codes_[k] == code:
            return float(self.a_[k])
        return 0.0
