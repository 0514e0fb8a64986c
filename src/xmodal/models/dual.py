"""The dual encoder: EfficientNet-Lite0 and MiniLM joined in one image-sentence space.

Two frozen pretrained halves feed two small trainable heads (``xmodal.models.dual_heads``):
image features (pooled EfficientNet-Lite0, 1280-d) and sentence embeddings (MiniLM, 384-d) map
to a ``dim``-d space, trained on Flickr8K with a symmetric contrastive loss over all five
captions per image (``xmodal.models.dual_train``; ``xmodal train dual``).

To keep what the image network knows about the 1,000 ImageNet categories (Flickr8K is mostly
people and dogs), every embedding carries a second, training-free block: the *zero-shot bridge*.
An image's bridge vector is its ImageNet class distribution pushed through the MiniLM embeddings
of the class names ("a photo of a tabby cat."); a sentence's bridge vector is its own MiniLM
embedding. The final embeddings are the L2-normalised concatenations
``[sqrt(1 - w) * head, sqrt(w) * bridge]`` so one dot product gives
``(1 - w) * cos_head + w * cos_bridge``: a single vector per item, fit for an ANN index.

Public surface::

    from xmodal.factory import load_embedding_model  # every model spec (xmodal.factory)
    model = load_embedding_model()                 # the default shipped in xmodal/assets/dual
    model = load_embedding_model("path/to/saved")  # a directory written by model.save()
    E = model.embed_images(["a.jpg", pil_image])   # (n, model.dim) float32, unit rows
    T = model.embed_texts(["a cat on a sofa"])     # (m, model.dim) float32, unit rows
    S = model.score(images, texts)                 # (n, m) = E @ T.T, minus caption offsets

A model may carry a querybank of its training images (``querybank_``, see
:mod:`xmodal.models.querybank`): ``score`` then subtracts from each caption its log-sum-exp
similarity to those images (``caption_offsets``), which reorders image -> text rankings only;
the embeddings themselves, and so every text -> image search, are unchanged.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.models.modeldir import (dequantize_rows, quantize_rows, read_model_dir,
                                    write_model_dir)

DEFAULT_MODEL_DIR = Path(__file__).resolve().parents[1] / "assets" / "dual"
FAST_MODEL_DIR = Path(__file__).resolve().parents[1] / "assets" / "fast"
MODEL_TYPE = "dual-encoder"
CLASS_PROMPT = "a photo of a {}."


# the longest query a stage-3 model sends through its short-query heads, as its config.json
# records it (``short_text.max_words``; chosen by benchmarks/short_route_length.py)
SHORT_MAX_WORDS = 2


def is_short_query(text: str, max_words: int = SHORT_MAX_WORDS) -> bool:
    """A query as people type it into a search box: 1 to ``max_words`` words and no sentence
    punctuation ("dog", "a person", "black dog"); such texts go through the short-query heads
    of a model that has them."""
    words = text.split()
    return 1 <= len(words) <= max_words and not re.search(r"[.!?,;:]", text)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(n, 1e-12)


def _softmax(z: np.ndarray, temperature: float) -> np.ndarray:
    z = np.asarray(z, np.float64) / temperature
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def class_name_embeddings(progress: bool = False, encoder: str | None = None) -> np.ndarray:
    """(1000, d) sentence embeddings of the ImageNet class names in a photo prompt."""
    from xmodal.features.image_encoder import imagenet_class_names
    from xmodal.features.text_encoder import encode_texts

    names = imagenet_class_names()
    return encode_texts([CLASS_PROMPT.format(n) for n in names], progress=progress,
                        encoder=encoder)


class DualEncoder:
    """Image and sentence heads on frozen EfficientNet-Lite / sentence-encoder features, plus the
    bridge. ``image_backbone`` (``lite0``, ``lite1``, ``lite2``) and ``text_encoder`` (``minilm``,
    ``mpnet``) name the frozen encoders (:mod:`xmodal.features`).

    ``image_int8`` runs the image tower in int8 when its calibration ships (accepted on dev:
    :mod:`xmodal.features.int8`; ``XMODAL_INT8=0`` turns it off); training reads fp32 features.

    Hyperparameters (constructor) describe the heads and the bridge; ``fit`` lives in
    :func:`xmodal.models.dual_train.fit_dual` (it needs torch and the training data). Learned
    state: ``heads_`` (a :class:`~xmodal.models.dual_heads.DualHeads` or None for a bridge-only
    model) and ``class_text_`` (the class-name embeddings used by the bridge).
    """

    def __init__(
        self,
        dim: int = 256,
        hidden: int = 512,
        dropout: float = 0.2,
        bridge_weight: float = 0.3,
        bridge_temperature: float = 1.0,
        image_input: str = "pooled",
        image_backbone: str = "lite0",
        text_encoder: str = "minilm",
        image_int8: bool = False,
    ) -> None:
        from xmodal.features.image_encoder import get_backbone
        from xmodal.features.text_encoder import text_encoder_spec

        if image_input not in ("pooled", "pooled+bridge"):
            raise XmodalError(f"image_input must be 'pooled' or 'pooled+bridge', not {image_input!r}")
        get_backbone(image_backbone)
        text_encoder_spec(text_encoder)
        self.dim_head = dim
        self.hidden = hidden
        self.dropout = dropout
        self.bridge_weight = bridge_weight
        self.bridge_temperature = bridge_temperature
        self.image_input = image_input
        self.image_backbone = image_backbone
        self.text_encoder = text_encoder
        self.image_int8 = image_int8
        self.heads_ = None
        self.class_text_: np.ndarray | None = None
        self.image_top_: dict[str, np.ndarray] | None = None  # a tuned head conv, if any
        # a compressed bank of training images and its beta (xmodal.models.querybank), if any
        self.querybank_: dict[str, Any] | None = None
        self._querybank_norm = None
        self.weights_ = "float16"  # how save() stores weight matrices: "float16" or "int8"
        self.meta_: dict[str, Any] = {}
        # text heads for short queries (stage 3, xmodal.recipes.dual_phrases), if any, and how
        # much of the sentence heads' vector is mixed into theirs, and the longest query they take
        self.short_heads_ = None
        self.short_mix_ = 0.0
        self.short_max_words_ = SHORT_MAX_WORDS

    # ----- shape -----------------------------------------------------------------------------
    @property
    def has_heads(self) -> bool:
        return self.heads_ is not None

    @property
    def image_input_size(self) -> int:
        """The side of the square images the image tower reads (a photo index decodes straight
        to it)."""
        from xmodal.features.weights import get_backbone

        return get_backbone(self.image_backbone).image_size

    @property
    def dim(self) -> int:
        from xmodal.features.text_encoder import text_dim

        if not self.has_heads:
            return text_dim(self.text_encoder)
        d = self.heads_.cfg["dim"]
        if self.bridge_weight > 0:
            d += self.heads_.cfg["text_dim"]
        return d

    @property
    def image_space_id(self) -> str | None:
        """The id of the model whose photo vectors this one shares (its image side unchanged,
        only the text side tuned: :mod:`xmodal.recipes.dual_phrases`), or None."""
        return (self.meta_.get("stage3") or {}).get("image_space")

    def _weights(self) -> tuple[float, float]:
        if not self.has_heads:
            return 0.0, 1.0
        w = float(self.bridge_weight)
        return 1.0 - w, w

    def _class_text(self) -> np.ndarray:
        if self.class_text_ is None:
            self.class_text_ = class_name_embeddings(encoder=self.text_encoder)
        return self.class_text_

    # ----- from features ---------------------------------------------------------------------
    def bridge_image(self, logits: np.ndarray) -> np.ndarray:
        """(n, d) unit vectors: ImageNet class probabilities times class-name embeddings."""
        p = _softmax(logits, self.bridge_temperature)
        return l2_normalize(p @ self._class_text().astype(np.float32))

    def head_image_input(self, pooled: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """What the image head reads: pooled features, plus the bridge vector if configured."""
        if self.image_input == "pooled+bridge":
            return np.concatenate([pooled, self.bridge_image(logits)], axis=1)
        return np.asarray(pooled, np.float32)

    def embed_image_features(
        self, pooled: np.ndarray, logits: np.ndarray, maps: np.ndarray | None = None,
        prehead: np.ndarray | None = None,
    ) -> np.ndarray:
        """Embeddings from cached EfficientNet-Lite features (see ``xmodal.features``). A model
        with a tuned top (``image_top_``) computes its pooled features from ``prehead``."""
        if self.image_top_ is not None:
            if prehead is None:
                raise XmodalError("this model tunes the image tower's head conv: pass prehead")
            from xmodal.models.image_top import top_pooled

            pooled = top_pooled(prehead, self.image_top_)
        a, b = self._weights()
        parts = []
        if self.has_heads:
            x = self.head_image_input(pooled, logits)
            parts.append(np.sqrt(a) * self.heads_.embed_images(x, maps))
        if b > 0:
            parts.append(np.sqrt(b) * self.bridge_image(logits))
        return l2_normalize(np.concatenate(parts, axis=1))

    def embed_text_features(self, text_emb: np.ndarray, short: bool = False) -> np.ndarray:
        """Embeddings from sentence embeddings (see ``xmodal.features.text_encoder``); with
        ``short``, through the short-query heads when the model has them."""
        a, b = self._weights()
        parts = []
        if self.has_heads:
            parts.append(np.sqrt(a) * self.heads_.embed_texts(text_emb))
        if b > 0:
            parts.append(np.sqrt(b) * l2_normalize(text_emb))
        sentence = l2_normalize(np.concatenate(parts, axis=1))
        if not short or self.short_heads_ is None:
            return sentence
        parts[0] = np.sqrt(a) * self.short_heads_.embed_texts(text_emb)
        return l2_normalize(l2_normalize(np.concatenate(parts, axis=1))
                            + self.short_mix_ * sentence)

    # ----- from raw inputs -------------------------------------------------------------------
    def embed_images(
        self, images: list[Any], *, progress: bool = True, on_error: str = "raise",
        cache: bool = True,
    ) -> np.ndarray:
        """(n, dim) float32 unit rows for image paths or PIL images.

        ``on_error="mask"`` gives zero rows for unreadable images instead of raising;
        ``cache=False`` skips the feature cache (the photo index is its own cache).
        """
        from xmodal.features.image_encoder import extract_image_features
        from xmodal.features.towers import image_precision

        images = list(images)
        if not images:
            return np.zeros((0, self.dim), np.float32)
        needs_maps = self.has_heads and self.heads_.uses_maps
        f = extract_image_features(images, maps=needs_maps, progress=progress, on_error=on_error,
                                   cache=cache, backbone=self.image_backbone,
                                   prehead=self.image_top_ is not None,
                                   precision=image_precision(self.image_backbone)
                                   if self.image_int8 else "fp32")
        emb = self.embed_image_features(f.pooled, f.logits, f.maps, f.prehead)
        emb[~f.ok] = 0.0
        return emb

    def prepare_queries(self) -> bool:
        """Make the sentence encoder ready (its ONNX export) before the first query needs it."""
        from xmodal.features.towers import prepare_text_encoder

        return prepare_text_encoder(self.text_encoder)

    def embed_texts(self, texts: list[str], *, progress: bool = True) -> np.ndarray:
        """(m, dim) float32 unit rows for sentences."""
        from xmodal.features.text_encoder import encode_texts

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        if any(not isinstance(t, str) for t in texts):
            raise XmodalError("embed_texts expects a list of strings")
        feats = encode_texts(texts, progress=progress, encoder=self.text_encoder)
        out = self.embed_text_features(feats)
        short = np.array([is_short_query(t, self.short_max_words_) for t in texts])
        if self.short_heads_ is not None and short.any():
            out[short] = self.embed_text_features(feats[short], short=True)
        return out

    def score(self, images: list[Any], texts: list[str], *, progress: bool = True) -> np.ndarray:
        """S[n_images, n_texts] cosine similarities, minus each caption's querybank offset when
        the model has a querybank (higher = better match)."""
        text_emb = self.embed_texts(texts, progress=progress)
        S = self.embed_images(images, progress=progress) @ text_emb.T
        return (S - self.caption_offsets(text_emb)[None, :]).astype(np.float32)

    def set_querybank(self, compact: dict[str, np.ndarray] | None, beta: float = 0.0) -> None:
        """Attach a bank of training-image embeddings compressed by
        :func:`xmodal.models.querybank.compress_bank` (None removes it)."""
        self.querybank_ = None if compact is None else {**compact, "beta": float(beta)}
        self._querybank_norm = None

    def caption_offsets(self, text_emb: np.ndarray) -> np.ndarray:
        """(m,) what ``score`` subtracts from each caption: its log-sum-exp similarity to the
        querybank's images divided by beta, or zeros without a querybank."""
        text_emb = np.asarray(text_emb, np.float32)
        if self.querybank_ is None or not len(text_emb):
            return np.zeros(len(text_emb), np.float32)
        if self._querybank_norm is None:
            from xmodal.models.querybank import CompactImageBank

            self._querybank_norm = CompactImageBank(self.querybank_, self.querybank_["beta"])
        return self._querybank_norm.text_offsets(text_emb).astype(np.float32)

    # ----- persistence -----------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        return {
            "dim": self.dim_head,
            "hidden": self.hidden,
            "dropout": self.dropout,
            "bridge_weight": self.bridge_weight,
            "bridge_temperature": self.bridge_temperature,
            "image_input": self.image_input,
            "image_backbone": self.image_backbone,
            "text_encoder": self.text_encoder,
            # only when set: the ids of models (and the photo indexes built with them) from
            # before the option existed stay what they were
            **({"image_int8": True} if self.image_int8 else {}),
        }

    SAVE_TYPE = MODEL_TYPE
    # version 1: weights.npz beside a config without state/provenance; version 3: a tuned head
    # conv (image_top_) beside the heads, which version-2 readers would ignore (so they refuse);
    # version 4: int8 weight matrices and/or a querybank, which version-3 readers would misread
    SAVE_VERSION = 2
    TOP_SAVE_VERSION = 3
    COMPACT_SAVE_VERSION = 4
    READS = (SAVE_VERSION, TOP_SAVE_VERSION, COMPACT_SAVE_VERSION)

    def save(self, path: str | os.PathLike, provenance: dict | None = None,
             weights: str | None = None) -> Path:
        """Write the model directory ``path`` (no pickle); ``meta_`` (how it was trained and
        selected) is saved as its provenance. ``weights="int8"`` stores each weight matrix as
        int8 with one float16 scale per row (half the size; the shipped model), ``"float16"``
        as float16; by default as the model was loaded (``weights_``), so a saved model saves
        back to the same arrays."""
        weights = weights or self.weights_
        if weights not in ("float16", "int8"):
            raise XmodalError(f"weights must be 'float16' or 'int8', not {weights!r}")
        arrays: dict[str, np.ndarray] = {"class_text": self._class_text()}
        if self.has_heads:
            arrays.update({f"heads.{k}": v for k, v in self.heads_.state_arrays().items()})
        state = {"has_heads": self.has_heads,
                 "heads": self.heads_.config() if self.has_heads else None}
        version = self.SAVE_VERSION
        if self.image_top_ is not None:
            arrays.update({f"top.{k}": v for k, v in self.image_top_.items()})
            state["image_top"] = True
            version = self.TOP_SAVE_VERSION
        if self.short_heads_ is not None:  # only the arrays that differ from the text heads'
            sentence = self.heads_.state_arrays()
            arrays.update({f"short.{k}": v for k, v in self.short_heads_.state_arrays().items()
                           if not np.array_equal(v, sentence.get(k))})
            state["short_text"] = {"max_words": self.short_max_words_, "mix": self.short_mix_}
            version = self.COMPACT_SAVE_VERSION
        arrays = _int8_matrices(arrays) if weights == "int8" else {
            k: np.asarray(v).astype(np.float16) for k, v in arrays.items()}
        if weights == "int8":
            state["weights"] = "int8"
            version = self.COMPACT_SAVE_VERSION
        if self.querybank_ is not None:
            qb = self.querybank_
            arrays.update({f"querybank.{k}": qb[k] for k in ("codes", "scales", "mean", "basis")})
            state["querybank"] = {"beta": qb["beta"], "images": int(len(qb["codes"])),
                                  "dim": int(qb["basis"].shape[1])}
            version = self.COMPACT_SAVE_VERSION
        return write_model_dir(path, type=MODEL_TYPE, version=version,
                               params=self.get_params(), arrays=arrays, state=state,
                               provenance={**self.meta_, **(provenance or {})})

    @classmethod
    def load(cls, path: str | os.PathLike) -> DualEncoder:
        saved = read_model_dir(path, MODEL_TYPE, None, "dual encoder")
        if saved.version not in cls.READS:
            raise XmodalError(f"{path}: dual encoder format version {saved.version} is not "
                              f"supported (this xmodal reads versions "
                              f"{', '.join(map(str, cls.READS))}); retrain the model")
        model = cls(**saved.params)
        model.weights_ = saved.state.get("weights", "float16")
        bank = {k[len("querybank."):]: v for k, v in saved.arrays.items()
                if k.startswith("querybank.")}
        if saved.state.get("querybank"):
            model.set_querybank(bank, saved.state["querybank"]["beta"])
        arrays = {k: v.astype(np.float32)
                  for k, v in _from_int8(saved.arrays).items() if not k.startswith("querybank.")}
        model.class_text_ = arrays["class_text"]
        if saved.state.get("image_top"):
            model.image_top_ = {"weight": arrays["top.weight"], "bias": arrays["top.bias"]}
        if saved.state.get("has_heads"):  # numpy heads: loading a model never imports torch
            from xmodal.models.head_inference import NumpyHeads

            heads_arrays = {k[6:]: v for k, v in arrays.items() if k.startswith("heads.")}
            model.heads_ = NumpyHeads(saved.state["heads"], heads_arrays)
        if saved.state.get("short_text"):
            from xmodal.models.head_inference import NumpyHeads

            short = {k: v for k, v in heads_arrays.items() if ".text." in k or
                     k.startswith("text.")}
            short.update({k[6:]: v for k, v in arrays.items() if k.startswith("short.")})
            model.short_heads_ = NumpyHeads(saved.state["heads"], short)
            model.short_mix_ = float(saved.state["short_text"]["mix"])
            model.short_max_words_ = int(saved.state["short_text"]["max_words"])
        model.meta_ = saved.provenance
        return model


