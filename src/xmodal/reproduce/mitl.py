"""The machine-in-the-loop study of reports/mitl_flickr8k.md: both simulated judges, end to end.

Runs :func:`xmodal.mitl.pipeline.run_simulated_study` on the Flickr8K Hodosh pool with the
recorded crowd and expert judgments (the default five annotators, all 1,000 queries per
direction, three extra ranked models), keeps every number in
``mitl_flickr8k_{crowd,expert}.json`` (results folder), the yield figures in
``reports/figures/mitl_yield_*.png``, and writes the report's findings
(:mod:`xmodal.reproduce.mitl_findings`) and tables below its hand-written head. The campaign databases (~50 MB each) go to a work folder.
"""

from __future__ import annotations

from pathlib import Path

from xmodal.mitl.study import METRICS
from xmodal.reproduce.output import stamp, write_json

MARK = "<!-- generated -->"


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def table(header: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def section(r: dict, source: str) -> str:
    p = r["propose"]
    parts = [f"## Simulated {source} judges\n",
             f"`xmodal mitl simulate -p flickr8k-hodosh --judgments {source} --json` "
             f"({r['elapsed_s']:.0f} s). {sum(p['queries'].values())} queries "
             f"({p['queries']['i2t']} images, {p['queries']['t2i']} captions), top-{p['k']} of "
             f"each annotator: {p['total_proposed']:,} proposals -> "
             f"{p['unique_candidates']:,} unique candidates, plus the 1,000 original pairs "
             f"(judged too, for Table 2). HITs of {r['settings']['hit_size']} + 2 gold pairs, "
             f"{r['settings']['replication']} simulated workers each: "
             f"{r['simulation']['submitted']:,} submissions, {r['simulation']['review']} sent to "
             "review by a gold check and left unreviewed (not counted).\n"]
    rows = []
    for name, a in p["annotators"].items():
        c = r["coverage"][name]
        rows.append([name, a["already_positive"], a["candidates"], a["unique"], c["judged"],
                     pct(c["coverage"]) + "%", c["positive"], pct(c["precision"])])
    parts.append("### Candidates and coverage per annotator\n")
    parts.append(table(["annotator", "already positive (dropped)", "candidates", "unique",
                        "with a recorded judgment", "coverage", "verified positive",
                        "precision of judged"], rows))
    names = list(p["annotators"])
    ov = []
    for a in names:
        cells = []
        for b in names:
            v = p["overlap"].get(f"{a}|{b}") or p["overlap"].get(f"{b}|{a}")
            cells.append("-" if v is None else f"{v['jaccard']:.2f}")
        ov.append([a, *cells])
    parts.append("\nPairwise overlap of the candidate sets (Jaccard):\n")
    parts.append(table(["", *names], ov))
    v = r["aggregate"]["verdicts"]
    ag = r["aggregate"]["agreement"]
    parts.append(f"\nVerdicts (ECCV rule, majority, ties negative): candidates "
                 f"{v['candidate']['positive']:,} positive / {v['candidate']['negative']:,} "
                 f"negative / {v['candidate']['unjudged']:,} unjudged (no recorded judgment); "
                 f"original pairs {v['original']['positive']} / {v['original']['negative']} / "
                 f"{v['original']['unjudged']}. Krippendorff's α over {ag['pairs']:,} pairs "
                 f"with 2+ answers: {ag['alpha_binary']:.3f} (binary), "
                 f"{ag['alpha_ordinal']:.3f} (ordinal).\n")
    t2 = r["table2"]
    parts.append("### ECCV Table 2 analogue: the original positives against the verified ones\n")
    parts.append(table(["direction", "precision", "recall", "queries (precision / recall)"],
                       [[d, pct(x["precision"]), pct(x["recall"]),
                         f"{x['queries_with_judged_original']} / "
                         f"{x['queries_with_verified_positive']}"] for d, x in t2.items()]))
    parts.append("\n### ECCV Table 5 analogue: models under original vs extended positives\n")
    t5 = r["table5"]
    for d in ("i2t", "t2i"):
        rows = []
        for m in r["models"]:
            o, e = t5["original"][m][d], t5["extended"][m][d]
            rows.append([m, *(f"{pct(o[k])} → {pct(e[k])}" for k in METRICS)])
        parts.append(f"\n{d} (original → extended, %):\n")
        parts.append(table(["model", *METRICS], rows))
        tau = t5["kendall"][d]
        cols = list(tau)
        short = [c.replace("original ", "o.").replace("extended ", "e.") for c in cols]
        parts.append(f"\nKendall τ-b between the metric rankings of the {len(r['models'])} "
                     f"models ({d}; o. = original, e. = extended positives):\n")
        parts.append(table(["", *short], [[s, *("-" if tau[a][b] is None else f"{tau[a][b]:.2f}"
                                                for b in cols)] for s, a in zip(short, cols)]))
    b = r["bias"]
    parts.append("\n### Machine-annotator bias (ECCV §6): discovery with one annotator only\n")
    rows = []
    for name, found in b["verified_positives"].items():
        cells = [name, found]
        for d in ("i2t", "t2i"):
            x = b["directions"][d][name]
            cells += [f"{x['tau_vs_all']:.2f}", x["max_rank_shift"]]
        rows.append(cells)
    parts.append(table(["candidates from", "verified positives", "i2t τ vs all",
                        "i2t max rank shift", "t2i τ vs all", "t2i max rank shift"], rows))
    parts.append(f"\n(Model ranking by {b['metric']} under each single-annotator ground truth "
                 "against the all-annotator one.)\n")
    parts.append("\n### Round 2: where the next judgments help most\n")
    rows = []
    for name, c in r["yield"].items():
        rows.append([name, f"{c['judgments_shown'][-1]:,}", f"{c['judgments_answered'][-1]:,}",
                     c["positives"][-1], f"{c['positives_per_100_judgments']:.2f}",
                     f"{100 * c['positives'][-1] / max(1, c['judgments_answered'][-1]):.1f}"])
    parts.append(table(["round", "judgments spent", "answered from records", "new positives",
                        "per 100 spent", "per 100 answered"], rows))
    parts.append(f"\n![positives per judgment, {source}](figures/mitl_yield_{source}.png)\n")
    return "\n".join(parts)


def reproduce(command: str, data=None, work: Path | None = None, out: Path | None = None,
              report: Path | None = None, figures: Path | None = None, log=print) -> dict:
    """Both studies; returns {source: report}."""
    import tempfile
    import warnings

    from xmodal.data import load_flickr8k
    from xmodal.eval.protocols import get_protocol
    from xmodal.mitl.pipeline import plot_yield, run_simulated_study
    from xmodal.mitl.simulate import recorded_from_flickr8k
    from xmodal.reproduce.output import FIGURES, REPORTS, RESULTS

    out, figures = out or RESULTS, figures or FIGURES
    report = report or REPORTS / "mitl_flickr8k.md"
    work = work or Path(tempfile.mkdtemp(prefix="mitl-"))
    work.mkdir(parents=True, exist_ok=True)
    protocol = get_protocol("flickr8k-hodosh", data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(data)
    results = {}
    for source in ("crowd", "expert"):
        res = run_simulated_study(protocol, recorded_from_flickr8k(ds, source), source,
                                  work / f"{source}.db", log=log)
        res["provenance"] = stamp(command)
        write_json(out / f"mitl_flickr8k_{source}.json", res)
        plot_yield(res["yield"], figures / f"mitl_yield_{source}.png",
                   f"flickr8k-hodosh, simulated {source} judges")
        results[source] = res
    report.write_text(render(report.read_text() if report.is_file() else "", results))
    return results


def render(existing: str, results: dict) -> str:
    """The report: the hand-written head of ``existing`` (the text above the generated mark:
    how to regenerate, what was run), then the findings and tables of ``results``
    ({"crowd": ..., "expert": ...})."""
    from xmodal.reproduce.mitl_findings import findings

    head = existing.split(MARK)[0] if MARK in existing else "# MITL on Flickr8K\n\n"
    sections = [section(results[s], s) for s in ("crowd", "expert")]
    return (head + MARK + "\n\n" + findings(results["crowd"], results["expert"]) + "\n"
            + "\n\n".join(sections) + "\n")
