"""Hodosh et al. (2013) on Flickr8K: every system on the three protocols of ``reports/hodosh.md``.

Each system is a setting of :mod:`xmodal.recipes.flickr8k` (``hodosh-NAME``), trained or loaded
from its cache and scored through the setting's own scorer on the 1,000 x 1,000 test pool;
``NAME@single`` is the same system's single best dev (kappa, n) instead of its Borda ensemble.
Evaluation: ``flickr8k-hodosh`` (R@K, median rank), ``flickr8k-hodosh-crowd`` (S@K, R-precision,
mAP@R), significance against Tri5Sem (:func:`xmodal.eval.compare.compare`), the expert scores of
each system's top caption, the rank correlations of systems across metrics (Table 7) and, per
KCCA system, its dev selection (every candidate's dev scores and what was chosen).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.eval.compare import compare
from xmodal.eval.metrics import retrieval_metrics
from xmodal.reproduce.output import log
from xmodal.reproduce.render import reference_data, saved_figure

DEFAULT_SYSTEMS = [
    "nn", "bow1", "bow5", "tagrank", "tri5", "tri5-landmarks", "tri5sem", "bow5-full",
    "tagrank-full", "tri5-full", "tri5sem-full", "bow5-112", "bow5-448", "tri5sem-448",
    "bow5-448-full", "tagrank-448-full", "tri5-448-full", "tri5sem-448-full", "bow5-effnet",
    "tri5sem-effnet",
]
PROTOCOLS = ("flickr8k-hodosh", "flickr8k-hodosh-crowd")
EXPERT_THRESHOLDS = [(4.0, 12), (3.66, 11), (3.33, 10), (3.0, 9), (2.66, 8), (2.33, 7), (2.0, 6)]
REFERENCE = "tri5sem"
TESTS = {"R@1": "mcnemar", "R@5": "mcnemar", "R@10": "mcnemar", "rank": "randomization"}
CROWD_TESTS = {**TESTS, "R-P": "randomization", "mAP@R": "randomization"}


def pool_scores(name: str, protocol) -> dict[str, np.ndarray]:
    """``{"i2t": S, "t2i": S}`` of system ``name`` (``NAME@single``: its single best dev model)
    on the protocol's pool, through the settings table's scorer (and its caches)."""
    from xmodal.recipes.flickr8k import direction_inputs, get_system
    from xmodal.recipes.settings import get_setting

    base, single = name.removesuffix("@single"), name.endswith("@single")
    if not single:
        scorer = get_setting(f"hodosh-{base}").scorer(protocol.name)
        return {d: scorer(protocol, protocol.directions[d]) for d in ("i2t", "t2i")}
    from xmodal.models.hodosh import config_hash
    from xmodal.recipes.flickr8k import load_hodosh_data

    hd = load_hodosh_data(protocol.dataset)
    d = protocol.directions["i2t"]
    images, docs = direction_inputs(hd, d)
    key = config_hash(images, list(d.text_ids))
    return get_system(base, hd).score(images, docs, f"pool-{key}", single=True)


def evaluate(systems: list[str], data=None) -> dict:
    """Metrics, significance, expert scores and correlations of ``systems``; ``_gold_ranks``
    (per-query rank of the gold item) for the R@K figure."""
    from xmodal.eval.protocols import get_protocol

    protos = {n: get_protocol(n, data) for n in PROTOCOLS}
    base = protos["flickr8k-hodosh"].directions["i2t"]
    for p in protos.values():
        for d in p.directions.values():
            if d.image_ids != base.image_ids or d.text_ids != base.text_ids:
                raise RuntimeError(f"{p.name}: pool order differs from the Hodosh test pool")
    scores = {}
    for s in systems:
        scores[s] = pool_scores(s, protos["flickr8k-hodosh"])
        log(f"{s}: scored the test pool")
    res: dict = {"systems": systems, "metrics": {}, "significance": {}}
    per_query: dict = {}
    for pname, proto in protos.items():
        for dname, d in proto.directions.items():
            for s in systems:
                q = d.query_scores(scores[s][dname])
                summ, pq = retrieval_metrics(np.ascontiguousarray(q), d.query_relevance,
                                             per_query=True)
                res["metrics"].setdefault(pname, {}).setdefault(dname, {})[s] = summ
                per_query.setdefault(pname, {}).setdefault(dname, {})[s] = pq
    if REFERENCE in systems:
        for pname in protos:
            tests = CROWD_TESTS if pname.endswith("crowd") else TESTS
            res["significance"][pname] = {
                d: compare(per_query[pname][d], REFERENCE, tests, systems=systems)
                for d in ("i2t", "t2i")}
    res.update(expert_scores(systems, scores, base, protos["flickr8k-hodosh"].dataset))
    res["selection"] = dev_selection(systems, protos["flickr8k-hodosh"].dataset)
    res["correlations"] = correlations(res, systems)
    res["_gold_ranks"] = {d: {s: np.asarray(per_query["flickr8k-hodosh"][d][s]["rank"])
                              for s in systems} for d in ("i2t", "t2i")}
    return res


def expert_scores(systems, scores, pool, dataset) -> dict:
    """Expert judgments of each system's top-ranked caption (annotation); unjudged pairs count
    as failures, so the fractions are lower bounds. McNemar against the reference system."""
    image_ids, caps = list(pool.image_ids), list(pool.text_ids)
    expert = {(e.image_id, e.caption_id): sum(e.scores) for e in dataset.expert}  # 3..12
    out: dict = {"expert": {}}
    hits: dict = {}
    for s in systems:
        top = np.asarray(scores[s]["i2t"]).argmax(1)
        tot = np.array([expert.get((i, caps[t]), -1) for i, t in zip(image_ids, top)])
        judged = tot >= 0
        row = {"n_judged": int(judged.sum()), "n_images": len(tot)}
        for thr, units in EXPERT_THRESHOLDS:
            row[f">={thr}"] = float(np.mean(tot >= units))
            hits.setdefault(s, {})[f">={thr}"] = tot >= units
        for thr, units in ((4.0, 12), (2.66, 8)):
            row[f"judged>={thr}"] = float(np.mean(tot[judged] >= units)) if judged.any() else 0.0
        row["mean_judged"] = float(np.mean(tot[judged]) / 3) if judged.any() else float("nan")
        row["top_is_gold"] = float(np.mean(np.array([caps[t] == f"{i}#2"
                                                    for i, t in zip(image_ids, top)])))
        out["expert"][s] = row
    if REFERENCE in systems:
        out["expert_significance"] = compare(hits, REFERENCE, {f">={t}": "mcnemar"
                                                               for t, _ in EXPERT_THRESHOLDS})
    return out


def dev_selection(systems: list[str], dataset) -> dict:
    """Per KCCA system (cached, so already trained): the dev R@1, R@5, R@10 and medR of every
    (kappa, n) candidate in grid order, the 15 settings of each task's Borda ensemble and the
    single best dev setting."""
    from xmodal.recipes.flickr8k import get_system, load_hodosh_data
    from xmodal.recipes.settings import get_setting
    from xmodal.reproduce.hodosh_explore import grid_columns

    hd = load_hodosh_data(dataset)
    out = {}
    for base in dict.fromkeys(s.removesuffix("@single") for s in systems):
        if get_setting(f"hodosh-{base}").family != "kcca":
            continue
        system = get_system(base, hd)
        cols = grid_columns(system)
        out[base] = {"candidates": {"kappa": cols["kappa"], "n": cols["n"]}}
        for task in ("i2t", "t2i"):
            single = system.best_single(task)
            out[base][task] = {
                "dev": cols[task],
                "ensemble": system.selected_[task],
                "single": {"kappa": single["kappa"], "n": single["n"]},
            }
    return out


def correlations(res: dict, systems: list[str]) -> dict:
    """Spearman / Kendall correlation of the systems' ranking under two metrics (Table 7)."""
    from xmodal.eval.stats import kendall, spearman

    if len(systems) < 4:
        return {}
    out = {}
    h, c = res["metrics"]["flickr8k-hodosh"], res["metrics"]["flickr8k-hodosh-crowd"]
    for d in ("i2t", "t2i"):
        rows = {}
        for k in (1, 5, 10):
            a = [h[d][s][f"R@{k}"] for s in systems]
            b = [c[d][s][f"R@{k}"] for s in systems]
            rows[f"R@{k} vs S@{k}"] = (spearman(a, b), kendall(a, b))
        rp = [c[d][s]["R-P"] for s in systems]
        for k in ("R@1", "R@5", "R@10"):
            a = [h[d][s][k] for s in systems]
            rows[f"R-P vs {k}"] = (spearman(a, rp), kendall(a, rp))
        med = [-h[d][s]["medR"] for s in systems]
        rows["R-P vs medR"] = (spearman(med, rp), kendall(med, rp))
        out[d] = rows
    return out


