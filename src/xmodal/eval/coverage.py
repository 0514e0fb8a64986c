"""What a benchmark protocol ran on, against the benchmark's official sizes.

A builder of a standard benchmark (COCO 5K / 1K, ECCV Caption, CxC, PMRP, Flickr30K 1K,
Crossmodal-3600) puts its official counts in ``protocol.extra["official"]``::

    {"benchmark": "COCO 5K test", "images": 5000, "texts": 25000,
     "queries": {"i2t": 1261, "t2i": 1332}}      # queries: only where they differ from the gallery

:func:`coverage` compares them with the images, captions and queries (queries with at least one
positive) of the protocol as built from the user's copy. A copy with fewer is *partial*: the
report's ``coverage.label`` says so ("partial (239 of 5,000 images)"), ``xmodal eval`` puts it
in the table title and ``--strict`` refuses it (:func:`check_strict`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xmodal.errors import XmodalError


def _n_queries(protocol, name: str) -> int:
    rel = protocol.directions[name].query_relevance
    return int(np.count_nonzero(np.diff(rel.indptr)))


def coverage(protocol) -> dict[str, Any] | None:
    """``{"benchmark", "images", "texts", "queries", "official", "partial", "missing",
    "label"}``, or None for a protocol without official sizes."""
    official = (protocol.extra or {}).get("official")
    if not official:
        return None
    d = next(iter(protocol.directions.values()))
    got = {"images": len(d.image_ids), "texts": len(d.text_ids),
           "queries": {n: _n_queries(protocol, n) for n in protocol.directions}}
    missing = []
    for key, what in (("images", "images"), ("texts", "captions")):
        if key in official and got[key] < official[key]:
            missing.append(f"{got[key]:,} of {official[key]:,} {what}")
    for name, n in (official.get("queries") or {}).items():
        if name in got["queries"] and got["queries"][name] < n:
            missing.append(f"{got['queries'][name]:,} of {n:,} {name} queries")
    return {
        "benchmark": official.get("benchmark", protocol.name),
        **got,
        "official": {k: v for k, v in official.items() if k != "benchmark"},
        "partial": bool(missing),
        "missing": missing,
        "label": f"partial ({missing[0]})" if missing else "complete",
    }


def check_strict(report: dict[str, Any]) -> None:
    """XmodalError when the report's protocol ran on a partial copy of its benchmark."""
    cov = report.get("coverage") or {}
    if cov.get("partial"):
        raise XmodalError(
            f"{report.get('protocol')}: your copy of {cov['benchmark']} is partial ("
            + "; ".join(cov["missing"]) + "); --strict refuses it: complete the copy, or drop "
            "--strict to score it labelled partial")
