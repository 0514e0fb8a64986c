"""Export a campaign's extended positives: the protocol's original positives ∪ verified ones."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from xmodal.eval.positives import write_positives
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.aggregate import Verdict


def extended_positives(protocol: Protocol, found: list[Verdict]) -> tuple[dict, dict]:
    """(image -> captions, caption -> images): each direction's own positives plus every pair
    verified positive (a verified pair is positive in both directions)."""
    i2c: dict[str, set[str]] = defaultdict(set)
    c2i: dict[str, set[str]] = defaultdict(set)
    for name, d in protocol.directions.items():
        rel = d.relevance.tocoo()
        for i, t in zip(rel.row.tolist(), rel.col.tolist()):
            if name == "i2t":
                i2c[d.image_ids[i]].add(d.text_ids[t])
            else:
                c2i[d.text_ids[t]].add(d.image_ids[i])
    for v in found:
        if v.positive:
            i2c[v.image_id].add(v.text_id)
            c2i[v.text_id].add(v.image_id)
    return ({k: sorted(v) for k, v in i2c.items()}, {k: sorted(v) for k, v in c2i.items()})


def export(protocol: Protocol, found: list[Verdict], out: str | Path) -> dict[str, Any]:
    i2c, c2i = extended_positives(protocol, found)
    write_positives(out, i2c, c2i)
    n_orig = {n: int(d.relevance.nnz) for n, d in protocol.directions.items()}
    return {"out": str(out), "verified_positive": sum(1 for v in found if v.positive),
            "original_positives": n_orig,
            "extended_positives": {"i2t": sum(map(len, i2c.values())),
                                   "t2i": sum(map(len, c2i.values()))}}
