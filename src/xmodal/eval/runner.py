"""Run a model on a protocol and build the JSON report (the shape ``xmodal eval --json`` prints)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.coverage import coverage
from xmodal.eval.metrics import DEFAULT_KS, curves, retrieval_metrics
from xmodal.eval.protocols import Protocol

Scorer = Callable[..., np.ndarray]


def direction_scores(protocol: Protocol, scorer: Scorer, seed: int = 0) -> dict[str, np.ndarray]:
    """Score matrices (images x texts) per direction; directions over the same pool share one,
    unless the scorer sets ``per_direction = True`` (e.g. task-specific ensembles)."""
    out: dict[str, np.ndarray] = {}
    share = not getattr(scorer, "per_direction", False)
    for name, d in protocol.directions.items():
        for other, s in (out.items() if share else ()):
            od = protocol.directions[other]
            if od.image_ids == d.image_ids and od.text_ids == d.text_ids:
                out[name] = s
                break
        else:
            s = np.asarray(scorer(protocol, d, seed))
            expected = (len(d.image_ids), len(d.text_ids))
            if s.shape != expected:
                raise XmodalError(f"model returned scores of shape {s.shape}, expected {expected}")
            out[name] = s
    return out


def evaluate(
    protocol: Protocol,
    scores: dict[str, np.ndarray],
    model: str = "",
    seed: int = 0,
    ks: Iterable[int] = DEFAULT_KS,
    per_query: bool = False,
    with_curves: bool = True,
) -> dict[str, Any]:
    """Metrics for both directions from images x texts score matrices.

    With ``with_curves`` the report also holds ``curves[direction]``: R@K over K and the
    11-point interpolated precision-recall curve (what the web page plots). ``notes`` is the
    protocol's description; ``coverage`` (benchmarks with official sizes) says on how many
    images, captions and queries it ran against the official counts
    (:func:`xmodal.eval.coverage.coverage`). With ``per_query``, ``query_ids[direction]`` names
    each query (image ids for i2t, caption ids for t2i), so ``xmodal compare`` pairs runs by id.
    """
    t0 = time.perf_counter()
    report: dict[str, Any] = {
        "protocol": protocol.name,
        "model": model,
        "directions": {},
        "n_queries": {},
        "seed": seed,
    }
    per: dict[str, Any] = {}
    for name, d in protocol.directions.items():
        s = d.query_scores(scores[name])
        summary, pq = retrieval_metrics(s, d.query_relevance, ks=ks, per_query=True)
        report["n_queries"][name] = summary.pop("n_queries")
        report["directions"][name] = summary
        per[name] = pq
        if with_curves:
            report.setdefault("curves", {})[name] = curves(s, d.query_relevance)
    if protocol.paper_metrics is not None:
        report["paper_metrics"] = protocol.paper_metrics(scores)
        folds = report["paper_metrics"].get("folds") or {}
        if protocol.extra.get("headline") == "fold-mean" and folds.get("mean"):
            for name, values in folds["mean"].items():  # COCO 1K: the mean of the fold means
                report["directions"][name].update(values)
    if protocol.extra.get("positives"):  # evaluated against other positives: which ones
        report["positives"] = protocol.extra["positives"]
    cov = coverage(protocol)
    if cov is not None:
        report["coverage"] = cov
    if protocol.notes:
        report["notes"] = protocol.notes
    report["metrics_s"] = time.perf_counter() - t0
    if per_query:
        report["per_query"] = {
            n: {k: [None if np.isnan(v) else float(v) for v in arr] for k, arr in pq.items()}
            for n, pq in per.items()
        }
        report["query_ids"] = {n: list(d.image_ids if n == "i2t" else d.text_ids)
                               for n, d in protocol.directions.items()}
    return report


def run_eval(
    protocol: Protocol, scorer: Scorer, model: str = "", seed: int = 0, **kwargs: Any
) -> dict[str, Any]:
    """Score with ``scorer`` and evaluate; ``elapsed_s`` covers scoring and metrics."""
    t0 = time.perf_counter()
    scores = direction_scores(protocol, scorer, seed)
    report = evaluate(protocol, scores, model=model, seed=seed, **kwargs)
    report["elapsed_s"] = time.perf_counter() - t0
    return report
