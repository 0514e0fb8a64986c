"""The tables of ``reports/dual_encoder.md`` from ``benchmarks/results/dual_encoder.json``."""

from __future__ import annotations

LABELS = {"dual": "dual (shipped)",
          "efficientnet-minilm-zeroshot": "zero-shot bridge (`efficientnet-minilm-zeroshot`)"}


def _pct(v: float) -> str:
    return f"{100 * v:.1f}"


def test_table(protocol: str, rows: dict) -> list[str]:
    """One protocol's table: R@K (or S@K) and medR, or R-P and mAP@R on the crowd protocol."""
    crowd = protocol.endswith("crowd")
    keys = ("R@1", "R@5", "R@10", "R-P", "mAP@R") if crowd else ("R@1", "R@5", "R@10", "medR")
    names = [k.replace("R@", "S@") if crowd else k for k in keys]
    head = " | ".join(f"{d} {n}" if i == 0 else n for d in ("i2t", "t2i")
                      for i, n in enumerate(names))
    note = "percentages" if crowd else "percentages; medR is a rank"
    out = [f"`{protocol}` ({note}):", "", f"| model | {head} |",
           "|---|" + "---|" * (2 * len(keys))]
    for model, dirs in rows.items():
        cells = [f"{dirs[d][k]:g}" if k == "medR" else _pct(dirs[d][k])
                 for d in ("i2t", "t2i") for k in keys]
        out.append(f"| {LABELS.get(model, model)} | " + " | ".join(cells) + " |")
    return out + [""]


def ood_rows(queries: dict, r: dict) -> list[str]:
    """One row per out-of-domain query: rank among the photos, rank with distractors."""
    return [f"| {queries[k]} | {r['photos_only'][k]} | {r['with_flickr8k_test_distractors'][k]} |"
            for k in queries]


def markdown(res: dict) -> str:
    """Every table of the results, in the order of the report."""
    lines = ["# Dual encoder: tables (`xmodal reproduce dual`)", "",
             f"Commit `{res.get('git_commit', '?')}`, {res.get('date', '?')}.", ""]
    for protocol, rows in res.get("test", {}).items():
        lines += test_table(protocol, rows)
    for spec, r in res.get("ood", {}).get("results", {}).items():
        queries = res["ood"]["queries"]
        lines += [f"Out-of-domain check, `{spec}`: rank of the right photo (1 = first)", "",
                  "| query | photos only (13) | + 1,000 Flickr8K test images |", "|---|---|---|"]
        lines += ood_rows(queries, r)
        lines += [f"| top-1 | {r['top1_photos_only']} | {r['top1_with_distractors']} (top-5: "
                  f"{r['top5_with_distractors']}) |", ""]
    if res.get("variants"):
        lines += ["Variants (R@1 i2t / t2i on `flickr8k-5cap`, dev selects):", "",
                  "| variant | w | best epoch | dev R@1 | test R@1 |", "|---|---|---|---|---|"]
        lines += [f"| {v['variant']} | {v['w']} | {v.get('best_epoch', '-')} | "
                  f"{v['dev']['i2t_R@1']:.1f} / {v['dev']['t2i_R@1']:.1f} | "
                  f"{v['test']['i2t_R@1']:.1f} / {v['test']['t2i_R@1']:.1f} |"
                  for v in res["variants"]]
        lines.append("")
    if res.get("ensembles"):
        lines += ["Second round (dev only):", "",
                  "| variant | w | member best epochs | fit (s) | dev R@1 | mean |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {v['variant']} | {v['w']} | {', '.join(map(str, v['best_epochs']))} | "
                  f"{v['fit_s']} | {v['dev']['i2t_R@1']:.1f} / {v['dev']['t2i_R@1']:.1f} | "
                  f"{v['dev_mean_r1']:.2f} |" for v in res["ensembles"]]
        lines.append("")
    if res.get("broader"):
        from xmodal.reproduce.dual_broader import broader_table

        lines += broader_table(res["broader"])
    return "\n".join(lines)
