"""The tables and figures of ``reports/wikipedia.md``, from the reproduction's results.

:func:`markdown` renders ``benchmarks/results/wikipedia_tables.md`` (Tables 3-5, per-category
MAP, the SM C sweep); :func:`plots` draws ``reports/figures/wikipedia_{pr,per_category,
confusion}.png``. Both read only the result dict of :mod:`xmodal.reproduce.wikipedia`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PAPER_T3 = {
    ("cm", "nc"): (0.249, 0.196), ("cm", "l2"): (0.235, 0.181), ("cm", "l1"): (0.226, 0.179),
    ("sm", "nc"): (0.225, 0.223), ("sm", "l1"): (0.165, 0.221), ("sm", "kl"): (0.177, 0.221),
    ("scm", "nc"): (0.277, 0.226), ("scm", "kl"): (0.241, 0.226), ("scm", "l1"): (0.228, 0.226),
}
PAPER_T4 = {"random": (0.118, 0.118), "cm": (0.249, 0.196), "sm": (0.225, 0.223),
            "scm": (0.277, 0.226)}
LABEL = {"random": "Random", "cm": "CM", "sm": "SM", "scm": "SCM", "ksm": "KSM (ours)",
         "ksm-qe": "KSM-QE (ours, pre-registered)"}


def plots(res: dict, cats: list[str], figdir: Path) -> None:
    """PR curves, per-category MAP and confusion matrices (Figs. 4-6 of the paper)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["random", "cm", "sm", "scm", "ksm", "ksm-qe"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, d, title in zip(axes, ("t2i", "i2t"), ("Text query", "Image query")):
        for n in names:
            pr = res["pr"][n][d]
            ax.plot(pr["recall"], pr["precision"], marker="o", ms=3, label=LABEL[n])
        ax.set(title=title, xlabel="recall", ylabel="precision (11-point interpolated)",
               xlim=(0, 1), ylim=(0, 1))
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(figdir / "wikipedia_pr.png", dpi=90)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    x = np.arange(len(cats))
    for ax, d, title in zip(axes, ("t2i", "i2t"), ("Text query", "Image query")):
        for k, n in enumerate(names[1:]):
            ax.bar(x + (k - 2) * 0.16, res["per_category"][n][d], 0.16, label=LABEL[n])
        ax.set_xticks(x, cats, rotation=45, ha="right")
        ax.set(title=title, ylabel="MAP")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(figdir / "wikipedia_per_category.png", dpi=90)
    plt.close(fig)

    shown = ("cm", "sm", "scm", "ksm-qe")
    fig, axes = plt.subplots(len(shown), 2, figsize=(10, 4.5 * len(shown)))
    for row, n in enumerate(shown):
        for col, (d, title) in enumerate((("t2i", "text query"), ("i2t", "image query"))):
            ax = axes[row, col]
            m = np.asarray(res["confusion"][n][d])
            ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
            for i in range(len(cats)):
                for j in range(len(cats)):
                    if m[i, j] >= 0.05:
                        ax.text(j, i, f"{m[i, j]:.2f}"[1:], ha="center", va="center", fontsize=6,
                                color="white" if m[i, j] > 0.5 else "black")
            ax.set_xticks(range(len(cats)), cats, rotation=90, fontsize=7)
            ax.set_yticks(range(len(cats)), cats, fontsize=7)
            ax.set_title(f"{LABEL[n]}, {title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(figdir / "wikipedia_confusion.png", dpi=90)
    plt.close(fig)


OURS_AND_PAPER = ("cm", "sm", "scm", "ksm", "ksm-qe")


def markdown(res: dict) -> str:
    """The report's tables (Markdown) from the result dict (``table3_rows`` as pairs)."""
    t4 = res["table4"]
    lines = ["### Table 3: MAP per distance (test set)", "",
             "| Model | Distance | Image query | Text query | Paper (image / text) |",
             "|---|---|---|---|---|"]
    for (model, metric), v in res["table3_rows"]:
        paper = PAPER_T3.get((model, metric))
        ptxt = f"{paper[0]:.3f} / {paper[1]:.3f}" if paper else "-"
        lines.append(f"| {LABEL[model]} | {metric} | {v[0]:.3f} | {v[1]:.3f} | {ptxt} |")
    lines += ["", "### Table 4: MAP with NC (KSM, KSM-QE: their own score, `dot`)", "",
              ("| Model | Image query | Text query | Average | Paper (image / text / avg) | "
               "p vs SCM (image / text / both) |"), "|---|---|---|---|---|---|"]
    for n in ("random", "cm", "sm", "scm", "ksm", "ksm-qe"):
        v = t4[n]
        p = PAPER_T4.get(n)
        ptxt = f"{p[0]:.3f} / {p[1]:.3f} / {(p[0] + p[1]) / 2:.3f}" if p else "-"
        st = res["significance_vs_scm"].get(n)
        stxt = f"{st['i2t']:.4f} / {st['t2i']:.4f} / {st['both']:.4f}" if st else "-"
        lines.append(f"| {LABEL[n]} | {v['i2t']:.3f} | {v['t2i']:.3f} | {v['avg']:.3f} | {ptxt} "
                     f"| {stxt} |")
    lines += ["", "### Table 5: image-to-image retrieval (query left out of the 693 test images)",
              "", "| Experiment | MAP | Paper |", "|---|---|---|"]
    for name, v, paper in res["table5"]:
        lines.append(f"| {name} | {v:.3f} | {paper} |")
    lines += ["", "### Per-category MAP (image query / text query)", "",
              "| Category | " + " | ".join(LABEL[n] for n in OURS_AND_PAPER) + " |",
              "|---|---|---|---|---|---|"]
    for c, cat in enumerate(res["categories"]):
        cells = [f"{res['per_category'][n]['i2t'][c]:.3f} / {res['per_category'][n]['t2i'][c]:.3f}"
                 for n in OURS_AND_PAPER]
        lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    lines += ["", ("### SM: logistic-regression C against the paper (diagnostic, test set; both "
                   "modalities share C)"), "", "| C | NC | L1 | KL |", "|---|---|---|---|"]
    for C, v in res["sm_C_sweep"].items():
        lines.append(f"| {C} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in v) + " |")
    return "\n".join(lines) + "\n"
