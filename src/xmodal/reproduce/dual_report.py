"""``reports/dual_encoder.md`` and ``benchmarks/results/dual_encoder_tables.md`` from the stored
results: ``templates/dual_encoder*.md`` filled with paths into the results
(``{res.test.cc-heldout.dual.t2i.R@10!p:.1f}``) and the numbers :func:`derived` here, once the
conclusions they state (:func:`claims`) are checked. Nothing is recomputed.
"""

from __future__ import annotations

import json
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.models.dual import DEFAULT_MODEL_DIR
from xmodal.recipes.dual_finetune import SHIPPED_STAGE2
from xmodal.recipes.querybank import QUERYBANK_BETA, SHIPPED_IMAGE_BANK
from xmodal.reproduce.dual_broader import BROADER, ROUND, mean_r1
from xmodal.reproduce.render import (and_list, check_claims, fill, gain_span, load_results,
                                     markdown_table, minutes, pct, reference_data, rewrap,
                                     template_text)

SHIPPED = "cc_lite2_mpnet_flip_hn5_ens3"  # the broader variant: stage 1 of the default model
THIRD_SHIPPED = "cc_lite2_mpnet_ens2"  # shipped from the third round until the fourth
LITE2, LITE0 = "cc_lite2_mpnet", "cc_mpnet"  # the encoders' comparison (also timed for indexing)
SHIPPED_STAGE2_LR = 1e-3  # the fifth round's shipped stage 2 (its head conv's lr)
_DATA = reference_data("dual_encoder")  # each number with its source
KLEIN_I2T = _DATA["klein_i2t"]["value"]  # Klein et al. 2015, Table 2, image -> text R@1
# a fourth-round variant's baseline (same encoders, one head); the others': THIRD_SHIPPED
FOURTH_BASELINE = {"cc_lite2_mpnet_hn5": LITE2, "cc_lite2_mpnet_flip": LITE2}
HISTORY = "dual_encoder_historical"  # numbers no rerun reproduces: the claims compare with them
# the result files the report cites besides dual_encoder.json
EXTRA = ("ood_eval", "query_latency", "index_speed_models_lite0_vs_lite2", "index_speed",
         "index_speed_models_fast", "encode_speed", "finetune_cost", "index_speed_stage2",
         "querybank_cost", "short_queries", "short_queries_before_stage3", HISTORY)
# first-round variant (``--variants``) -> its row of the historical first round; the shipped
# recipe's test cell at another w than 0.1
FIRST_ROUND = {"base": "base", "lit": "lit", "bridgein": "v2", "maps": "maps",
               "drop4ep60": "shipped"}
FIRST_TEST_W = {"base": 0.2}
GOAL_I2T, GOAL_T2I = _DATA["goal"]["i2t"], _DATA["goal"]["t2i"]  # issue 17
R1 = ("i2t_R@1", "t2i_R@1")
DIRECTIONS = ("i2t", "t2i")
NEEDED = ("f8k", "cc", "cc_lite2", "cc_mpnet", "cc_lite2_mpnet", "cc_lite2_mpnet_h1024",
          THIRD_SHIPPED, SHIPPED)
PROTOCOLS = ("flickr8k-5cap", "flickr8k-hodosh", "flickr8k-hodosh-crowd", "cc-heldout")
LABELS = _DATA["labels"]["names"]


def test_table(protocol: str, rows: dict) -> str:
    """One protocol's table: R@K (or S@K) and medR, or R-P and mAP@R on the crowd protocol."""
    crowd = protocol.endswith("crowd")
    keys = ("R@1", "R@5", "R@10", "R-P", "mAP@R") if crowd else ("R@1", "R@5", "R@10", "medR")
    names = [k.replace("R@", "S@") if crowd else k for k in keys]
    table = markdown_table(
        ["model", *(f"{d} {n}" if i == 0 else n for d in DIRECTIONS for i, n in enumerate(names))],
        [[LABELS.get(model, model), *(f"{dirs[d][k]:g}" if k == "medR" else pct(dirs[d][k])
                                      for d in DIRECTIONS for k in keys)]
         for model, dirs in rows.items()])
    note = "percentages" if crowd else "percentages; medR is a rank"
    return f"`{protocol}` ({note}):\n\n{table}\n"


