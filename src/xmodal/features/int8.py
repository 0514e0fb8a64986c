"""int8 EfficientNet-Lite trunks: static quantization of the fp32 ONNX export.

Static quantization needs the range of every activation. Measuring them needs photos a user
does not have (Flickr8K and Conceptual Captions training photos), so the ranges are measured
once (:func:`calibrate`, by ``python -m benchmarks.int8_default``) and shipped as a small JSON
file (``xmodal/assets/int8/effnet_<backbone>.json``): the settings chosen on dev and ONNX
Runtime's own calibration cache (``save_tensors_data``). At first use the fp32 export is
quantized from that cache (:func:`quantize_effnet`: ``quantize_static`` with
``calibration_cache_path``, ONNX Runtime >= 1.32; older versions keep the fp32 tower). Weights:
int8 per channel with ``reduce_range`` (7 bits: this CPU has AVX2 without VNNI, where full
8-bit weights can overflow the 16-bit intermediate sums); activations uint8.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.quiet import dropped_logs

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "int8"
FORMATS = ("qdq", "qoperator")


def asset_path(backbone: str) -> Path:
    return ASSETS / f"effnet_{backbone}.json"


def load_asset(backbone: str) -> dict | None:
    """The shipped int8 settings and calibration of a backbone (None when none ship)."""
    path = asset_path(backbone)
    return json.loads(path.read_text()) if path.is_file() else None


def supported() -> bool:
    """Whether this ONNX Runtime quantizes from a calibration cache (>= 1.32)."""
    try:
        from onnxruntime.quantization import quantize_static
    except ImportError:
        return False
    return "calibration_cache_path" in inspect.signature(quantize_static).parameters


def calibrate(fp32_path: Path, batches: Iterable[np.ndarray], method: str = "minmax",
              percentile: float = 99.999) -> dict:
    """ONNX Runtime's calibration (as its cache file holds it: ``TensorsData.to_dict``) of every
    tensor it would quantize, over ``batches`` of preprocessed images; ``method`` "minmax" or
    "percentile"."""
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod
    from onnxruntime.quantization.calibrate import create_calibrator, save_tensors_data

    class OneBatch(CalibrationDataReader):
        def __init__(self, batch: np.ndarray) -> None:
            self.it: Iterator = iter([{"images": batch}])

        def get_next(self):
            return next(self.it, None)

    chosen = {"minmax": CalibrationMethod.MinMax,
              "percentile": CalibrationMethod.Percentile}[method]
    extra = {"percentile": percentile} if method == "percentile" else {}
    with tempfile.TemporaryDirectory() as tmp:
        calibrator = create_calibrator(str(fp32_path), augmented_model_path=str(
            Path(tmp) / "augmented.onnx"), calibrate_method=chosen, extra_options=extra)
        for batch in batches:  # one at a time: the calibrator keeps every activation it sees
            calibrator.collect_data(OneBatch(batch))
            calibrator.clear_collected_data()
        cache = Path(tmp) / "cache.json"
        save_tensors_data(calibrator.compute_data(), cache)
        return json.loads(cache.read_text())


def quantize_effnet(fp32_path: Path, out: Path, calibration: dict,
                    exclude: Iterable[str] = (), fmt: str = "qoperator") -> Path:
    """Write the int8 model of ``fp32_path`` to ``out`` from a :func:`calibrate` result; nodes
    named in ``exclude`` stay fp32. Written to a temporary name, then renamed."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    if fmt not in FORMATS:
        raise XmodalError(f"int8 format must be one of {FORMATS}, not {fmt!r}")
    if not supported():
        raise XmodalError("this onnxruntime cannot quantize from a calibration cache "
                          "(onnxruntime >= 1.32 can)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    # onnxruntime's quantizer logs ~50 warnings on the root logger (pre-processing advice, one
    # per skipped node) that a first use of the fast model printed: none is about xmodal's use
    with tempfile.TemporaryDirectory() as work, warnings.catch_warnings(), \
            dropped_logs(lambda r: "onnxruntime" in r.pathname and r.levelno <= logging.WARNING):
        warnings.simplefilter("ignore")
        cache = Path(work) / "calibration.json"
        cache.write_text(json.dumps(calibration))
        quantize_static(str(fp32_path), str(tmp), None, calibration_cache_path=str(cache),
                        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=True, reduce_range=True, nodes_to_exclude=list(exclude))
    tmp.replace(out)
    return out
