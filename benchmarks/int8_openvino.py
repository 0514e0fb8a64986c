"""OpenVINO beside ONNX Runtime for the int8 image tower (issue 32 item 2), in its own virtualenv:
OpenVINO and NNCF are not xmodal dependencies, so this script imports nothing from xmodal.

    python -m benchmarks.int8_default --dump /tmp/int8-batches        # in xmodal's venv
    python -m venv /tmp/ovenv && /tmp/ovenv/bin/pip install openvino nncf onnx numpy
    /tmp/ovenv/bin/python benchmarks/int8_openvino.py ONNX_FP32 /tmp/int8-batches /tmp/int8-ov
    python -m benchmarks.int8_default --openvino /tmp/int8-ov          # scores them on dev

NNCF quantizes the fp32 ONNX export read by OpenVINO (post-training, the 300 calibration
photos, ``overflow_fix`` enabled: 7-bit weights in the first layer on CPUs without VNNI), then
the trunk runs on OpenVINO's CPU plugin (2 threads); the fp32 model on OpenVINO too, for speed.
Writes ``openvino-int8.npz`` (pooled, logits, prehead of the dev photos) and ``speed.json``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

OUTPUTS = ["pooled", "logits", "prehead"]


def main() -> None:
    import nncf
    import openvino as ov
    from nncf.quantization.advanced_parameters import (AdvancedQuantizationParameters,
                                                       OverflowFix)

    onnx_path, batches, out = (Path(a) for a in sys.argv[1:4])
    out.mkdir(parents=True, exist_ok=True)
    cal = np.load(batches / "calibration.npy")
    dev = np.load(batches / "dev.npy")
    core = ov.Core()
    fp32 = core.read_model(str(onnx_path))
    t0 = time.time()
    int8 = nncf.quantize(
        fp32, nncf.Dataset([cal[i : i + 1] for i in range(len(cal))]),
        preset=nncf.QuantizationPreset.PERFORMANCE, subset_size=len(cal),
        advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix.ENABLE))
    quantize_s = time.time() - t0
    config = {"INFERENCE_NUM_THREADS": 2}
    compiled = {"openvino-fp32": core.compile_model(fp32, "CPU", config),
                "openvino-int8": core.compile_model(int8, "CPU", config)}
    x = dev[:32]
    speed: dict[str, list[float]] = {k: [] for k in compiled}
    for _ in range(5):
        for k, c in compiled.items():
            t0 = time.perf_counter()
            c(x)
            speed[k].append(32 / (time.perf_counter() - t0))
    c = compiled["openvino-int8"]
    got: dict[str, list] = {k: [] for k in OUTPUTS}
    for s in range(0, len(dev), 32):
        res = c(dev[s : s + 32])
        for k in OUTPUTS:
            got[k].append(res[c.output(k)])
    np.savez(out / "openvino-int8.npz", **{k: np.concatenate(v) for k, v in got.items()})
    (out / "speed.json").write_text(json.dumps({
        "quantize_s": round(quantize_s, 1), "openvino": ov.__version__, "nncf": nncf.__version__,
        "images_per_s_batch32": {k: round(statistics.median(v), 1) for k, v in speed.items()}},
        indent=1))
    print(json.loads((out / "speed.json").read_text()))


if __name__ == "__main__":
    main()