def ood_table(spec: str, queries: dict, r: dict) -> str:
    """A row per out-of-domain query (rank among the photos, with distractors), then top-1."""
    rows = [[queries[k], r["photos_only"][k], r["with_flickr8k_test_distractors"][k]]
            for k in queries]
    rows.append(["top-1", r["top1_photos_only"],
                 f"{r['top1_with_distractors']} (top-5: {r['top5_with_distractors']})"])
    return (f"Out-of-domain check, `{spec}`: rank of the right photo (1 = first)\n\n"
            + markdown_table(["query", "photos only (13)", "+ 1,000 Flickr8K test images"], rows)
            + "\n")


def score_of(v: dict) -> float:
    """A dev line's selection score: mean R@1 on F8K dev, averaged with CC dev's if present."""
    f8, cc = v["dev"]["dev"], v["dev"].get("cc_dev")
    return round(mean_r1(f8) if cc is None else 0.5 * (mean_r1(f8) + mean_r1(cc)), 2)


def _shipped_model() -> tuple[dict, float]:
    """The shipped model files: the ``state`` of their ``config.json`` and their size in MB."""
    folder = Path(DEFAULT_MODEL_DIR)
    state = json.loads((folder / "config.json").read_text()).get("state", {})
    return state, sum(f.stat().st_size for f in folder.iterdir()) / 1e6


def _second_round(res: dict) -> dict:
    """Issue 3's second round (``--ensembles``): each variant's best dev mean R@1 over w against
    the shipped recipe's, and the averaged (not concatenated) embeddings' shortfall."""
    best = {n: max(v["dev_mean_r1"] for v in res["ensembles"] if v["variant"] == n)
            for n in dict.fromkeys(v["variant"] for v in res["ensembles"])}
    base = best["shipped"]
    gain = {n: b - base for n, b in best.items()}
    averaged = [base - max(v["dev_averaged_mean_r1"] for v in res["ensembles"]
                           if v["variant"] == n) for n in ("ens2", "ens3", "ens3_ep30")]
    rule = next(v["dev_mean_r1"] for v in res["ensembles"]
                if v["variant"] == "ens2_hn5" and v["w"] == 0.1)
    return {"gain": gain, "below": f"{min(averaged):.1f} to {max(averaged):.1f}",
            "ensembles": "{:.1f} to {:.1f}".format(*sorted((gain["ens2"], gain["ens3"]))),
            "ens2_hn5_by_rule": rule - base, "ahead": [n for n in gain if gain[n] >= 1]}


def _sixth_values(res: dict) -> dict:
    """The querybank round's numbers (the report and the tables file state them) and each
    model's skimage-ood hits."""
    qb = res["querybank"]
    plain = next(v for v in qb["lines"] if v["beta"] is None)
    best = next(v for v in qb["lines"] if v["beta"] == qb["beta"])
    return {
        "querybank": {"best": score_of(best), "gain": score_of(best) - score_of(plain),
                      "mb": (qb["bank_images"] + qb["bank_captions"]) * qb["dim"] * 2 / 1e6,
                      "best_alternative": max(map(score_of, qb["alternatives"]))},
        "ood_hits": {k: {"top1": r["top1_with_distractors"].split("/")[0],
                         "top5": r["top5_with_distractors"].split("/")[0]}
                     for k, r in {**res["ood"]["results"], **{
                         n: res["previous"][n]["test"]["skimage-ood"]
                         for n in ("fifth_test", "sixth_test", "stage2_ood")}}.items()},
    }


def _sixth_claims(res: dict, values: dict) -> dict[str, bool]:
    qb5 = [round(100 * d["R@1"], 1) for d in res["test"]["flickr8k-5cap"]["dual-qb"].values()]
    return {
        "the registered dual-qb uses the selected beta":
            res["querybank"]["beta"] == QUERYBANK_BETA,
        "every smaller querybank scores below the whole training set":
            values["querybank"]["best_alternative"] < values["querybank"]["best"],
        "dual-qb meets both R@1 goals": qb5[0] >= GOAL_I2T and qb5[1] >= GOAL_T2I}


