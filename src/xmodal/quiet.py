"""Silence third-party log records that say nothing true or useful to an xmodal user."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _Drop(logging.Filter):
    def __init__(self, match: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__()
        self.match = match

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.match(record)


@contextmanager
def dropped_logs(match: Callable[[logging.LogRecord], bool],
                 loggers: tuple[str, ...] = ("",)) -> Iterator[None]:
    """Drop the records ``match`` selects, logged on ``loggers`` (default: the root logger,
    where ``logging.warning(...)`` goes) while the block runs."""
    flt = _Drop(match)
    targets = [logging.getLogger(name) for name in loggers]
    for lg in targets:
        lg.addFilter(flt)
    try:
        yield
    finally:
        for lg in targets:
            lg.removeFilter(flt)
