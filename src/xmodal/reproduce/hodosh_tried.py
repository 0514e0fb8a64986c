"""The named values of the "What was tried" (``hodosh_exploration.json`` beside the registered
systems' own dev grids) and "Cost" sections of ``reports/hodosh.md``.
"""

from __future__ import annotations

from xmodal.models.hodosh import best_dev_row
from xmodal.reproduce.hodosh_summary import TASKS
from xmodal.reproduce.render import and_list, markdown_table, reference_data

# each exploration's row in the report (``hodosh_explore.EXPLORATIONS``) and the used settings'
# rows, from data/hodosh.json
_NAMES = reference_data("hodosh")["explorations"]
LABELS, USED = _NAMES["names"], _NAMES["used"]


def best(columns: dict, task: str, kappa: float | None = None) -> dict:
    """The best dev setting (``best_dev_row``) of a dev grid in ``hodosh_explore.grid_columns``'
    layout, among all kappas or one: ``{"kappa", "n", "R@1", "R@5", "R@10", "medR"}``."""
    m = columns[task]
    rows = [{"kappa": k, "n": n, task: {key: m[key][i] for key in m}}
            for i, (k, n) in enumerate(zip(columns["kappa"], columns["n"]))
            if kappa is None or k == kappa]
    row = best_dev_row(rows, task)
    return {"kappa": row["kappa"], "n": row["n"],
            **{k: row[task][k] for k in ("R@1", "R@5", "R@10", "medR")}}


def used_columns(selection: dict) -> dict:
    """The main run's dev selection of one system in ``grid_columns``' layout."""
    return {"kappa": selection["candidates"]["kappa"], "n": selection["candidates"]["n"],
            **{task: selection[task]["dev"] for task in TASKS}}


def rows_of(exploration: dict, selection: dict, system: str) -> list[tuple[str, dict, str]]:
    """(label, {task: best dev row}, pivots) of ``system``'s used setting and its explorations,
    one row per kappa where an exploration only changes the kappas."""
    rows = [(USED[system], {t: best(used_columns(selection[system]), t) for t in TASKS}, "")]
    for name, rec in exploration.items():
        if rec["system"] != system:
            continue
        pivots = " / ".join(f"{p:,}" for p in rec["pivots"])
        if set(rec["overrides"]) == {"kappas"}:
            rows += [(f"kappa = {k:g}", {t: best(rec["dev"], t, k) for t in TASKS}, pivots)
                     for k in rec["overrides"]["kappas"]]
        else:
            rows.append((LABELS[name], {t: best(rec["dev"], t) for t in TASKS}, pivots))
    return rows


def mean4(row: dict) -> float:
    """The mean of the four cells (annotation and search R@5 and R@10), in %."""
    return 25 * sum(row[t][k] for t in TASKS for k in ("R@5", "R@10"))


def table(rows) -> str:
    return markdown_table(
        ["Setting", "kappa (ann. / search)", "Ann. R@5", "Ann. R@10", "Search R@5", "Search R@10",
         "Ann. / search R@1", "pivots (image / text)"],
        [[label, " / ".join(f"{r[t]['kappa']:g}" for t in TASKS),
          *(f"{100 * r[t][k]:.1f}" for t in TASKS for k in ("R@5", "R@10")),
          " / ".join(f"{100 * r[t]['R@1']:.1f}" for t in TASKS), pivots or "as registered"]
         for label, r, pivots in rows])


def tried_values(exploration: dict, selection: dict) -> tuple[dict, dict[str, bool]]:
    """The values of "What was tried" and its claim (the used d is the best on dev)."""
    res = exploration["results"]
    runs = dict.fromkeys((r["run"]["command"], r["run"]["git_commit"], r["run"]["date"][:10])
                         for r in res.values())
    bow5, tri = rows_of(res, selection, "bow5"), rows_of(res, selection, "tri5sem")
    big = next(r for label, r, _ in bow5 if label == LABELS["bow5-3000-r3000"])

    def against(rows) -> str:
        return and_list(f"{label} {mean4(r) - mean4(rows[0][1]):+.1f}" for label, r, _ in rows[1:])

    values = {"runs": and_list(f"`{cmd}` (commit `{commit}`, {day})" for cmd, commit, day in runs),
              "bow5_table": table(bow5), "tri_table": table(tri), "bow5_mean": mean4(bow5[0][1]),
              "tri_mean": mean4(tri[0][1]), "bow5_against": against(bow5),
              "tri_against": against(tri), "big_gain": mean4(big) - mean4(bow5[0][1]),
              "big_r1": " / ".join(f"{100 * big[t]['R@1']:.1f}" for t in TASKS),
              "used_r1": " / ".join(f"{100 * bow5[0][1][t]['R@1']:.1f}" for t in TASKS)}
    best = max(tri, key=lambda row: mean4(row[1]))
    values.update(tri_best=best[0], tri_best_gain=mean4(best[1]) - mean4(tri[0][1]))
    return values, {"no Tri5Sem setting beats the used d = 4 on dev by half a point":
                    values["tri_best_gain"] < 0.5}


def cost_values(exploration: dict, text_kernels: dict, visual_words: dict) -> dict:
    """Measured costs: visual words, image-kernel blocks and KCCA fits (``--part explore``),
    text kernels (``benchmarks.text_kernels``)."""
    res, vw = exploration["results"], visual_words["results"]
    per = vw["word_maps_seconds"] / vw["images"]
    blocks = {k: v for rec in res.values() for k, v in rec["kernel_blocks_s"].items()
              if v >= 1}  # under a second: read from the cache
    fits = sorted((rec["fit_s"], name) for name, rec in res.items())
    tk = text_kernels["results"]["kernels"]
    return {"vw": vw, "vw_commit": visual_words["commit"], "vw_ms": 1000 * per,
            "vw_minutes": round(8091 * per / 60),
            "blocks": and_list(f"{k} in {v:.0f} s" for k, v in blocks.items()),
            "fit_lo": fits[0][0], "fit_hi": fits[-1][0], "fit_longest": fits[-1][1],
            "tk": and_list(f"{k} {tk[k]['gram_6000_s']:.0f} s"
                           for k in ("bow5", "bow1", "tri5", "tagrank", "tri5sem")),
            "tk_commit": text_kernels["commit"]}
