"""Ranking metrics on a score matrix, exact and vectorized.

Every retrieval metric here is a function of the ranks of the relevant items, and one pass over
a query's scores yields those ranks. :func:`relevant_ranks` does that pass in chunks of queries
(bounded memory for large galleries); the metrics are then segment sums over the ranks.

Rows of ``scores`` are queries, columns the gallery; higher scores rank first.

**Ties.** Tied scores are ordered pessimistically: among items with equal scores, non-relevant
items rank before relevant ones, and relevant items among themselves by gallery index. A model
therefore never gains from ties (a constant scorer gets the worst possible ranks), and every
metric sees the same total order. The same rule orders words in :func:`annotation_metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from xmodal.errors import XmodalError

DEFAULT_KS = (1, 5, 10)
_CHUNK_ELEMENTS = 1 << 18  # scores per chunk: small enough to stay in cache across passes
_GATHER_ELEMENTS = 1 << 22  # scores gathered per slab (16 MB of float32): bounds memory


@dataclass
class RelevantRanks:
    """1-based ranks of each query's relevant items, ascending, as a CSR-like pair of arrays.

    ``ranks[indptr[q]:indptr[q + 1]]`` are query q's ranks; ``n_gallery`` is the gallery size.
    """

    indptr: np.ndarray
    ranks: np.ndarray
    n_gallery: int

    @property
    def n_relevant(self) -> np.ndarray:
        return np.diff(self.indptr)

    def of(self, query: int) -> np.ndarray:
        return self.ranks[self.indptr[query] : self.indptr[query + 1]]


def as_relevance(relevant, n_queries: int, n_gallery: int) -> sparse.csr_matrix:
    """Normalise relevance (sparse or dense bool matrix, or a list of index collections) to CSR."""
    if sparse.issparse(relevant):
        m = sparse.csr_matrix(relevant, dtype=bool)
    elif isinstance(relevant, np.ndarray) and relevant.ndim == 2:
        m = sparse.csr_matrix(relevant.astype(bool))
    else:
        rows, cols = [], []
        for q, items in enumerate(relevant):
            idx = np.unique(np.asarray(list(items), dtype=np.int64))
            rows.append(np.full(len(idx), q, dtype=np.int64))
            cols.append(idx)
        if len(rows) != n_queries:
            raise XmodalError(f"relevance lists {len(rows)} queries, scores have {n_queries}")
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        if len(c) and (c.min() < 0 or c.max() >= n_gallery):
            raise XmodalError(f"relevant index out of range for a gallery of {n_gallery}")
        m = sparse.csr_matrix((np.ones(len(r), bool), (r, c)), shape=(n_queries, n_gallery))
    if m.shape != (n_queries, n_gallery):
        raise XmodalError(f"relevance has shape {m.shape}, scores have {(n_queries, n_gallery)}")
    m.eliminate_zeros()
    m.sum_duplicates()
    m.sort_indices()
    return m


def relevant_ranks(scores: np.ndarray, relevant) -> RelevantRanks:
    """Ranks of the relevant items for every query (rows of ``scores``), under the tie rule above.

    The rank of relevant item j is ``#(scores >= s_j) - #(relevant items tied with j and after it
    in gallery order)``: one counting comparison per relevant item over its query's row. Queries
    without relevant items are skipped; queries are grouped by their number of relevant items and
    handled in chunks, so memory stays bounded for large galleries.
    """
    if not hasattr(scores, "ndim") or scores.ndim != 2:
        raise XmodalError(f"scores must be a 2-D matrix (queries x gallery), got {np.shape(scores)}")
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(np.float64)
    n_q, n_g = scores.shape
    rel = as_relevance(relevant, n_q, n_g)
    indptr, indices = rel.indptr, rel.indices
    counts = np.diff(indptr)
    out = np.empty(len(indices), dtype=np.int64)
    queries = np.flatnonzero(counts)
    if scores.flags.f_contiguous and not scores.flags.c_contiguous and len(queries):
        # a transposed view (text-to-image search over S.T): count down its columns instead
        _ranks_by_columns(scores.T, queries, counts, indptr, indices, out)
        row = np.repeat(np.arange(n_q), counts)
        order = np.lexsort((out, row))
        return RelevantRanks(indptr.astype(np.int64), out[order], n_g)
    queries = queries[np.argsort(counts[queries], kind="stable")]
    step = max(1, _CHUNK_ELEMENTS // max(n_g, 1))
    outer = step * max(1, _GATHER_ELEMENTS // (step * max(n_g, 1)))
    for a0 in range(0, len(queries), outer):
        # gather large slabs (a transposed matrix reads well only in wide slabs), then work on
        # cache-sized chunks of them
        slab_rows = queries[a0 : a0 + outer]
        slab = _gather_rows(scores, slab_rows)
        if np.isnan(slab.min()):  # min propagates NaN and is cheaper than isnan().any()
            raise XmodalError("scores contain NaN; a model must give every pair a number")
        for a in range(0, len(slab_rows), step):
            rows = slab_rows[a : a + step]
            block = slab[a : a + step]
            c = counts[rows]
            # positions of these rows' relevant items in the CSR arrays
            starts = indptr[rows]
            flat = np.repeat(starts - np.r_[0, np.cumsum(c)[:-1]], c) + np.arange(c.sum())
            out[flat] = _ranks_block(block, indices[flat], c)
    row = np.repeat(np.arange(n_q), counts)
    order = np.lexsort((out, row))
    return RelevantRanks(indptr.astype(np.int64), out[order], n_g)


def _gather_rows(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows of ``scores`` as a C-contiguous block (consecutive rows are read as a slice)."""
    lo, hi = int(rows[0]), int(rows[-1]) + 1
    if hi - lo == len(rows) and bool(np.all(np.diff(rows) == 1)):
        return np.ascontiguousarray(scores[lo:hi])
    return np.ascontiguousarray(scores[rows])


