"""Should the image tower run in int8? Static quantization measured against the fp32 export.

    python -m benchmarks.int8_image_tower          # ~5 minutes on 2 cores

1. The fp32 EfficientNet-Lite0 export (the default engine) is quantized statically with ONNX
   Runtime (QOperator, uint8 activations, int8 per-channel weights with ``reduce_range`` — this
   CPU has AVX2 but no VNNI, where full 8-bit weights overflow), calibrated on 300 Flickr8K
   *training* photos (MinMax).
2. Speed: batches of 32 test photos, engines alternated, median of 5.
3. Fidelity on the 1,000 Flickr8K test photos: cosine of pooled features and logits to fp32.
4. Quality with the default dual encoder: Flickr8K 5-caption R@1 (i2t / t2i) from each engine's
   features, and the out-of-domain check of reports/dual_encoder.md (13 scikit-image photos,
   one query each, among the 1,000 test photos).
5. The rule of the issue: int8 is accepted only if R@1 stays within 0.5 points in both
   directions and no out-of-domain query loses rank.

Writes ``benchmarks/results/int8_image_tower.json``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._record import record
from xmodal.data import load_flickr8k
from xmodal.features.image_encoder import open_image, preprocess
from xmodal.features.towers import image_tower

N_CALIBRATION = 300


def session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def batches(paths, size: int = 32):
    for start in range(0, len(paths), size):
        yield np.stack([preprocess(open_image(p)) for p in paths[start:start + size]])


def features(sess, images) -> tuple[np.ndarray, np.ndarray]:
    pooled, logits = [], []
    for start in range(0, len(images), 32):
        x = np.stack([preprocess(open_image(p)) for p in images[start:start + 32]])
        p, lg = sess.run(["pooled", "logits"], {"images": x})
        pooled.append(p)
        logits.append(lg)
    return np.concatenate(pooled), np.concatenate(logits)


def quantize(fp32: Path, out: Path, calibration: list) -> Path:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = ({"images": b} for b in batches(calibration, 16))

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(fp32), str(out), Reader(), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=True, reduce_range=True)
    return out


def cosine(a, b) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def main() -> None:
    from xmodal.models.dual import default_model
    from xmodal.models.dual_train import recall_5cap
    from xmodal.reproduce.dual import OOD_QUERIES, query_ranks, sample_photos

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(judgments=False)
    test = list(ds.split("test"))
    test_paths = [ds.image_path(i) for i in test]
    rng = np.random.default_rng(0)
    train = list(ds.split("train"))
    calibration = [ds.image_path(train[i]) for i in rng.choice(len(train), N_CALIBRATION,
                                                                 replace=False)]
    fp32_path = image_tower().prepare("fp32")
    work = Path(tempfile.mkdtemp(prefix="xmodal-int8-"))
    t0 = time.perf_counter()
    int8_path = quantize(fp32_path, work / "effnet_int8.onnx", calibration)
    quantize_s = time.perf_counter() - t0
    engines = {"onnx-fp32": session(fp32_path), "onnx-int8": session(int8_path)}

    x = next(batches(test_paths[:32]))
    speed: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(5):
        for name, sess in engines.items():
            t0 = time.perf_counter()
            sess.run(["pooled", "logits"], {"images": x})
            speed[name].append(32 / (time.perf_counter() - t0))

    model = default_model()
    caps = [c for i in test for c in ds.captions_of(i)]
    T = model.embed_texts([c.text for c in caps], progress=False)
    cap_img = np.array([test.index(c.image_id) for c in caps])
    photos = sample_photos()
    Tq = model.embed_texts(list(OOD_QUERIES.values()), progress=False)
    feats, quality = {}, {}
    for name, sess in engines.items():
        pooled, logits = features(sess, test_paths)
        feats[name] = (pooled, logits)
        E = model.embed_image_features(pooled, logits)
        r = recall_5cap(E, T, cap_img)
        pp, pl = features(sess, photos)
        Ep = model.embed_image_features(pp, pl)
        ranks = query_ranks(np.concatenate([Ep, E]) @ Tq.T)
        quality[name] = {"i2t_R@1": round(r["i2t_R@1"], 2), "t2i_R@1": round(r["t2i_R@1"], 2),
                         "ood_ranks_with_distractors": dict(zip(OOD_QUERIES, ranks)),
                         "ood_top1": sum(k == 1 for k in ranks)}
    cp = cosine(feats["onnx-fp32"][0], feats["onnx-int8"][0])
    cl = cosine(feats["onnx-fp32"][1], feats["onnx-int8"][1])
    a, b = quality["onnx-fp32"], quality["onnx-int8"]
    worse = [q for q in OOD_QUERIES if b["ood_ranks_with_distractors"][q]
             > a["ood_ranks_with_distractors"][q]]
    within = all(abs(a[k] - b[k]) <= 0.5 for k in ("i2t_R@1", "t2i_R@1"))
    out = {
        "calibration": f"{N_CALIBRATION} Flickr8K training photos, MinMax",
        "quantization": "ONNX Runtime static, QOperator, u8 activations, s8 per-channel "
                        "weights, reduce_range",
        "quantize_s": round(quantize_s, 1),
        "images_per_s_batch32": {k: round(statistics.median(v), 1) for k, v in speed.items()},
        "speedup": round(statistics.median(speed["onnx-int8"])
                         / statistics.median(speed["onnx-fp32"]), 2),
        "pooled_cosine_min_mean": [round(float(cp.min()), 4), round(float(cp.mean()), 4)],
        "logits_cosine_min_mean": [round(float(cl.min()), 4), round(float(cl.mean()), 4)],
        "quality": quality,
        "ood_queries_losing_rank": worse,
        "accepted": bool(within and not worse),
        "rule": "R@1 within 0.5 points both directions and no out-of-domain query loses rank",
    }
    print(out)
    record("int8_image_tower", out)


if __name__ == "__main__":
    main()
