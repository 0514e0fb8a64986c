"""The one-time export of a tower from torch to ONNX (the ``export`` extra: torch,
sentence-transformers, onnx). Driven by the towers' spec records
(:mod:`xmodal.features.tower_specs`); :mod:`xmodal.features.towers` calls it through
``xmodal prepare``, or at first use where the export extra is installed. Every file is written to
a temporary name, then renamed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import warnings
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.features.tower_specs import ImageTowerSpec, TextTowerSpec

EXPORT_MODULES = ("torch", "onnx")  # sentence-transformers too, for the sentence towers
OPSET = 17


def missing_export_modules(text: bool = False) -> list[str]:
    """The export extra's modules this environment lacks (empty: it can export)."""
    names = EXPORT_MODULES + (("sentence_transformers",) if text else ())
    return [m for m in names if importlib.util.find_spec(m) is None]


def _temporary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f"{path.name}.{os.getpid()}.tmp")


def export_image(spec: ImageTowerSpec, path: Path) -> Path:
    """An EfficientNet-Lite trunk: images (b, 3, s, s) -> the spec's outputs: pooled (b, 1280),
    logits (b, 1000), maps (b, g, g, 1280) and prehead (b, g * g, C), the activations below the
    head conv (Lite0: s = 224, g = 7, C = 320)."""
    import torch

    from xmodal.features.weights import load_efficientnet, trunk_outputs

    net = load_efficientnet(spec.name)

    class Trunk(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, x):
            return trunk_outputs(self.net, x)

    tmp = _temporary(path)
    dims = {name: {0: "batch"} for name in (*spec.inputs, *spec.outputs)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Trunk().eval(), (torch.zeros(2, 3, spec.image_size, spec.image_size),),
                          str(tmp), input_names=list(spec.inputs),
                          output_names=list(spec.outputs), dynamic_axes=dims,
                          opset_version=OPSET, dynamo=False)
    tmp.replace(path)
    return path


def export_text(spec: TextTowerSpec, path: Path, tokenizer: Path) -> Path:
    """A sentence tower: the spec's inputs -> ``embedding`` (b, dim), unit vectors, and its
    tokenizer.json copied to ``tokenizer`` (what a search reads, without transformers)."""
    from xmodal.features.weights import sentence_export_source

    with sentence_export_source(spec.name) as (bert, tokenizer_json):
        export_sentence(path, bert, spec.inputs, spec.pooling, spec.external_data)
        tmp = _temporary(tokenizer)
        shutil.copyfile(tokenizer_json, tmp)
        tmp.replace(tokenizer)
    return path


def export_sentence(path: Path, bert, inputs: tuple[str, ...], pooling: str = "mean",
                    external: bool = False) -> Path:
    """A transformer with mean pooling over the attention mask and L2 normalisation. With
    ``external``, the weights go to ``<path>.data`` beside the graph: ONNX Runtime maps that
    file instead of parsing and copying the weights out of the graph (MPNet: a session in
    0.26 s instead of 0.56-0.65 s, and about 200 MB less memory at its peak)."""
    import torch

    if pooling != "mean":
        raise XmodalError(f"unknown pooling {pooling!r} of a sentence tower (mean is known)")
    token_types = "token_type_ids" in inputs

    class Sentence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, *token_type_ids):
            extra = {"token_type_ids": token_type_ids[0]} if token_type_ids else {}
            tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask, **extra)[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    tmp = _temporary(path)
    ids = torch.ones(2, 8, dtype=torch.int64)
    args = (ids, ids) + ((torch.zeros_like(ids),) if token_types else ())
    dims = {name: {0: "batch", 1: "tokens"} for name in inputs}
    dims["embedding"] = {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Sentence().eval(), args, str(tmp), input_names=list(inputs),
                          output_names=["embedding"], dynamic_axes=dims, opset_version=OPSET,
                          dynamo=False)
    if external:  # the data file is complete before the graph that names it appears
        import onnx

        graph = onnx.load(str(tmp))
        tmp.unlink()
        onnx.save_model(graph, str(tmp), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=f"{path.name}.data",
                        size_threshold=1024)
    tmp.replace(path)
    return path
