"""Querybank normalisation of a joint-space score matrix (the inverted softmax).

A gallery item that is close to many queries (a "hub") crowds the top of every ranking.
Querybank normalisation (Bogolin et al., CVPR 2022; the inverted softmax of Smith et al., 2017)
divides each gallery item's softmax score by its total mass over a bank of queries that are not
the test queries, here embeddings of training images and training captions:

    S'[i, t] = S[i, t] - LSE_b(beta * S[b, t]) / beta - LSE_q(beta * S[i, q]) / beta

where ``b`` runs over the bank images and ``q`` over the bank captions. The first offset depends
only on the caption, so it reorders image -> text rankings (each image ranks captions) and leaves
text -> image rankings alone; the second is its mirror. One matrix therefore serves both
directions, as the score-matrix contract asks. Without a caption bank the second offset is zero:
an image bank alone reorders image -> text rankings only.

    qb = QuerybankNorm(beta=30).fit(bank_image_emb, bank_text_emb)
    S = qb.normalize(image_emb, text_emb)       # (n_images, n_texts)

:func:`compress_bank` / :func:`expand_bank` store a bank small enough to ship beside a model:
its rows projected on their top principal directions and quantised to int8.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from xmodal.errors import XmodalError
from xmodal.models.modeldir import dequantize_rows, quantize_rows


class QuerybankNorm:
    """Inverted-softmax normalisation against a bank of image and caption embeddings."""

    def __init__(self, beta: float = 30.0, chunk: int = 1024):
        self.beta = beta
        self.chunk = chunk

    def get_params(self) -> dict:
        return {"beta": self.beta, "chunk": self.chunk}

    def fit(self, bank_images: np.ndarray, bank_texts: np.ndarray | None,
            image_log_weights: np.ndarray | None = None,
            text_log_weights: np.ndarray | None = None) -> QuerybankNorm:
        """Keep the bank (unit rows, in the same joint space as what will be scored); with
        ``bank_texts`` None, images only. A row with log-weight ``log n`` counts as ``n`` copies
        of itself (e.g. a k-means centre and the size of its cluster)."""
        bank_images = np.asarray(bank_images, np.float32)
        banks = [bank_images] + ([] if bank_texts is None else [np.asarray(bank_texts,
                                                                           np.float32)])
        if any(b.ndim != 2 or not len(b) for b in banks):
            raise XmodalError("the querybank needs non-empty 2-d image and caption embeddings")
        if banks[-1].shape[1] != bank_images.shape[1]:
            raise XmodalError(f"bank images are {bank_images.shape[1]}-d but bank captions are "
                              f"{banks[-1].shape[1]}-d")
        if self.beta <= 0:
            raise XmodalError(f"beta must be positive, got {self.beta}")
        self.bank_images_ = bank_images
        self.bank_texts_ = banks[1] if len(banks) > 1 else None
        self.log_weights_ = {
            "images": _weights(image_log_weights, len(bank_images)),
            "texts": None if bank_texts is None else _weights(text_log_weights, len(banks[1]))}
        return self

    def _offsets(self, items: np.ndarray, side: str) -> np.ndarray:
        """LSE over the bank of beta * similarity, divided by beta, for each item (in chunks)."""
        bank, log_w = self._bank(side), self.log_weights_[side]
        items = np.asarray(items, np.float32)
        if bank is None:  # no caption bank: the offsets are all zero
            return np.zeros(len(items), np.float64)
        if items.shape[1:] != bank.shape[1:]:
            raise XmodalError(f"embeddings are {items.shape[1:]}-d but the bank is "
                              f"{bank.shape[1]}-d")
        out = np.empty(len(items), np.float64)
        for s in range(0, len(items), self.chunk):
            sims = (items[s : s + self.chunk] @ bank.T).astype(np.float64)
            out[s : s + self.chunk] = logsumexp(self.beta * sims + log_w, axis=1) / self.beta
        return out

    def _bank(self, side: str) -> np.ndarray:
        if not hasattr(self, "bank_images_"):
            raise XmodalError("QuerybankNorm is not fitted: call fit(bank_images, bank_texts)")
        return self.bank_images_ if side == "images" else self.bank_texts_

    def text_offsets(self, text_emb: np.ndarray) -> np.ndarray:
        """Each caption's mass over the bank images (reorders image -> text rankings)."""
        return self._offsets(text_emb, "images")

    def image_offsets(self, image_emb: np.ndarray) -> np.ndarray:
        """Each image's mass over the bank captions (reorders text -> image rankings)."""
        return self._offsets(image_emb, "texts")

    def normalize(self, image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
        """S'[n_images, n_texts]: cosines minus both offsets (higher = better match)."""
        S = np.asarray(image_emb, np.float32) @ np.asarray(text_emb, np.float32).T
        return (S - self.image_offsets(image_emb)[:, None]
                - self.text_offsets(text_emb)[None, :]).astype(np.float32)


def _weights(log_weights: np.ndarray | None, n: int) -> np.ndarray:
    if log_weights is None:
        return np.zeros(n)
    log_weights = np.asarray(log_weights, np.float64)
    if log_weights.shape != (n,) or not np.isfinite(log_weights).all():
        raise XmodalError(f"log-weights must be {n} finite numbers, one per bank row")
    return log_weights


def compress_bank(bank: np.ndarray, dim: int) -> dict[str, np.ndarray]:
    """A bank stored small: its rows centred, projected on their top ``dim`` principal
    directions and quantised to int8 with one scale per row. :func:`expand_bank` gives back the
    (approximate) rows in the original space."""
    bank = np.asarray(bank, np.float64)
    if bank.ndim != 2 or not 0 < dim <= min(bank.shape):
        raise XmodalError(f"cannot keep {dim} of the {bank.shape[1:]} dimensions of a bank of "
                          f"{len(bank)} rows")
    mean = bank.mean(axis=0)
    _, _, vt = np.linalg.svd(bank - mean, full_matrices=False)
    basis = vt[:dim].T.astype(np.float16)
    codes, scales = quantize_rows((bank - mean) @ basis.astype(np.float64))
    return {"codes": codes, "scales": scales, "mean": mean.astype(np.float16), "basis": basis}


def expand_bank(compact: dict[str, np.ndarray]) -> np.ndarray:
    """(rows, d) float32: the bank :func:`compress_bank` stored."""
    coords = dequantize_rows(compact["codes"], compact["scales"])
    return coords @ compact["basis"].astype(np.float32).T + compact["mean"].astype(np.float32)


class CompactImageBank:
    """A compressed bank of images (:func:`compress_bank`) and its ``beta``: each caption's
    offset is computed in the bank's own few dimensions, so describing against a large caption
    pool stays cheap. Scores like ``QuerybankNorm(beta).fit(expand_bank(compact), None)``."""

    def __init__(self, compact: dict[str, np.ndarray], beta: float, chunk: int = 1024):
        if beta <= 0:
            raise XmodalError(f"beta must be positive, got {beta}")
        self.beta, self.chunk = float(beta), chunk
        self.coords = compact["codes"].astype(np.float32) * compact["scales"].astype(
            np.float32)[:, None]
        self.basis = compact["basis"].astype(np.float32)
        self.mean = compact["mean"].astype(np.float32)

    def text_offsets(self, text_emb: np.ndarray) -> np.ndarray:
        """Each caption's LSE over the bank images of beta * similarity, divided by beta."""
        text_emb = np.asarray(text_emb, np.float32)
        if text_emb.ndim != 2 or text_emb.shape[1] != len(self.basis):
            raise XmodalError(f"embeddings are {text_emb.shape[1:]}-d but the bank is "
                              f"{len(self.basis)}-d")
        out = np.empty(len(text_emb), np.float64)
        for s in range(0, len(text_emb), self.chunk):
            t = text_emb[s : s + self.chunk]
            z = self.beta * ((t @ self.basis) @ self.coords.T + (t @ self.mean)[:, None])
            top = z.max(axis=1, keepdims=True)  # float32 throughout: exp after the max is <= 1
            out[s : s + self.chunk] = (top[:, 0] + np.log(np.exp(z - top).sum(axis=1))) / self.beta
        return out

    def normalize(self, image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
        """S'[n_images, n_texts]: cosines minus each caption's offset."""
        S = np.asarray(image_emb, np.float32) @ np.asarray(text_emb, np.float32).T
        return (S - self.text_offsets(text_emb)[None, :]).astype(np.float32)
