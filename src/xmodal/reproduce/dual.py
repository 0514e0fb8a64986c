"""The dual encoder (``reports/dual_encoder.md``): test tables, out-of-domain check, variants.

- :func:`evaluate_models`: the shipped model and the zero-shot bridge on ``flickr8k-5cap``,
  ``flickr8k-hodosh`` and ``flickr8k-hodosh-crowd`` through the settings table's scorers (what
  ``xmodal eval`` prints);
- :func:`ood_check`: the ``skimage-ood`` protocol: scikit-image sample photos, one sentence query
  each, alone and among the 1,000 Flickr8K test images;
- :func:`variants` / :func:`ensembles`: the training variants compared on the dev split (the
  report's "What was tried" tables; selection on dev only, test shown for the record);
  :func:`bridge_temperatures`: the zero-shot bridge's softmax temperature on dev.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from xmodal.data.skimage_samples import QUERIES, sample_photos  # noqa: F401 (re-export)
from xmodal.reproduce.output import log

MODELS = ("dual", "dual-qb", "efficientnet-minilm-zeroshot")
# earlier default models (their files at the commit that shipped them) and the protocols the
# report compares them on: the previous default (issue 3), the third round's and the fourth
# round's shipped models, the fifth round's (lr 3e-4; with its skimage-ood check) and the
# default before the seventh round's querybank
PREVIOUS = {
    "previous_test": ("070e029", ("flickr8k-5cap", "flickr8k-hodosh", "flickr8k-hodosh-crowd")),
    "third_test": ("95519b3", ("flickr8k-5cap", "cc-heldout")),
    "fourth_test": ("c0779cd", ("flickr8k-5cap", "cc-heldout")),
    "fifth_test": ("6902948", ("flickr8k-5cap", "cc-heldout", "skimage-ood")),
    # the fifth round's second model: the same weights in float16, without a querybank
    "sixth_test": ("8336c86", ("flickr8k-5cap", "cc-heldout", "skimage-ood")),
}
# models whose scorer needs Conceptual Captions 18k (skipped, like CC_PROTOCOLS, without it)
CC_MODELS = ("dual-qb",)
PROTOCOLS = ("flickr8k-5cap", "flickr8k-hodosh", "flickr8k-hodosh-crowd")
# out of domain, evaluated when Conceptual Captions 18k is on the machine (not in CI)
CC_PROTOCOLS = ("cc-heldout",)
OOD_QUERIES = QUERIES  # the skimage-ood protocol's queries (xmodal.data.skimage_samples)
# issue 3's recipe before the first round (TrainConfig's defaults then; they are now the shipped
# drop4ep60 recipe): pooled input, dropout 0.2, 40 epochs; the first model shipped with 30
FIRST = {"dropout": 0.2, "epochs": 40, "bridge_input": False}
# variant -> TrainConfig overrides (first round, dev and test): changes to FIRST
VARIANTS = {name: {**FIRST, **over} for name, over in {
    "base": {"epochs": 30},
    "d512": {"dim": 512},
    "h1024": {"hidden": 1024},
    "drop4": {"dropout": 0.4},
    "drop4ep60": {"dropout": 0.4, "epochs": 60, "bridge_input": True},
    "maps": {"use_maps": True, "bridge_input": True},
    "ep80": {"epochs": 80},
    "lr3": {"lr": 3e-3},
    "b256": {"batch_images": 256},
    "bridgein": {"bridge_input": True},
    "lit": {"text_identity": True},
    "lit_bridgein": {"text_identity": True, "bridge_input": True},
}.items()}
# variant -> (TrainConfig overrides, seeds of the ensemble members); second round, dev only
ENSEMBLES: dict[str, tuple[dict, tuple[int, ...]]] = {
    "shipped": ({}, (0,)),
    "ep30": ({"epochs": 30}, (0,)),
    "hn5": ({"hard_negative_beta": 5.0}, (0,)),
    "hn10": ({"hard_negative_beta": 10.0}, (0,)),
    "h1024": ({"hidden": 1024}, (0,)),
    "ens3_ep30": ({"epochs": 30}, (0, 1, 2)),
    "ens2_ep30": ({"epochs": 30}, (0, 1)),
    "ens2_hn5": ({"hard_negative_beta": 5.0}, (0, 1)),
    "ens2": ({}, (0, 1)),
    "ens3": ({}, (0, 1, 2)),
}


def evaluate_models(models=MODELS, protocols=PROTOCOLS, data=None) -> dict:
    """``{protocol: {model: {direction: metrics}}}`` as ``xmodal eval`` computes them."""
    from xmodal.errors import XmodalError
    from xmodal.eval.runner import run_eval
    from xmodal.factory import get_scorer

    out: dict = {}
    for p in protocols:
        proto = _protocol(p, data)
        if proto is None:
            continue
        for m in models:
            try:
                rep = run_eval(proto, get_scorer(m, p), model=m, with_curves=False)
            except XmodalError as exc:
                if m not in CC_MODELS:
                    raise
                log(f"{p} / {m} skipped: {exc}")
                continue
            out.setdefault(p, {})[m] = rep["directions"]
            log(f"{p} / {m}: {rep['directions']}")
    return out


def _protocol(name: str, data=None):
    """The protocol ``name``, or None (logged) for one that needs Conceptual Captions when
    CC18k is not on this machine."""
    from xmodal.errors import XmodalError
    from xmodal.eval.protocols import get_protocol

    try:
        return get_protocol(name, data)
    except XmodalError as exc:
        if name not in CC_PROTOCOLS:
            raise
        log(f"{name} skipped: {exc}")
        return None


def previous_models(keys=tuple(PREVIOUS), data=None) -> dict:
    """``{key: {"commit", "test": {protocol: {direction: metrics}}}}``: the earlier default
    models of :data:`PREVIOUS`, loaded from their files at the commit that shipped them and
    scored as ``xmodal eval -m DIR`` scores a saved model."""
    import tempfile

    from xmodal.models.dual import DualEncoder
    from xmodal.provenance import files_at

    out = {}
    for key in keys:
        commit, protocols = PREVIOUS[key]
        with tempfile.TemporaryDirectory() as tmp:
            folder = files_at(commit, "src/xmodal/assets/dual", tmp)
            model = DualEncoder.load(folder)
            mb = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
        out[key] = {"commit": commit, "model_mb": round(mb, 2),
                    "test": test_model(model, protocols, data, f"{key} ({commit})")}
    return out


def test_model(model, protocols, data=None, name: str = "model") -> dict:
    """``{protocol: metrics}`` of a joint-space model, scored as ``xmodal eval -m DIR`` scores a
    saved model (``paper_metrics`` for skimage-ood, else both directions); a protocol that
    needs Conceptual Captions is skipped without it."""
    from xmodal.eval.runner import run_eval
    from xmodal.recipes.flickr8k import embedding_scorer

    scorer, test = embedding_scorer(model), {}
    for p in protocols:
        proto = _protocol(p, data)
        if proto is None:
            continue
        rep = run_eval(proto, scorer, model=name, with_curves=False)
        test[p] = rep["paper_metrics"] if p == "skimage-ood" else rep["directions"]
        log(f"{name} / {p}: {test[p]}")
    return test


# the fourth round's model, stage 1 of the default model since the fifth round
STAGE1_COMMIT = "712c75b"


def max_array_difference(a_dir: Path, b_dir: Path) -> float | None:
    """Largest absolute difference between two model directories' arrays; None when their
    arrays differ in name or shape (e.g. another bridge weight: other embedding widths)."""
    with np.load(Path(a_dir) / "arrays.npz") as a, np.load(Path(b_dir) / "arrays.npz") as b:
        if set(a.files) != set(b.files) or any(a[k].shape != b[k].shape for k in a.files):
            return None
        return max(float(np.abs(a[k].astype(np.float64) - b[k]).max(initial=0.0))
                   for k in a.files)


def _feature_cache_bytes() -> int:
    """Bytes in the feature cache: a run that grew it extracted features."""
    from xmodal.paths import cache_dir

    return sum(f.stat().st_size for f in (cache_dir() / "features").glob("*") if f.is_file())


def train_cli(stage1=None, data=None) -> dict:
    """Run ``xmodal train dual`` as a user would (a subprocess) and compare what it saved with
    the shipped model: the whole recipe, or with ``stage1`` only stage 2 from that model
    (``--stage2-from``). Records wall times, the load average, the largest absolute difference
    of the arrays, and the dev choices (epochs, bridge weight, selection score)."""
    import subprocess
    import sys
    import tempfile

    from xmodal.models.dual import DEFAULT_MODEL_DIR
    from xmodal.provenance import files_at

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dual"
        cmd = [sys.executable, "-m", "xmodal", "train", "dual", "--out", str(out)]
        cmd += ["--stage2-from", str(stage1)] if stage1 is not None else []
        cmd += ["--data", str(data)] if data is not None else []
        before = _feature_cache_bytes()
        t0 = time.time()
        subprocess.run(cmd, check=True)
        rec = {"command": "xmodal train dual --out OUT"
                          + (" --stage2-from STAGE1" if stage1 is not None else ""),
               "wall_s": round(time.time() - t0),
               "load_avg_1min_at_end": round(os.getloadavg()[0], 2),
               "feature_cache_grew_mb": round((_feature_cache_bytes() - before) / 1e6, 1)}
        line = json.loads((out / "config.json").read_text())["provenance"]["stage2"]
        rec["stage2"] = {k: line[k] for k in ("best_epoch", "w", "score", "score_w0", "top_lr")
                         if k in line}
        rec["stage2"]["max_abs_diff"] = max_array_difference(out, DEFAULT_MODEL_DIR)
        if stage1 is None:  # the model from scratch on test: a check of the recipe, no choice
            from xmodal.models.dual import DualEncoder

            rec["test"] = test_model(DualEncoder.load(out), ("flickr8k-5cap", "cc-heldout"), data,
                                     "xmodal train dual")
            first = out.with_name("dual-stage1")
            prov = json.loads((first / "config.json").read_text())["provenance"]
            rec["stage1"] = {"wall_s": round((first / "config.json").stat().st_mtime - t0),
                             "best_epoch": prov["best_epoch"], "w": prov["bridge_weight"],
                             "reference_commit": STAGE1_COMMIT,
                             "max_abs_diff": max_array_difference(first, files_at(
                                 STAGE1_COMMIT, "src/xmodal/assets/dual", Path(tmp) / "ref"))}
    log(f"xmodal train dual: {rec}")
    return rec


def query_ranks(S: np.ndarray) -> list[int]:
    """S: (n_gallery, n_queries) with query j's photo at gallery row j; 1 = first (ties count
    against the photo, as in :func:`xmodal.eval.protocol_builders.ood_ranks`)."""
    return [int((S[:, j] >= S[j, j]).sum()) for j in range(S.shape[1])]


def ood_check(specs=("dual",), data=None) -> dict:
    """Rank of each sample photo for its query, among the photos and with distractors: the
    ``skimage-ood`` protocol scored through each model's scorer (what ``xmodal eval -p
    skimage-ood -m SPEC`` prints)."""
    from xmodal.eval.protocols import get_protocol
    from xmodal.eval.runner import run_eval
    from xmodal.factory import get_scorer

    proto = get_protocol("skimage-ood", data)
    out = {}
    for spec in specs:
        rep = run_eval(proto, get_scorer(spec, "skimage-ood"), model=spec, with_curves=False)
        out[spec] = rep["paper_metrics"]
        log(f"skimage-ood / {spec}: {out[spec]['top1_with_distractors']} first, "
            f"{out[spec]['top5_with_distractors']} in the top 5")
    return {"queries": dict(OOD_QUERIES), "results": out}


def _split_eval(model, td, raw_pooled, split: str) -> dict:
    from xmodal.models.dual_train import recall_5cap, split_rows

    rows, caps = split_rows(td, split)
    pos = {int(r): i for i, r in enumerate(rows)}
    cap_img = np.array([pos[int(r)] for r in td.caption_image[caps]])
    maps = td.maps[rows] if td.maps is not None else None
    ei = model.embed_image_features(raw_pooled[rows], td.logits[rows], maps)
    et = model.embed_text_features(td.text[caps])
    return recall_5cap(ei, et, cap_img)


def variants(names, max_train: int = 6000, data=None, weights=(0.0, 0.1, 0.2, 0.3, 0.4)
             ) -> list[dict]:
    """Train each variant (epoch chosen on dev), then dev and test R@K for each bridge weight."""
    from xmodal.models.dual import DualEncoder
    from xmodal.models.dual_train import TrainConfig, fit_heads
    from xmodal.recipes.dual import load_train_data

    use_maps = any(VARIANTS[v].get("use_maps") for v in names)
    td = load_train_data(data, max_train_images=max_train, use_maps=use_maps, progress=False)
    raw = td.pooled
    zs = DualEncoder(bridge_weight=1.0)
    lines = [{"variant": "zero-shot bridge", "n_train": max_train, "w": 1.0,
              **{s: _split_eval(zs, td, raw, s) for s in ("dev", "test")}}]
    for name in names:
        cfg = TrainConfig(**VARIANTS[name])
        cfg.max_train_images = max_train
        image_input = "pooled+bridge" if cfg.bridge_input else "pooled"
        td.pooled = DualEncoder(image_input=image_input).head_image_input(raw, td.logits)

        def eval_fn(heads, image_input=image_input):
            m = DualEncoder(bridge_weight=0.0, image_input=image_input)
            m.heads_ = heads
            r = _split_eval(m, td, raw, "dev")
            return 0.5 * (r["i2t_R@1"] + r["t2i_R@1"])

        t1 = time.time()
        heads, _, best_epoch = fit_heads(td, cfg, log=lambda *_: None, eval_fn=eval_fn)
        took = time.time() - t1
        for w in weights:
            m = DualEncoder(bridge_weight=w, image_input=image_input)
            m.heads_ = heads
            lines.append({"variant": name, "n_train": max_train, "w": w,
                          "best_epoch": best_epoch, "fit_s": round(took),
                          "dev": _split_eval(m, td, raw, "dev"),
                          "test": _split_eval(m, td, raw, "test")})
            log(json.dumps(lines[-1]))
    return lines


def bridge_temperatures(temperatures, max_train: int = 6000, data=None) -> list[dict]:
    """First round, dev split only: the zero-shot bridge (no trained head) with each softmax
    temperature over the ImageNet classes (1 is what ships)."""
    from xmodal.models.dual import DualEncoder
    from xmodal.recipes.dual import load_train_data

    td = load_train_data(data, max_train_images=max_train, use_maps=False, progress=False)
    lines = []
    for t in temperatures:
        bridge = DualEncoder(bridge_weight=1.0, bridge_temperature=t)
        lines.append({"temperature": t, "dev": _split_eval(bridge, td, td.pooled, "dev")})
        log(json.dumps(lines[-1]))
    return lines


def ensembles(names, data=None, weights=(0.0, 0.1, 0.2)) -> list[dict]:
    """Second round, dev split only: K heads (seeds 0..K-1) whose unit embeddings are
    concatenated / sqrt(K), blended with the bridge as the single model is."""
    from xmodal.models.dual import DualEncoder, l2_normalize
    from xmodal.models.dual_train import TrainConfig, fit_heads, recall_5cap, split_rows
    from xmodal.recipes.dual import load_train_data

    td = load_train_data(data, progress=False)
    enc = DualEncoder(image_input="pooled+bridge")
    td.pooled = enc.head_image_input(td.pooled, td.logits)
    dev_rows, dev_caps = split_rows(td, "dev")
    pos = {int(r): i for i, r in enumerate(dev_rows)}
    cap_img = np.array([pos[int(r)] for r in td.caption_image[dev_caps]])
    bridge_i = enc.bridge_image(td.logits[dev_rows])
    bridge_t = l2_normalize(td.text[dev_caps])

    def dev(zi, zt, w):
        ei = np.concatenate([np.sqrt(1 - w) * zi, np.sqrt(w) * bridge_i], 1)
        et = np.concatenate([np.sqrt(1 - w) * zt, np.sqrt(w) * bridge_t], 1)
        return recall_5cap(ei, et, cap_img)

    def eval_fn(heads):
        r = dev(heads.embed_images(td.pooled[dev_rows]), heads.embed_texts(td.text[dev_caps]), 0.0)
        return 0.5 * (r["i2t_R@1"] + r["t2i_R@1"])

    cache: dict = {}
    lines = []
    for name in names:
        over, seeds = ENSEMBLES[name]
        zis, zts, took, epochs = [], [], 0.0, []
        for seed in seeds:
            key = (json.dumps(over, sort_keys=True), seed)
            if key not in cache:
                t1 = time.time()
                heads, _, best_epoch = fit_heads(td, TrainConfig(**over, seed=seed),
                                                 log=lambda *_: None, eval_fn=eval_fn)
                cache[key] = (heads.embed_images(td.pooled[dev_rows]),
                              heads.embed_texts(td.text[dev_caps]), time.time() - t1, best_epoch)
            zi, zt, dt, ep = cache[key]
            zis.append(zi)
            zts.append(zt)
            epochs.append(ep)
            took += dt
        zi = np.concatenate(zis, 1) / np.sqrt(len(zis))
        zt = np.concatenate(zts, 1) / np.sqrt(len(zts))
        # the alternative the ensemble does not use: members' embeddings averaged, renormalised
        avg_i, avg_t = (l2_normalize(np.mean(z, 0)) for z in (zis, zts))
        for w in weights:
            d = dev(zi, zt, w)
            line = {"variant": name, "w": w, "seeds": list(seeds), "best_epochs": epochs,
                    "fit_s": round(took), "dev": d,
                    "dev_mean_r1": 0.5 * (d["i2t_R@1"] + d["t2i_R@1"])}
            if len(seeds) > 1:
                a = dev(avg_i, avg_t, w)
                line.update(dev_averaged=a,
                            dev_averaged_mean_r1=0.5 * (a["i2t_R@1"] + a["t2i_R@1"]))
            lines.append(line)
            log(json.dumps(lines[-1]))
    return lines


def broader(names, data=None, cc_path=None, models_dir: str | Path | None = None) -> list[dict]:
    """Train each named third- or fourth-round variant (``dual_broader.BROADER``), one full
    :func:`xmodal.recipes.dual.train_dual` run each, epoch and bridge weight selected on
    Flickr8K dev and, with CC, the CC dev split (no test split is read). One line per variant
    with its dev numbers per split, the selected epoch and bridge weight and the training time.
    ``models_dir``: also save each model there (``models_dir/NAME``), so the best one can be
    shipped without retraining."""
    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.models.dual_train import TrainConfig
    from xmodal.recipes.dual import train_dual
    from xmodal.reproduce.dual_broader import BROADER

    unknown = [n for n in names if n not in BROADER]
    if unknown:
        from xmodal.errors import XmodalError

        raise XmodalError(f"unknown variants {unknown}; known: {sorted(BROADER)}")
    cc = None
    lines = []
    for name in names:
        over, use_cc = BROADER[name]
        if use_cc and cc is None:
            cc = load_conceptual_captions(cc_path)
        model, rep = train_dual(data, config=TrainConfig(**over), extra={"cc": cc} if use_cc
                                else None, log=lambda *_: None, progress=False)
        line = {"variant": name, "overrides": over, "cc": use_cc,
                "best_epoch": rep["best_epoch"], "w": rep["bridge_weight"],
                "fit_s": rep["train_time_s"], "dev": rep.get("dev_splits", {"dev": rep["dev"]})}
        if models_dir is not None:
            model.save(Path(models_dir) / name)
        lines.append(line)
        log(json.dumps(line))
    return lines


def reproduce(evaluate: bool = True, ood=("dual",), variant_names=(), ensemble_names=(),
              max_train: int = 6000, data=None, out=None,
              command: str = "xmodal reproduce dual", broader_names=(), models_dir=None,
              finetune_lrs=(), finetune_epochs: int = 6,
              finetune_flip: float = 0.5, finetune_from=None, querybank_betas=(),
              image_bank_dims=(), previous: bool = False, train_cli_from=None,
              bridge_temperature=()) -> dict:
    """Run the requested parts and merge them into ``dual_encoder.json`` (parts not rerun are
    kept); the CLI renders the tables and the report from it (``dual_report``).
    ``train_cli_from``: "full" runs the whole ``xmodal train dual``, a path its stage 2 from that
    stage-1 model (:func:`train_cli`)."""
    from xmodal.reproduce.output import RESULTS, read_json, stamp, write_json

    path = Path(out or RESULTS) / "dual_encoder.json"
    res = read_json(path)
    t0 = time.time()
    if evaluate:
        res["test"] = evaluate_models(protocols=PROTOCOLS + CC_PROTOCOLS, data=data)
    if ood:
        res["ood"] = ood_check(ood, data)
    # the first and second rounds stamp their own parts: the file's stamp is the test tables'
    if variant_names:  # a variant rerun replaces its lines, the others are kept
        lines = variants(variant_names, max_train, data)
        run = stamp(command)
        redone = {v["variant"] for v in lines}
        res["variants"] = ([v for v in res.get("variants", []) if v["variant"] not in redone]
                           + [{**v, "run": run} for v in lines])
    if bridge_temperature:
        res["bridge_temperature"] = {"lines": bridge_temperatures(bridge_temperature, max_train,
                                                                  data), "run": stamp(command)}
    if ensemble_names:
        t1 = time.time()
        res["ensembles"] = ensembles(ensemble_names, data)
        res["ensembles_run"] = {**stamp(command), "elapsed_s": time.time() - t1}
    if broader_names:
        done = {v["variant"]: v for v in res.get("broader", [])}
        done.update({v["variant"]: v for v in broader(broader_names, data, models_dir=models_dir)})
        res["broader"] = list(done.values())
    if finetune_lrs:
        from xmodal.recipes.dual_finetune import finetune

        def key(v):
            return v["top_lr"], v["flip_prob"], v["epochs"]

        done = {key(v): v for v in res.get("finetune", [])}
        for lr in finetune_lrs:
            line, model = finetune(top_lr=lr, epochs=finetune_epochs, flip_prob=finetune_flip,
                                   data=data, log=log, warm_from=finetune_from)
            done[key(line)] = {**line, "run": stamp(command)}
            if models_dir is not None:
                model.save(Path(models_dir) / f"finetune_{lr:g}_flip{finetune_flip:g}")
        res["finetune"] = [done[k] for k in sorted(done)]
    if previous:
        res["previous"] = {**previous_models(data=data), "run": stamp(command)}
    if train_cli_from is not None:
        full = str(train_cli_from) == "full"
        # the whole recipe and stage 2 alone from the shipped stage 1 are kept side by side
        res["train_cli" if full else "train_cli_stage2"] = {
            **train_cli(None if full else train_cli_from, data), "run": stamp(command)}
    if querybank_betas:  # dev only; the test numbers of dual-qb come with the test tables
        from xmodal.factory import load_embedding_model
        from xmodal.recipes.querybank import select_beta

        res["querybank"] = {**select_beta(load_embedding_model("dual"), querybank_betas,
                                          data=data, log=log), "run": stamp(command)}
    if image_bank_dims:  # dev only, images only: what ships inside the default model
        from xmodal.factory import load_embedding_model
        from xmodal.recipes.querybank import BETAS, select_image_bank

        res["image_bank"] = {**select_image_bank(load_embedding_model("dual"), image_bank_dims,
                                                 querybank_betas or BETAS, data=data, log=log),
                             "run": stamp(command)}
    if evaluate or ood or broader_names:
        # the file's own stamp: --variants, --ensembles and --finetune runs stamp their parts
        res.update(stamp(command), elapsed_s=time.time() - t0)
    write_json(path, res)
    return res
