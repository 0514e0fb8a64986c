"""Hodosh et al.'s nearest-neighbour baseline NN5^idf_F1 (§3.1).

* Text similarity ``f_S``: the five captions of a training image form one document; every token is
  weighted by its IDF ``lambda_w = log(|D_train| / (|D_train(w)| + 1))`` (the numerator was lost
  in the text extraction; |D_train| is our reading), where ``D_train(w)`` is the set of training
  images with w in any caption. ``f_S`` is the F1 measure of the weighted bags of words: with
  ``overlap = sum_w lambda_w min(c_a(w), c_b(w))`` and ``W(x) = sum_w lambda_w c_x(w)``,
  P = overlap / W(a), R = overlap / W(b), F1 = 2 overlap / (W(a) + W(b)).
* Image similarity ``f_I``: the image kernel (the spatial pyramid kernel in the paper).
* Search: a query caption finds its most similar training document; test images are scored by
  their image similarity to that document's image. Annotation: a query image finds its most
  similar training image; test captions are scored by their F1 to that image's document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from xmodal.errors import XmodalError
from xmodal.features.image_kernels import histogram_intersection


class IdfF1:
    """IDF-weighted bag-of-words F1 similarity, IDF learned from training documents."""

    def fit(self, train_docs: Sequence[Sequence[str]]) -> IdfF1:
        if not train_docs:
            raise XmodalError("IdfF1 needs at least one training document")
        df: Counter[str] = Counter()
        for doc in train_docs:
            df.update(set(doc))
        self.vocabulary_ = {w: n for n, w in enumerate(sorted(df))}
        n_docs = len(train_docs)
        idf = np.array([np.log(n_docs / (df[w] + 1.0)) for w in self.vocabulary_])
        self.idf_ = np.maximum(idf, 0.0)
        return self

    def vectors(self, docs: Sequence[Sequence[str]]) -> np.ndarray:
        """IDF-weighted counts (n_docs, |V|); out-of-vocabulary words are dropped (their
        training document frequency is 0, so they cannot match any training document)."""
        out = np.zeros((len(docs), len(self.vocabulary_)), np.float32)
        for r, doc in enumerate(docs):
            for w, c in Counter(doc).items():
                j = self.vocabulary_.get(w)
                if j is not None:
                    out[r, j] = c * self.idf_[j]
        return out

    def similarity(self, a_docs: Sequence[Sequence[str]], b_docs: Sequence[Sequence[str]]):
        """F1 similarity matrix (len(a_docs), len(b_docs))."""
        a, b = self.vectors(a_docs), self.vectors(b_docs)
        overlap = histogram_intersection(a, b)
        total = a.sum(1)[:, None] + b.sum(1)[None, :]
        return np.where(total > 0, 2.0 * overlap / np.maximum(total, 1e-12), 0.0)


class NearestNeighbour:
    """NN5^idf_F1. ``fit`` takes one merged token list per training image."""

    def fit(self, train_docs: Sequence[Sequence[str]]) -> NearestNeighbour:
        self.train_docs_ = [list(d) for d in train_docs]
        self.f1_ = IdfF1().fit(self.train_docs_)
        return self

    def score_t2i(self, k_image_train: np.ndarray, captions: Sequence[Sequence[str]]):
        """Search scores S (n_images, n_captions).

        ``k_image_train``: image kernel between the gallery images (rows) and the training images
        (columns, in ``fit`` order). Column j of S is the image similarity of every gallery image
        to the training image whose document best matches caption j.
        """
        sim = self.f1_.similarity(captions, self.train_docs_)  # (n_captions, n_train)
        nn = sim.argmax(1)
        return np.asarray(k_image_train, dtype=np.float64)[:, nn]

    def score_i2t(self, k_image_train: np.ndarray, captions: Sequence[Sequence[str]]):
        """Annotation scores S (n_images, n_captions): row i is the F1 of every caption to the
        document of the training image most similar to image i."""
        nn = np.asarray(k_image_train).argmax(1)
        uniq, inverse = np.unique(nn, return_inverse=True)
        sims = self.f1_.similarity([self.train_docs_[t] for t in uniq], captions)
        return sims[inverse]
