"""The named embedding models: what ``--model NAME`` means, read by :mod:`xmodal.factory`.

Each entry names the function that builds the model and the two ONNX towers it runs
(:mod:`xmodal.features.tower_specs`), which ``xmodal prepare --model NAME`` exports. Adding a
shipped model is one entry here (and its saved directory); ``tests/test_onnx_export.py`` checks
that every entry's towers are the ones its model runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamedModel:
    """One name ``--model`` takes: its builder (``module:function``, called with the name), its
    image and text towers, and a line for listings."""

    name: str
    image_tower: str
    text_tower: str
    summary: str
    builder: str = "xmodal.models.dual:named"


_DEFAULT = ("lite2", "mpnet", "the shipped dual encoder: EfficientNet-Lite2 + MPNet")
NAMED_MODELS: dict[str, NamedModel] = {m.name: m for m in (
    NamedModel("default", *_DEFAULT),
    NamedModel("dual", *_DEFAULT),
    NamedModel("fast", "lite0", "minilm",
               "the same recipe on EfficientNet-Lite0 (int8) + MiniLM: big libraries, slow "
               "machines"),
    NamedModel("efficientnet-minilm-zeroshot", "lite0", "minilm",
               "the training-free bridge alone (ImageNet classes to sentences)"),
)}
DEFAULT_MODEL = "default"
