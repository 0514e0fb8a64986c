"""Sentences of the generated reports: paragraphs wrapped at 96 columns, lists in words, the
mark of numbers that no result file records."""

from __future__ import annotations

import re
import textwrap

DAGGER = "†"


def wrap(text: str, prefix: str = "") -> list[str]:
    """A paragraph or list item, wrapped at 96 columns under its marker; a token that would
    start a list, heading or quote at the start of a line ("- w", "= 30", ">= 9") stays on the
    line before."""
    glued = re.sub(r" (?=(?:[-+*=]|#+|\d+[.)])(?: |$)|>)", "\xa0", text)
    lines = textwrap.wrap(glued, 96, initial_indent=prefix, subsequent_indent=" " * len(prefix),
                          break_long_words=False, break_on_hyphens=False)
    return [line.replace("\xa0", " ") for line in lines]


def and_list(items) -> str:
    """ "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def value_range(values, fmt: str = "{:.1f}", sep: str = "-") -> str:
    """"lo-hi" of numbers as ``fmt`` prints them (one value if both print alike); "lo to hi"
    when a printed bound is negative, so that the dash cannot read as a minus sign."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    if lo == hi:
        return lo
    return f"{lo} to {hi}" if "-" in lo + hi else f"{lo}{sep}{hi}"


def minutes(seconds: float) -> str:
    """A duration in whole minutes (at least one): 1310.4 -> "22 minutes", 50 -> "1 minute"."""
    m = max(1, round(seconds / 60))
    return f"{m} minute{'s' * (m != 1)}"
