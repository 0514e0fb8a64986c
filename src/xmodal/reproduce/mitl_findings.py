"""``reports/mitl_flickr8k.md`` from the two study results, ``mitl_flickr8k_{crowd,expert}.json``:
``templates/mitl_flickr8k.md`` and, once per judge, ``templates/mitl_flickr8k_section.md``.
"""

from __future__ import annotations

from pathlib import Path

from xmodal.mitl.study import METRICS
from xmodal.reproduce.render import load_results, markdown_table, pct, render_template, span

SOURCES = ("crowd", "expert")
ROUNDS = {"first": "round 1", "targeted": "round 2 targeted", "deeper": "round 2 deeper"}


def _kendall_pairs(r: dict):
    """(tau, metric a, metric b) over the distinct metric pairs of Table 5."""
    for tau in r["table5"]["kendall"].values():
        cols = list(tau)
        for i, a in enumerate(cols):
            for b in cols[i + 1:]:
                if tau[a][b] is not None:
                    yield tau[a][b], a.split(" ", 1)[1], b.split(" ", 1)[1]


def _per_answered(c: dict) -> float:
    return 100 * c["positives"][-1] / max(1, c["judgments_answered"][-1])


def section(r: dict, source: str) -> str:
    """The tables of one simulated judge."""
    p, names, t5 = r["propose"], list(r["propose"]["annotators"]), r["table5"]
    ov = p["overlap"]

    def jaccard(a: str, b: str) -> str:
        v = ov.get(f"{a}|{b}") or ov.get(f"{b}|{a}")
        return "-" if v is None else f"{v['jaccard']:.2f}"

    def kendall(d: str) -> str:
        tau = t5["kendall"][d]
        short = {c: c.replace("original ", "o.").replace("extended ", "e.") for c in tau}
        return markdown_table(["", *short.values()],
                              [[short[a], *("-" if tau[a][b] is None else f"{tau[a][b]:.2f}"
                                            for b in tau)] for a in tau])

    b = r["bias"]
    return render_template("mitl_flickr8k_section", {
        "source": source, "r": r, "p": p, "n_queries": sum(p["queries"].values()),
        "v": r["aggregate"]["verdicts"], "ag": r["aggregate"]["agreement"],
        "n_models": len(r["models"]),
        "coverage": markdown_table(
            ["annotator", "already positive (dropped)", "candidates", "unique",
             "with a recorded judgment", "coverage", "verified positive", "precision of judged"],
            [[n, a["already_positive"], a["candidates"], a["unique"], c["judged"],
              pct(c["coverage"], missing="-") + "%", c["positive"],
              pct(c["precision"], missing="-")]
             for n, a in p["annotators"].items() for c in [r["coverage"][n]]]),
        "overlap": markdown_table(["", *names],
                                  [[a, *(jaccard(a, b) for b in names)] for a in names]),
        "table2": markdown_table(
            ["direction", "precision", "recall", "queries (precision / recall)"],
            [[d, pct(x["precision"], missing="-"), pct(x["recall"], missing="-"),
              f"{x['queries_with_judged_original']} / {x['queries_with_verified_positive']}"]
             for d, x in r["table2"].items()]),
        "table5": {d: markdown_table(["model", *METRICS], [
            [m, *(f"{pct(t5['original'][m][d][k], missing='-')} → "
                  f"{pct(t5['extended'][m][d][k], missing='-')}" for k in METRICS)]
            for m in r["models"]]) for d in ("i2t", "t2i")},
        "kendall": {d: kendall(d) for d in ("i2t", "t2i")},
        "bias": markdown_table(
            ["candidates from", "verified positives", "i2t τ vs all", "i2t max rank shift",
             "t2i τ vs all", "t2i max rank shift"],
            [[n, found, *(cell for d in ("i2t", "t2i") for cell in (
                f"{b['directions'][d][n]['tau_vs_all']:.2f}",
                b["directions"][d][n]["max_rank_shift"]))]
             for n, found in b["verified_positives"].items()]),
        "yield_table": markdown_table(
            ["round", "judgments spent", "answered from records", "new positives",
             "per 100 spent", "per 100 answered"],
            [[n, f"{c['judgments_shown'][-1]:,}", f"{c['judgments_answered'][-1]:,}",
              c["positives"][-1], f"{c['positives_per_100_judgments']:.2f}",
              f"{_per_answered(c):.1f}"] for n, c in r["yield"].items()]),
    })


