"""The four-level answer scale of ECCV Caption's HITs and the rules that binarise it."""

from __future__ import annotations

ANSWERS = {
    1: "100% yes",
    2: "partially yes, but …",
    3: "mostly no, because …",
    4: "100% no",
}
# "can't tell": a worker may pass on a pair; it is stored as no answer (NULL) and counts as no
# judgment (not a yes, not a no). Platforms get it as answer 0.
SKIP = 0
SKIP_LABEL = "can't tell"
RULES = {
    # ECCV Caption §3.3: "100% yes" or "partially yes" is a positive answer
    "eccv": frozenset({1, 2}),
    # only an unqualified yes counts
    "strict": frozenset({1}),
}


def is_positive(answer: int, rule: str = "eccv") -> bool:
    return answer in RULES[rule]


def is_gold_correct(kind: str, answer: int | None) -> bool:
    """A known positive must get a yes-answer (1-2), a known negative a no-answer (3-4)."""
    if answer is None or not kind.startswith("gold"):
        return True
    return (answer <= 2) == (kind == "gold_pos")