def _ranks_by_columns(base, queries, counts, indptr, indices, out) -> None:
    """Ranks when query q's scores are the column ``base[:, q]`` of a C-ordered matrix.

    Streams over the gallery rows of ``base`` once per bucket of queries (buckets group queries
    whose number of relevant items lies in the same power of two, bounding the padding), and
    accumulates column counts, so memory access stays sequential.
    """
    n_g = base.shape[0]
    bucket = np.ceil(np.log2(counts[queries])).astype(np.int64)
    for b in np.unique(bucket):
        group = queries[bucket == b]
        c = counts[group]
        m_max = int(c.max())
        starts = indptr[group]
        flat = np.repeat(starts - np.r_[0, np.cumsum(c)[:-1]], c) + np.arange(c.sum())
        row_of = np.repeat(np.arange(len(group)), c)
        pos_in_row = np.arange(len(flat)) - np.repeat(np.r_[0, np.cumsum(c)[:-1]], c)
        rel_scores = base[indices[flat], group[row_of]]
        if np.isnan(rel_scores).any():
            raise XmodalError("scores contain NaN; a model must give every pair a number")
        pad = np.full((m_max, len(group)), np.inf, dtype=base.dtype)
        pad[pos_in_row, row_of] = rel_scores
        ge = np.zeros((m_max, len(group)), dtype=np.int64)
        all_columns = len(group) == base.shape[1] and bool(np.all(np.diff(group) == 1))
        step = max(1, _CHUNK_ELEMENTS // max(len(group), 1))
        for g0 in range(0, n_g, step):
            block = base[g0 : g0 + step] if all_columns else base[g0 : g0 + step][:, group]
            if np.isnan(block.min()):
                raise XmodalError("scores contain NaN; a model must give every pair a number")
            for j in range(m_max):
                ge[j] += (block >= pad[j]).sum(axis=0, dtype=np.int64)
        later_ties = _later_equal(rel_scores, row_of, pos_in_row)
        out[flat] = ge[pos_in_row, row_of] - later_ties


def _ranks_block(block: np.ndarray, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Ranks of the relevant items ``idx`` (grouped by row, ``counts`` per row) of a block."""
    n_rows = block.shape[0]
    m_max = int(counts.max())
    row_of = np.repeat(np.arange(n_rows), counts)
    pos_in_row = np.arange(len(idx)) - np.repeat(np.r_[0, np.cumsum(counts)[:-1]], counts)
    rel_scores = block[row_of, idx]
    pad = np.full((n_rows, m_max), np.inf, dtype=block.dtype)
    pad[row_of, pos_in_row] = rel_scores
    ge = np.empty((n_rows, m_max), dtype=np.int64)
    mask = np.empty(block.shape, dtype=bool)
    for j in range(m_max):
        np.greater_equal(block, pad[:, j : j + 1], out=mask)
        # 1-D count_nonzero is several times faster than the axis= variant
        ge[:, j] = [np.count_nonzero(r) for r in mask]
    later_ties = _later_equal(rel_scores, row_of, pos_in_row)
    return ge[row_of, pos_in_row] - later_ties


def _later_equal(rel_scores, row_of, pos_in_row) -> np.ndarray:
    """For each relevant item: how many relevant items of its query share its score and come later."""
    result = np.zeros(len(rel_scores), dtype=np.int64)
    # only queries with a duplicated relevant score need work
    order = np.lexsort((pos_in_row, rel_scores, row_of))
    s_sorted = rel_scores[order]
    r_sorted = row_of[order]
    same_as_next = (s_sorted[1:] == s_sorted[:-1]) & (r_sorted[1:] == r_sorted[:-1])
    if not same_as_next.any():
        return result
    # within each run of equal (row, score), items are in gallery order; count those after each
    run_start = np.r_[True, ~same_as_next]
    run_id = np.cumsum(run_start) - 1
    run_len = np.bincount(run_id)
    first_of_run = np.flatnonzero(run_start)
    pos_in_run = np.arange(len(order)) - first_of_run[run_id]
    result[order] = run_len[run_id] - 1 - pos_in_run
    return result


def _metrics_from_ranks(rr: RelevantRanks, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """Per-query metric arrays (NaN for queries without relevant items)."""
    m = rr.n_relevant
    n_q = len(m)
    valid = m > 0
    row = np.repeat(np.arange(n_q), m)
    ranks = rr.ranks.astype(np.float64)
    pos = np.arange(len(ranks)) - rr.indptr[:-1][row] + 1  # 1-based position among relevant
    prec = pos / ranks
    mf = np.where(valid, m, 1).astype(np.float64)

    def per_query(weights) -> np.ndarray:
        return np.bincount(row, weights=weights, minlength=n_q)

    out: dict[str, np.ndarray] = {}
    first = np.full(n_q, np.nan)
    first[valid] = ranks[rr.indptr[:-1][valid]]
    for k in ks:
        hits = per_query(ranks <= k)
        out[f"R@{k}"] = (hits > 0).astype(np.float64)
        out[f"recall@{k}"] = hits / mf
        out[f"P@{k}"] = hits / k
    within_r = ranks <= m[row]
    out["R-P"] = per_query(within_r) / mf
    out["mAP@R"] = per_query(prec * within_r) / mf
    out["MAP"] = per_query(prec) / mf
    gains = (ranks <= 10) / np.log2(ranks + 1.0)
    ideal = np.cumsum(1.0 / np.log2(np.arange(2, 12)))
    out["nDCG@10"] = per_query(gains) / ideal[np.minimum(np.where(valid, m, 1), 10) - 1]
    out["rank"] = first
    for key in out:
        out[key] = np.where(valid, out[key], np.nan)
    return out


def retrieval_metrics(
    scores: np.ndarray,
    relevant,
    ks: Iterable[int] = DEFAULT_KS,
    per_query: bool = False,
):
    """Retrieval metrics for a score matrix (rows = queries, higher = better).

    Returns a dict of fractions in [0, 1] (ranks as numbers): ``R@K`` (any relevant item in the
    top K, the CLIP / ECCV Caption convention), ``recall@K`` (fraction of the relevant items in
    the top K), ``P@K``, ``medR`` and ``meanR`` (1-based rank of the first relevant item),
    ``R-P`` (R-Precision), ``mAP@R``, ``MAP`` and ``nDCG@10`` (binary gains), plus ``n_queries``
    (queries with at least one relevant item; the others are left out of every mean).

    With ``per_query=True`` returns ``(summary, per_query)`` where ``per_query`` maps each metric
    (``rank`` for the first relevant rank) to an array over all queries, NaN where undefined.
    """
    ks = tuple(int(k) for k in ks)
    rr = relevant_ranks(scores, relevant)
    pq = _metrics_from_ranks(rr, ks)
    valid = rr.n_relevant > 0
    summary: dict[str, float] = {}
    if valid.any():
        for key, values in pq.items():
            if key != "rank":
                summary[key] = float(np.mean(values[valid]))
        summary["medR"] = float(np.median(pq["rank"][valid]))
        summary["meanR"] = float(np.mean(pq["rank"][valid]))
    else:
        for key in pq:
            if key != "rank":
                summary[key] = float("nan")
        summary["medR"] = summary["meanR"] = float("nan")
    summary["n_queries"] = int(valid.sum())
    if per_query:
        return summary, pq
    return summary


CURVE_KS = (1, 2, 3, 5, 10, 20, 50, 100)
RECALL_LEVELS = tuple(i / 10 for i in range(11))


def curves(scores: np.ndarray, relevant, ks: Iterable[int] = CURVE_KS) -> dict:
    """Curves for plots: ``R@K`` (hit rate) over ``ks`` and the 11-point interpolated
    precision-recall curve averaged over queries (precision at recall level L is the best
    precision at any recall >= L, as in TREC)."""
    rr = relevant_ranks(scores, relevant)
    m = rr.n_relevant
    valid = np.flatnonzero(m > 0)
    first = rr.ranks[rr.indptr[:-1][valid]]
    ks = [k for k in ks if k <= rr.n_gallery] or [rr.n_gallery]
    hit = {str(k): float(np.mean(first <= k)) if len(valid) else float("nan") for k in ks}
    levels = np.asarray(RECALL_LEVELS)
    total = np.zeros(len(levels))
    for q in valid:
        ranks = rr.of(q).astype(np.float64)
        i = np.arange(1, len(ranks) + 1)
        prec = i / ranks
        interp = np.maximum.accumulate(prec[::-1])[::-1]
        recall = i / len(ranks)
        at = np.searchsorted(recall, levels - 1e-12)  # first point with recall >= level
        total += np.where(at < len(ranks), interp[np.minimum(at, len(ranks) - 1)], 0.0)
    precision = (total / max(len(valid), 1)).tolist()
    return {"recall_at_k": hit, "pr": {"recall": list(RECALL_LEVELS), "precision": precision}}


def top_n_with_ties(scores: np.ndarray, truth: np.ndarray, n: int) -> np.ndarray:
    """Boolean (items x words) matrix of each row's top-n words under the pessimistic tie rule."""
    scores = np.asarray(scores, dtype=np.float64)
    truth = np.asarray(truth, dtype=bool)
    n = min(n, scores.shape[1])
    cols = np.arange(scores.shape[1])
    # lexsort keys, last is primary: -score, then relevant last, then index
    order = np.lexsort(
        (np.broadcast_to(cols, scores.shape), truth.astype(np.int8), -scores), axis=1
    )[:, :n]
    chosen = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(chosen, order, True, axis=1)
    return chosen


def annotation_metrics(
    word_scores: np.ndarray | None,
    truth,
    n: int = 5,
    best: int | None = 49,
    predicted: np.ndarray | None = None,
    vocabulary: Sequence[str] | None = None,
    word_mask: np.ndarray | None = None,
) -> dict:
    """Per-word annotation metrics of Lavrenko et al. 2003 for top-``n`` annotation.

    ``word_mask`` (bool over words) restricts the evaluated vocabulary, e.g. to words that also
    occur in training (Corel5K: 263 test words, 260 of them seen in training, the paper's 260).
    Each image is annotated with its ``n`` highest-scoring words (``word_scores``: images x
    words), or with the given boolean ``predicted`` matrix. For each word w of the test
    vocabulary (words annotated on at least one test image): recall = correct / images truly
    annotated with w; precision = correct / images auto-annotated with w (0 if never predicted).
    Returns ``mean_P``, ``mean_R``, ``mean_F1`` (mean of per-word F1), ``n_words_recall_gt0``,
    ``n_words`` and, over the ``best`` words with the highest recall (ties: higher precision,
    then vocabulary order; the paper does not give its rule), ``best_mean_P`` / ``best_mean_R``.
    ``per_word`` holds the per-word arrays (with ``vocabulary`` names when given).
    """
    truth = np.asarray(truth.toarray() if sparse.issparse(truth) else truth, dtype=bool)
    if predicted is None:
        if word_scores is None:
            raise XmodalError("annotation_metrics needs word_scores or predicted")
        word_scores = np.asarray(word_scores)
        if word_scores.shape != truth.shape:
            raise XmodalError(f"scores {word_scores.shape} and truth {truth.shape} differ")
        predicted = top_n_with_ties(word_scores, truth, n)
    predicted = np.asarray(predicted, dtype=bool)
    n_true = truth.sum(0)
    n_pred = predicted.sum(0)
    correct = (truth & predicted).sum(0)
    keep = n_true > 0
    if word_mask is not None:
        keep &= np.asarray(word_mask, dtype=bool)
    vocab = np.flatnonzero(keep)
    recall = correct[vocab] / n_true[vocab]
    precision = np.divide(correct[vocab], n_pred[vocab], out=np.zeros(len(vocab)),
                          where=n_pred[vocab] > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros(len(vocab)), where=denom > 0)
    out = {
        "mean_P": float(precision.mean()) if len(vocab) else float("nan"),
        "mean_R": float(recall.mean()) if len(vocab) else float("nan"),
        "mean_F1": float(f1.mean()) if len(vocab) else float("nan"),
        "n_words_recall_gt0": int((recall > 0).sum()),
        "n_words": int(len(vocab)),
        "n": int(n),
    }
    if best:
        order = np.lexsort((np.arange(len(vocab)), -precision, -recall))[:best]
        out[f"best{best}_mean_P"] = float(precision[order].mean()) if len(order) else float("nan")
        out[f"best{best}_mean_R"] = float(recall[order].mean()) if len(order) else float("nan")
    names = [vocabulary[i] for i in vocab] if vocabulary is not None else vocab.tolist()
    out["per_word"] = {
        "word": names,
        "precision": precision.tolist(),
        "recall": recall.tolist(),
        "n_true": n_true[vocab].tolist(),
        "n_predicted": n_pred[vocab].tolist(),
    }
    return out
