"""Simulated workers that answer HIT pairs from recorded human judgments (Flickr8K).

Hodosh et al. recorded two kinds of judgment for (test image, caption #2) pairs:

* ``expert``: three experts each scored a pair 1-4 (4 = describes the image without errors,
  3 = minor errors, 2 = some aspects, 1 = unrelated). Expert k's score s becomes worker k's
  answer 5 - s on the HIT scale (4 -> "100% yes", 3 -> "partially yes", 2 -> "mostly no",
  1 -> "100% no").
* ``crowd``: three CrowdFlower workers said yes or no; a pair with y yes-votes and n no-votes
  gives workers 0..y-1 the answer "100% yes" and workers y..y+n-1 "100% no" (the crowd task
  was binary, so the two middle levels are never used).

Simulated worker k answers pair p with the k-th recorded judgment of p. A pair without one
(no recording, or fewer recorded judgments than workers) is left unjudged — never invented —
and counted by the aggregation. Golden pairs are answered the same way, so a simulated HIT goes
to review only when a recorded judgment contradicts the gold label.
"""

from __future__ import annotations

import os
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.mitl.store import Campaign, Worker

SOURCES = ("expert", "crowd")
Recorded = dict[tuple[str, str], list[int]]  # (image id, caption id) -> answers, worker order


def recorded_from_flickr8k(ds, source: str) -> Recorded:
    """The recorded answers of a loaded :class:`xmodal.data.flickr8k.Flickr8k`."""
    if source == "expert":
        return {(e.image_id, e.caption_id): [5 - s for s in e.scores] for e in ds.expert}
    if source == "crowd":
        return {(c.image_id, c.caption_id): [1] * c.n_yes + [4] * c.n_no for c in ds.crowd}
    raise XmodalError(f"--judgments must be one of {SOURCES}, not {source!r}")


def read_judgment_file(path: str | os.PathLike, source: str) -> Recorded:
    """Judgments in Hodosh et al.'s file layout (``ExpertAnnotations.txt``: image, caption,
    three scores 1-4; ``CrowdFlowerAnnotations.txt``: image, caption, yes-fraction, yes, no);
    a bad line is an error naming the file and line."""
    from xmodal.data._io import parse_number, tsv_rows

    if not Path(path).is_file():
        raise XmodalError(f"judgment file not found: {path}")
    out: Recorded = {}
    for lineno, f in tsv_rows(Path(path), 5):
        if source == "expert":
            scores = [parse_number(s, int, path, lineno) for s in f[2:5]]
            if any(s not in (1, 2, 3, 4) for s in scores):
                raise XmodalError(f"{path}:{lineno}: expert scores must be 1-4, got {scores}")
            out[(f[0], f[1])] = [5 - s for s in scores]
        elif source == "crowd":
            yes, no = (parse_number(s, int, path, lineno) for s in f[3:5])
            if yes < 0 or no < 0:
                raise XmodalError(f"{path}:{lineno}: vote counts must be >= 0")
            out[(f[0], f[1])] = [1] * yes + [4] * no
        else:
            raise XmodalError(f"--judgments must be one of {SOURCES}, not {source!r}")
    return out


def simulate(campaign: Campaign, recorded: Recorded, source: str) -> dict[str, int]:
    """Let simulated workers ``sim-SOURCE-k`` take and submit every HIT slot they can."""
    replication = campaign.q("SELECT COALESCE(MAX(replication), 0) FROM hits")[0][0]
    if not replication:
        raise XmodalError(f"{campaign.path}: the campaign has no HITs (run 'xmodal mitl hits')")
    workers = []
    for k in range(replication):
        name = f"sim-{source}-{k}"
        if not campaign.q("SELECT 1 FROM workers WHERE name = ?", (name,)):
            campaign.add_worker(name)
        workers.append((k, campaign.q("SELECT id, name, role FROM workers WHERE name = ?",
                                      (name,))[0]))
    counts = {"submitted": 0, "review": 0, "answered": 0, "unjudged": 0}
    for k, row in workers:
        worker = Worker(*row)
        while (aid := campaign.next_assignment(worker)) is not None:
            a = campaign.assignment(aid, worker)
            answers = {}
            for item in a["items"]:
                got = recorded.get((item["image_id"], item["text_id"]), [])
                answers[item["pair_id"]] = (got[k] if k < len(got) else None, None)
                counts["answered" if k < len(got) else "unjudged"] += 1
            outcome = campaign.submit(aid, worker, answers, allow_unjudged=True)
            counts["submitted"] += 1
            counts["review"] += outcome == "review"
    return counts
