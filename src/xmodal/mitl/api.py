"""The Python API of a campaign: open it, read its HITs, every answer, and the verdicts.

    from xmodal.mitl.api import Campaign

    with Campaign.open("flickr.db") as c:      # read-only; works on an archived copy
        hits = c.hits()                        # each HIT: items (pair, role), assignments
        answers = c.answers()                  # every answer, one dict per worker and pair
        verdicts = c.aggregate(rule="eccv")    # per pair: its counted answers and verdict

``xmodal mitl answers`` uses it. :class:`Campaign` is the store's campaign
(:class:`xmodal.mitl.store.Campaign`, every method of it too) with these readers added.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xmodal.mitl import store
from xmodal.mitl.aggregate import Verdict, verdicts
from xmodal.mitl.judgments import answer_rows, hit_rows


class Campaign(store.Campaign):
    """A campaign database with readers for its HITs, answers and verdicts."""

    @classmethod
    def open(cls, path: str | Path, readonly: bool = True) -> Campaign:
        """An existing campaign, read-only unless asked (so it works on an archived or shared
        copy, and never changes the file)."""
        return cls(path, readonly=readonly)

    def hits(self) -> list[dict[str, Any]]:
        """Every HIT: ``hit``, ``replication``, ``entry_test``, its ``items`` (pair, role,
        image and text ids) in the order shown, and its ``assignments`` by status."""
        return hit_rows(self)

    def answers(self) -> list[dict[str, Any]]:
        """Every answer of every submitted assignment: worker, platform, HIT, pair, role,
        answer (None: "can't tell"), reason, times, status (:func:`.judgments.answer_rows`)."""
        return answer_rows(self)

    def aggregate(self, rule: str = "eccv", ties: str = "negative",
                  min_gold_accuracy: float | None = None) -> list[Verdict]:
        """The verdict of every judged pair (:func:`xmodal.mitl.aggregate.verdicts`): its
        counted answers and ``positive`` (True, False, or None for unjudged)."""
        return verdicts(self, rule, ties, min_gold_accuracy)[0]
