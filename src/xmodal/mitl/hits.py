"""Bundle candidate pairs into HITs: N pairs to judge plus one known positive and one known
negative, shuffled (ECCV Caption §3.2: 16 + 2). The known negative is a random pair that is in
no annotator's stored top-25 and is not positive.
The known positive is one of the protocol's positive pairs; with ``--judge-originals`` the same
pair may be judged as an original in another HIT (a pair's role is per HIT: judge or gold)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl.propose import positive_pairs, protocol_pool
from xmodal.mitl.store import Campaign

DEFAULT_SIZE = 16
DEFAULT_REPLICATION = 3


GOLD_MODES = ("auto", "none", "file")


def near_pairs(campaign: Campaign) -> set[tuple[str, str]]:
    """Pairs no known negative may be: in an annotator's stored top-25, or up for judging."""
    near = {(i, t) for i, t in campaign.q("SELECT image_id, text_id FROM proposals")}
    return near | {(i, t) for i, t in campaign.q("SELECT image_id, text_id FROM pairs WHERE "
                                                 "kind IN ('candidate', 'original')")}


def negatives_available(campaign: Campaign, protocol: Protocol) -> int:
    """How many pairs could serve as a known negative: outside every annotator's stored top-25,
    not a candidate and not positive (0 for a small collection proposed with every query)."""
    image_ids, text_ids, _ = protocol_pool(protocol)
    near = near_pairs(campaign)
    near |= {(image_ids[i], text_ids[t]) for i, t in positive_pairs(protocol)}
    return len(image_ids) * len(text_ids) - len(near)


def read_gold_file(path: str | Path, protocol: Protocol) -> dict[str, list[list[str]]]:
    """Gold pairs given by the user: a CSV ``image_id,text_id,label`` (label ``positive`` or
    ``negative``), checked against the protocol's pool and positives."""
    import csv

    image_ids, text_ids, _ = protocol_pool(protocol)
    images, texts = set(image_ids), set(text_ids)
    positives = {(image_ids[i], text_ids[t]) for i, t in positive_pairs(protocol)}
    out: dict[str, list[list[str]]] = {"positive": [], "negative": []}
    path = Path(path)
    if not path.is_file():
        raise XmodalError(f"gold file not found: {path}")
    with open(path, newline="", encoding="utf-8-sig") as f:
        for n, row in enumerate(csv.reader(f), 1):
            if not row or (n == 1 and [c.strip().lower() for c in row[:3]] ==
                           ["image_id", "text_id", "label"]):
                continue
            if len(row) < 3:
                raise XmodalError(f"{path}:{n}: expected image_id,text_id,label")
            image, text, label = (c.strip() for c in row[:3])
            if image not in images or text not in texts:
                raise XmodalError(f"{path}:{n}: {image!r} / {text!r} is not an image and a text "
                                  f"of protocol {protocol.name!r}")
            if label not in out:
                raise XmodalError(f"{path}:{n}: label must be positive or negative, not "
                                  f"{label!r}")
            if label == "negative" and (image, text) in positives:
                raise XmodalError(f"{path}:{n}: ({image}, {text}) is a positive of the "
                                  "protocol, not a known negative")
            out[label].append([image, text])
    if not out["positive"] or not out["negative"]:
        raise XmodalError(f"{path}: give at least one positive and one negative gold pair "
                          f"(found {len(out['positive'])} and {len(out['negative'])})")
    return out


def chunks(order: list[int], size: int) -> list[list[int]]:
    """``size`` pairs per HIT; a last HIT of less than half that is folded into the one
    before (no HIT of 1 pair + 2 gold)."""
    out = [order[i:i + size] for i in range(0, len(order), size)]
    if len(out) > 1 and 2 * len(out[-1]) < size:
        last = out.pop()
        out[-1] = out[-1] + last
    return out


def hit_check_pairs(campaign: Campaign, entry: bool) -> set[tuple[str, str]]:
    """(image id, text id) of every pair of the entry test (``entry``), or of every pair of the
    real HITs (not ``entry``): the other kind must not use them as checks."""
    op = "=" if entry else ">"
    return {(i, t) for i, t in campaign.q(
        f"SELECT p.image_id, p.text_id FROM hit_items hi JOIN hits h ON h.id = hi.hit_id JOIN "
        f"pairs p ON p.id = hi.pair_id WHERE h.replication {op} 0")}


