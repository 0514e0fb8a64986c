"""Resolve a ``--model NAME_OR_PATH`` to a scorer for an evaluation protocol.

A *scorer* is ``scorer(protocol, direction, seed) -> S`` where ``S`` has shape
(len(direction.image_ids), len(direction.text_ids)), higher = better. A scorer that sets
``per_direction = True`` is called once per direction; otherwise the runner scores a pool once
and shares ``S`` between its two directions (:func:`xmodal.eval.runner.direction_scores`).

Three kinds of name, one path each:

- a registered setting (``xmodal models``): its record in the settings table
  (:mod:`xmodal.recipes.settings`) builds the scorer;
- a saved model directory: :func:`xmodal.models.load` reads it, and the recipe that declares its
  ``type`` in ``SAVED_MODEL_SCORERS`` scores it;
- ``openclip:ARCH:CHECKPOINT``: an open_clip model, scored like any joint-space model;
- ``python:MODULE:FACTORY`` (an object with ``embed_images`` / ``embed_texts``) or ``FILE.npz``
  (precomputed embeddings with image and text ids): :mod:`xmodal.models.embedding_specs`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError

Scorer = Callable[..., Any]


def list_models() -> list[str]:
    from xmodal.recipes.settings import all_settings

    return sorted(all_settings())


def _saved_model_scorer(path: Path, protocol_name: str) -> Scorer:
    from xmodal.models.modeldir import CONFIG_FILE, load, read_config
    from xmodal.recipes.settings import RECIPES

    kind = read_config(path).get("type")
    for module in RECIPES:
        scorers = getattr(importlib.import_module(module), "SAVED_MODEL_SCORERS", {})
        if kind in scorers:
            return scorers[kind](load(path), path, protocol_name)
    raise XmodalError(f"{path / CONFIG_FILE}: a {kind!r} model cannot score evaluation "
                      "protocols")


def get_scorer(name_or_path: str, protocol_name: str) -> Scorer:
    """The scorer for a registered model name, a saved model directory or a model spec."""
    if name_or_path.startswith("python:") or name_or_path.endswith(".npz"):
        from xmodal.models.embedding_specs import spec_scorer

        return spec_scorer(name_or_path)
    path = Path(name_or_path)
    if path.is_dir():
        return _saved_model_scorer(path, protocol_name)
    if name_or_path.startswith("openclip:"):
        from xmodal.models.dual import load_embedding_model
        from xmodal.recipes.flickr8k import embedding_scorer

        return embedding_scorer(load_embedding_model(name_or_path))
    from xmodal.recipes.settings import all_settings

    table = all_settings()
    if name_or_path not in table:
        raise XmodalError(f"unknown model {name_or_path!r}: not a saved model directory nor one "
                          f"of {sorted(table)}")
    return table[name_or_path].scorer(protocol_name)
