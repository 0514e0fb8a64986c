"""Export a campaign's extended positives: the protocol's original positives ∪ verified ones."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.eval.positives import EXPORT_FILE, positives_digest, write_positives
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.aggregate import Verdict

SETTINGS = ("rule", "ties", "min_gold_accuracy")
DEFAULTS = {"rule": "eccv", "ties": "negative", "min_gold_accuracy": None}


def export_settings(stored: dict[str, Any] | None, given: dict[str, Any]) -> dict[str, Any]:
    """The aggregation settings an export uses: those ``aggregate`` ran with (stored in the
    campaign), completed by the defaults; an option given that differs from them is refused,
    so an export never holds answers that the reported aggregation dropped."""
    if stored is None:
        return {k: DEFAULTS[k] if given.get(k) is None else given[k] for k in SETTINGS}
    used = {k: stored.get(k, DEFAULTS[k]) for k in SETTINGS}
    differ = {k: v for k, v in given.items() if v is not None and v != used[k]}
    if differ:
        ran = " ".join(f"--{k.replace('_', '-')} {used[k]}" for k in SETTINGS
                       if used[k] is not None)
        asked = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in differ.items())
        raise XmodalError(f"'xmodal mitl aggregate' ran with {ran or 'its defaults'}, export "
                          f"was asked for {asked}: the exported positives would not be the "
                          "aggregated ones. Run 'xmodal mitl aggregate' with the settings you "
                          "want (export then uses them), or drop the export options.")
    return used


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


def export(protocol: Protocol, found: list[Verdict], out: str | Path,
           settings: dict[str, Any] | None = None, campaign: str | Path | None = None,
           dropped_workers: list[str] | None = None) -> dict[str, Any]:
    """Write the positives folder, with ``mitl_export.json``: where they come from (campaign,
    protocol, aggregation settings, dropped workers, counts) and the files' digest."""
    i2c, c2i = extended_positives(protocol, found)
    write_positives(out, i2c, c2i)
    n_orig = {n: int(d.relevance.nnz) for n, d in protocol.directions.items()}
    result = {"out": str(out), "verified_positive": sum(1 for v in found if v.positive),
              "original_positives": n_orig,
              "extended_positives": {"i2t": sum(map(len, i2c.values())),
                                     "t2i": sum(map(len, c2i.values()))}}
    record = {"campaign": str(Path(campaign).resolve()) if campaign else None,
              "protocol": protocol.name,
              "aggregate": {k: (settings or DEFAULTS).get(k) for k in SETTINGS},
              "dropped_workers": dropped_workers or [],
              "pairs_with_verdict": len(found), **result, "out": str(Path(out).resolve()),
              "sha256": positives_digest(out), "exported_at": time.time()}
    (Path(out) / EXPORT_FILE).write_text(json.dumps(record, indent=1) + "\n")
    result["aggregate"] = record["aggregate"]
    result["sha256"] = record["sha256"]
    return result
