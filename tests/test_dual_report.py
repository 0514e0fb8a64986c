"""``reports/dual_encoder.md`` is rendered from the stored JSON, and its numbers and comparison
sentences follow the JSON (a synthetic result with changed numbers renders them)."""

import copy
import json
from pathlib import Path

import pytest
from stored_results import stored
from typer.testing import CliRunner

from xmodal.recipes.dual_finetune import SHIPPED_STAGE2
from xmodal.reproduce.dual_broader import BROADER
from xmodal.reproduce.dual_report import (
    EXTRA,
    NEEDED,
    SHIPPED,
    THIRD_SHIPPED,
    markdown,
    report_markdown,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PROTOCOLS = ("flickr8k-5cap", "flickr8k-hodosh", "flickr8k-hodosh-crowd", "cc-heldout")
MACHINE = {"cpu": "Test CPU", "cpu_count": 2, "load_avg_1min": 0.5}


def test_stored_report_is_what_the_stored_json_renders():
    res = stored("dual_encoder")
    extra = {name: stored(name) for name in EXTRA}
    assert report_markdown(res, extra) == (ROOT / "reports" / "dual_encoder.md").read_text()
    assert markdown(res) == (RESULTS / "dual_encoder_tables.md").read_text()


# -- a synthetic result in the layout of dual_encoder.json and the results the report cites -------
def _directions(r1: float, r10: float) -> dict:
    m = {"R@1": r1, "R@5": (r1 + r10) / 2, "R@10": r10, "medR": 4.0, "R-P": r1, "mAP@R": r1 / 2}
    return {"i2t": dict(m), "t2i": dict(m)}


def _variant(name: str, i2t: float, t2i: float, **overrides) -> dict:
    dev = {"i2t_R@1": i2t, "t2i_R@1": t2i, "t2i_R@10": 70.0}
    return {"variant": name, "overrides": overrides, "cc": name != "f8k",
            "best_epoch": [55, 55] if name == SHIPPED else 50, "w": 0.1, "fit_s": 300.0,
            "dev": {"dev": dev} if name == "f8k" else {"dev": dev, "cc_dev": dict(dev)}}


def _synthetic(fourth=()) -> tuple[dict, dict]:
    """(dual_encoder.json, {name: cited result}); ``fourth``: fourth-round variants to add."""
    photos = ("astronaut", "moon", "page")
    broader = [_variant(n, 20.0 + k, 20.0 + k, **BROADER[n][0]) for k, n in enumerate(NEEDED)]
    res = {
        "command": "xmodal reproduce dual", "git_commit": "0123456", "date": "2030-01-01 00:00 UTC",
        "machine": MACHINE, "elapsed_s": 60.0,
        "test": {p: {"dual": _directions(0.3, 0.7), "efficientnet-minilm-zeroshot":
                     _directions(0.05, 0.2)} for p in PROTOCOLS},
        "ood": {"queries": {k: f"a photo of {k}" for k in photos},
                "results": {"dual": {"photos_only": {"astronaut": 1, "moon": 3, "page": 1},
                                     "with_flickr8k_test_distractors":
                                         {"astronaut": 2, "moon": 3, "page": 1},
                                     "top1_photos_only": "2/3", "top1_with_distractors": "10/13",
                                     "top5_with_distractors": "13/13"}}},
        "broader": broader + list(fourth),
    }
    before = _directions(0.1, 0.35)
    extra = {
        "ood_eval": {"command": "python benchmarks/ood_eval.py", "commit": "abcdef0",
                     "results": {"cc-heldout": {"dual": {"directions": before}},
                                 "cc-dev": {"dual": {"directions": before}},
                                 "skimage-ood": {"dual": {"paper_metrics": {
                                     "with_flickr8k_test_distractors":
                                         {"astronaut": 294, "moon": 3, "page": 49},
                                     "top1_with_distractors": "0/3",
                                     "top5_with_distractors": "1/3"}}}}},
        "query_latency": {"command": "python benchmarks/query_latency.py", "machine": MACHINE,
                          "results": {k: {"median_ms": ms, "n": 20} for k, ms in
                                      (("minilm", 3.0), ("mpnet", 15.0),
                                       ("dual_embed_texts", 20.0))}},
        "index_speed_models_lite0_vs_lite2": {
            "command": "python benchmarks/index_speed.py --models m/cc_mpnet dual",
            "machine": {**MACHINE, "load_avg_1min": 4.0},
            "results": {"images": 1000, "models": {
                "m/cc_mpnet": {"images_per_s": 40.0, "ratio_to_first": 1.0},
                "dual": {"images_per_s": 20.0, "ratio_to_first": 0.5}}}},
        "index_speed": {"machine": MACHINE,
                        "results": {"engines": {"onnx": {"images_per_s": 170.0}}}},
        "finetune_cost": {"command": "python benchmarks/finetune_cost.py", "results": {
            "image_head_conv_per_s": 260.0, "image_last_block_and_head_conv_per_s": 70.0,
            "text_last_layer_per_s": 50.0, "epoch_s": {"image_head_conv": 87.0,
                                                       "image_last_block_and_head_conv": 323.0,
                                                       "text_last_layer": 933.0}}},
        "querybank_cost": {"command": "python -m benchmarks.querybank_cost", "machine": MACHINE,
                           "results": {"load_ms": 150.0, "pools": {
                               n: {"offsets_ms": ms, "dot_products_ms": 0.1} for n, ms in
                               (("100", 30.0), ("1000", 290.0), ("5000", 1500.0))}}},
        "index_speed_stage2": {"command": "python benchmarks/index_speed.py --models m dual",
                               "machine": MACHINE, "results": {"images": 300, "models": {
                                   "m": {"images_per_s": 14.0, "ratio_to_first": 1.0},
                                   "dual": {"images_per_s": 13.0, "ratio_to_first": 0.93}}}},
        "encode_speed": {"command": "python benchmarks/encode_speed.py", "machine": MACHINE,
                         "results": {"engine": "onnx", "images": 200, "texts": 2000,
                                     "cold": {"lite0": 80.0, "lite2": 40.0, "minilm": 250.0,
                                              "mpnet": 30.0},
                                     "lite2_cached": 15000.0, "training_data": {
                                         "flickr8k": {"images": 8000, "captions": 40000},
                                         "cc": {"images": 18000, "captions": 18000}}}},
    }
    return res, extra


def _flat(text: str) -> str:
    """The report with its line wrapping undone."""
    return " ".join(text.split())


def test_changed_numbers_are_rendered_and_goals_follow_them():
    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    heads = BROADER[SHIPPED][0]["ensemble_size"]
    from xmodal.recipes.querybank import SHIPPED_IMAGE_BANK

    bank = (f", int8, image querybank of {SHIPPED_IMAGE_BANK['dim']} dimensions, beta "
            f"{SHIPPED_IMAGE_BANK['beta']:g}")  # the shipped model files carry it
    assert (f"| **dual (shipped: Lite2 + MPNet, F8K + CC, {heads} heads, mirrored images, hard "
            f"negatives, head conv tuned at lr {SHIPPED_STAGE2['top_lr']:g}{bank})** | **30.0** | "
            "50.0 | 70.0 |") in md
    assert "image->text does not: 30.0 against 35" in md
    assert "t2i R@10 is 70.0 = **2.00x** (goal: >= 2x, met)" in md
    assert "Goal met (>= 9 first, >= 11 in the top 5)." in md
    assert "at commit `0123456` (2030-01-01 00:00 UTC)" in md

    better = copy.deepcopy(res)
    better["test"]["flickr8k-5cap"]["dual"]["i2t"]["R@1"] = 0.36
    better["test"]["cc-heldout"]["dual"]["t2i"]["R@10"] = 0.6
    better["ood"]["results"]["dual"]["top1_with_distractors"] = "8/13"
    md = _flat(report_markdown(better, extra))
    assert "| **36.0** |" in md
    assert "image->text meets it too: 36.0 >= 35" in md and "does not: 36.0" not in md
    assert "(goal: >= 2x, NOT met)" in md
    assert "Goal NOT met (>= 9 first, >= 11 in the top 5): 8 first, 13 in the top 5." in md


def test_fourth_round_renders_any_subset_and_compares_with_its_baseline():
    res, extra = _synthetic()
    md, tables = _flat(report_markdown(res, extra)), markdown(res)
    third, fourth = tables.split("Fourth round")
    assert SHIPPED in fourth and SHIPPED not in third and "cc_lite2_mpnet_hn5 " not in fourth
    assert f"**Shipped: `{SHIPPED}`** (selection score 27.00" in md
    assert "the highest selection score of all rounds" in md
    assert "either encoder. These are the next steps" in md
    plain = copy.deepcopy(res)
    shipped = next(v for v in plain["broader"] if v["variant"] == SHIPPED)
    del shipped["overrides"]["use_flip"]
    assert ("either encoder and mirrored-image augmentation for the CC images. These are"
            in _flat(report_markdown(plain, extra)))

    hn5 = _variant("cc_lite2_mpnet_hn5", 40.0, 40.0, hard_negative_beta=5.0)
    ens3 = _variant("cc_lite2_mpnet_ens3", 10.0, 10.0, ensemble_size=3)
    res, extra = _synthetic(fourth=[ens3, hn5])
    md, tables = _flat(report_markdown(res, extra)), markdown(res)
    one, two = (next(v for v in res["broader"] if v["variant"] == n)["dev"]["dev"]["i2t_R@1"]
                for n in ("cc_lite2_mpnet", THIRD_SHIPPED))
    assert (f"`cc_lite2_mpnet_hn5` (hard negatives, beta 5) beats `cc_lite2_mpnet` (same "
            f"encoders, one head): selection score 40.00 against {one:.2f}") in md
    assert (f"`cc_lite2_mpnet_ens3` (3 heads) does not beat `{THIRD_SHIPPED}` (the third "
            f"round's shipped recipe, two heads): selection score 10.00 against {two:.2f}") in md
    assert "`cc_lite2_mpnet_hn5` scores higher (40.00) and was not shipped" in md
    assert "either encoder. These are the next steps" in md
    third, fourth = tables.split("Fourth round")
    assert "cc_lite2_mpnet_hn5" in fourth and "cc_lite2_mpnet_hn5" not in third
    assert fourth.index("cc_lite2_mpnet_hn5") < fourth.index("cc_lite2_mpnet_ens3")  # BROADER order


def _write(folder: Path, res: dict, extra: dict) -> None:
    for name, payload in {"dual_encoder": res, **extra}.items():
        (folder / f"{name}.json").write_text(json.dumps(payload))


def test_report_only_rewrites_the_report_from_the_json(tmp_path):
    from xmodal.cli import app

    res, extra = _synthetic()
    _write(tmp_path, res, extra)
    report = tmp_path / "dual_encoder.md"
    args = ["reproduce", "dual", "--report-only", "--out", str(tmp_path), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert report.read_text() == report_markdown(res, extra)
    assert (tmp_path / "dual_encoder_tables.md").read_text() == markdown(res)

    (tmp_path / "query_latency.json").unlink()
    assert CliRunner().invoke(app, args).exit_code != 0


def _stage2(top_lr: float, r1: float, scores=(27.0, 27.2, 26.9)) -> dict:
    dev = {"i2t_R@1": r1, "t2i_R@1": r1, "t2i_R@10": 70.0}
    return {"variant": "top" if top_lr else "control", "top_lr": top_lr, "head_lr": 1e-4,
            "epochs": 6, "best_epoch": 2, "w": 0.1, "fit_s": 600.0, "flip_prob": 0.5,
            "dev": {"dev": dev, "cc_dev": dict(dev)},
            "history": [{"epoch": i, "dev_score": x} for i, x in enumerate(scores)]}


def test_fifth_round_renders_from_the_json_and_its_verdict_follows_the_numbers():
    res, extra = _synthetic()
    shipped = next(v for v in res["broader"] if v["variant"] == SHIPPED)
    start = shipped["dev"]["dev"]["i2t_R@1"]
    assert "Fifth round" not in report_markdown(res, extra)
    assert "either encoder. These are the next steps" in _flat(report_markdown(res, extra))

    res["finetune"] = [_stage2(0.0, start + 0.1), _stage2(3e-5, start + 0.2)]
    md, tables = _flat(report_markdown(res, extra)), markdown(res)
    assert "Fifth round" in tables and "| head conv tuned | 3e-05 | 0.5 | 2 (6) |" in tables
    assert "| fourth round's model (the start) | - | 0.5 |" in md
    assert (f"Head conv lr 3e-05: selection score {start + 0.2:.2f}, against the start's "
            f"{start:.2f} (+0.20), the control {start + 0.1:.2f} (+0.10)") in md
    assert ("No stage-2 run beats the start by more than the control's epoch-to-epoch "
            "spread of the dev score (0.30; best run") in md
    assert f"the default stays `{SHIPPED}`" in md
    assert "either encoder. These are the next steps" not in md  # tried now
    assert "conv runs at 260 images/s on this CPU (87 s an epoch" in md
    assert "`python -m benchmarks.finetune_cost`" in md

    lr, other = SHIPPED_STAGE2["top_lr"], 3e-3  # the shipped rate and one that never shipped
    res["finetune"][1] = _stage2(lr, start + 2.0)
    md = _flat(report_markdown(res, extra))
    assert (f"The best run (head conv lr {lr:g}) gains +2.00 selection score, more than the "
            "control's epoch-to-epoch spread (0.30). **Shipped** as the default model") in md
    assert ("On test, stage 2 against stage 1 alone: `flickr8k-5cap` R@1 30.0 / 30.0 against "
            "34.6") in md
    assert "the second look at the test split in issue 17 (the first was stage 1's)" in md
    assert "end to end runs at 0.93x stage 1's speed (13.0 images/s" in md
    res["finetune"][1] = _stage2(other, start + 2.0)
    md = _flat(report_markdown(res, extra))
    assert ("gains +2.00 selection score, more than the control's epoch-to-epoch spread (0.30). "
            "Not shipped.") in md
    res["finetune"].append(_stage2(lr, start + 1.0))  # the shipped rate, below a later run
    md = _flat(report_markdown(res, extra))
    assert (f"The best run (head conv lr {other:g}) gains +2.00 selection score, more than the "
            f"control's epoch-to-epoch spread (0.30). It was run after lr {lr:g} (selection "
            f"score {start + 1.0:.2f}) had shipped and been measured on test, and is the next "
            f"candidate, not shipped. **Shipped** as the default model: head conv lr {lr:g}") in md


def test_a_replaced_stage2_default_keeps_its_rows_and_the_looks_are_counted():
    """The first stage 2 (lr 3e-4) shipped, then a better dev run replaced it: its test rows and
    OOD check come from ``--previous``, and the verdict says which look at test this is."""
    from xmodal.reproduce.dual_report import FIRST_STAGE2_LR

    lr = SHIPPED_STAGE2["top_lr"]
    if lr == FIRST_STAGE2_LR:
        pytest.skip("the first stage-2 model is the shipped one")
    res, extra = _synthetic()
    shipped = next(v for v in res["broader"] if v["variant"] == SHIPPED)
    start = shipped["dev"]["dev"]["i2t_R@1"]
    res["finetune"] = [_stage2(0.0, start + 0.1), _stage2(FIRST_STAGE2_LR, start + 1.0),
                       _stage2(lr, start + 2.0)]
    res["finetune"][2]["w"] = 0.0
    md = _flat(report_markdown(res, extra))
    assert "fifth round's first shipped model" not in md  # not recorded: no row, no sentence
    assert "the second look at the test split" in md
    ood = {"with_flickr8k_test_distractors": {"astronaut": 1, "moon": 4, "page": 9},
           "top1_with_distractors": "1/3", "top5_with_distractors": "2/3"}
    res["previous"] = {"fifth_test": {"commit": "6902948", "test": {
        "flickr8k-5cap": _directions(0.25, 0.6), "cc-heldout": _directions(0.27, 0.65),
        "skimage-ood": ood}}}
    md = _flat(report_markdown(res, extra))
    assert (f"| fifth round's first shipped model (head conv lr {FIRST_STAGE2_LR:g}) | 25.0 |"
            in md)
    assert (f"| fifth round's first shipped model (head conv lr {FIRST_STAGE2_LR:g}) | 27.0 |"
            in md)
    history = (f"Head conv lr {lr:g} was run after lr {FIRST_STAGE2_LR:g} (selection score "
               f"{start + 1.0:.2f}) had shipped and been measured on test (commit `6902948`), "
               "and replaced it.")
    assert (f"{history} **Shipped** as the default model: head conv lr {lr:g}") in md
    assert "It chose bridge weight 0, so the final embeddings are the heads' alone" in md
    assert "the fourth look at the test split in issue 17 (after stage 1's" in md
    assert (f"Against the first stage 2 (lr {FIRST_STAGE2_LR:g}): `flickr8k-5cap` R@1 25.0 / "
            "25.0, `cc-heldout` R@1 27.0 / 27.0, t2i R@10 65.0.") in md
    assert (f"The fifth round's first shipped model (head conv lr {FIRST_STAGE2_LR:g}, bridge "
            "weight 0.1) put 1 of 3 first and 2 in the top 5") in md
    assert "(epoch 2, `w = 0`)" in md
    res["finetune"].append(_stage2(3e-3, start + 3.0))  # a later, better run: the next candidate
    md = _flat(report_markdown(res, extra))
    assert (f"It was run after lr {lr:g} (selection score {start + 2.0:.2f}) had shipped and been "
            f"measured on test, and is the next candidate, not shipped. {history} "
            "**Shipped**") in md
    assert "1,536-d, unit length (with `w = 0` after stage 2: the heads' 768-d alone)" in md


def _full_run(stage2: dict) -> dict:
    """A ``--train-cli full`` record: stage 1 within 0.0005 of the reference, then ``stage2``."""
    return {"wall_s": 2100, "load_avg_1min_at_end": 3.2, "stage2": stage2,
            "stage1": {"wall_s": 1300, "best_epoch": [55, 45, 55], "w": 0.1,
                       "reference_commit": "712c75b", "max_abs_diff": 0.0005},
            "run": {**RUN, "command": "xmodal reproduce dual --train-cli full"}}


def test_the_train_cli_run_is_quoted_from_the_json_when_recorded():
    res, extra = _synthetic()
    shipped = next(v for v in res["broader"] if v["variant"] == SHIPPED)
    start = shipped["dev"]["dev"]["i2t_R@1"]
    lr = SHIPPED_STAGE2["top_lr"]
    res["finetune"] = [_stage2(0.0, start + 0.1), _stage2(lr, start + 2.0)]
    two = {"best_epoch": 2, "w": 0.1, "score": start + 2.0, "top_lr": lr, "max_abs_diff": 0.0}
    res["train_cli_stage2"] = {
        "wall_s": 777, "load_avg_1min_at_end": 2.4, "stage2": two,
        "run": {**RUN, "command": "xmodal reproduce dual --train-cli m/stage1"}}
    md = _flat(report_markdown(res, extra))
    assert ("`xmodal reproduce dual --train-cli m/stage1` at `0123456`, 2030-01-01; load average "
            "about 2): 777 s. It chose the same epoch (2) and bridge weight (0.1), with selection "
            f"score {start + 2.0:.2f} against the shipped run's {start + 2.0:.2f}; its arrays "
            "equal the ones shipped at `0123456` exactly.") in md
    res["train_cli_stage2"]["stage2"] = {**two, "best_epoch": 4, "max_abs_diff": 0.02}
    md = _flat(report_markdown(res, extra))
    assert "It chose a different epoch (4) and bridge weight (0.1)" in md
    assert ("its float16 arrays differ from the ones shipped at `0123456` by up to 0.02 (the "
            "head conv's") in md

    res["train_cli"] = _full_run(two)
    md = _flat(report_markdown(res, extra))
    assert ("Training the shipped recipe end to end with `xmodal train dual --out OUT` (`xmodal "
            "reproduce dual --train-cli full` at `0123456`, 2030-01-01; features cached; two "
            "threads; load average about 3 at its end): 2,100 s in all, stage 1 1,300 s. Stage 1 "
            "chose epochs 55, 45 and 55 and bridge weight 0.1; its float16 arrays differ from the "
            "fourth round's model (its files at `712c75b`) by at most 0.0005. Stage 2 chose epoch "
            f"2 and bridge weight 0.1, selection score {start + 2.0:.2f} against the shipped "
            f"run's {start + 2.0:.2f}; its arrays equal the ones shipped at `0123456` exactly.") in md
    assert "OMP_NUM_THREADS=1" not in md  # the historical run is no longer quoted
    assert "It chose a different epoch (4)" in md  # stage 2 alone is quoted beside it
    assert "nearby model" not in md  # stage 2 of the full run is bit-exact here

    res["train_cli"]["stage2"] = {**two, "w": 0.0, "score": start + 1.0, "max_abs_diff": 0.004}
    md = _flat(report_markdown(res, extra))
    assert ("So the whole recipe gives a nearby model, not the shipped one: stage 1's float-level "
            "differences (their cause not isolated) change stage 2's dev choices and its selection "
            "score by -1.00. Stage 2 from the shipped stage 1 (`xmodal train dual --stage2-from") in md
    assert "as a check of the recipe" not in md  # no test record
    assert "At `w = 0`" not in md  # no score_w0 recorded
    res["train_cli"]["stage2"]["score_w0"] = start + 1.9
    res["finetune"][1]["score_w0"] = start + 2.0
    md = _flat(report_markdown(res, extra))
    assert (f"At `w = 0` it scores {start + 1.9:.2f} against the shipped run's {start + 2.0:.2f}; "
            "the bridge-weight rule (the largest `w` within 1 point of the best) then takes "
            "`w = 0` in one run and `w = 0.1` in the other.") in md
    res["train_cli"]["test"] = {"flickr8k-5cap": _directions(0.36, 0.8),
                                "cc-heldout": _directions(0.3, 0.7)}
    md = _flat(report_markdown(res, extra))
    assert ("On test, as a check of the recipe and not a choice (no selection reads it), the model "
            "it trained gets `flickr8k-5cap` R@1 36.0 / 36.0 against the shipped model's 30.0 / "
            "30.0, so it also meets the goal of 35 / 25; `cc-heldout` R@1 30.0 / 30.0 against 30.0 "
            "/ 30.0, t2i R@10 70.0 against 70.0.") in md


# -- the first and second rounds (issue 3): rerun by --variants / --ensembles ---------------------
RUN = {"command": "xmodal reproduce dual --no-eval --ood ''", "git_commit": "0123456",
       "date": "2030-01-01 00:00 UTC", "machine": MACHINE, "elapsed_s": 600.0}


def _r1(i2t: float, t2i: float) -> dict:
    return {"i2t_R@1": i2t, "t2i_R@1": t2i, "t2i_R@10": 60.0}


def _first_round(names, slope: float = -10.0) -> list[dict]:
    """``--variants`` lines: variant k has best epoch 20 + k, dev R@1 30 + k + slope * w / 20 + k
    and test R@1 25 + k / 20."""
    lines = [{"variant": "zero-shot bridge", "n_train": 6000, "w": 1.0, "dev": _r1(4.0, 6.0),
              "test": _r1(4.0, 6.0), "run": RUN}]
    for k, n in enumerate(names):
        lines += [{"variant": n, "n_train": 6000, "w": w, "best_epoch": 20 + k, "fit_s": 60,
                   "dev": _r1(30.0 + k + slope * w, 20.0 + k), "test": _r1(25.0 + k, 20.0),
                   "run": RUN}
                  for w in (0.0, 0.1, 0.2, 0.3, 0.4)]
    return lines


def _second_round(gains: dict, slopes: dict | None = None) -> list[dict]:
    """``--ensembles`` lines: dev mean R@1 27 + gain + slope * w (slope -6 unless given), i2t and
    t2i 4 points either side of it; averaged embeddings 24."""
    from xmodal.reproduce.dual import ENSEMBLES
    from xmodal.reproduce.dual_report import UNRECORDED

    lines = []
    for n in UNRECORDED["second_round"]:
        seeds = ENSEMBLES[n][1]
        for w in (0.0, 0.1, 0.2):
            mean = 27.0 + gains.get(n, 0.0) + (slopes or {}).get(n, -6.0) * w
            line = {"variant": n, "w": w, "seeds": list(seeds),
                    "best_epochs": [30 + 5 * s for s in seeds], "fit_s": 100 * len(seeds),
                    "dev": _r1(mean + 4, mean - 4), "dev_mean_r1": mean}
            if len(seeds) > 1:
                line.update(dev_averaged=_r1(28.0, 20.0), dev_averaged_mean_r1=24.0)
            lines.append(line)
    return lines


GAINS = {"ep30": 0.3, "hn5": 0.5, "ens2_ep30": 0.8, "ens3_ep30": 0.9, "ens2": 0.4, "ens3": 1.2,
         "ens2_hn5": 1.5}


def test_first_round_renders_from_the_json_and_its_rule_follows_the_sweep():
    from xmodal.reproduce.dual_report import FIRST_VARIANTS

    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    assert "| variant | best epoch† | dev R@1 (w=0)† |" in md  # not rerun: issue 3
    assert "Where the rerun differs" not in md

    res["variants"] = _first_round(FIRST_VARIANTS)
    md = _flat(report_markdown(res, extra))
    assert "| variant | best epoch | dev R@1 (w=0) | dev R@1 (w=0.1) | test R@1 (w=0.1) |" in md
    assert "| base: pooled features, 30 epochs | 20 | 30.0 / 20.0 | 29.0 / 20.0 | 25.0 / 20.0 |" \
        in md
    # the shipped recipe (drop4ep60, k = 4): mean R@1 29 - 5 w, so w = 0.2 is within 1 point
    assert "w=0: 34.0/24.0, 0.1: 33.0/24.0, 0.2: 32.0/24.0" in md and "(rule picks 0.2)" in md
    assert "The bridge alone: dev 4.0/6.0." in md
    assert ("(`xmodal reproduce dual --no-eval --ood ''` at commit `0123456` (2030-01-01 00:00 "
            "UTC, shared CPU, load average about 0 at its end); first run by") in md
    assert "Where the rerun differs, the historical run gave `base`: best epoch 30," in md
    assert "not rerun" not in md.split("Issue 3 also tried averaging WordNet")[0]
    # base's historical test cell was at w = 0.2: compared with the rerun there (25.0 / 20.0)
    assert ("The historical test cell of `base` was measured by `xmodal eval` at w = 0.2; the "
            "rerun there gives 25.0 / 20.0.") in md
    assert "test w=0.1 26.3 / 21.3 (`xmodal eval`, w=0.2)†" in md

    res["variants"] = _first_round([n for n in FIRST_VARIANTS if n != "maps"], slope=0.0)
    md = _flat(report_markdown(res, extra))
    assert "(rule picks 0.4)" in md  # a flat sweep: the largest w
    assert "(`use_maps`) (not rerun) | 25† |" in md
    assert "`maps`:" not in md  # a row not rerun is not compared with itself


def test_second_round_renders_from_the_json_and_its_sentences_follow_the_numbers():
    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    assert "| best mean† |" in md and "machine nearly idle" in md

    res["ensembles"], res["ensembles_run"] = _second_round(GAINS), RUN
    md, tables = _flat(report_markdown(res, extra)), markdown(res)
    assert "| variant | member best epochs | fit (s) | dev w=0 | dev w=0.1 | best mean |" in md
    assert "| 2 seeds, hard negatives beta 5 (`ens2_hn5`) | 30, 35 | 200 | 32.5 / 24.5 | " in md
    assert "| averaged (not concatenated) embeddings, `ens2` / `ens3` / `ens3_ep30` | | | " \
        "28.0 / 20.0, 28.0 / 20.0, 28.0 / 20.0 | | 24.00, 24.00, 24.00 |" in md
    assert "| ens2 | 0.0 | 30, 35 | 200 | 31.4 / 23.4 | 27.40 | 28.0 / 20.0 | 24.00 |" in tables
    assert "scored 3.0 to 3.0 points of dev mean R@1 *below*" in md
    assert "which gains 0.4 to 1.2 (`ens2`, `ens3`)" in md
    assert "beta = 5: +0.50 at w = 0, and no worse with the bridge (w = 0.1)" in md
    assert ("Two variants are at least 1 point of dev mean R@1 above the shipped model at their "
            "best w, both at w = 0 (no bridge)") in md
    assert ("`ens2_hn5` (+1.50 at w = 0) would ship through the training rule at w = 0.1 (the "
            "largest w within 1 point of its best), where it is 27.90, only +0.90 over the "
            "shipped 27.00") in md
    assert "gained 0.40 (`ens2`) and 0.80 (`ens2_ep30`)" in md
    assert "select epochs 35 and 40, not 30" in md
    assert ("took 100 s and gave dev R@1 31.0 / 23.0 at w = 0 against the first round's "
            "30.7 / 23.1†") in md
    assert "Where the rerun differs, the historical run gave `shipped`: dev w=0 30.7 / 23.1" in md

    flipped = {n: g - 0.7 for n, g in GAINS.items()}
    res["ensembles"] = _second_round(flipped, {"hn5": -20.0, "ens2": -1.0})
    md = _flat(report_markdown(res, extra))
    assert "No variants are at least 1 point of dev mean R@1 above the shipped model" in md
    assert "beta = 5: -0.20 at w = 0, but worse with the bridge (w = 0.1)" in md
    assert "`ens2_hn5` (+0.80 at w = 0) would ship" in md
    # ens2's mean falls 0.2 by w = 0.2: the rule keeps the bridge at 0.2 there
    res["ensembles"] = _second_round({"ens2": 3.0}, {"ens2": -1.0})
    md = _flat(report_markdown(res, extra))
    assert ("One variant is at least 1 point of dev mean R@1 above the shipped model at its best "
            "w, at w = 0 (no bridge)") in md
    assert "`ens2` (+3.00 at w = 0) would ship through the training rule at w = 0.2" in md


def _qb_line(score: float, **what) -> dict:
    dev = {"i2t_R@1": score, "t2i_R@1": score, "t2i_R@10": 70.0}
    return {**what, "score": score, "dev": {"dev": dict(dev), "cc_dev": dict(dev)}}


def _querybank(best: float = 30.0, alt: float = 29.0) -> dict:
    lines = [_qb_line(28.0, beta=None), _qb_line(29.0, beta=10.0), _qb_line(best, beta=30.0)]
    return {"lines": lines, "beta": 30.0, "bank_images": 100, "bank_captions": 300, "dim": 16,
            "alternatives": [_qb_line(alt, bank="random 10 images and 10 captions")],
            "run": RUN}


def test_sixth_round_renders_from_the_json_and_follows_the_numbers():
    res, extra = _synthetic()
    assert "Sixth round" not in report_markdown(res, extra)  # no querybank run: no section
    res["querybank"] = _querybank()
    for p in ("flickr8k-5cap", "cc-heldout"):
        res["test"][p]["dual-qb"] = _directions(0.4, 0.8)
    res["ood"]["results"]["dual-qb"] = dict(res["ood"]["results"]["dual"])
    md = _flat(report_markdown(res, extra))
    assert "| querybank, beta 30 | 30.0 / 30.0 | 30.0 / 30.0 | 70.0 | 30.00 |" in md
    assert "| plain cosines (the default model) | 28.0 / 28.0 |" in md
    assert "Beta 30 has the best selection score, 30.00, +2.00 over the plain cosines; the " \
           "registered setting `dual-qb` uses it" in md
    assert "100 + 300 embeddings of 16 dimensions, 0 MB in float16" in md
    assert "every one of them scores below the whole training set (best: 29.00)" in md
    assert "`flickr8k-5cap` R@1 **40.0 / 40.0** against the default's 30.0 / 30.0, so `dual-qb` " \
           "meets the goal of 35 / 25" in md
    assert "| dual-qb (the shipped model, querybank of its training data; sixth round) | 40.0" in md
    assert "`skimage-ood` 10 of 13 first and 13 in the top 5" in md

    res["querybank"] = _querybank(best=30.0, alt=31.0)
    res["querybank"]["beta"] = 10.0
    res["test"]["flickr8k-5cap"]["dual-qb"] = _directions(0.34, 0.8)
    md = _flat(report_markdown(res, extra))
    assert "NOTE: the registered `dual-qb` uses beta 30, not this one" in md
    assert "`random 10 images and 10 captions` matches or beats the whole training set" in md
    assert "so `dual-qb` does not meet the goal" in md
    assert "(the third look at the test split in issue 17)" in md


def test_seventh_round_renders_from_the_json_and_follows_the_numbers():
    from xmodal.recipes.querybank import SHIPPED_IMAGE_BANK

    res, extra = _synthetic()
    assert "Seventh round" not in report_markdown(res, extra)  # no --image-bank run
    dim, beta = SHIPPED_IMAGE_BANK["dim"], SHIPPED_IMAGE_BANK["beta"]
    lines = [{**_qb_line(30.0), "dim": None, "beta": None, "bytes": 0},
             {**_qb_line(31.0), "dim": 64, "beta": beta, "bytes": 1_600_000},
             {**_qb_line(32.5), "dim": dim, "beta": beta, "bytes": 6_200_000}]
    res["image_bank"] = {"lines": lines, "dim": dim, "beta": beta, "bank_images": 22643,
                         "time_s": 150, "run": RUN}
    md = _flat(report_markdown(res, extra))
    assert (f"| 22,643 images, {dim}-d, int8 | {beta:g} | 6.2 | 32.5 / 32.5 | 32.5 / 32.5 | "
            "70.0 | 32.50 |") in md
    assert "| none (plain cosines) | - | 0 | 30.0 / 30.0 |" in md
    assert (f"{dim} dimensions at beta {beta:g} have the best selection score, 32.50, +2.50 over "
            "the plain cosines (F8K dev image -> text R@1 32.5 against 30.0); **shipped**") in md
    assert f"--image-bank 64,{dim} # seventh round (dev only)" in md
    assert ("loading the model takes 150 ms; a pool's offsets take 290 ms for 1,000 captions and "
            "1.5 s for 5,000 (about 0.29 ms a caption") in md
    res["image_bank"].update(dim=64)
    res["image_bank"]["lines"][1]["score"] = 33.0
    md = _flat(report_markdown(res, extra))
    assert f"NOTE: the shipped bank is {SHIPPED_IMAGE_BANK}, not this one" in md


def test_earlier_models_rows_come_from_the_json_when_recorded():
    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    assert "previous default (Lite0 + MiniLM, Flickr8K only; issue 3)† | 25.4 |" in md
    res["previous"] = {
        key: {"commit": "abc1234", "test": {p: _directions(r1, 0.6) for p in PROTOCOLS}}
        for key, r1 in (("previous_test", 0.11), ("third_test", 0.22), ("fourth_test", 0.33))}
    md = _flat(report_markdown(res, extra))
    assert "| previous default (Lite0 + MiniLM, Flickr8K only; issue 3) | 11.0 |" in md
    assert "| third round's shipped model (`cc_lite2_mpnet_ens2`) | 22.0 |" in md
    assert "stage 1 alone) | 33.0 |" in md
    assert "and the earlier default models' test results" not in md


def test_train_cli_records_the_choice_and_the_array_difference(tmp_path, monkeypatch):
    """``--train-cli STAGE1``: the run's saved model is compared with the shipped one (here the
    "training" copies the shipped model, then perturbs one array)."""
    import shutil
    import subprocess

    import numpy as np

    from xmodal.models.dual import DEFAULT_MODEL_DIR
    from xmodal.reproduce import dual as reproduce_dual

    if not (Path(DEFAULT_MODEL_DIR) / "config.json").is_file():
        pytest.skip("the shipped model is not in this checkout")
    calls, bump = [], {"by": 0.0}

    def fake_run(cmd, check):
        calls.append(cmd)
        out = Path(cmd[cmd.index("--out") + 1])
        shutil.copytree(DEFAULT_MODEL_DIR, out)
        with np.load(out / "arrays.npz") as z:
            arrays = {k: z[k] for k in z.files}
        key = next(k for k in sorted(arrays) if arrays[k].dtype.kind == "f")
        arrays[key] = (arrays[key].astype(np.float64) + bump["by"]).astype(arrays[key].dtype)
        np.savez(out / "arrays.npz", **arrays)

    monkeypatch.setattr(subprocess, "run", fake_run)
    rec = reproduce_dual.train_cli(tmp_path / "stage1")
    assert calls[0][1:5] == ["-m", "xmodal", "train", "dual"]
    assert "--stage2-from" in calls[0] and "stage1" not in rec
    assert rec["stage2"]["max_abs_diff"] == 0.0
    assert rec["stage2"]["top_lr"] == SHIPPED_STAGE2["top_lr"]
    bump["by"] = 0.5
    rec = reproduce_dual.train_cli(tmp_path / "stage1")
    assert rec["stage2"]["max_abs_diff"] == pytest.approx(0.5, abs=1e-3)


def test_array_difference_of_models_of_other_shapes_is_none(tmp_path):
    """A full train-CLI run that picks another bridge weight saves other widths: no crash, and
    the report says the arrays differ in shape."""
    import numpy as np

    from xmodal.reproduce.dual import max_array_difference

    for name, width in (("a", 768), ("b", 1536), ("c", 768)):
        (tmp_path / name).mkdir()
        np.savez(tmp_path / name / "arrays.npz", mean=np.full(width, 0.5 if name == "c" else 0.0))
    assert max_array_difference(tmp_path / "a", tmp_path / "b") is None
    assert max_array_difference(tmp_path / "a", tmp_path / "c") == 0.5

    res, extra = _synthetic()
    lr = SHIPPED_STAGE2["top_lr"]
    res["finetune"] = [_stage2(lr, 30.0)]
    two = {"best_epoch": 2, "w": 0.1, "score": 29.0, "top_lr": lr, "max_abs_diff": None}
    res["train_cli"] = _full_run(two)
    md = _flat(report_markdown(res, extra))
    assert ("its arrays differ in shape from the ones shipped at `0123456` (another bridge "
            "weight)") in md


def test_bridge_temperature_renders_from_the_json_or_is_marked_historical():
    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    assert "A softmax temperature of 2 over the ImageNet classes was worse (dev i2t R@1 0.1†" in md
    run = {"command": "xmodal reproduce dual --no-eval --ood '' --bridge-temperature 0.5 1 2",
           "git_commit": "0123456", "date": "2030-01-01T00:00:00+00:00", "machine": MACHINE}
    res["bridge_temperature"] = {"run": run, "lines": [
        {"temperature": t, "dev": {"i2t_R@1": i2t, "t2i_R@1": t2i}}
        for t, i2t, t2i in ((2.0, 0.5, 3.0), (0.5, 4.0, 5.5), (1.0, 3.5, 5.0))]}
    md = _flat(report_markdown(res, extra))
    assert ("Its softmax temperature over the ImageNet classes, on dev (`xmodal reproduce dual "
            "--no-eval --ood '' --bridge-temperature 0.5 1 2` at commit `0123456`") in md
    assert "i2t / t2i R@1): 0.5: 4.0 / 5.5, 1: 3.5 / 5.0, 2: 0.5 / 3.0." in md
    assert "was worse (dev i2t R@1" not in md


def test_extraction_time_follows_the_encode_speed_benchmark():
    res, extra = _synthetic()
    md = _flat(report_markdown(res, extra))
    # 2 x 26,000 images at 40 images/s = 1,300 s; 58,000 captions at 30/s = 1,933 s
    assert ("Lite2 of the 26,000 Flickr8K + CC images and their mirror images about 22 minutes, "
            "MPNet of their 58,000 captions about 32 minutes (Lite0 of the 18,000 CC images, for "
            "the Lite0 variant, about 4 minutes)") in md
    assert "EfficientNet-Lite0 80.0 images/s and Lite2 40.0; MiniLM 250 captions/s and MPNet 30." \
        in md
    extra["encode_speed"]["results"]["cold"]["mpnet"] = 60.0
    md = _flat(report_markdown(res, extra))
    assert "MPNet of their 58,000 captions about 16 minutes" in md
