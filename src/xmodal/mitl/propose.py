"""Propose candidate pairs: the top-K of several machine annotators for a sample of queries.

ECCV Caption §3.1–3.2: for each sampled query (both directions), each annotator's top-K items
become candidates; pairs that are already positive are dropped and duplicates merged. Each
annotator's top-``depth`` (25) is stored as well: the known negatives of the HITs must lie
outside all of them, and later rounds draw deeper candidates from them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.store import Campaign

DEFAULT_K = 5
DEPTH = 25


@dataclass
class Annotator:
    name: str
    spec: str  # what built it: a model name, a saved model directory or a score file
    scores: dict[str, np.ndarray]  # images x texts, by direction


def parse_spec(spec: str) -> tuple[str, str]:
    """``NAME=SPEC`` or ``SPEC`` (named after the model or the file's stem)."""
    name, sep, rest = spec.partition("=")
    if sep and name and rest:
        return name, rest
    return (Path(spec).stem if spec.endswith((".npy", ".npz")) else Path(spec).name), spec


def load_annotator(spec: str, protocol: Protocol, seed: int = 0) -> Annotator:
    """A registered model name, a saved model directory, or a .npy/.npz score file."""
    from xmodal.eval.runner import direction_scores
    from xmodal.eval.score_files import load_score_file
    from xmodal.factory import get_scorer

    name, source = parse_spec(spec)
    if source.endswith((".npy", ".npz")):
        return Annotator(name, source, load_score_file(source, protocol))
    scorer = get_scorer(source, protocol.name)
    return Annotator(name, source, direction_scores(protocol, scorer, seed))


def protocol_pool(protocol: Protocol) -> tuple[list[str], list[str], list[str]]:
    """The one image pool and text pool that both directions rank (required by a campaign)."""
    dirs = list(protocol.directions.values())
    first = dirs[0]
    for d in dirs[1:]:
        if d.image_ids != first.image_ids or d.text_ids != first.text_ids:
            raise XmodalError(f"protocol {protocol.name!r} ranks different pools in its two "
                              "directions; a campaign needs one image pool and one text pool")
    texts = list(first.texts) if len(first.texts) == len(first.text_ids) else [
        f"(text {t}: not available)" for t in first.text_ids]
    return first.image_ids, first.text_ids, texts


def positive_pairs(protocol: Protocol) -> set[tuple[int, int]]:
    """(image index, text index) pairs relevant in any direction."""
    out: set[tuple[int, int]] = set()
    for d in protocol.directions.values():
        rel = d.relevance.tocoo()
        out.update(zip(rel.row.tolist(), rel.col.tolist()))
    return out


def sample_queries(protocol: Protocol, n: int | None, seed: int) -> dict[str, np.ndarray]:
    """A seeded sample of ``n`` queries per direction among those with at least one positive."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, d in protocol.directions.items():
        has = np.flatnonzero(np.diff(d.query_relevance.indptr) > 0)
        if n is not None and n < len(has):
            has = np.sort(rng.choice(has, size=n, replace=False))
        out[name] = has
    return out


def top_items(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the ``depth`` best-scored items per row, best first (ties by index)."""
    depth = min(depth, scores.shape[1])
    part = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
    order = np.lexsort((part, -np.take_along_axis(scores, part, 1)), axis=1)
    return np.take_along_axis(part, order, 1)


def propose(
    campaign: Campaign,
    protocol: Protocol,
    annotators: Sequence[Annotator],
    n_queries: int | None = 100,
    k: int = DEFAULT_K,
    seed: int = 0,
    judge_originals: bool = False,
    round_: int = 1,
) -> dict[str, Any]:
    """Store the sampled queries, every annotator's top-25 and the top-K candidates; returns
    (and stores as result ``propose``) the per-annotator statistics."""
    if not annotators:
        raise XmodalError("propose needs at least one machine annotator (--annotator)")
    names = [a.name for a in annotators]
    if len(set(names)) != len(names):
        raise XmodalError(f"annotator names must differ: {names} (use NAME=SPEC)")
    if k < 1 or k > DEPTH:
        raise XmodalError(f"--k must be between 1 and {DEPTH}, got {k}")
    image_ids, text_ids, texts = protocol_pool(protocol)
    positives = positive_pairs(protocol)
    queries = sample_queries(protocol, n_queries, seed)
    ds = protocol.dataset
    # absolute, so the campaign can be served and exported from any folder
    paths = [str(Path(ds.image_path(i)).expanduser().resolve()) if hasattr(ds, "image_path")
             else None for i in image_ids]

    by_annotator: dict[str, set[tuple[int, int]]] = {a.name: set() for a in annotators}
    proposed = {a.name: 0 for a in annotators}
    dropped = {a.name: 0 for a in annotators}
    with campaign.write() as c:
        campaign.set_meta(c, "round", round_)
        campaign.add_items(c, zip(image_ids, paths), zip(text_ids, texts))
        qids: dict[str, list[int]] = {}
        for direction, rows in queries.items():
            pool = image_ids if direction == "i2t" else text_ids
            qids[direction] = [campaign.query_id(c, direction, pool[r], round_) for r in rows]
        for a in annotators:
            aid = campaign.annotator_id(c, a.name, a.spec)
            for direction, rows in queries.items():
                d = protocol.directions[direction]
                top = top_items(d.query_scores(np.asarray(a.scores[direction]))[rows], DEPTH)
                records = []
                for qid, row, items in zip(qids[direction], rows, top):
                    for rank, item in enumerate(items.tolist(), 1):
                        pair = (row, item) if direction == "i2t" else (item, row)
                        records.append((aid, qid, rank, image_ids[pair[0]], text_ids[pair[1]]))
                        if rank <= k:
                            proposed[a.name] += 1
                            if pair in positives:
                                dropped[a.name] += 1
                            else:
                                by_annotator[a.name].add(pair)
                c.executemany("INSERT OR REPLACE INTO proposals VALUES(?, ?, ?, ?, ?)", records)
        candidates = set().union(*by_annotator.values())
        for i, t in sorted(candidates):
            campaign.add_pair(c, image_ids[i], text_ids[t], "candidate", round_)
        if judge_originals:
            for direction, rows in queries.items():
                rel = protocol.directions[direction].query_relevance
                for row in rows:
                    for item in rel.indices[rel.indptr[row]:rel.indptr[row + 1]].tolist():
                        i, t = (row, item) if direction == "i2t" else (item, row)
                        campaign.add_pair(c, image_ids[i], text_ids[t], "original", round_)
        campaign.set_meta(c, "k", k)
    stats = annotator_stats(by_annotator, proposed, dropped)
    stats.update({"k": k, "depth": DEPTH, "seed": seed, "round": round_,
                  "queries": {d: int(len(r)) for d, r in queries.items()}})
    campaign.save_result(f"propose-round{round_}", stats)
    return stats


def annotator_stats(by_annotator: dict[str, set], proposed: dict[str, int],
                    dropped: dict[str, int]) -> dict[str, Any]:
    """ECCV §3.1–3.2: candidates per annotator, unique contributions, pairwise overlap."""
    names = list(by_annotator)
    union = set().union(*by_annotator.values()) if names else set()
    per = {}
    for n in names:
        others = set().union(*(by_annotator[m] for m in names if m != n))
        per[n] = {"proposed": proposed[n], "already_positive": dropped[n],
                  "candidates": len(by_annotator[n]),
                  "unique": len(by_annotator[n] - others)}
    overlap = {}
    for a, b in itertools.combinations(names, 2):
        inter = len(by_annotator[a] & by_annotator[b])
        both = len(by_annotator[a] | by_annotator[b])
        overlap[f"{a}|{b}"] = {"shared": inter, "jaccard": inter / both if both else 0.0}
    return {"annotators": per, "overlap": overlap, "total_proposed": sum(proposed.values()),
            "unique_candidates": len(union)}

