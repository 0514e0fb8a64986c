"""The int8 image tower: calibrated once, quantized from the shipped calibration at first use,
chosen only when its asset ships, kept apart in the feature cache."""

import json

import numpy as np
import pytest

from xmodal.data.skimage_samples import photo_files
from xmodal.features import int8
from xmodal.features.image_encoder import extract_image_features, open_image, preprocess
from xmodal.features.towers import image_precision, image_tower

BACKBONE = "lite0"


@pytest.fixture(scope="module")
def fp32_export():
    return image_tower(BACKBONE).prepare("fp32")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return [str(p) for p in list(photo_files(tmp_path_factory.mktemp("photos")).values())[:6]]


def _cosine(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _session(path):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def calibration(fp32_export, photos):
    batch = np.stack([preprocess(open_image(p), size=224) for p in photos])
    return int8.calibrate(fp32_export, [batch[:3], batch[3:]])


def test_calibration_is_onnxruntime_cache_of_every_tensor(calibration):
    assert calibration["CLS"] == "TensorsData"
    ranges = calibration["data"]
    assert "images" in ranges and len(ranges) > 50


@pytest.mark.parametrize("fmt", int8.FORMATS)
def test_int8_tower_is_close_to_fp32_and_smaller(fp32_export, calibration, photos, fmt, tmp_path):
    out = int8.quantize_effnet(fp32_export, tmp_path / "int8.onnx", calibration, fmt=fmt)
    assert out.stat().st_size < fp32_export.stat().st_size / 2
    x = np.stack([preprocess(open_image(p), size=224) for p in photos])
    fp, q = (_session(p).run(["pooled", "logits"], {"images": x}) for p in (fp32_export, out))
    # a quantizer that ignores the ranges gives cosines near 0 (seen with tensor overrides)
    assert _cosine(fp[0], q[0]).min() > 0.9
    assert (fp[1].argmax(1) == q[1].argmax(1)).mean() >= 0.5


def test_kept_nodes_stay_fp32(fp32_export, calibration, tmp_path):
    import onnx

    stem = [n.name for n in onnx.load(str(fp32_export)).graph.node if n.name == "/_conv_stem/Conv"]
    out = int8.quantize_effnet(fp32_export, tmp_path / "int8.onnx", calibration, stem)
    ops = {n.name: n.op_type for n in onnx.load(str(out)).graph.node}
    assert ops["/_conv_stem/Conv"] == "Conv"
    assert "QLinearConv" in ops.values()


def test_precision_follows_the_shipped_asset(calibration, monkeypatch, tmp_path, photos):
    monkeypatch.setattr(int8, "ASSETS", tmp_path)
    monkeypatch.delenv("XMODAL_INT8", raising=False)
    assert image_precision(BACKBONE) == "fp32"  # nothing ships for this backbone here
    int8.asset_path(BACKBONE).write_text(json.dumps({
        "format": "qoperator", "kept_fp32": [], "onnxruntime_calibration": calibration}))
    assert image_precision(BACKBONE) == "int8"
    monkeypatch.setenv("XMODAL_INT8", "0")
    assert image_precision(BACKBONE) == "fp32"
    monkeypatch.delenv("XMODAL_INT8")
    q = extract_image_features(photos, backbone=BACKBONE, precision="int8", progress=False)
    fp = extract_image_features(photos, backbone=BACKBONE, progress=False)
    assert q.ok.all() and not np.array_equal(q.pooled, fp.pooled)
    assert _cosine(q.pooled, fp.pooled).min() > 0.9
    again = extract_image_features(photos, backbone=BACKBONE, precision="int8", progress=False)
    assert np.array_equal(again.pooled, q.pooled)  # its own cache, not the fp32 rows


def test_quantizing_says_nothing(fp32_export, calibration, tmp_path, caplog, capfd):
    """The first use of the fast model printed ~50 warnings of onnxruntime's quantizer."""
    import logging

    with caplog.at_level(logging.DEBUG):
        int8.quantize_effnet(fp32_export, tmp_path / "int8.onnx", calibration)
    assert not [r for r in caplog.records if "onnxruntime" in r.pathname], \
        [r.getMessage() for r in caplog.records][:3]
    assert "quantiz" not in capfd.readouterr().err.lower()
