"""The analyses of a campaign, after ECCV Caption (Chun et al. 2022) §3.4, §6 and Table 5.

* :func:`coverage`: per annotator, how many of its candidates got a judgment and how many of
  those are positive;
* :func:`benchmark_quality` (ECCV Table 2): precision and recall of the protocol's original
  positives against the human-verified ones, per direction;
* :func:`metric_table` and :func:`kendall_table` (ECCV Table 5): models ranked by R@1, R@5, R-P
  and mAP@R under the original and the extended positives, and Kendall τ-b between every pair
  of those rankings;
* :func:`bias_study` (ECCV §6): the discovery redone with each single annotator's candidates,
  and how far the model ranking moves from the all-annotator one.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from xmodal.eval.positives import apply_positives
from xmodal.eval.protocol_types import Protocol
from xmodal.eval.stats import kendall
from xmodal.mitl.aggregate import Verdict
from xmodal.mitl.export import extended_positives
from xmodal.mitl.store import Campaign

METRICS = ("R@1", "R@5", "R-P", "mAP@R")
Scores = Mapping[str, Mapping[str, np.ndarray]]  # model -> direction -> images x texts


def coverage(campaign: Campaign, found: Sequence[Verdict], k: int) -> dict[str, Any]:
    """Per annotator: its top-K candidates, how many have a verdict, how many are positive."""
    verdict = {(v.image_id, v.text_id): v.positive for v in found}
    kinds = dict(((i, t), kind) for i, t, kind in campaign.q(
        "SELECT image_id, text_id, kind FROM pairs"))
    out = {}
    for name, in campaign.q("SELECT name FROM annotators ORDER BY id"):
        pairs = {(i, t) for i, t in campaign.q(
            "SELECT p.image_id, p.text_id FROM proposals p JOIN annotators a ON "
            "a.id = p.annotator_id WHERE a.name = ? AND p.rank <= ?", (name, k))
            if kinds.get((i, t)) == "candidate"}
        judged = [verdict[p] for p in pairs if verdict.get(p) is not None]
        out[name] = {"candidates": len(pairs), "judged": len(judged),
                     "coverage": len(judged) / len(pairs) if pairs else 0.0,
                     "positive": int(sum(judged)),
                     "precision": float(np.mean(judged)) if judged else None}
    return out


def benchmark_quality(protocol: Protocol, found: Sequence[Verdict],
                      queries: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """ECCV Table 2 on the sampled queries: with t_i the human-verified positives of query i
    and r_i its original positives (both among the pairs that got a verdict),
    precision = mean_i |r_i ∩ t_i| / |r_i|   (queries with a judged original pair),
    recall    = mean_i |r_i ∩ t_i| / |t_i|   (queries with a verified positive)."""
    judged: dict[str, dict[str, dict[str, bool]]] = {"i2t": defaultdict(dict),
                                                      "t2i": defaultdict(dict)}
    for v in found:
        if v.positive is None:
            continue
        judged["i2t"][v.image_id][v.text_id] = v.positive
        judged["t2i"][v.text_id][v.image_id] = v.positive
    out = {}
    for name, d in protocol.directions.items():
        rel = d.query_relevance
        pool = d.image_ids if name == "i2t" else d.text_ids
        items = d.text_ids if name == "i2t" else d.image_ids
        row_of = {q: n for n, q in enumerate(pool)}
        prec, rec = [], []
        for q in queries.get(name, ()):
            verdicts = judged[name].get(q, {})
            r = {items[j] for j in rel.indices[rel.indptr[row_of[q]]:rel.indptr[row_of[q] + 1]]}
            t = {x for x, pos in verdicts.items() if pos}
            r_judged = {x for x in r if x in verdicts}
            if r_judged:
                prec.append(len(r_judged & t) / len(r_judged))
            if t:
                rec.append(len(r & t) / len(t))
        out[name] = {"precision": float(np.mean(prec)) if prec else None,
                     "recall": float(np.mean(rec)) if rec else None,
                     "queries_with_judged_original": len(prec),
                     "queries_with_verified_positive": len(rec)}
    return out


def metric_table(protocol: Protocol, scores: Scores) -> dict[str, dict[str, dict[str, float]]]:
    """model -> direction -> {R@1, R@5, R-P, mAP@R}."""
    from xmodal.eval.runner import evaluate

    out = {}
    for model, s in scores.items():
        report = evaluate(protocol, dict(s), model=model, with_curves=False)
        out[model] = {d: {m: float(v[m]) for m in METRICS}
                      for d, v in report["directions"].items()}
    return out


def kendall_table(columns: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Kendall τ-b between every pair of metric columns (column -> model -> value)."""
    names = list(columns)
    models = sorted(next(iter(columns.values())))
    out: dict[str, dict[str, float]] = {a: {} for a in names}
    for a, b in itertools.product(names, names):
        tau = kendall([columns[a][m] for m in models], [columns[b][m] for m in models])
        out[a][b] = None if np.isnan(tau) else tau
    return out