class GoldDrawer:
    """Draws the check pairs of HITs: known positives (the protocol's, or the user's gold file)
    and known negatives (the user's, or a random pair outside every annotator's top-25)."""

    def __init__(self, campaign: Campaign, protocol: Protocol, seed: int = 0,
                 exclude: set[tuple[str, str]] = frozenset(), pool: str = "HITs"):
        gold = campaign.meta("gold") or {"mode": "auto"}
        if gold["mode"] == "none":
            raise XmodalError("the campaign was proposed with --gold none: it has no check pairs")
        self.campaign = campaign
        self.image_ids, self.text_ids, _ = protocol_pool(protocol)
        positives = sorted(positive_pairs(protocol))
        self.pos_ids = {(self.image_ids[i], self.text_ids[t]) for i, t in positives}
        if gold["mode"] == "file":
            self.pos = [tuple(p) for p in gold["positive"]]
            self.negs = [tuple(p) for p in gold["negative"]]
        else:
            self.pos = [(self.image_ids[i], self.text_ids[t]) for i, t in positives]
            self.negs = []
        if not self.pos:
            raise XmodalError(f"protocol {protocol.name!r} has no positive pair to use as gold; "
                              "propose with --gold none or --gold FILE")
        # the entry test and the HITs draw their check pairs from separate pools: a pair seen
        # in one is never a check of the other (who remembers the entry test learns nothing)
        self.exclude = set(exclude)
        self.pos = [p for p in self.pos if p not in self.exclude]
        if gold["mode"] == "file":
            self.negs = [p for p in self.negs if p not in self.exclude]
        if not self.pos or (gold["mode"] == "file" and not self.negs):
            raise XmodalError(
                f"no known {'positive' if not self.pos else 'negative'} is left for the {pool}: "
                "the entry test and the HITs need check pairs of their own; give more pairs "
                "with --gold FILE, or a smaller --qualify")
        self.near = near_pairs(campaign)
        self.rng = np.random.default_rng(seed + (7919 if pool == "HITs" else 104729))

    def positive(self, conn, round_: int, avoid: set[int] = frozenset()) -> int:
        """A known positive's pair id, not one of ``avoid`` if it can."""
        for _ in range(100):
            pid = self.campaign.add_pair(conn, *self.pos[self.rng.integers(len(self.pos))],
                                         "gold_pos", round_)
            if pid not in avoid:
                break
        return pid

    def negative(self, conn, round_: int) -> int:
        if self.negs:
            gn = self.negs[self.rng.integers(len(self.negs))]
        else:
            for _ in range(10_000):
                gn = (self.image_ids[self.rng.integers(len(self.image_ids))],
                      self.text_ids[self.rng.integers(len(self.text_ids))])
                if gn not in self.near and gn not in self.pos_ids and gn not in self.exclude:
                    break
            else:
                raise XmodalError(
                    "could not draw a known negative outside every annotator's top-25; the "
                    "collection is too small for drawn gold pairs: propose with --gold none or "
                    "--gold FILE (your own known pairs)")
        return self.campaign.add_pair(conn, *gn, "gold_neg", round_)


def make_qualification(campaign: Campaign, protocol: Protocol, n: int, min_accuracy: float,
                       seed: int = 0) -> int:
    """A qualification HIT of ``n`` check pairs (half known positives, half known negatives)
    that every worker takes before any real HIT; a worker who answers less than
    ``min_accuracy`` of them right gets no real HIT. Returns its id (stored in ``meta``)."""
    if n < 2:
        raise XmodalError(f"--qualify needs at least 2 check pairs, got {n}")
    if not 0 < min_accuracy <= 1:
        raise XmodalError(f"--min-accuracy must be in (0, 1], got {min_accuracy}")
    if campaign.meta("qualify"):
        raise XmodalError(f"{campaign.path} already has a qualification HIT")
    draw = GoldDrawer(campaign, protocol, seed, exclude=hit_check_pairs(campaign, entry=False),
                      pool="entry test")
    rng = np.random.default_rng(seed)
    with campaign.write() as c:
        items: dict[int, str] = {}
        for k in range(n):
            if k % 2 == 0:
                pid = draw.positive(c, 0, set(items))
                role = "gold_pos"
            else:
                pid, role = draw.negative(c, 0), "gold_neg"
            items.setdefault(pid, role)
        pairs = list(items.items())
        shuffled = [pairs[j] for j in rng.permutation(len(pairs))]
        # round 0 and replication 0: never handed out as a real HIT, no judgment slots
        hit = campaign.add_hit(c, shuffled, 0, 0)
        campaign.set_meta(c, "qualify", {"hit": hit, "n": len(pairs),
                                          "min_accuracy": min_accuracy})
    return hit


def make_hits(campaign: Campaign, protocol: Protocol, size: int = DEFAULT_SIZE,
              replication: int = DEFAULT_REPLICATION, seed: int = 0) -> list[int]:
    """HITs over every candidate (and original) pair not yet in a HIT; returns their ids.

    Gold pairs as the campaign's ``gold`` setting says (``xmodal mitl propose --gold``):
    ``auto`` draws them from the protocol, ``file`` from the user's gold pairs, ``none`` adds
    none."""
    if size < 1:
        raise XmodalError(f"--size must be at least 1, got {size}")
    if replication < 1:
        raise XmodalError(f"--judgments must be at least 1, got {replication}")
    pending = campaign.unassigned_pairs()
    if not pending:
        n_hits = campaign.q("SELECT COUNT(*) FROM hits")[0][0]
        if n_hits:
            raise XmodalError(f"{campaign.path}: every candidate pair is already in one of the "
                              f"{n_hits} HITs; for more, propose the next round ('xmodal mitl "
                              "next-round CAMPAIGN --budget N') and run 'hits' again")
        raise XmodalError(f"{campaign.path}: no candidate pairs waiting for a HIT: 'xmodal "
                          "mitl propose' found none outside the known positives (try more "
                          "--queries, a larger --k or other annotators)")
    gold = campaign.meta("gold") or {"mode": "auto"}
    draw = (GoldDrawer(campaign, protocol, seed, exclude=hit_check_pairs(campaign, entry=True))
            if gold["mode"] != "none" else None)
    rng = np.random.default_rng(seed)
    order = [int(j) for j in rng.permutation(len(pending))]
    round_ = int(campaign.meta("round", 1))
    hits = []
    with campaign.write() as c:
        for part in chunks(order, size):
            chunk = [(pending[j], "judge") for j in part]
            if draw is not None:
                in_chunk = {p for p, _ in chunk}
                chunk.append((draw.positive(c, round_, in_chunk), "gold_pos"))
                chunk.append((draw.negative(c, round_), "gold_neg"))
            shuffled = [chunk[j] for j in rng.permutation(len(chunk))]
            hits.append(campaign.add_hit(c, shuffled, round_, replication))
    return hits