def markdown(crowd: dict, expert: dict) -> str:
    """The report from the two study results."""
    both = {"crowd": crowd, "expert": expert}
    t2 = {s: r["table2"] for s, r in both.items()}
    prec = {s: {a: c["precision"] for a, c in r["coverage"].items()} for s, r in both.items()}
    t5, lead = crowd["table5"], crowd["models"][0]
    taus = sorted(_kendall_pairs(crowd))
    lowest = [{a, b} for t, a, b in taus if t == taus[0][0]]
    common = [m for m in METRICS if all(m in pair for pair in lowest)]
    y = {s: {k: r["yield"][name] for k, name in ROUNDS.items()} for s, r in both.items()}
    share, tau, shift, worst_by = [], [], [], {}
    for s, r in both.items():
        b = r["bias"]
        found = {a: n for a, n in b["verified_positives"].items() if a != "all"}
        share += [100 * n / b["verified_positives"]["all"] for n in found.values()]
        per = {a: [b["directions"][d][a] for d in b["directions"]] for a in found}
        tau += [x["tau_vs_all"] for xs in per.values() for x in xs]
        shift += [x["max_rank_shift"] for xs in per.values() for x in xs]
        worst_by[s] = min(per, key=lambda a: min(x["tau_vs_all"] for x in per[a]))
    budget = crowd["round2"]["budget"]
    answered = {s: [_per_answered(y[s]["targeted"]), _per_answered(y[s]["deeper"])]
                for s in SOURCES}
    values = {
        "crowd": crowd, "expert": expert, "t2": t2, "prec": prec, "lead": lead, "y": y,
        "v": {s: r["aggregate"]["verdicts"] for s, r in both.items()},
        "alpha": {s: r["aggregate"]["agreement"] for s, r in both.items()},
        "coverage_span": {s: span([c["coverage"] * 100 for c in r["coverage"].values()],
                                  "{:.0f}", "–") for s, r in both.items()},
        "missed": span([100 - 100 * t2["crowd"][d]["recall"] for d in ("i2t", "t2i")], "{:.0f}",
                       "–"),
        "judged_originals": {s: r["aggregate"]["verdicts"]["original"]["positive"]
                             + r["aggregate"]["verdicts"]["original"]["negative"]
                             for s, r in both.items()},
        "lead_r1": [t5[k][lead]["i2t"]["R@1"] for k in ("original", "extended")],
        "n_models": len(crowd["models"]), "tau_span": span([t for t, *_ in taus], "{:.2f}", "–"),
        "share_span": span(share, "{:.0f}", "–"), "max_shift": max(shift),
        "bias_tau_span": span(tau, "{:.2f}", "–"),
        "ratio": y["crowd"]["targeted"]["positives_per_100_judgments"]
        / max(y["crowd"]["deeper"]["positives_per_100_judgments"], 1e-9),
        "budget": budget, "budget_pct": 100 * budget / crowd["propose"]["unique_candidates"],
        "answered": answered,
        "sections": {s: section(r, s) for s, r in both.items()},
    }
    return render_template("mitl_flickr8k", values, {
        "the original ground truth is precise (crowd precision >= 90%)":
            t2["crowd"]["i2t"]["precision"] >= 0.9,
        "the dual encoder's candidates are the most often right with the crowd, NN5's the least":
            max(prec["crowd"], key=prec["crowd"].get) == "dual"
            and min(prec["crowd"], key=prec["crowd"].get) == "hodosh-nn",
        "every model gains mAP@R with the extended positives":
            all(t5["extended"][m][d]["mAP@R"] >= t5["original"][m][d]["mAP@R"]
                for m in crowd["models"] for d in ("i2t", "t2i")),
        "the lowest Kendall correlations are between R@5 and the others (crowd)":
            common[:1] == ["R@5"],
        "NN5 alone distorts the crowd ranking most, the zero-shot bridge the expert one":
            worst_by == {"crowd": "hodosh-nn", "expert": "efficientnet-minilm-zeroshot"},
        "the targeted round finds more positives per judgment than going deeper (crowd)":
            y["crowd"]["targeted"]["positives_per_100_judgments"]
            > y["crowd"]["deeper"]["positives_per_100_judgments"],
        "per answered judgment the targeted round still wins (crowd and expert)":
            all(a > b for a, b in answered.values()),
    })


def write_report(results_dir: Path, report: Path) -> None:
    """Write the report from ``mitl_flickr8k_{crowd,expert}.json`` in ``results_dir``."""
    found = load_results(results_dir, [f"mitl_flickr8k_{s}" for s in SOURCES],
                         "reports/mitl_flickr8k.md", "run `xmodal reproduce mitl`")
    Path(report).write_text(markdown(*found.values()))