def derived(res: dict, extra: dict) -> dict:
    """The numbers the report states that no result file holds as such: sums, differences,
    ratios, durations, rounded loads, dates and the shipped model files' size and format."""
    variant = {v["variant"]: v for v in res["broader"]}
    scores = {n: score_of(v) for n, v in variant.items()}
    state, model_mb = _shipped_model()
    bank = state.get("querybank")
    weights = "int8 weight matrices" if state.get("weights") == "int8" else "float16"
    enc = extra["encode_speed"]["results"]
    rate, sizes = enc["cold"], enc["training_data"]
    images = sum(d["images"] for d in sizes.values())
    captions = sum(d["captions"] for d in sizes.values())
    first = {(v["variant"], v["w"]): v for v in res["variants"]}
    runs = {"res": res, "train_cli": res["train_cli"], "train_cli_stage2": res["train_cli_stage2"],
            "variants": first["drop4ep60", 0.0]["run"], "ensembles_run": res["ensembles_run"],
            "bridge_alone": first["zero-shot bridge", 1.0]["run"],
            "bridge_temperature": res["bridge_temperature"]["run"],
            **{n: extra[n] for n in ("index_speed_stage2", "querybank_cost",
                                     "index_speed_models_lite0_vs_lite2")}}
    load = {k: round(r.get("load_avg_1min_at_end") or r["machine"]["load_avg_1min"])
            for k, r in runs.items()}
    ft, start = res["finetune"], scores[SHIPPED]
    stage2 = next(v for v in ft if v["top_lr"] == SHIPPED_STAGE2_LR)
    control = next(v for v in ft if v["top_lr"] == 0)
    epochs = [h["dev_score"] for h in control["history"]]
    ib = res["image_bank"]
    best_ib = next(v for v in ib["lines"][1:] if (v["dim"], v["beta"]) == (ib["dim"], ib["beta"]))
    pools = extra["querybank_cost"]["results"]["pools"]
    speed = extra["index_speed_models_lite0_vs_lite2"]["results"]["models"]
    lite0, lite2 = variant[LITE0], variant[LITE2]
    five = res["test"]["flickr8k-5cap"]["dual"]
    before = extra["ood_eval"]["results"]["skimage-ood"]["dual"]["paper_metrics"]
    cc_before = extra["ood_eval"]["results"]["cc-heldout"]["dual"]["directions"]
    previous = res["previous"]["previous_test"]["test"]["flickr8k-5cap"]
    i2t = round(100 * five["i2t"]["R@1"], 1)
    return {
        "variant": variant, "score": scores, "load": load, "model_mb": model_mb,
        "asset_format": (f"{weights} and a querybank of {bank['images']:,} training images "
                         f"({bank['dim']}-d, int8) in one `.npz`" if bank else
                         f"{weights} `.npz`"),
        "day": {k: r.get("run", r)["date"][:10] for k, r in runs.items() if k in (
            "res", "train_cli", "train_cli_stage2")},
        "extraction": {"images": images, "captions": captions,
                       "lite2": minutes(2 * images / rate["lite2"]),
                       "mpnet": minutes(captions / rate["mpnet"]),
                       "lite0": minutes(sizes["cc"]["images"] / rate["lite0"])},
        "stage2": stage2, "start": start, "control_spread": max(epochs) - min(epochs),
        "train_cli_score_change": res["train_cli"]["stage2"]["score"] - stage2["score"],
        "finetune": [{"over_start": round(score_of(v), 2) - start,
                      "over_control": round(score_of(v), 2) - score_of(control)} for v in ft],
        "gain": {n: scores[n] - scores[FOURTH_BASELINE.get(n, THIRD_SHIPPED)]
                 for n in variant},
        "gain_over_previous": i2t - round(100 * previous["i2t"]["R@1"], 1),
        "above_klein": abs(i2t - KLEIN_I2T),
        "cc_t2i_r10_times": (res["test"]["cc-heldout"]["dual"]["t2i"]["R@10"]
                             / cc_before["t2i"]["R@10"]),
        "ood_before": {"top1": before["top1_with_distractors"].split("/")[0],
                       "top5": before["top5_with_distractors"].split("/")[0],
                       "n": len(res["ood"]["queries"])},
        "image_bank": {"best": score_of(best_ib),
                       "gain": score_of(best_ib) - score_of(ib["lines"][0])},
        "querybank_cost_5000_s": pools["5000"]["offsets_ms"] / 1000,
        "querybank_cost_per_caption_ms": pools["1000"]["offsets_ms"] / 1000,
        "lite2": {"score": score_of(lite2) - score_of(lite0),
                  "f8k_t2i": lite2["dev"]["dev"]["t2i_R@1"] - lite0["dev"]["dev"]["t2i_R@1"],
                  "cc_i2t": lite2["dev"]["cc_dev"]["i2t_R@1"] - lite0["dev"]["cc_dev"]["i2t_R@1"],
                  "cc": gain_span([variant["cc_lite2"]["dev"]["cc_dev"][k]
                                   - variant["cc"]["dev"]["cc_dev"][k] for k in R1])},
        "mpnet": {"f8k_t2i": variant["cc_mpnet"]["dev"]["dev"]["t2i_R@1"]
                  - variant["cc"]["dev"]["dev"]["t2i_R@1"],
                  "cc": gain_span([variant["cc_mpnet"]["dev"]["cc_dev"][k]
                                   - variant["cc"]["dev"]["cc_dev"][k] for k in R1])},
        "two_heads": scores[THIRD_SHIPPED] - scores[LITE2],
        "second": _second_round(res),
        "maps_lost": (first["bridgein", 0.0]["dev"]["t2i_R@1"]
                      - first["maps", 0.0]["dev"]["t2i_R@1"]),
        "lite0_images_per_s": next(v for k, v in speed.items() if k != "dual")["images_per_s"],
        "lite2_cached": round(enc["lite2_cached"], -3),
    }


