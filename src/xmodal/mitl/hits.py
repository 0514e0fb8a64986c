"""Bundle candidate pairs into HITs: N pairs to judge plus one known positive and one known
negative, shuffled (ECCV Caption §3.2: 16 + 2). The known negative is a random pair that is in
no annotator's stored top-25 and is not positive.
The known positive is one of the protocol's positive pairs; with ``--judge-originals`` the same
pair may be judged as an original in another HIT (a pair's role is per HIT: judge or gold)."""

from __future__ import annotations

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.propose import positive_pairs, protocol_pool
from xmodal.mitl.store import Campaign

DEFAULT_SIZE = 16
DEFAULT_REPLICATION = 3


def make_hits(campaign: Campaign, protocol: Protocol, size: int = DEFAULT_SIZE,
              replication: int = DEFAULT_REPLICATION, seed: int = 0) -> list[int]:
    """HITs over every candidate (and original) pair not yet in a HIT; returns their ids."""
    if size < 1:
        raise XmodalError(f"--size must be at least 1, got {size}")
    if replication < 1:
        raise XmodalError(f"--judgments must be at least 1, got {replication}")
    pending = campaign.unassigned_pairs()
    if not pending:
        raise XmodalError(f"{campaign.path}: no candidate pairs waiting for a HIT (run "
                          "'xmodal mitl propose' first)")
    image_ids, text_ids, _ = protocol_pool(protocol)
    positives = sorted(positive_pairs(protocol))
    if not positives:
        raise XmodalError(f"protocol {protocol.name!r} has no positive pair to use as gold")
    near = {(i, t) for i, t in campaign.q("SELECT image_id, text_id FROM proposals")}
    near |= {(i, t) for i, t in campaign.q("SELECT image_id, text_id FROM pairs WHERE kind "
                                             "IN ('candidate', 'original')")}
    gold_pos = [(image_ids[i], text_ids[t]) for i, t in positives]
    pos_ids = set(gold_pos)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pending))
    round_ = int(campaign.meta("round", 1))
    hits = []
    with campaign.write() as c:
        for start in range(0, len(order), size):
            chunk = [(pending[j], "judge") for j in order[start:start + size]]
            in_chunk = {p for p, _ in chunk}
            for _ in range(100):  # a known positive not already among this HIT's pairs
                gp_id = campaign.add_pair(c, *gold_pos[rng.integers(len(gold_pos))], "gold_pos",
                                          round_)
                if gp_id not in in_chunk:
                    break
            for _ in range(10_000):
                gn = (image_ids[rng.integers(len(image_ids))], text_ids[rng.integers(len(text_ids))])
                if gn not in near and gn not in pos_ids:
                    break
            else:
                raise XmodalError("could not draw a known negative outside every annotator's "
                                  "top-25; the pool is too small for gold pairs")
            chunk.append((gp_id, "gold_pos"))
            chunk.append((campaign.add_pair(c, *gn, "gold_neg", round_), "gold_neg"))
            shuffled = [chunk[j] for j in rng.permutation(len(chunk))]
            hits.append(campaign.add_hit(c, shuffled, round_, replication))
    return hits
