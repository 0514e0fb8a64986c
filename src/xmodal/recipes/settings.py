"""The settings table: every registered model name is one frozen :class:`Setting` record.

A record holds the estimator (``"module:Class"``), its hyperparameters, the features it reads,
where the values come from (a paper's table row, or the dev / cross-validation selection that
chose them) and how it scores an evaluation protocol. ``xmodal eval -m NAME``,
``xmodal train FAMILY --setting NAME`` and ``xmodal models`` all read these records; the records
themselves live in the recipe module of their dataset (``xmodal.recipes.corel5k`` ...).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from xmodal.errors import XmodalError

# recipe modules that define SETTINGS, in the order `xmodal models` lists them
RECIPES = (
    "xmodal.recipes.baselines",
    "xmodal.recipes.wikipedia",
    "xmodal.recipes.corel5k",
    "xmodal.recipes.flickr8k",
)

Scorer = Callable[..., Any]


def frozen(mapping: Mapping[str, Any] | None = None, **kw: Any) -> Mapping[str, Any]:
    """A read-only mapping (setting records are immutable)."""
    return MappingProxyType({**(mapping or {}), **kw})


@dataclass(frozen=True)
class Setting:
    """One registered model: estimator + hyperparameters + features + provenance."""

    name: str
    family: str  # what `xmodal train FAMILY` trains (e.g. "kcca"); "" = nothing to train
    estimator: str  # "module:Class"
    params: Mapping[str, Any]
    features: str  # what the estimator reads, in words
    provenance: str  # paper table row, or how the values were selected
    protocols: tuple[str, ...]  # protocols it scores; () = any
    # (setting, protocol name) -> scorer(protocol, direction, seed) -> S
    make_scorer: Callable[[Setting, str], Scorer] = field(repr=False, compare=False)
    feature_params: Mapping[str, Any] = field(default_factory=frozen)

    def estimator_class(self) -> type:
        module, name = self.estimator.split(":")
        return getattr(importlib.import_module(module), name)

    def build(self, **overrides: Any):
        """A fresh, unfitted estimator with this setting's hyperparameters (and ``overrides``)."""
        return self.estimator_class()(**{**self.params, **overrides})

    def scorer(self, protocol_name: str) -> Scorer:
        if self.protocols and protocol_name not in self.protocols:
            raise XmodalError(f"model {self.name!r} scores the protocol(s) "
                              f"{', '.join(self.protocols)}, not {protocol_name!r}")
        return self.make_scorer(self, protocol_name)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready view (for ``xmodal models --json``)."""
        return {"name": self.name, "family": self.family, "estimator": self.estimator,
                "params": dict(self.params), "features": self.features,
                "feature_params": dict(self.feature_params), "provenance": self.provenance,
                "protocols": list(self.protocols)}


def all_settings() -> dict[str, Setting]:
    """Every record of every recipe, by name."""
    table: dict[str, Setting] = {}
    for module in RECIPES:
        for s in importlib.import_module(module).SETTINGS:
            if s.name in table:
                raise RuntimeError(f"setting {s.name!r} is registered twice")
            table[s.name] = s
    return table


def get_setting(name: str, family: str | None = None) -> Setting:
    """The record called ``name`` (for ``family``, also accepting ``FAMILY-NAME`` spelled
    without its prefix, e.g. ``tri5sem`` for ``hodosh-tri5sem``)."""
    table = all_settings()
    if family is not None:
        candidates = [s for s in table.values() if s.family == family]
        for s in candidates:
            if name in (s.name, s.name.split("-", 1)[-1]):
                return s
        raise XmodalError(f"no {family} setting {name!r}; choose from "
                          f"{[s.name for s in candidates]}")
    if name not in table:
        raise XmodalError(f"unknown model {name!r}; `xmodal models` lists them")
    return table[name]
