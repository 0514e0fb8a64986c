"""Later rounds: propose the next candidates where they help most (beyond ECCV's single round).

Every annotator's top-25 per sampled query is already stored, so a new round draws from the
pairs ranked below K that nobody has judged yet. Two strategies:

* ``deeper``: the plain continuation, rank K+1, K+2, ... for every query alike (the control);
* ``targeted``: a pair's priority is its consensus (the sum over annotators of 1/rank) times
  its query's productivity so far, (verified positives + 1) / (judged pairs + 2): queries whose
  candidates turned out positive, and pairs several annotators agree on, go first.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.aggregate import verdicts
from xmodal.mitl.propose import positive_pairs, protocol_pool
from xmodal.mitl.store import Campaign

STRATEGIES = ("targeted", "deeper")


def propose_next_round(campaign: Campaign, protocol: Protocol, budget: int,
                       strategy: str = "targeted", rule: str = "eccv") -> dict[str, Any]:
    """Add up to ``budget`` new candidate pairs as the next round; returns what was added."""
    if strategy not in STRATEGIES:
        raise XmodalError(f"--strategy must be one of {STRATEGIES}, not {strategy!r}")
    if budget < 1:
        raise XmodalError(f"--budget must be at least 1, got {budget}")
    image_ids, text_ids, _ = protocol_pool(protocol)
    positives = {(image_ids[i], text_ids[t]) for i, t in positive_pairs(protocol)}
    known = {(i, t) for i, t in campaign.q("SELECT image_id, text_id FROM pairs")}
    k = int(campaign.meta("k", 5))
    rows = campaign.q("SELECT q.direction, q.item, p.rank, p.image_id, p.text_id FROM proposals p "
                      "JOIN queries q ON q.id = p.query_id WHERE p.rank > ?", (k,))
    # productivity of each query so far
    found, _ = verdicts(campaign, rule)
    judged: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for v in found:
        if v.positive is None:
            continue
        for key in (("i2t", v.image_id), ("t2i", v.text_id)):
            judged[key][0] += 1
            judged[key][1] += bool(v.positive)
    priority: dict[tuple[str, str], float] = defaultdict(float)
    best_rank: dict[tuple[str, str], int] = {}
    for direction, item, rank, image_id, text_id in rows:
        pair = (image_id, text_id)
        if pair in known or pair in positives:
            continue
        n, pos = judged.get((direction, item), (0, 0))
        priority[pair] += (1.0 / rank) * (pos + 1) / (n + 2)
        best_rank[pair] = min(rank, best_rank.get(pair, rank))
    if strategy == "targeted":
        order = sorted(priority, key=lambda p: (-priority[p], p))
    else:
        order = sorted(best_rank, key=lambda p: (best_rank[p], -priority[p], p))
    chosen = order[:budget]
    if not chosen:
        raise XmodalError("no unjudged pair is left in the annotators' stored top-25 lists")
    round_ = int(campaign.meta("round", 1)) + 1
    with campaign.write() as c:
        campaign.set_meta(c, "round", round_)
        for image_id, text_id in chosen:
            campaign.add_pair(c, image_id, text_id, "candidate", round_)
    result = {"round": round_, "strategy": strategy, "added": len(chosen),
              "available": len(priority)}
    campaign.save_result(f"propose-round{round_}", result)
    return result


def yield_curve(campaign: Campaign, round_: int, rule: str = "eccv") -> dict[str, Any]:
    """Verified positives found against judgments spent, HIT by HIT, within one round."""
    found, _ = verdicts(campaign, rule)
    verdict = {v.pair_id: v for v in found}
    hits = campaign.q("SELECT id, replication FROM hits WHERE round = ? ORDER BY id", (round_,))
    spent, answered, positives = [0], [0], [0]
    for hit, _replication in hits:
        pairs = [pid for pid, kind in campaign.q(
            "SELECT p.id, p.kind FROM hit_items hi JOIN pairs p ON p.id = hi.pair_id WHERE "
            "hi.hit_id = ?", (hit,)) if kind == "candidate"]
        n_answers = sum(len(verdict[p].answers) for p in pairs if p in verdict)
        shown = campaign.q(
            "SELECT COUNT(*) FROM judgments j JOIN assignments a ON a.id = j.assignment_id "
            "JOIN pairs p ON p.id = j.pair_id WHERE a.hit_id = ? AND p.kind = 'candidate'",
            (hit,))[0][0]
        spent.append(spent[-1] + shown)
        answered.append(answered[-1] + n_answers)
        positives.append(positives[-1] + sum(1 for p in pairs
                                             if p in verdict and verdict[p].positive))
    return {"round": round_, "judgments_shown": spent, "judgments_answered": answered,
            "positives": positives}
