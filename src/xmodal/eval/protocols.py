"""Evaluation protocols by name: ``get_protocol(name)`` builds one, ``list_protocols()`` lists them.

A protocol holds, for each direction, the images, the texts and which pairs are relevant
(:class:`Direction`, :class:`Protocol`, in :mod:`xmodal.eval.protocol_types`); the built-in
protocols are in :mod:`xmodal.eval.protocol_builders`.
"""

from __future__ import annotations

import os
from typing import Any

from xmodal.errors import XmodalError
from xmodal.eval import benchmark_protocols  # noqa: F401  (registers the local benchmarks)
from xmodal.eval.protocol_builders import BUILDERS, register
from xmodal.eval.protocol_types import Direction, Protocol, pairs_to_relevance

__all__ = ["Direction", "Protocol", "get_protocol", "list_protocols", "pairs_to_relevance",
           "register"]


def list_protocols() -> list[str]:
    return sorted(BUILDERS)


def get_protocol(name: str, data: str | os.PathLike | None = None, **options: Any) -> Protocol:
    """Build protocol ``name`` from the data root ``data`` (see :func:`xmodal.paths.data_root`)."""
    if name not in BUILDERS:
        raise XmodalError(f"unknown protocol {name!r}; choose from {list_protocols()}")
    return BUILDERS[name](data, **options)
