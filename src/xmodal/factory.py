"""The model factory: every model spec resolved in one place, for scoring and for embedding.

A *spec* is what ``--model`` / ``-m`` takes:

- ``None``, ``"dual"``, ``"default"``: the shipped dual encoder; ``"fast"``: the same recipe on
  EfficientNet-Lite0 + MiniLM; ``"efficientnet-minilm-zeroshot"``: its training-free bridge
  alone (the registry of named models, :data:`xmodal.models.embedding_registry.NAMED_MODELS`);
- a registered setting (``xmodal models``): its record in the recipes' settings table;
- a saved model directory (``config.json`` + ``arrays.npz``): opened by its ``type`` through
  :data:`SAVED_TYPES`;
- ``openclip:ARCH:CHECKPOINT``: an open_clip model from a local checkpoint;
- ``python:MODULE:FACTORY``: ``FACTORY()`` returns any object that satisfies
  :class:`xmodal.models.embedding.EmbeddingModel`;
- ``FILE.npz``: precomputed image and text embeddings keyed by the dataset's ids (scoring only);
- ``run:FILE``: another system's ranked list in TREC format (:mod:`xmodal.eval.trec`; scoring
  only).

Two questions, one answer each::

    model = load_embedding_model(spec)        # an EmbeddingModel (photo index, ANN, serving)
    scorer = get_scorer(spec, protocol_name)  # scorer(protocol, direction, seed) -> S

The factory sits above ``models/`` and ``recipes/`` and may import both: registered names and
the scoring of saved models need the recipes (their features and settings), and no module in
``models/`` imports ``recipes/``. The recipes are imported only when a spec needs them, so
loading the default model for photo search never imports research code.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError
from xmodal.models.embedding import EmbeddingModel, check_embedding_model
from xmodal.models.embedding_registry import DEFAULT_MODEL, NAMED_MODELS

Scorer = Callable[..., Any]


@dataclass(frozen=True)
class SavedType:
    """A saved-model ``type``: the estimator class that reads it (``module:Class``), the
    function that scores evaluation protocols with a loaded model (``module:function``, called
    as ``fn(model, path, protocol_name)``; None: the model cannot score protocols), and whether
    the model embeds images and sentences (:class:`EmbeddingModel`)."""

    estimator: str
    scorer: str | None = None
    embeds: bool = False


_WIKIPEDIA = "xmodal.recipes.wikipedia:saved_scorer"
_COREL = "xmodal.recipes.corel5k:saved_scorer"
_EMBEDDING = "xmodal.recipes.flickr8k:embedding_scorer"  # model.score on the protocol's images
SAVED_TYPES: dict[str, SavedType] = {
    "kcca": SavedType("xmodal.models.kcca:KCCA"),
    "hodosh-kcca": SavedType("xmodal.models.hodosh:HodoshKCCA",
                             "xmodal.recipes.flickr8k:saved_hodosh_scorer"),
    "wikipedia-cm": SavedType("xmodal.models.rasiwasia:CorrelationMatching", _WIKIPEDIA),
    "wikipedia-sm": SavedType("xmodal.models.rasiwasia:SemanticMatching", _WIKIPEDIA),
    "wikipedia-scm": SavedType("xmodal.models.rasiwasia:SemanticCorrelationMatching", _WIKIPEDIA),
    "wikipedia-ksm": SavedType("xmodal.models.rasiwasia:KernelSemanticMatching", _WIKIPEDIA),
    "wikipedia-ksm-qe": SavedType("xmodal.models.rasiwasia:ExpandedKernelSemanticMatching",
                                  _WIKIPEDIA),
    "cmrm": SavedType("xmodal.models.relevance:CMRM", _COREL),
    "crm": SavedType("xmodal.models.relevance:CRM", _COREL),
    "keyword_head": SavedType("xmodal.models.tagger:KeywordHead"),
    "dual-encoder": SavedType("xmodal.models.dual:DualEncoder", _EMBEDDING, embeds=True),
    "gist-coordinate-ascent": SavedType("xmodal.gist.rank:CoordinateAscentRanker"),
}


def _attr(dotted: str) -> Any:
    module, name = dotted.split(":")
    return getattr(importlib.import_module(module), name)


# ----- saved model directories -----------------------------------------------------------------
def saved_type(path: str | os.PathLike) -> tuple[str, SavedType]:
    """(type, its entry in :data:`SAVED_TYPES`) of a saved model directory."""
    from xmodal.models.modeldir import CONFIG_FILE, read_config

    kind = read_config(path).get("type")
    if kind not in SAVED_TYPES:
        raise XmodalError(f"{Path(path) / CONFIG_FILE}: unknown model type {kind!r}; known "
                          f"types: {sorted(SAVED_TYPES)}")
    return kind, SAVED_TYPES[kind]


def saved_model_class(kind: str) -> type:
    """The estimator class registered for a saved-model ``type``."""
    if kind not in SAVED_TYPES:
        raise XmodalError(f"unknown model type {kind!r}; known types: {sorted(SAVED_TYPES)}")
    return _attr(SAVED_TYPES[kind].estimator)


def load_saved_model(path: str | os.PathLike) -> Any:
    """The estimator saved in directory ``path``, whatever its type."""
    _, entry = saved_type(path)
    return _attr(entry.estimator).load(path)


def _is_model_dir(spec: str) -> bool:
    return Path(spec).expanduser().is_dir()


# ----- embedding models ------------------------------------------------------------------------
def _python_model(spec: str) -> Any:
    _, module, attr = (spec.split(":", 2) + ["", ""])[:3]
    if not module or not attr:
        raise XmodalError(f"model spec {spec!r}: expected python:MODULE:FACTORY")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise XmodalError(f"cannot load model {spec!r}: {exc}") from exc
    return factory()


def _setting_spec(name: str, protocol_name: str) -> str | None:
    """The embedding spec behind a registered setting (a dual-encoder record with a ``spec``),
    None for a registered setting that does not embed; KeyError for an unregistered name."""
    from xmodal.recipes.settings import all_settings

    s = all_settings()[name]
    if s.estimator != "xmodal.models.dual:DualEncoder" or "spec" not in s.feature_params:
        return None
    if s.protocols and protocol_name and protocol_name not in s.protocols:
        raise XmodalError(f"model {s.name!r} scores the protocol(s) {', '.join(s.protocols)}, "
                          f"not {protocol_name!r}")
    return s.feature_params["spec"]


def embedding_model_or_none(spec: str | os.PathLike | None,
                            protocol_name: str = "") -> EmbeddingModel | None:
    """The embedding model behind ``spec``, or None when ``spec`` names a model that only
    scores (a registered setting or saved model without a joint space, an ``.npz``). An
    unknown spec is an XmodalError."""
    if spec is None or str(spec) in NAMED_MODELS:
        entry = NAMED_MODELS[DEFAULT_MODEL if spec is None else str(spec)]
        return check_embedding_model(_attr(entry.builder)(entry.name), str(spec))
    spec = str(spec)
    if spec.startswith("run:"):  # another system's ranked list: scores only
        return None
    if spec.startswith("python:"):
        return check_embedding_model(_python_model(spec), spec)
    if spec.startswith("openclip:"):
        from xmodal.models.openclip_backend import load_openclip_spec

        return check_embedding_model(load_openclip_spec(spec), spec)
    if spec.endswith(".npz"):
        return None
    if _is_model_dir(spec):
        path = Path(spec).expanduser()
        _, entry = saved_type(path)
        if not entry.embeds:
            return None
        return check_embedding_model(_attr(entry.estimator).load(path), spec)
    try:
        inner = _setting_spec(spec, protocol_name)
    except KeyError:
        raise XmodalError(_unknown(spec)) from None
    return None if inner is None else embedding_model_or_none(inner, protocol_name)


def load_embedding_model(spec: str | os.PathLike | None = None) -> EmbeddingModel:
    """The :class:`EmbeddingModel` of ``spec`` (None: the default dual encoder)."""
    model = embedding_model_or_none(spec)
    if model is None:
        raise XmodalError(f"model {str(spec)!r} does not embed images and sentences: use the "
                          "default model, a saved dual-encoder directory, a registered "
                          "dual-encoder setting, 'openclip:ARCH:CHECKPOINT' or "
                          "'python:MODULE:FACTORY'")
    return model


# ----- scoring evaluation protocols ------------------------------------------------------------
def list_models() -> list[str]:
    """The registered setting names (``xmodal models``)."""
    from xmodal.recipes.settings import all_settings

    return sorted(all_settings())


def _unknown(spec: str) -> str:
    return (f"unknown model {spec!r}: not a saved model directory, 'openclip:ARCH:CHECKPOINT', "
            f"'python:MODULE:FACTORY', a FILE.npz of embeddings nor one of {list_models()}")


def get_scorer(spec: str, protocol_name: str) -> Scorer:
    """``scorer(protocol, direction, seed) -> S`` for any spec (see the module docstring)."""
    from xmodal.models.embedding_specs import EmbeddingScorer, PrecomputedEmbeddings

    spec = str(spec)
    if spec.startswith("run:"):
        from xmodal.eval.trec import RunFileScorer

        return RunFileScorer(spec[len("run:"):])
    if spec.endswith(".npz"):
        return PrecomputedEmbeddings(spec)
    if spec.startswith("python:"):  # any object with the embedding methods: cosines
        return EmbeddingScorer(load_embedding_model(spec), spec)
    if spec.startswith("openclip:"):
        return _attr(_EMBEDDING)(load_embedding_model(spec))
    if _is_model_dir(spec):
        path = Path(spec).expanduser()
        kind, entry = saved_type(path)
        if entry.scorer is None:
            raise XmodalError(f"{path}: a {kind!r} model cannot score evaluation protocols")
        return _attr(entry.scorer)(_attr(entry.estimator).load(path), path, protocol_name)
    from xmodal.recipes.settings import all_settings

    table = all_settings()
    if spec not in table:
        raise XmodalError(_unknown(spec))
    return table[spec].scorer(protocol_name)


# ----- a photo index and its model -------------------------------------------------------------
def open_photo_index(db: str | os.PathLike | None = None, spec: str | None = None,
                     create: bool = False, model: EmbeddingModel | None = None) -> Any:
    """A :class:`xmodal.index.PhotoIndex` with its model: ``model`` (built from ``spec``) when
    given, else the model of ``spec``, else that of the spec the database was indexed with (the
    default model for a new database)."""
    from xmodal.index.photo_index import PhotoIndex

    index = PhotoIndex(db, model, model_spec=spec, create=create)
    if model is not None:
        return index
    try:
        return index.use_model(load_embedding_model(index.model_spec))
    except BaseException:
        index.close()
        raise


# ----- the ONNX towers a model runs ------------------------------------------------------------
def model_towers(spec: str | None = None) -> tuple[str, str, bool]:
    """(image tower, text tower, whether the image tower runs in int8) of an embedding model:
    a named model's from the registry, another's from its attributes (a saved dual encoder)."""
    from xmodal.features.int8 import asset_path

    model = load_embedding_model(spec)
    if spec is None or str(spec) in NAMED_MODELS:
        entry = NAMED_MODELS[DEFAULT_MODEL if spec is None else str(spec)]
        image, text = entry.image_tower, entry.text_tower
    else:
        image = getattr(model, "image_backbone", None)
        text = getattr(model, "text_encoder", None)
    if image is None or text is None:
        raise XmodalError(f"model {spec!r} does not run xmodal's ONNX towers: nothing to prepare")
    int8 = bool(getattr(model, "image_int8", False)) and asset_path(image).is_file()
    return image, text, int8


def prepare_model(spec: str | None = None) -> dict[str, Any]:
    """Write the ONNX files of a model's towers (``xmodal prepare``), delete earlier copies,
    and run the model once so that what it computes at first use (the bridge's class-name
    embeddings) is in the feature cache: {model, towers, files}."""
    from PIL import Image

    from xmodal.features.towers import prepare_towers

    image, text, int8 = model_towers(spec)
    files = prepare_towers(image, text, int8)
    load_embedding_model(spec).embed_images([Image.new("RGB", (64, 64))], progress=False,
                                            cache=False)
    return {"model": spec or DEFAULT_MODEL, "towers": [image, text], "int8": int8,
            "files": [str(f) for f in files]}
