"""Should the default model's image tower run in int8? Decided on dev by a tolerance (issue 32).

    python -m benchmarks.int8_default                  # ~10 minutes on 2 cores
    python -m benchmarks.int8_default --tail 18 --keep "^/_conv_stem" --calibration /tmp/c.json
    python -m benchmarks.int8_default --model fast --name int8_fast --ship qoperator-minmax

1. Activation ranges of the fp32 EfficientNet-Lite export, measured on 300 training photos
   (150 Flickr8K + 150 Conceptual Captions, seeded): MinMax (the 99.999th percentile lost more
   in a first run: selection score -0.94 against MinMax's -0.76, QDQ).
2. Variants, all int8 per-channel weights with reduce_range and uint8 activations (ONNX
   Runtime): QDQ and QOperator from the MinMax ranges; QOperator keeping in fp32 the layers
   whose outputs drift most (``--exclude N``: per-layer SQNR of the QDQ model against fp32 on
   8 dev photos, ``onnxruntime.quantization.qdq_loss_debug``), every layer from a block on
   (``--tail K``: the last, smallest feature maps) or the nodes matching a pattern (``--keep``).
3. Speed: the trunk alone on a batch of 32 dev photos, variants alternated, median of 5.
4. Quality as training selects, on **dev only**: the model (``--model``, default the shipped
   one with its tuned top, heads and image querybank) on Flickr8K dev (1,000 x 5,000) and CC
   dev (1,000 x 1,000); the selection score is the mean over the two splits of the mean R@1 of
   both directions. A variant is acceptable when its selection score is at most 0.3 below
   fp32's.
5. OpenVINO (NNCF, ``overflow_fix``) side by side when ``--openvino DIR`` points at the outputs
   of ``benchmarks/int8_openvino.py`` (run in its own virtualenv: see that file).

Writes ``benchmarks/results/int8_default.json`` (``--name``); ``--ship NAME`` writes the chosen
variant's calibration and kept-fp32 nodes to ``src/xmodal/assets/int8/effnet_<backbone>.json``,
which makes :func:`xmodal.features.towers.image_precision` choose int8 for that backbone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._record import record
from xmodal.data.conceptual_captions import load_conceptual_captions
from xmodal.features.image_encoder import get_backbone, open_image, preprocess
from xmodal.features.int8 import asset_path, calibrate, quantize_effnet
from xmodal.features.towers import image_tower
from xmodal.features.text_encoder import encode_texts
from xmodal.factory import load_embedding_model
from xmodal.models.dual_train import recall_5cap_scores
from xmodal.recipes.dual import training_items

N_CALIBRATION = 150  # from each of Flickr8K train and CC train
TOLERANCE = 0.3
OUTPUTS = ["pooled", "logits", "prehead"]


def session(path: Path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def load_batch(paths: list[str], size: int) -> np.ndarray:
    return np.stack([preprocess(open_image(p), size=size) for p in paths])


def run(sess, images: np.ndarray) -> dict[str, np.ndarray]:
    out: dict[str, list] = {k: [] for k in OUTPUTS}
    for s in range(0, len(images), 32):
        got = sess.run(OUTPUTS, {"images": images[s : s + 32]})
        for k, v in zip(OUTPUTS, got):
            out[k].append(v)
    return {k: np.concatenate(v) for k, v in out.items()}


def dev_data():
    """Dev image paths and (split, image rows, caption texts, caption -> row) of both splits."""
    ids, paths, captions, split_ids = training_items(None, None,
                                                     {"cc": load_conceptual_captions()})
    path_of = dict(zip(ids, paths))
    image_paths, splits = [], []
    for split in ("dev", "cc_dev"):
        members = list(dict.fromkeys(split_ids[split]))
        row = {i: len(image_paths) + k for k, i in enumerate(members)}
        image_paths += [path_of[i] for i in members]
        caps = [(i, t) for i, t in captions if i in row]
        splits.append((split, [row[i] for i in members], [t for _, t in caps],
                       np.array([row[i] - row[members[0]] for i, _ in caps])))
    return image_paths, splits, (ids, paths, split_ids)


def dev_quality(model, feats: dict[str, np.ndarray], splits, text_emb) -> dict:
    E = model.embed_image_features(feats["pooled"], feats["logits"], None,
                                   feats["prehead"].astype(np.float16))
    res = {}
    for (split, rows, _, cap_rows), T in zip(splits, text_emb):
        S = E[rows] @ T.T - model.caption_offsets(T)[None, :]
        r = recall_5cap_scores(S, cap_rows)
        res[split] = {k: round(r[k], 2) for k in ("i2t_R@1", "t2i_R@1", "t2i_R@10")}
    score = float(np.mean([0.5 * (r["i2t_R@1"] + r["t2i_R@1"]) for r in res.values()]))
    return {"selection_score": round(score, 3), "dev": res}


def layer_errors(fp32: Path, qdq: Path, images: np.ndarray) -> dict[str, float]:
    """SQNR (dB) of each quantized activation against fp32, lowest first."""
    from onnxruntime.quantization import CalibrationDataReader
    from onnxruntime.quantization.qdq_loss_debug import (
        collect_activations, compute_activation_error, create_activation_matching,
        modify_model_output_intermediate_tensors)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"images": images[i : i + 4]} for i in range(0, len(images), 4)])

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as tmp:
        acts = {}
        for name, path in (("fp32", fp32), ("qdq", qdq)):
            aug = Path(tmp) / f"{name}_aug.onnx"
            modify_model_output_intermediate_tensors(str(path), str(aug))
            acts[name] = collect_activations(str(aug), Reader())
    match = create_activation_matching(acts["qdq"], acts["fp32"])
    err = compute_activation_error(match)
    sqnr = {k: float(v["xmodel_err"]) for k, v in err.items()
            if "xmodel_err" in v and np.isfinite(v["xmodel_err"]) and "Constant" not in k}
    return dict(sorted(sqnr.items(), key=lambda kv: kv[1]))


def producers(model_path: Path, tensors: list[str]) -> list[str]:
    import onnx

    graph = onnx.load(str(model_path)).graph
    by_output = {o: n.name for n in graph.node for o in n.output}
    return [by_output[t] for t in tensors if t in by_output]


def tail_nodes(model_path: Path, first_block: int) -> list[str]:
    """The nodes from block ``first_block`` on: the rest of the trunk, the head conv, the pool,
    the classifier and the output reshapes (all at the last, smallest feature map)."""
    import re

    import onnx

    names = [n.name for n in onnx.load(str(model_path)).graph.node]
    start = next(i for i, n in enumerate(names) if n.startswith(f"/_blocks.{first_block}/"))
    return [n for n in names[start:] if not re.search(r"Constant|Shape", n)]


def matching_nodes(model_path: Path, pattern: str) -> list[str]:
    """The nodes whose names match the regular expression ``pattern``."""
    import re

    import onnx

    return [n.name for n in onnx.load(str(model_path)).graph.node if re.search(pattern, n.name)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exclude", type=int, nargs="*", default=[4, 12],
                    help="variants keeping this many of the worst layers in fp32")
    ap.add_argument("--tail", type=int, nargs="*", default=[],
                    help="variants keeping every layer from this block on in fp32")
    ap.add_argument("--keep", nargs="*", default=[],
                    help="variants keeping the nodes whose names match this regex in fp32")
    ap.add_argument("--calibration", type=Path,
                    help="reuse (or save) the MinMax calibration in this file")
    ap.add_argument("--openvino", type=Path, help="outputs of benchmarks/int8_openvino.py")
    ap.add_argument("--dump", type=Path, help="write the calibration and dev batches here "
                    "(for benchmarks/int8_openvino.py) and stop")
    ap.add_argument("--ship", help="write this variant's calibration as the shipped int8 file")
    ap.add_argument("--model", default="dual", help="the model whose image tower is quantized")
    ap.add_argument("--name", default="int8_default", help="results file name")
    args = ap.parse_args()
    t_start = time.time()
    model = load_embedding_model(args.model)
    backbone = model.image_backbone
    size = get_backbone(backbone).image_size
    image_paths, splits, (ids, paths, split_ids) = dev_data()
    rng = np.random.default_rng(0)
    path_of = dict(zip(ids, paths))
    cal_paths = []
    for prefix in ("", "cc:"):
        train = [i for i in split_ids["train"] if i.startswith(prefix) and
                 (prefix or ":" not in i)]
        cal_paths += [path_of[train[k]] for k in rng.choice(len(train), N_CALIBRATION,
                                                             replace=False)]
    cal = load_batch(cal_paths, size)
    dev = load_batch(image_paths, size)
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        np.save(args.dump / "calibration.npy", cal)
        np.save(args.dump / "dev.npy", dev)
        print(f"wrote {args.dump}")
        return
    fp32 = image_tower(backbone).prepare("fp32")
    work = Path(tempfile.mkdtemp(prefix="xmodal-int8-"))
    if args.calibration and args.calibration.is_file():
        calibration = {"minmax": json.loads(args.calibration.read_text())}
    else:
        calibration = {"minmax": calibrate(fp32, (cal[s : s + 16]
                                                  for s in range(0, len(cal), 16)), "minmax")}
        if args.calibration:
            args.calibration.write_text(json.dumps(calibration["minmax"]))
    variants = {"qdq-minmax": ("minmax", "qdq", ()),
                "qoperator-minmax": ("minmax", "qoperator", ())}
    built = {}
    for name, (method, fmt, exclude) in variants.items():
        t0 = time.time()
        built[name] = quantize_effnet(fp32, work / f"{name}.onnx", calibration[method],
                                      exclude, fmt)
        print(f"{name}: quantized in {time.time() - t0:.0f} s")
    errors = layer_errors(fp32, built["qdq-minmax"], dev[:8]) if args.exclude else {}
    kept = ([(f"worst{k}", producers(fp32, list(errors)[:k])) for k in args.exclude]
            + [(f"from-block{k}", tail_nodes(fp32, k)) for k in args.tail]
            + [(pattern, matching_nodes(fp32, pattern)) for pattern in args.keep])
    for label, excluded in kept:  # QOperator with these nodes in fp32
        name = f"qoperator-minmax-fp32-{label}"
        variants[name] = ("minmax", "qoperator", tuple(excluded))
        built[name] = quantize_effnet(fp32, work / f"{name}.onnx", calibration["minmax"],
                                      excluded, "qoperator")

    sessions = {"fp32": session(fp32), **{k: session(p) for k, p in built.items()}}
    x = dev[:32]
    speed: dict[str, list[float]] = {k: [] for k in sessions}
    for _ in range(5):
        for k, sess in sessions.items():
            t0 = time.perf_counter()
            sess.run(OUTPUTS, {"images": x})
            speed[k].append(32 / (time.perf_counter() - t0))

    text_emb = [model.embed_text_features(encode_texts(texts, encoder=model.text_encoder,
                                                       progress=False))
                for _, _, texts, _ in splits]
    feats = {k: run(sess, dev) for k, sess in sessions.items()}
    if args.openvino:
        for f in sorted(args.openvino.glob("*.npz")):
            got = np.load(f)
            feats[f.stem] = {k: got[k] for k in OUTPUTS}
        meta = json.loads((args.openvino / "speed.json").read_text())
        speed.update({k: [v] for k, v in meta["images_per_s_batch32"].items()})
    quality = {k: dev_quality(model, f, splits, text_emb) for k, f in feats.items()}
    base = quality["fp32"]["selection_score"]
    rows = {}
    for k in feats:
        drop = round(base - quality[k]["selection_score"], 3)
        cos = (feats[k]["logits"] * feats["fp32"]["logits"]).sum(1) / (
            np.linalg.norm(feats[k]["logits"], axis=1)
            * np.linalg.norm(feats["fp32"]["logits"], axis=1))
        rows[k] = {**quality[k], "selection_drop": drop, "acceptable": drop <= TOLERANCE,
                   "images_per_s_batch32": round(statistics.median(speed[k]), 1),
                   "speedup": round(statistics.median(speed[k]) / statistics.median(
                       speed["fp32"]), 2),
                   "logits_cosine_min_mean": [round(float(cos.min()), 4),
                                              round(float(cos.mean()), 4)],
                   **({"kept_fp32": list(variants[k][2])} if k in variants else {})}
        print(k, rows[k])
    out = {"model": args.model, "backbone": backbone,
           "calibration": f"{N_CALIBRATION} Flickr8K + {N_CALIBRATION} CC training photos (seed 0)",
           "tolerance": f"selection score drop <= {TOLERANCE}",
           "dev": "Flickr8K dev 1,000 x 5,000 and CC dev 1,000 x 1,000, default model with "
                  "its image querybank",
           "worst_layers_sqnr_db": {k: round(v, 2) for k, v in list(errors.items())[:12]},
           "variants": rows, "elapsed_s": round(time.time() - t_start)}
    record(args.name, out)
    if args.ship:
        method, fmt, exclude = variants[args.ship]
        target = asset_path(backbone)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({
            "variant": args.ship, "format": fmt, "kept_fp32": list(exclude),
            "calibration": out["calibration"], "method": method,
            "dev": rows[args.ship], "onnxruntime_calibration": calibration[method]}) + "\n")
        print(f"wrote {target}")

if __name__ == "__main__":
    main()
