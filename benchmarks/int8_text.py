"""Should MPNet, the default model's sentence tower, run in int8? Decided on dev (issue 32).

    python -m benchmarks.int8_text          # ~8 minutes on 2 cores

A cold search pays for creating MPNet's ONNX Runtime session: reading 435 MB of fp32 weights.
Dynamic int8 quantization (ONNX Runtime ``quantize_dynamic``: int8 weights per channel, each
activation quantized on the fly, so no calibration data) stores them in about a quarter.

1. Files: MB on disk of each export.
2. Cold start: a fresh process creates the session and embeds one query (wall, CPU, peak
   resident memory), fp32 and int8 alternated, 5 each.
3. Query latency: one caption at a time, warm, median of 50.
4. Quality on **dev only**, as training selects: the default model (images unchanged, fp32)
   on Flickr8K dev (1,000 x 5,000) and CC dev (1,000 x 1,000) with the captions embedded by
   each tower; the selection score is the mean over both splits of the mean R@1 of both
   directions; int8 is acceptable when it is at most 0.3 below fp32's.

Writes ``benchmarks/results/int8_text.json``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._record import record
from benchmarks.int8_default import dev_data
from xmodal.features.image_encoder import extract_image_features
from xmodal.features.towers import text_tower
from xmodal.models.dual import default_model
from xmodal.models.dual_train import recall_5cap_scores

TOLERANCE = 0.3
COLD = """
import sys, time
t0 = time.perf_counter()
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
opts = ort.SessionOptions()
opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
s = ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(sys.argv[2])
e = tok.encode("a dog runs on the beach")
s.run(["embedding"], {"input_ids": np.array([e.ids]),
                      "attention_mask": np.array([e.attention_mask])})
print(time.perf_counter() - t0)
"""


def quantize(fp32: Path, out: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True)
    return out


def session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def embed(sess, texts: list[str], batch: int = 64) -> np.ndarray:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(text_tower("mpnet").tokenizer_path()))
    tok.enable_truncation(max_length=384)
    tok.enable_padding(pad_id=tok.token_to_id("<pad>"), pad_token="<pad>")
    out = []
    for s in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[s : s + batch])
        ids = np.array([e.ids for e in enc], np.int64)
        mask = np.array([e.attention_mask for e in enc], np.int64)
        out.append(sess.run(["embedding"], {"input_ids": ids, "attention_mask": mask})[0])
    return np.concatenate(out).astype(np.float32)


def main() -> None:
    t_start = time.time()
    fp32 = text_tower("mpnet").prepare()
    work = Path(tempfile.mkdtemp(prefix="xmodal-int8-text-"))
    t0 = time.time()
    int8 = quantize(fp32, work / "mpnet_int8.onnx")
    quantize_s = time.time() - t0
    files = {"fp32": fp32, "int8": int8}
    tokenizer = str(text_tower("mpnet").tokenizer_path())

    cold: dict[str, list] = {k: [] for k in files}
    for _ in range(5):
        for k, path in files.items():
            t0 = time.perf_counter()
            run = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-c", COLD,
                                  str(path), tokenizer], capture_output=True, text=True,
                                 check=True)
            wall = time.perf_counter() - t0
            inner = float(run.stdout.split()[0])
            peak = int(run.stderr.strip().splitlines()[-1]) / 1024  # KB -> MB
            cold[k].append((wall, inner, peak))

    sessions = {k: session(p) for k, p in files.items()}
    latency: dict[str, list[float]] = {k: [] for k in files}
    for i in range(50):
        for k, sess in sessions.items():
            t0 = time.perf_counter()
            embed(sess, [f"a photo of a dog number {i} running on the beach"])
            latency[k].append(1000 * (time.perf_counter() - t0))

    model = default_model()
    image_paths, splits, _ = dev_data()
    f = extract_image_features(image_paths, prehead=True, backbone=model.image_backbone,
                               progress=False)
    E = model.embed_image_features(None, f.logits, None, f.prehead)
    quality = {}
    for k, sess in sessions.items():
        res = {}
        for split, rows, texts, cap_rows in splits:
            T = model.embed_text_features(embed(sess, texts))
            S = E[rows] @ T.T - model.caption_offsets(T)[None, :]
            r = recall_5cap_scores(S, cap_rows)
            res[split] = {m: round(r[m], 2) for m in ("i2t_R@1", "t2i_R@1", "t2i_R@10")}
        score = float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in res.values()]))
        quality[k] = {"selection_score": round(score, 3), "dev": res}
        print(k, quality[k])
    drop = round(quality["fp32"]["selection_score"] - quality["int8"]["selection_score"], 3)
    out = {
        "quantization": "ONNX Runtime quantize_dynamic, int8 weights per channel",
        "quantize_s": round(quantize_s, 1),
        "file_mb": {k: round(p.stat().st_size / 1e6, 1) for k, p in files.items()},
        "cold_process": {k: {"wall_s_median": round(statistics.median(c[0] for c in v), 3),
                             "session_and_query_s_median":
                                 round(statistics.median(c[1] for c in v), 3),
                             "peak_mb_median": round(statistics.median(c[2] for c in v))}
                         for k, v in cold.items()},
        "query_ms_median": {k: round(statistics.median(v), 2) for k, v in latency.items()},
        "quality": quality, "selection_drop": drop, "acceptable": drop <= TOLERANCE,
        "tolerance": f"selection score drop <= {TOLERANCE}",
        "elapsed_s": round(time.time() - t_start)}
    print(json.dumps(out, indent=1))
    record("int8_text", out)


if __name__ == "__main__":
    main()
