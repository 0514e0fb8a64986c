"""Resolve a ``--model NAME_OR_PATH`` to a scorer for an evaluation protocol.

A *scorer* is ``scorer(protocol, direction, seed) -> S`` where ``S`` has shape
(len(direction.image_ids), len(direction.text_ids)), higher = better.

Model families live in their own modules; each exports ``EVAL_MODELS: dict[str, factory]`` where
``factory(protocol_name) -> scorer``. A path to a saved model directory is resolved through the
``"type"`` field of its ``config.json`` and the ``SAVED_MODEL_TYPES`` dict of the provider modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.models.modeldir import read_config

Scorer = Callable[..., Any]

# Modules that provide EVAL_MODELS and/or SAVED_MODEL_TYPES. Imported lazily, only when needed.
PROVIDERS = [
    "xmodal.models.random_model",
    "xmodal.models.rasiwasia",
    "xmodal.models.hodosh",
    "xmodal.models.relevance",
    "xmodal.models.dual",
]


def _provider(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def list_models() -> list[str]:
    names: list[str] = []
    for module in PROVIDERS:
        mod = _provider(module)
        if mod is not None:
            names.extend(getattr(mod, "EVAL_MODELS", {}))
    return sorted(names)


def get_scorer(name_or_path: str, protocol_name: str) -> Scorer:
    """The scorer for a registered model name or a saved model directory."""
    path = Path(name_or_path)
    if path.is_dir():
        kind = read_config(path).get("type")
        config_file = path / "config.json"
        for module in PROVIDERS:
            mod = _provider(module)
            loaders = getattr(mod, "SAVED_MODEL_TYPES", {}) if mod else {}
            if kind in loaders:
                return loaders[kind](path, protocol_name)
        raise XmodalError(f"{config_file}: unknown model type {kind!r}")
    for module in PROVIDERS:
        mod = _provider(module)
        factories = getattr(mod, "EVAL_MODELS", {}) if mod else {}
        if name_or_path in factories:
            return factories[name_or_path](protocol_name)
    raise XmodalError(
        f"unknown model {name_or_path!r}: not a saved model directory nor one of {list_models()}"
    )