_Q8 = ".q8"  # an int8 matrix "name.q8" and its per-row scales "name.q8scale"


def _int8_matrices(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Weight matrices (2-d) as int8 codes with one float16 scale per row; the rest float16."""
    out = {}
    for k, v in arrays.items():
        v = np.asarray(v, np.float32)
        if v.ndim != 2:
            out[k] = v.astype(np.float16)
            continue
        out[k + _Q8], out[k + _Q8 + "scale"] = quantize_rows(v)
    return out


def _from_int8(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays of a saved model with its int8 matrices turned back into float32."""
    out = {}
    for k, v in arrays.items():
        if k.endswith(_Q8):
            out[k[: -len(_Q8)]] = dequantize_rows(v, arrays[k + "scale"])
        elif not k.endswith(_Q8 + "scale"):
            out[k] = v
    return out


# ----- resolving a model spec ------------------------------------------------------------------
_DEFAULT: DualEncoder | None = None
_NAMED: dict[str, DualEncoder] = {}


def default_model() -> DualEncoder:
    """The model shipped in ``xmodal/assets/dual`` (bridge-only if the asset is missing)."""
    global _DEFAULT
    if _DEFAULT is None:
        if (DEFAULT_MODEL_DIR / "config.json").is_file():
            _DEFAULT = DualEncoder.load(DEFAULT_MODEL_DIR)
        else:
            _DEFAULT = DualEncoder()
    return _DEFAULT


def named(name: str | None = None) -> DualEncoder:
    """The dual encoder's own named models: None, ``"dual"`` or ``"default"`` (the shipped
    model), ``"fast"`` (the same recipe on EfficientNet-Lite0 + MiniLM, for big libraries and
    slow machines) and ``"efficientnet-minilm-zeroshot"`` (the training-free bridge alone).
    Every other spec is resolved by :mod:`xmodal.factory`."""
    if name in (None, "dual", "default"):
        return default_model()
    if name == "fast":
        if not (FAST_MODEL_DIR / "config.json").is_file():
            raise XmodalError(f"the fast model is not installed ({FAST_MODEL_DIR} is missing)")
        if "fast" not in _NAMED:
            _NAMED["fast"] = DualEncoder.load(FAST_MODEL_DIR)
        return _NAMED["fast"]
    if name == "efficientnet-minilm-zeroshot":
        return DualEncoder(bridge_weight=1.0)
    raise XmodalError(f"unknown dual encoder {name!r}: 'dual', 'fast' or "
                      "'efficientnet-minilm-zeroshot'")