def ranking_study(protocol: Protocol, extended: Protocol, scores: Scores) -> dict[str, Any]:
    """ECCV Table 5 per direction: metrics under both ground truths and the τ-b table."""
    original = metric_table(protocol, scores)
    ext = metric_table(extended, scores)
    out: dict[str, Any] = {"original": original, "extended": ext, "kendall": {}}
    for d in protocol.directions:
        cols = {f"{tag} {m}": {model: table[model][d][m] for model in scores}
                for tag, table in (("original", original), ("extended", ext)) for m in METRICS}
        out["kendall"][d] = kendall_table(cols)
    return out


def _ranks(values: Mapping[str, float]) -> dict[str, int]:
    order = sorted(values, key=lambda m: -values[m])
    return {m: n + 1 for n, m in enumerate(order)}


def bias_study(campaign: Campaign, protocol: Protocol, found: Sequence[Verdict], scores: Scores,
               k: int, metric: str = "mAP@R") -> dict[str, Any]:
    """Discovery redone with each single annotator's top-K candidates (plus the judged
    originals) instead of all annotators': verified positives found, and Kendall τ-b between
    the resulting model ranking by ``metric`` and the all-annotator ranking, per direction.

    The verdict of a pair does not depend on who proposed it, so each single-annotator
    discovery is the all-annotator verdicts restricted to that annotator's candidates."""
    proposed: dict[str, set] = defaultdict(set)
    for name, i, t in campaign.q(
            "SELECT a.name, p.image_id, p.text_id FROM proposals p JOIN annotators a ON "
            "a.id = p.annotator_id WHERE p.rank <= ?", (k,)):
        proposed[name].add((i, t))
    subsets = {"all": None, **{n: proposed[n] for n in sorted(proposed)}}
    tables = {}
    found_by = {}
    for name, pairs in subsets.items():
        keep = [v for v in found if pairs is None or v.kind == "original"
                or (v.image_id, v.text_id) in pairs]
        found_by[name] = sum(1 for v in keep if v.positive and v.kind == "candidate")
        tables[name] = metric_table(apply_positives(protocol, *extended_positives(protocol, keep)),
                                    scores)
    out: dict[str, Any] = {"metric": metric, "verified_positives": found_by, "directions": {}}
    for d in protocol.directions:
        ref = {m: tables["all"][m][d][metric] for m in scores}
        rows = {}
        for name in subsets:
            vals = {m: tables[name][m][d][metric] for m in scores}
            tau = kendall([ref[m] for m in scores], [vals[m] for m in scores])
            rr, rv = _ranks(ref), _ranks(vals)
            rows[name] = {"tau_vs_all": None if np.isnan(tau) else tau,
                          "max_rank_shift": max(abs(rr[m] - rv[m]) for m in scores),
                          "ranking": sorted(scores, key=lambda m: rv[m])}
        out["directions"][d] = rows
    return out
