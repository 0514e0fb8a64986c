"""The search filters as command-line options, generated from the registry
(:data:`xmodal.index.filters.FILTERS`): a command decorated with :func:`with_filters` declares
one parameter ``filters`` and receives a :class:`~xmodal.index.filters.PhotoFilter` there; its
``--after``, ``--place``, ... options come from the filter specs (their help and example), and
a filter registered later appears in every such command."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Optional

import typer

FILTER_HELP = "Filters (combine freely)"


def _option(spec: Any) -> inspect.Parameter:
    shown = spec.example in spec.help or "e.g." in spec.help
    example = "" if shown else f" Example: {spec.example}."
    return inspect.Parameter(
        spec.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=typer.Option(None, f"--{spec.name}", help=spec.help + example,
                             rich_help_panel=FILTER_HELP),
        annotation=Optional[spec.type])  # noqa: UP045 - Typer reads the annotation object


def with_filters(func: Callable[..., Any]) -> Callable[..., Any]:
    """Replace ``func``'s ``filters`` parameter by one option per registered filter."""
    from xmodal.index import filters as registry

    hints = typing.get_type_hints(func)
    own = [p.replace(annotation=hints.get(p.name, p.annotation))
           for p in inspect.signature(func).parameters.values()]
    at = [p.name for p in own].index("filters")

    @functools.wraps(func)
    def command(*args: Any, **kwargs: Any) -> Any:
        given = {n: kwargs.pop(n) for n in registry.names() if n in kwargs}
        kwargs["filters"] = registry.PhotoFilter(
            **{n: v for n, v in given.items() if v is not None})
        return func(*args, **kwargs)

    def refresh() -> None:
        params = own[:at] + [_option(s) for s in registry.FILTERS] + own[at + 1:]
        command.__signature__ = inspect.Signature(params)
        command.__annotations__ = {p.name: p.annotation for p in params}

    refresh()
    registry.on_change(refresh)
    return command