def _pair_of(d) -> str:
    """R@1 "i2t / t2i" as the tables print it, of a dev or test line or an (i2t, t2i) list."""
    i2t, t2i = (d["i2t_R@1"], d["t2i_R@1"]) if isinstance(d, dict) else d
    return f"{i2t:.1f} / {t2i:.1f}"


def _epochs(e) -> str:
    """Best epochs as the tables print them: "31, 40" (a list) or as they are."""
    return ", ".join(map(str, e)) if isinstance(e, list) else e


def _dev_cells(v: dict) -> list[str]:
    """F8K dev R@1, CC dev R@1, CC dev t2i R@10 and the selection score of a dev line."""
    f8, cc = v["dev"]["dev"], v["dev"].get("cc_dev")
    return [_pair_of(f8), _pair_of(cc) if cc else "-", f"{cc['t2i_R@10']:.1f}" if cc else "-",
            f"{score_of(v):.2f}"]


DEV_HEAD = ["F8K dev R@1", "CC dev R@1", "CC dev t2i R@10", "selection score"]


def _broader_order(v: dict) -> int:
    """Third- and fourth-round variants in the order of ``BROADER`` (others last)."""
    return list(BROADER).index(v["variant"]) if v["variant"] in BROADER else len(BROADER)


def list_tables(res: dict) -> dict[str, str]:
    """The tables with one row per line of a list in the results (a rerun may add rows)."""
    broader = {n: [[v["variant"], "yes" if v["cc"] else "no", _epochs(v["best_epoch"]), v["w"],
                    f"{v['fit_s']:.0f}", *_dev_cells(v)]
                   for v in sorted(res["broader"], key=_broader_order)
                   if ROUND.get(v["variant"], 4) == n] for n in (3, 4)}
    start = next(v for v in res["broader"] if v["variant"] == SHIPPED)
    fifth = [[("control: head conv frozen" if v["top_lr"] == 0 else "head conv tuned"),
              f"{v['top_lr']:g}", f"{v['flip_prob']:g}", f"{v['best_epoch']} ({v['epochs']})",
              f"{v['w']:g}", f"{v['fit_s']:.0f}", *_dev_cells(v)] for v in res["finetune"]]
    fifth_head = ["run", "head conv lr", "mirrored", "best epoch (of)", "w", "fit (s)", *DEV_HEAD]
    qb = res["querybank"]
    return {
        "variants": markdown_table(["variant", "w", "best epoch", "dev R@1", "test R@1"], [
            [v["variant"], v["w"], v.get("best_epoch", "-"), _pair_of(v["dev"]),
             _pair_of(v["test"])] for v in res["variants"]]),
        "ensembles": markdown_table(["variant", "w", "member best epochs", "fit (s)", "dev R@1",
                                     "mean", "averaged dev R@1", "averaged mean"], [
            [v["variant"], v["w"], _epochs(v["best_epochs"]), v["fit_s"], _pair_of(v["dev"]),
             f"{v['dev_mean_r1']:.2f}", *([_pair_of(v["dev_averaged"]),
                                           f"{v['dev_averaged_mean_r1']:.2f}"]
                                          if "dev_averaged" in v else ["-", "-"])]
            for v in res["ensembles"]]),
        **{f"broader{n}": markdown_table(["variant", "CC", "best epoch", "w", "fit (s)",
                                          *DEV_HEAD], rows) for n, rows in broader.items()},
        "fifth": markdown_table(fifth_head, fifth),
        "fifth_with_start": markdown_table(fifth_head, [
            ["fourth round's model (the start)", "-", "0.5", "-", f"{start['w']:g}", "-",
             *_dev_cells(start)], *fifth]),
        "querybank": markdown_table(["scores", *DEV_HEAD], [
            ["plain cosines (the default model)" if v["beta"] is None else
             f"querybank, beta {v['beta']:g}", *_dev_cells(v)] for v in qb["lines"]]),
        "querybank_alternatives": markdown_table(["scores", *DEV_HEAD],
                                        [[v["bank"], *_dev_cells(v)] for v in qb["alternatives"]]),
    }


