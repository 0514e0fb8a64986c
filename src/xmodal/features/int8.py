"""int8 EfficientNet-Lite trunks: static quantization of the fp32 ONNX export.

Static quantization needs the range of every activation. Measuring them needs photos a user
does not have (Flickr8K and Conceptual Captions training photos), so the ranges are measured
once (:func:`activation_ranges`, by ``python -m benchmarks.int8_default``) and shipped as a small
JSON file (``xmodal/assets/int8/effnet_<backbone>_ranges.json``: tensor name -> [min, max]). At
first use the fp32 export is quantized from those ranges (:func:`quantize_effnet`: ONNX
Runtime's ``quantize_static`` with every range given as a tensor override, so the one blank
calibration batch it is handed decides nothing). Weights: int8 per channel with
``reduce_range`` (7 bits: this CPU has AVX2 without VNNI, where full 8-bit weights can overflow
the 16-bit intermediate sums); activations uint8.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "int8"
FORMATS = ("qdq", "qoperator")


def ranges_path(backbone: str) -> Path:
    return ASSETS / f"effnet_{backbone}_ranges.json"


def load_ranges(backbone: str) -> dict | None:
    """The shipped activation ranges of a backbone (None when none ship)."""
    path = ranges_path(backbone)
    return json.loads(path.read_text()) if path.is_file() else None


def activation_ranges(fp32_path: Path, batches: Iterable[np.ndarray], method: str = "minmax",
                      percentile: float = 99.999) -> dict[str, list[float]]:
    """[min, max] of every tensor ONNX Runtime would quantize, over ``batches`` of
    preprocessed images; ``method`` "minmax" or "percentile"."""
    import tempfile

    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod
    from onnxruntime.quantization.calibrate import create_calibrator

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
        data = calibrator.compute_data()
    return {name: [float(np.asarray(v.range_value[0]).item()),
                   float(np.asarray(v.range_value[1]).item())]
            for name, v in data.data.items()}


def quantize_effnet(fp32_path: Path, out: Path, ranges: dict[str, list[float]], image_size: int,
                    exclude: Iterable[str] = (), fmt: str = "qdq") -> Path:
    """Write the int8 model of ``fp32_path`` (square inputs of ``image_size``) to ``out`` from
    activation ``ranges``; nodes named in ``exclude`` stay fp32. Written to a temporary name,
    then renamed."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    if fmt not in FORMATS:
        raise XmodalError(f"int8 format must be one of {FORMATS}, not {fmt!r}")

    class Blank(CalibrationDataReader):  # every range is overridden below
        def __init__(self) -> None:
            self.batches = iter([{"images": np.zeros((1, 3, image_size, image_size),
                                                     np.float32)}])

        def get_next(self):
            return next(self.batches, None)

    overrides = {name: [{"rmin": np.float32(lo), "rmax": np.float32(hi)}]
                 for name, (lo, hi) in ranges.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(str(fp32_path), str(tmp), Blank(),
                        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=True, reduce_range=True, nodes_to_exclude=list(exclude),
                        extra_options={"TensorQuantOverrides": overrides})
    tmp.replace(out)
    return out