def reproduce(systems=None, singles=None, data=None, out=None,
              command: str = "xmodal reproduce hodosh") -> dict:
    """Evaluate and write ``hodosh_reproduction.json`` (every number but the per-query ranks);
    returns the results with the per-query ranks (``_gold_ranks``) for the R@K figure."""
    import json

    from xmodal.provenance import git_commit
    from xmodal.reproduce.output import RESULTS, record, utc_now

    systems = list(systems or DEFAULT_SYSTEMS)
    singles = [s for s in systems if s != "nn"] if singles is None else list(singles)
    res = evaluate(systems + [f"{s}@single" for s in singles], data)
    res["date"], res["git_commit"] = utc_now(), git_commit()
    saved = json.loads(json.dumps({k: v for k, v in res.items() if not k.startswith("_")},
                                  default=float))
    record("hodosh_reproduction", saved, command, out or RESULTS)
    return res


def plot_recall_curves(res: dict, path: Path) -> None:
    """R@K of the gold item for K = 1..100, both tasks, ensembles only (the report's figure,
    drawn from the per-query ranks that ``hodosh_reproduction.json`` does not keep)."""
    import matplotlib

    names = reference_data("hodosh")["labels"]["names"]
    ks = np.arange(1, 101)
    colours = matplotlib.colormaps["tab20"](np.linspace(0, 1, 20))
    with saved_figure(path, 1, 2, rect=(0, 0.2, 1, 1), figsize=(10, 5.5),
                      sharey=True) as (fig, axes):
        for ax, (d, title) in zip(axes, (("i2t", "Annotation"), ("t2i", "Search"))):
            shown = [s for s in res["_gold_ranks"][d] if not s.endswith("@single")]
            for i, s in enumerate(shown):
                ranks = res["_gold_ranks"][d][s]
                style = "--" if s.endswith("-full") else ":" if s.endswith("-112") else "-"
                ax.plot(ks, [100 * np.mean(ranks <= k) for k in ks], style,
                        color=colours[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20],
                        label=names[s])
            ax.set_title(f"{title}: flickr8k-hodosh")
            ax.set_xlabel("K")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("R@K (%)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3)