def _values(res: dict, extra: dict) -> dict:
    return {"res": res, "variant": {v["variant"]: v for v in res["broader"]},
            "table": list_tables(res), **_sixth_values(res), **extra}


def markdown(res: dict) -> str:
    """``dual_encoder_tables.md``: every table of the results, in the order of the report."""
    ood = res.get("ood", {})
    tables = [test_table(protocol, rows) for protocol, rows in res.get("test", {}).items()]
    tables += [ood_table(spec, ood["queries"], r) for spec, r in ood.get("results", {}).items()]
    values = {**_values(res, {}), "test_and_ood_tables": "\n".join(tables)}
    check_claims("dual_encoder_tables", _sixth_claims(res, values))
    return fill(template_text("dual_encoder_tables"), values, "dual_encoder_tables.md")


def _same_as_history(res: dict, history: dict) -> dict[str, bool]:
    """Whether the reruns of issue 3's rounds (``--variants``, ``--ensembles``) print as the
    historical runs did."""
    first = {(v["variant"], v["w"]): v for v in res["variants"]}
    ens = {(v["variant"], v["w"]): v for v in res["ensembles"]}
    old, f8k = history["first_round"], next(v for v in res["broader"] if v["variant"] == "f8k")
    first_round = all(
        first[n, 0.0]["best_epoch"] == old[k]["best_epoch"]
        and _pair_of(first[n, 0.0]["dev"]) == _pair_of(old[k]["dev_w0"])
        and _pair_of(first[n, 0.1]["dev"]) == _pair_of(old[k]["dev_w01"])
        and _pair_of(first[n, FIRST_TEST_W.get(n, 0.1)]["test"]) == _pair_of(old[k]["test_w01"])
        for n, k in FIRST_ROUND.items())
    sweep = all(_pair_of(first["drop4ep60", float(w)]["dev"]) == _pair_of(p)
                for w, p in history["bridge_weight"].items())
    second = all(
        _epochs(ens[n, 0.0]["best_epochs"]) == _epochs(h["best_epochs"])
        and _pair_of(ens[n, 0.0]["dev"]) == _pair_of(h["dev_w0"])
        and _pair_of(ens[n, 0.1]["dev"]) == _pair_of(h["dev_w01"])
        and f"{max(v['dev_mean_r1'] for (m, _), v in ens.items() if m == n):.2f}"
        == f"{h['best_mean']:.2f}" for n, h in history["second_round"].items())
    return {"first": first_round and sweep, "second": second,
            "f8k": _pair_of(f8k["dev"]["dev"]) == _pair_of(old["shipped"]["dev_w01"]),
            "ensembles_shipped": [_pair_of(ens["shipped", w]["dev"]) for w in (0.0, 0.1)]
            == [_pair_of(first["drop4ep60", w]["dev"]) for w in (0.0, 0.1)]}


