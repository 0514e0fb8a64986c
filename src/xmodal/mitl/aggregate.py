"""Aggregate the judgments of a campaign: a verdict per pair, worker quality, agreement.

Rule: each answer is binarised (``eccv``: "100% yes" or "partially yes" is positive; ``strict``:
only "100% yes"), then the pair's verdict is the majority of its workers' binarised answers;
a tie goes to ``ties`` ("negative" by default, or "positive", or "unjudged"). Only accepted
assignments count (a HIT in review counts once a reviewer accepts it). Workers whose gold
accuracy is under ``min_gold_accuracy`` can be dropped. Agreement is Krippendorff's α from the
``krippendorff`` package, nominal over the binarised answers and ordinal over the four levels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.mitl.answers import RULES, is_gold_correct, is_positive
from xmodal.mitl.store import Campaign

TIES = ("negative", "positive", "unjudged")


@dataclass(frozen=True)
class Verdict:
    pair_id: int
    image_id: str
    text_id: str
    kind: str
    answers: tuple[int, ...]  # the counted workers' answers (None-answers left out)
    positive: bool | None  # None: unjudged (no counted answer, or a tie under ties="unjudged")


def gold_accuracy(campaign: Campaign) -> dict[str, dict[str, Any]]:
    """Per worker: golden pairs answered, answered correctly, accuracy."""
    seen: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for worker, kind, answer in campaign.submitted_gold():
        if answer is None:
            continue
        seen[worker][0] += 1
        seen[worker][1] += is_gold_correct(kind, answer)
    return {w: {"gold": n, "correct": ok, "accuracy": ok / n} for w, (n, ok) in seen.items()}


def verdicts(campaign: Campaign, rule: str = "eccv", ties: str = "negative",
             min_gold_accuracy: float | None = None) -> tuple[list[Verdict], list[str]]:
    """Every judged non-gold pair's verdict, and the workers dropped for low gold accuracy."""
    if rule not in RULES:
        raise XmodalError(f"unknown rule {rule!r}; choose from {sorted(RULES)}")
    if ties not in TIES:
        raise XmodalError(f"--ties must be one of {TIES}, not {ties!r}")
    dropped: list[str] = []
    if min_gold_accuracy is not None:
        dropped = sorted(w for w, g in gold_accuracy(campaign).items()
                         if g["accuracy"] < min_gold_accuracy)
    by_pair: dict[int, list] = {}
    answers: dict[int, list[int]] = defaultdict(list)
    for pid, image_id, text_id, kind, worker, answer in campaign.accepted_judgments():
        if worker in dropped:
            continue
        by_pair[pid] = [image_id, text_id, kind]
        if answer is not None:
            answers[pid].append(answer)
    out = []
    for pid, (image_id, text_id, kind) in by_pair.items():
        a = tuple(answers.get(pid, ()))
        yes = sum(is_positive(x, rule) for x in a)
        if not a or (2 * yes == len(a) and ties == "unjudged"):
            positive = None
        elif 2 * yes == len(a):
            positive = ties == "positive"
        else:
            positive = 2 * yes > len(a)
        out.append(Verdict(pid, image_id, text_id, kind, a, positive))
    return out, dropped


def agreement(found: list[Verdict], rule: str = "eccv") -> dict[str, Any]:
    """Krippendorff's α over pairs with at least two counted answers."""
    import krippendorff

    multi = [v for v in found if len(v.answers) >= 2]
    if len(multi) < 2:
        return {"pairs": len(multi), "alpha_binary": None, "alpha_ordinal": None}
    levels = np.zeros((len(multi), 4))
    binary = np.zeros((len(multi), 2))
    for n, v in enumerate(multi):
        for a in v.answers:
            levels[n, a - 1] += 1
            binary[n, int(is_positive(a, rule))] += 1

    def alpha(counts: np.ndarray, level: str) -> float | None:
        if np.count_nonzero(counts.sum(0)) < 2:  # a single value used: α is undefined
            return None
        return float(krippendorff.alpha(value_counts=counts, level_of_measurement=level))

    return {"pairs": len(multi), "alpha_binary": alpha(binary, "nominal"),
            "alpha_ordinal": alpha(levels, "ordinal")}


def summarize(campaign: Campaign, rule: str = "eccv", ties: str = "negative",
              min_gold_accuracy: float | None = None) -> dict[str, Any]:
    """The ``xmodal mitl aggregate`` report (also stored in the campaign as ``aggregate``)."""
    found, dropped = verdicts(campaign, rule, ties, min_gold_accuracy)
    candidates = campaign.q("SELECT COUNT(*) FROM pairs WHERE kind IN ('candidate', 'original')")
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"positive": 0, "negative": 0,
                                                              "unjudged": 0})
    for v in found:
        key = "unjudged" if v.positive is None else ("positive" if v.positive else "negative")
        by_kind[v.kind][key] += 1
    report = {
        "rule": rule, "ties": ties, "min_gold_accuracy": min_gold_accuracy,
        "pairs_to_judge": candidates[0][0],
        "pairs_with_accepted_hits": len(found),
        "verdicts": dict(by_kind),
        "workers": gold_accuracy(campaign),
        "dropped_workers": dropped,
        "agreement": agreement(found, rule),
        "progress": campaign.progress(),
    }
    campaign.save_result("aggregate", report)
    return report