def claims(res: dict, extra: dict, values: dict) -> dict[str, bool]:
    """The conclusions ``templates/dual_encoder.md`` states, each true of the stored results;
    ``values``: the report's values (:func:`derived` among them)."""
    test, v, score = res["test"], values["variant"], values["score"]
    r1 = {name: [round(100 * d[k]["R@1"], 1) for k in DIRECTIONS]
          for name, d in (("dual", test["flickr8k-5cap"]["dual"]),
                          ("train_cli", res["train_cli"]["test"]["flickr8k-5cap"]))}
    ood = res["ood"]["results"]["dual"]
    ft, stage2 = values["finetune"], values["stage2"]
    best_ft = max(res["finetune"], key=score_of)
    cli2, same = res["train_cli_stage2"]["stage2"], _same_as_history(res, extra[HISTORY])
    idx = extra["index_speed_models_lite0_vs_lite2"]
    ratio = idx["results"]["models"]["dual"]["ratio_to_first"]
    ib, second = res["image_bank"], values["second"]
    ens = {(e["variant"], e["w"]): e for e in res["ensembles"]}
    cc_dev_before = extra["ood_eval"]["results"]["cc-dev"]["dual"]["directions"]
    return {
        "the default model meets both R@1 goals on flickr8k-5cap":
            r1["dual"][0] >= GOAL_I2T and r1["dual"][1] >= GOAL_T2I,
        "image->text R@1 is above Klein et al.'s": r1["dual"][0] >= KLEIN_I2T,
        "cc-heldout t2i R@10 is at least twice the previous default's":
            values["cc_t2i_r10_times"] >= 2,
        "skimage-ood goal met (>= 9 first, >= 11 in the top 5)":
            int(ood["top1_with_distractors"].split("/")[0]) >= 9
            and int(ood["top5_with_distractors"].split("/")[0]) >= 11,
        "the train CLI's whole-recipe model also meets the goals":
            r1["train_cli"][0] >= GOAL_I2T and r1["train_cli"][1] >= GOAL_T2I,
        "the train CLI's arrays differ in shape (another bridge weight)":
            res["train_cli"]["stage2"]["max_abs_diff"] is None,
        "stage 2 alone through the train CLI makes the shipped choice and arrays":
            (cli2["best_epoch"], cli2["w"], cli2["max_abs_diff"])
            == (stage2["best_epoch"], stage2["w"], 0),
        "MPNet beats MiniLM (cc_mpnet over cc)": score["cc_mpnet"] > score["cc"],
        "Lite2 beats Lite0 (cc_lite2_mpnet over cc_mpnet)": values["lite2"]["score"] > 0,
        "two heads beat one": score[THIRD_SHIPPED] > score[LITE2],
        "a wider head does not help": score["cc_lite2_mpnet_h1024"] <= score[LITE2],
        "every fourth-round variant beats its baseline":
            all(values["gain"][n] > 0 for n in v if n.startswith("cc_lite2_mpnet_")
                and n not in (THIRD_SHIPPED, "cc_lite2_mpnet_h1024", "cc_lite2_mpnet_ep80")),
        "the shipped variant has the highest selection score of all rounds":
            score[SHIPPED] == max(score.values()),
        "the shipped stage 2 (lr 0.001) is the best run and beats the control's spread":
            SHIPPED_STAGE2["top_lr"] == SHIPPED_STAGE2_LR == best_ft["top_lr"]
            and ft[res["finetune"].index(stage2)]["over_start"] > values["control_spread"],
        "stage 2 chose bridge weight 0": stage2["w"] == 0,
        "the selected image bank is the shipped one":
            (SHIPPED_IMAGE_BANK["dim"], SHIPPED_IMAGE_BANK["beta"]) == (ib["dim"], ib["beta"]),
        "Lite0 alone was timed on a quieter machine":
            extra["index_speed"]["machine"]["load_avg_1min"] < idx["machine"]["load_avg_1min"],
        "Lite2 indexes at about half Lite0's speed": 5 / 12 <= ratio < 7 / 12,
        "CC data raised CC dev R@1 over the previous default in both directions": all(
            v["cc"]["dev"]["cc_dev"][k] > 100 * cc_dev_before[k.split("_")[0]]["R@1"]
            for k in R1),
        "CC data moved Flickr8K dev by less than a point": max(
            abs(v["cc"]["dev"]["dev"][k] - v["f8k"]["dev"]["dev"][k]) for k in R1) < 1,
        "among the photos alone only the moon query loses, to one other photo":
            {k: n for k, n in ood["photos_only"].items() if n > 1} == {"moon": 2},
        "hard negatives (beta 5) are worse than the shipped recipe with the bridge (w = 0.1)":
            ens["hn5", 0.1]["dev_mean_r1"] < ens["shipped", 0.1]["dev_mean_r1"],
        "two second-round variants (ens3, ens2_hn5) are 1 point ahead, both best at w = 0":
            sorted(second["ahead"]) == ["ens2_hn5", "ens3"] and all(
                max((e for e in res["ensembles"] if e["variant"] == n),
                    key=lambda e: e["dev_mean_r1"])["w"] == 0 for n in second["ahead"]),
        "f8k reproduces the previous default's dev numbers exactly": same["f8k"],
        **_sixth_claims(res, values),
        "the ensembles rerun reproduces the first round's shipped dev numbers":
            same["ensembles_shipped"],
        "the first round's rerun prints as the historical run": same["first"],
        "the second round's rerun prints as the historical run": same["second"],
    }


def report_markdown(res: dict, extra: dict) -> str:
    """``reports/dual_encoder.md`` from ``dual_encoder.json`` (``res``) and the results of
    :data:`EXTRA` (``extra``: name -> its JSON)."""
    values = {**_values(res, extra), **derived(res, extra)}
    check_claims("dual_encoder", claims(res, extra, values))
    text = fill(template_text("dual_encoder"), values, "dual_encoder.md")
    parts = text.split("```")  # paragraphs are one line each in the template; code stays
    return "```".join(rewrap(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def write_report(results: Path, report: Path | None) -> None:
    """Rewrite ``dual_encoder_tables.md`` and (unless None) ``report`` from ``results``."""
    res = load_results(results, ["dual_encoder"], "dual_encoder_tables.md",
                       "run `xmodal reproduce dual`")["dual_encoder"]
    (Path(results) / "dual_encoder_tables.md").write_text(markdown(res))
    if report is None:
        return
    extra = load_results(results, EXTRA, "the report",
                         "`xmodal reproduce dual` and the benchmarks write them")
    have = {v["variant"] for v in res.get("broader", [])}
    missing = ([f"the test results of {p}" for p in PROTOCOLS if p not in res.get("test", {})]
               + (["the out-of-domain check"] if "ood" not in res else [])
               + [f"the variant {n} (--broader)" for n in NEEDED if n not in have])
    if missing:
        raise XmodalError(f"the report needs {and_list(missing)}, not in {results}")
    Path(report).write_text(report_markdown(res, extra))
