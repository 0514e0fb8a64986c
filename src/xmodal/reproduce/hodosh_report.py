"""``reports/hodosh.md``: the tables, the R@K figure and the fixed text, from the results.

:func:`render` reads the result dict of :func:`xmodal.reproduce.hodosh.evaluate` (metrics,
significance, expert scores, correlations); :func:`plot_recall_curves` its per-query gold ranks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.eval.compare import stars
from xmodal.reproduce.hodosh import EXPERT_THRESHOLDS
from xmodal.reproduce.render import minutes

LABELS = {
    "nn": "NN (NN5 idf-F1)",
    "bow1": "BoW1",
    "bow5": "BoW5",
    "tagrank": "TagRank",
    "tri5": "Tri5",
    "tri5sem": "Tri5Sem",
    "tri5sem-effnet": "Tri5Sem + EfficientNet-Lite0",
    "bow5-effnet": "BoW5 + EfficientNet-Lite0",
    "tri5-landmarks": "Tri5, text kernel vs landmarks (like Tri5Sem, d = 1)",
    "tri5sem-full": "Tri5Sem, exact kernels (all 6,000 training images, rank 3,000)",
    "bow5-full": "BoW5, exact kernels (rank 3,000)",
    "tagrank-full": "TagRank, exact kernels (rank 3,000)",
    "tri5-full": "Tri5, exact kernels (rank 3,000)",
    "bow5-112": "BoW5 on 112x112 images (resolution ablation)",
    "bow5-448": "BoW5 on images enlarged to 448x448 (descriptor scale of the originals)",
    "tri5sem-448": "Tri5Sem on images enlarged to 448x448",
    "tri5sem-448-full": "Tri5Sem, 448x448, exact kernels (rank 3,000)",
    "bow5-448-full": "BoW5, 448x448, exact kernels (rank 3,000)",
    "tagrank-448-full": "TagRank, 448x448, exact kernels (rank 3,000)",
    "tri5-448-full": "Tri5, 448x448, exact kernels (rank 3,000)",
}
def label(s: str) -> str:
    """The report's name of a system (``NAME@single``: its single best dev model)."""
    base = s.removesuffix("@single")
    return LABELS[base] + (" (single best dev model)" if s.endswith("@single") else "")


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


METHODS = """
## What was run

* **Data.** Official Flickr8K split: KCCA is trained on the 6,000 training images with all five
  captions each; (kappa, n) are selected on a dev pool (1,000 dev images x caption `#2`); the
  test pool is the paper's: 1,000 test images x caption `#2` (the captions the crowd and expert
  judgments are about). Captions are preprocessed by `xmodal.features.captions` (spaCy
  tokenisation, lemmas and POS, pyspellchecker, compound normalisation, stop words).
* **Image kernel** (`xmodal.features.visual_words`, `xmodal.features.image_kernels`): CIELAB
  colour (128 words, 4x4-pixel blocks), texture (256 words; the paper's filter bank was lost in the
  extraction, we use an oriented edge bank: first-derivative-of-Gaussian at 8 orientations x 2
  scales), dense SIFT (256 words, step 8, 16-px patches, VLFeat-style dense descriptor computed with
  OpenCV filters; OpenCV's `SIFT.compute` is available as an option but is ~30x slower), codebooks
  by MiniBatchKMeans on 1,000 points from each of 200 training images (the paper used 200 PASCAL
  images). Spatial pyramid 1 + 4 + 16 cells, weights 1/4, 1/4, 1/2 (Lazebnik et al.), histogram
  intersection; the three kernels are averaged and squared (p = 2).
* **Text kernels** (`xmodal.features.text_kernels`, see `docs/text-kernels.md`): BoW1, BoW5,
  TagRank, Tri5 and Tri5Sem (sqrt-IDF trigram kernel with max(alignment, mean(in-corpus PMI,
  GloVe)) word similarities; GloVe 6B-50d stands in for the BNC).
* **NN**: NN5 idf-F1 (`xmodal.models.nearest_neighbour`) with the same pyramid image kernel.
* **KCCA** (`xmodal.models.kcca`): regularised KCCA solved exactly as a ridge CCA on pivoted
  incomplete-Cholesky factors (rank <= 1,500 per view; the image kernel is computed only against
  1,500 seeded training images, which are the pivot candidates; the text kernel in full, except
  for Tri5Sem, whose 6,000 x 6,000 Gram matrix costs ~20x Tri5's on this machine: its text
  kernel is also computed against the 1,500 landmark items), centred; similarity = cosine of the
  first n canonical projections. Image power p = 2. Text diagonal factor d = 1, except Tri5Sem:
  its max-combined word similarity makes the kernel indefinite (28 negative eigenvalues, the
  smallest -0.92, on the 1,500 landmarks; the paper's footnote 4 warns of this), so with d = 1
  the factorisation stops at 811 pivots; the paper's diagonal factor fixes it, and d = 4 was
  chosen on dev (table below).
  The row "Tri5, text kernel vs landmarks" trains Tri5 the way Tri5Sem is trained, to separate
  the effect of the word similarities from that of the approximation.
* **Selection and ensembles** (`xmodal.models.hodosh`): kappa in {0.1, 0.5, 1, 5}, n over 31
  values from 10 up to the rank; per task the 5 best settings by dev R@1, R@5 and R@10 (15
  models) are combined by Borda count with median-rank tie-breaks (`xmodal.eval.stats.borda`).
* **Tri5Sem + EfficientNet-Lite0**: the same Tri5Sem text kernel (d = 4) with the image kernel
  `max(0, cos)^2` over EfficientNet-Lite0 pooled features (1,280-d, ImageNet weights).
"""


PAPER = {
    ("flickr8k-hodosh", "i2t", "R@1"): {"tri5sem": 8.3, "bow5": 6.2, "tagrank": 6.0},
    ("flickr8k-hodosh-crowd", "i2t", "R@10"): {"tri5sem": 49.1},
    ("flickr8k-hodosh-crowd", "t2i", "R@10"): {"tri5sem": 48.5},
    ("flickr8k-hodosh-crowd", "i2t", "R-P"): {"tri5": 11.6, "tri5sem": 13.4},
    ("flickr8k-hodosh-crowd", "t2i", "R-P"): {"tri5": 11.0, "tri5sem": 13.7},
}


# each number the paper's text states: (claim, paper value, where ours is in the results)
PAPER_CLAIMS = [
    ("Annotation R@1, Tri5Sem", 8.3, ("flickr8k-hodosh", "i2t", "tri5sem", "R@1")),
    ("Annotation R@1, BoW5", 6.2, ("flickr8k-hodosh", "i2t", "bow5", "R@1")),
    ("Annotation R@1, TagRank", 6.0, ("flickr8k-hodosh", "i2t", "tagrank", "R@1")),
    ("Annotation S@10, Tri5Sem", 49.1, ("flickr8k-hodosh-crowd", "i2t", "tri5sem", "R@10")),
    ("Search S@10, Tri5Sem", 48.5, ("flickr8k-hodosh-crowd", "t2i", "tri5sem", "R@10")),
    ("Annotation R-precision, Tri5", 11.6, ("flickr8k-hodosh-crowd", "i2t", "tri5", "R-P")),
    ("Search R-precision, Tri5", 11.0, ("flickr8k-hodosh-crowd", "t2i", "tri5", "R-P")),
    ("Annotation R-precision, Tri5Sem", 13.4,
     ("flickr8k-hodosh-crowd", "i2t", "tri5sem", "R-P")),
    ("Search R-precision, Tri5Sem", 13.7, ("flickr8k-hodosh-crowd", "t2i", "tri5sem", "R-P")),
    ("Tri5Sem top caption expert = 4.0 (% images)", 11.0, ("expert", "tri5sem", ">=4.0")),
    ("Tri5Sem top caption expert >= 2.66 (% images)", 28.1, ("expert", "tri5sem", ">=2.66")),
]


def paper_comparison(res: dict) -> str:
    """Each number the paper's text states, next to ours and the gap (percentage points)."""
    m = res["metrics"]
    claims = PAPER_CLAIMS
    L = ["\n## Paper numbers against ours\n",
         "Percentages. The paper's numbers are on the original-resolution images; ours on the "
         "224x224 re-encodes. `with EfficientNet` is the same text kernel with the modern image "
         "kernel. Expert rows are lower bounds (unjudged top captions count as failures).\n",
         "`exact kernels` is the same system trained on the full 6,000 x 6,000 image and text "
         "kernels at rank 3,000 (the `-full` rows; the main rows use 1,500 landmark images); "
         "`448 px, exact` also enlarges the images to 448x448 first, which gives the pixel "
         "features the scale relative to the image content they had on the ~500x375 originals "
         "(it adds no detail).\n",
         "| Claim | Paper | Ours | Gap | exact kernels (gap) | 448 px, exact (gap) | "
         "with EfficientNet |",
         "|---|---|---|---|---|---|---|"]
    for text, paper, key in claims:
        def get(system: str):
            if key[0] == "expert":
                e = res["expert"].get(system)
                return None if e is None else 100 * e[key[2]]
            d = m[key[0]][key[1]]
            return 100 * d[system][key[3]] if system in d else None
        ours = get(key[2] if key[0] != "expert" else key[1])
        eff_name = (key[2] if key[0] != "expert" else key[1]) + "-effnet"
        eff = get(eff_name)
        if ours is None:
            continue
        eff_txt = "" if eff is None else f"{eff:.1f}"
        base = key[2] if key[0] != "expert" else key[1]
        cells = []
        for variant in (base + "-full", base + "-448-full"):
            v = get(variant)
            cells.append("" if v is None else f"{v:.1f} ({v - paper:+.1f})")
        L.append(f"| {text} | {paper} | {ours:.1f} | {ours - paper:+.1f} | {cells[0]} | "
                 f"{cells[1]} | {eff_txt} |")
    return "\n".join(L) + "\n"


def plot_recall_curves(res: dict, path: Path) -> None:
    """R@K of the gold item for K = 1..100, both tasks, ensembles only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = np.arange(1, 101)
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.5), sharey=True)
    for ax, (d, title) in zip(axes, (("i2t", "Annotation"), ("t2i", "Search"))):
        shown = [s for s in res["_gold_ranks"][d] if not s.endswith("@single")]
        colours = plt.get_cmap("tab20")(np.linspace(0, 1, 20))
        for i, s in enumerate(shown):
            ranks = res["_gold_ranks"][d][s]
            style = "--" if s.endswith("-full") else ":" if s.endswith("-112") else "-"
            ax.plot(ks, [100 * np.mean(ranks <= k) for k in ks], style,
                    color=colours[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20], label=label(s))
        ax.set_title(f"{title}: flickr8k-hodosh")
        ax.set_xlabel("K")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("R@K (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def render(res: dict, command: str, extra_md: str = "", originals: dict | None = None,
           summary_md: str = "", tried_md: str = "", cost_md: str = "") -> str:
    """The whole report; ``originals`` (a ``hodosh_originals.json`` payload) adds its section,
    compared with the 8K numbers of ``res``; ``summary_md``: the Summary section
    (:func:`xmodal.reproduce.hodosh_summary.summary`); ``tried_md`` / ``cost_md``: the "What
    was tried" and "Cost" sections (:mod:`xmodal.reproduce.hodosh_tried`)."""
    systems = [s for s in res["systems"] if not s.endswith("@single")]
    singles = [s for s in res["systems"] if s.endswith("@single")]
    L = []
    A = L.append
    A("# Hodosh et al. (2013) on Flickr8K: reproduction\n")
    A(f"Regenerate: `{command}` (from an empty cache it first computes every feature, kernel "
      "and system, the steps timed under \"Cost on this machine\"; a few seconds once "
      "`$XMODAL_CACHE/hodosh` holds them). `xmodal reproduce hodosh --part explore` reruns "
      "\"What was tried\", `--part report` rewrites this file from the stored JSON.\n")
    A(f"Date: {res['date']}; git commit `{res['git_commit']}`; 2-core shared CPU.\n")
    A("**Our images are 224x224 re-encodes** of the Flickr8K originals (about 500x375, aspect "
      "ratio not kept, JPEG quality 90), so the pixel features (colour, texture, SIFT) see less "
      "detail than the paper's. Numbers in *italics* are the paper's, where its text states them "
      "(most of its tables were lost in the extraction we have).\n")
    A(summary_md)
    A(METHODS)
    A(extra_md)
    sig = res.get("significance", {})

    def cell(pname, d, s, key, scale=100.0):
        v = res["metrics"][pname][d][s][key]
        txt = f"{v:.0f}" if key == "medR" else f"{scale * v:.1f}"
        sk = {"medR": "rank"}.get(key, key)
        if key.startswith("R@") is False and key not in ("medR", "R-P", "mAP@R"):
            sk = key
        p = sig.get(pname, {}).get(d, {}).get(s, {}).get(sk)
        if p is not None:
            txt += stars(p)
        paper = PAPER.get((pname, d, key), {}).get(s)
        if paper is not None:
            txt += f" (*{paper}*)"
        return txt

    A("\n## 1. `flickr8k-hodosh`: rank of the original item (1,000 queries per task)\n")
    A("R@K in %, medR = median rank of the gold item. Stars: different from Tri5Sem "
      "(McNemar for R@K, paired randomization on the per-query ranks for medR): "
      "*** p <= 0.01, ** p <= 0.05, * p <= 0.1.\n")
    A("| System | Ann. R@1 | R@5 | R@10 | medR | Search R@1 | R@5 | R@10 | medR |")
    A("|---|---|---|---|---|---|---|---|---|")
    for s in systems:
        cells = [cell("flickr8k-hodosh", d, s, k) for d in ("i2t", "t2i")
                 for k in ("R@1", "R@5", "R@10", "medR")]
        A(f"| {label(s)} | " + " | ".join(cells) + " |")

    A("\n## 2. `flickr8k-hodosh-crowd`: crowd-extended relevance (yes-fraction >= 0.5)\n")
    A("S@K (= R@K with several relevant items), R-precision and mAP@R, in %. Stars against "
      "Tri5Sem (McNemar for S@K, paired randomization for R-P and mAP@R).\n")
    A("| System | Ann. S@1 | S@5 | S@10 | R-P | mAP@R | Search S@1 | S@5 | S@10 | R-P | mAP@R |")
    A("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in systems:
        cells = [cell("flickr8k-hodosh-crowd", d, s, k) for d in ("i2t", "t2i")
                 for k in ("R@1", "R@5", "R@10", "R-P", "mAP@R")]
        A(f"| {label(s)} | " + " | ".join(cells) + " |")

    A("\n## 3. Expert scores of the top-ranked caption (annotation)\n")
    A("% of the 1,000 test images whose first caption has a mean expert score >= the threshold "
      "(scores are means of three judges, so 3.66 = 11/3). Only 5,822 image-caption pairs have "
      "expert judgments in the release (pairs the paper's systems returned); a top caption "
      "without a judgment counts as *not* reaching any threshold, so these are lower bounds, and the `judged` column "
      "says how many of the 1,000 top captions were judged. Stars: McNemar against Tri5Sem.\n")
    hdr = " | ".join(f">= {t}" for t, _ in EXPERT_THRESHOLDS)
    A(f"| System | {hdr} | judged | mean (judged) | >= 4.0 (judged) | >= 2.66 (judged) "
      "| top = gold |")
    A("|---|" + "---|" * (len(EXPERT_THRESHOLDS) + 5))
    paper_exp = {("tri5sem", 4.0): 11.0, ("tri5sem", 2.66): 28.1, ("bow5", 4.0): 9.7,
                 ("tagrank", 4.0): 9.6}
    for s in systems:
        e = res["expert"][s]
        cells = []
        for t, _ in EXPERT_THRESHOLDS:
            txt = pct(e[f">={t}"])
            p = res.get("expert_significance", {}).get(s, {}).get(f">={t}")
            if p is not None:
                txt += stars(p)
            if (s, t) in paper_exp:
                txt += f" (*{paper_exp[(s, t)]}*)"
            cells.append(txt)
        A(f"| {label(s)} | " + " | ".join(cells) +
          f" | {e['n_judged']} | {e['mean_judged']:.2f} | {pct(e['judged>=4.0'])} | "
          f"{pct(e['judged>=2.66'])} | {pct(e['top_is_gold'])} |")

    if originals:
        A("\n" + originals_section(originals))
    A(paper_comparison(res))
    A(tried_md)
    A(cost_md)

    A("\n![R@K curves](figures/hodosh_recall_at_k.png)\n")

    if singles:
        A("\n## 4. Borda ensemble against the single best dev model\n")
        A("The single model is the (kappa, n) with the best dev R@5 + R@10 for each task. "
          "`flickr8k-hodosh` R@K and medR, crowd R-P, in %.\n")
        A("| System | Ann. R@1 | R@5 | R@10 | medR | R-P | Search R@1 | R@5 | R@10 | medR | R-P |")
        A("|---|---|---|---|---|---|---|---|---|---|---|")
        for s in singles:
            for name in (s.removesuffix("@single"), s):
                if name not in res["metrics"]["flickr8k-hodosh"]["i2t"]:
                    continue
                cells = []
                for d in ("i2t", "t2i"):
                    m = res["metrics"]["flickr8k-hodosh"][d][name]
                    cells += [pct(m["R@1"]), pct(m["R@5"]), pct(m["R@10"]), f"{m['medR']:.0f}",
                              pct(res["metrics"]["flickr8k-hodosh-crowd"][d][name]["R-P"])]
                A(f"| {label(name)} | " + " | ".join(cells) + " |")

    if res.get("correlations"):
        n_sys = len(res["systems"])
        A("\n## 5. Correlation of system rankings across metrics (the paper's Table 7)\n")
        A(f"Over all {n_sys} systems evaluated here (ensembles and single models; the paper "
          "used 30). Spearman rho / Kendall tau.\n")
        A("| Metric pair | Annotation rho | tau | Search rho | tau |")
        A("|---|---|---|---|---|")
        c = res["correlations"]
        for key in c["i2t"]:
            a, b = c["i2t"][key], c["t2i"][key]
            A(f"| {key} | {a[0]:.2f} | {a[1]:.2f} | {b[0]:.2f} | {b[1]:.2f} |")
    return "\n".join(L) + "\n"



# ----------------------------------------------------------- originals against 224-px copies
ORIGINALS_START = "<!-- originals: generated by `xmodal reproduce hodosh --part originals` -->"
ORIGINALS_END = "<!-- originals: end -->"


def _cell(m: dict, key: str, p: float | None = None) -> str:
    v = m[key]
    txt = f"{v:.0f}" if key == "medR" else f"{v:.1f}" if key == "meanR" else pct(v)
    return txt + stars(p)


def originals_tables(res: dict) -> list[str]:
    """The metric tables of ``hodosh_originals.json`` (results part): per protocol and relevance,
    every system on every copy, stars against the 224-px copies."""
    L = []
    conds = list(res["conditions"])
    ref = res["reference"]
    titles = {
        ("official", "gold"): "Official split of the set (125 test images x caption #2; train "
                              "753, select on 113): rank of the original item",
        ("cv", "gold"): f"{res['folds']}-fold cross-validation over all 1,000 photos (pools of "
                        "125; per-query ranks pooled: 1,000 queries per task): rank of the "
                        "original item",
        ("official", "crowd"): "Official split, crowd-extended relevance (S@K, R-precision)",
        ("cv", "crowd"): "Cross-validation, crowd-extended relevance (S@K, R-precision)",
    }
    for (protocol, rel), title in titles.items():
        metrics = res["metrics"][protocol][rel]
        sig = res["significance"].get(protocol, {}).get(rel, {})
        keys = ("R@1", "R@5", "R@10", "medR") if rel == "gold" else ("R@1", "R@5", "R@10", "R-P")
        names = ("R@1", "R@5", "R@10", "medR") if rel == "gold" else ("S@1", "S@5", "S@10", "R-P")
        L.append(f"\n#### {title}\n")
        L.append("| System | Copy | " + " | ".join(f"Ann. {n}" for n in names) + " | "
                 + " | ".join(f"Search {n}" for n in names) + " |")
        L.append("|---|---|" + "---|" * (2 * len(keys)))
        for system in res["systems"]:
            for c in conds:
                cells = []
                for d in ("i2t", "t2i"):
                    m = metrics[d][system][c]
                    for k in keys:
                        p = sig.get(d, {}).get(system, {}).get(c, {}).get(
                            "rank" if k == "medR" else k)
                        cells.append(_cell(m, k, p))
                L.append(f"| {label(system)} | {c} | " + " | ".join(cells) + " |")
    return L


def features_tables(feat: dict) -> list[str]:
    """Kernel statistics, kernel agreement between copies and shared-codebook histograms."""
    L = ["\n#### The pixel features themselves\n",
         "Image kernels over the 1,000 photos (per feature: spatial-pyramid intersection; "
         "`combined`: their mean squared, the kernel KCCA uses). `mean` / `sd`: off-diagonal "
         "values; `eff. dim`: participation ratio of the centred kernel's eigenvalues.\n",
         "| Copy | Feature | mean | sd | eff. dim |", "|---|---|---|---|---|"]
    for c, per in feat["kernel_stats"].items():
        for f, st in per.items():
            L.append(f"| {c} | {f} | {st['mean_offdiag']:.3f} | {st['sd_offdiag']:.3f} | "
                     f"{st['effective_dim']:.1f} |")
    L += ["\nAgreement of two copies' kernels over the same photos: Pearson and Spearman "
          "correlation of the off-diagonal entries, mean per-photo Spearman correlation of its "
          "row, mean overlap of each photo's 10 nearest neighbours.\n",
          "| Copies | Feature | Pearson | Spearman | row Spearman | top-10 overlap |",
          "|---|---|---|---|---|---|"]
    shown = set()
    for ref, per in feat["agreement"].items():
        for c, fs in per.items():
            if frozenset((c, ref)) in shown:
                continue
            shown.add(frozenset((c, ref)))
            for f, a in fs.items():
                L.append(f"| {c} vs {ref} | {f} | {a['pearson']:.3f} | {a['spearman']:.3f} | "
                         f"{a['row_spearman']:.3f} | {a['top10_overlap']:.3f} |")
    L += ["\nVisual-word histograms (level 0) of each photo as a 224-px copy and as an original, "
          "both quantised with the 224-px copies' codebooks: histogram intersection of the same "
          "photo's two versions (1 = identical), against the mean intersection of different "
          "photos, and how often a photo's original finds its own copy first among the 1,000 "
          "copies.\n",
          "| Feature | same photo (sd) | other photos, copies | other photos, original vs copy "
          "| own copy ranked 1st | median rank of own copy |",
          "|---|---|---|---|---|---|"]
    for f, h in feat["shared_codebook"].items():
        L.append(f"| {f} | {h['same_image']:.3f} ({h['same_image_sd']:.3f}) | "
                 f"{h['other_images_copies']:.3f} | {h['other_images_cross']:.3f} | "
                 f"{pct(h['own_copy_rank1'])}% | {h['own_copy_median_rank']:.0f} |")
    return L


def _ratio(e: dict) -> str:
    lo, hi = e["ratio_ci"]
    return f"{e['ratio']:.2f} [{lo:.2f}, {hi:.2f}]"


def effects_table(res: dict) -> list[str]:
    """Originals (and the controls) against the 224-px copies, cross-validation: differences in
    points and ratios with 95% paired-bootstrap intervals."""
    eff = res["effects"]["cv"]
    L = ["\n#### Effect of the copy (cross-validation, 1,000 queries per task)\n",
         "Each copy against the `224` copy of the same system: difference in points and the "
         "ratio of the means with its 95% paired-bootstrap interval (2,000 resamples of the "
         "queries); medR as a difference in places. R-P with crowd-extended relevance.\n",
         "| System | Copy | Task | R@1 | R@1 ratio | R@10 | R@10 ratio | R-P ratio | medR |",
         "|---|---|---|---|---|---|---|---|---|"]
    for system in res["systems"]:
        for c in [c for c in res["conditions"] if c != res["reference"]]:
            for d, task in (("i2t", "Ann."), ("t2i", "Search")):
                g = eff["gold"][d][system][c]
                cr = eff["crowd"][d][system][c]
                L.append(f"| {label(system)} | {c} | {task} | {100 * g['R@1']['diff']:+.1f} | "
                         f"{_ratio(g['R@1'])} | {100 * g['R@10']['diff']:+.1f} | "
                         f"{_ratio(g['R@10'])} | {_ratio(cr['R-P'])} | "
                         f"{g['medR']['diff']:+.0f} |")
    return L


def selection_table(res: dict) -> list[str]:
    """Which kappa the dev selection picked (share of the 15 selected settings, all CV folds)
    and the median n, per copy."""
    sel = res["selection"]["cv"]
    kappas = sorted({k for s in sel.values() for c in s.values() for t in c.values()
                     for k in t["kappa_share"]}, key=float)
    L = ["\n#### What the dev selection chose (cross-validation folds)\n",
         "Share of each kappa among the 15 selected (kappa, n) settings per task, over the 8 "
         "folds, and the median n.\n",
         "| System | Copy | " + " | ".join(f"Ann. kappa {k}" for k in kappas) + " | Ann. n | "
         + " | ".join(f"Search kappa {k}" for k in kappas) + " | Search n |",
         "|---|---|" + "---|" * (2 * len(kappas) + 2)]
    for system, per in sel.items():
        for c, t in per.items():
            cells = []
            for d in ("i2t", "t2i"):
                cells += [f"{100 * t[d]['kappa_share'].get(k, 0):.0f}%" for k in kappas]
                cells.append(f"{t[d]['median_n']:.0f}")
            L.append(f"| {label(system)} | {c} | " + " | ".join(cells) + " |")
    return L


def gap_shares(res: dict) -> list[dict]:
    """Each paper claim with two estimates of what the originals would give on the 8K pools.

    (a) our exact-kernel 224-px number (``-full``) times the cross-validated ratio originals /
    224; its calibration: the same rule for the 448-px enlargement (``-full`` x ratio 224@448 /
    224) against the measured ``-448-full`` number. (b) the measured ``-448-full`` number times
    the ratio originals / 224@448. ``share``: the part of the gap (paper - ours) an estimate
    closes, with the ratio's 95% interval."""
    rows = []
    for c in res.get("full_scale", {}).get("claims", []):
        protocol, rel = c["controlled"]
        per = res["effects"][protocol][rel][c["direction"]].get(c["system"], {})
        vs448 = res.get("against_enlarged", {}).get(protocol, {}).get(rel, {}).get(
            c["direction"], {}).get(c["system"])
        gap = c["paper"] - c["ours"]
        row = dict(c)
        for name, base, eff in (("a", c.get("ours_full"), per.get("originals")),
                                ("calibration", c.get("ours_full"), per.get("224@448")),
                                ("b", c.get("ours_448_full"), vs448 and vs448["effect"])):
            if base is None or eff is None:
                continue
            r = eff[c["metric"]]
            est = [base * x for x in (r["ratio"], *r["ratio_ci"])]
            row[name] = {"ratio": r["ratio"], "estimate": est,
                         "share": [(x - c["ours"]) / gap for x in est]}
        rows.append(row)
    return rows


def gap_table(res: dict) -> list[str]:
    rows = [r for r in gap_shares(res) if "a" in r]
    if not rows:
        return []
    src = res["full_scale"]["source"]

    def est(r, name):
        if name not in r:
            return "", ""
        e, sh = r[name]["estimate"], r[name]["share"]
        return (f"{e[0]:.1f} [{e[1]:.1f}, {e[2]:.1f}]",
                f"{100 * sh[0]:.0f}% [{100 * sh[1]:.0f}, {100 * sh[2]:.0f}]")

    L = ["\n#### What the originals' gain would mean for the gap to the paper (estimates)\n",
         "The controlled runs cannot be compared with the paper directly (pools of 125, 750 "
         "training photos), so their effect is carried over as a ratio of the same metric "
         "(R@1: original pair; S@10 and R-P: crowd-extended; cross-validation, 95% "
         "paired-bootstrap interval of the ratio) to our measured 8K numbers "
         f"(`hodosh_reproduction.json`, commit `{src.get('commit')}`): (a) our exact-kernel "
         "224-px number x originals / 224; (b) our exact-kernel 448-px number (measured) x "
         "originals / 224@448. The calibration column applies rule (a) to the 448-px "
         "enlargement, whose 8K number is known: where it falls short of the measured 448-px "
         "number, rule (a) understates an effect at 8K scale, and (b), anchored on a measured "
         "8K point nearer the originals, is the better guess. `share`: the part of the gap "
         "(paper - ours, main rows) the estimate closes.\n",
         "| Claim | Paper | Ours | (a) 224 exact x ratio | share (a) | calibration: 224 exact "
         "x 448/224 vs measured 448 exact | (b) 448 exact x ratio | share (b) |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a, sa = est(r, "a")
        b, sb = est(r, "b")
        cal = ""
        if "calibration" in r and r.get("ours_448_full") is not None:
            cal = f"{r['calibration']['estimate'][0]:.1f} vs {r['ours_448_full']:.1f}"
        L.append(f"| {r['claim']} | {r['paper']} | {r['ours']:.1f} | {a} | {sa} | {cal} | {b} | "
                 f"{sb} |")
    return L


def cv_pairs(res: dict) -> list[tuple[str, str]]:
    """(system, direction) pairs of a ``hodosh_originals.json`` result."""
    return [(s, d) for s in res["systems"] for d in ("i2t", "t2i")]


def cv_span(res: dict, copy: str, metric: str, scale: float = 100.0) -> tuple[float, float]:
    """Smallest and largest cross-validated difference ``copy`` - 224 over the pairs."""
    eff = res["effects"]["cv"]["gold"]
    v = [scale * eff[d][s][copy][metric]["diff"] for s, d in cv_pairs(res)]
    return min(v), max(v)


def cv_n_sig(res: dict, copy: str, metric: str, rel: str = "gold") -> int:
    """In how many pairs ``copy`` differs from 224 at p <= 0.05 (cross-validation)."""
    test = "rank" if metric == "medR" else metric
    sig = res["significance"]["cv"][rel]
    return sum(sig[d][s][copy][test] <= 0.05 for s, d in cv_pairs(res))


def kappa_sentence(res: dict) -> str:
    """Which kappa the cross-validated dev selection chose most often, per copy."""
    sel = res.get("selection", {}).get("cv", {})
    share: dict[str, dict[str, float]] = {}
    for per in sel.values():
        for copy, t in per.items():
            for d in ("i2t", "t2i"):
                for k, v in t[d]["kappa_share"].items():
                    share.setdefault(copy, {}).setdefault(k, 0.0)
                    share[copy][k] += v
    if not share:
        return ""
    top = {c: max(v, key=v.get) for c, v in share.items()}
    largest = max((k for v in share.values() for k in v), key=float)
    if len(set(top.values())) == 1:
        k = next(iter(top.values()))
        what = (f"kappa = {float(k):g}" + (", the largest of the paper's grid," if k == largest
                                           else "") + " is the most frequent choice for every "
                "copy")
    else:
        what = "the most frequent kappa: " + ", ".join(f"{c} {float(k):g}"
                                                       for c, k in top.items())
    return (f"The dev selection's choices of (kappa, n) per copy are in the table below ({what}; "
            "larger kappas were worse on the 8K dev pool, see 'What was tried').")


def originals_conclusion(res: dict) -> list[str]:
    """The plain statement: what resolution does, what the controls say, what remains."""
    ref, eff = res["reference"], res["effects"]["cv"]["gold"]
    pairs = cv_pairs(res)

    def span(copy: str, metric: str, scale: float = 100.0) -> tuple[float, float]:
        return cv_span(res, copy, metric, scale)

    def n_sig(copy: str, metric: str) -> int:
        return cv_n_sig(res, copy, metric)

    def ratios(copy: str, metric: str) -> tuple[float, float]:
        v = [eff[d][s][copy][metric]["ratio"] for s, d in pairs]
        return min(v), max(v)

    n = len(pairs)
    r10, r1, med = span("originals", "R@10"), span("originals", "R@1"), span("originals", "medR", 1)
    q10 = ratios("originals", "R@10")
    real = r10[0] > 0 and n_sig("originals", "R@10") * 2 >= n
    official = res["significance"].get("official", {}).get("gold", {})
    n_official = sum(official[d][s]["originals"]["R@10"] <= 0.05 for s, d in pairs
                     if "originals" in official.get(d, {}).get(s, {}))
    L = ["\n#### Conclusion\n",
         ("* **Resolution matters, and the effect is real but moderate.** " if real else
          "* **Resolution: what the originals change.** ")
         + "On the same photos, with everything else equal, the originals "
         + ("beat" if r10[0] > 0 else "differ from")
         + " our 224-px copies in the "
         f"cross-validation by {r10[0]:+.1f} to {r10[1]:+.1f} points of R@10 (ratio "
         f"{q10[0]:.2f}-{q10[1]:.2f}; p <= 0.05 in {n_sig('originals', 'R@10')} of {n} "
         f"system x task pairs) and {med[0]:+.0f} to {med[1]:+.0f} places of median rank "
         f"(p <= 0.05 in {n_sig('originals', 'medR')} of {n}); R@1 moves by {r1[0]:+.1f} to "
         f"{r1[1]:+.1f} points (p <= 0.05 in {n_sig('originals', 'R@1')} of {n}). On the "
         "official split of the set (125 queries per task) "
         f"{n_official} of the {n} R@10 differences reach p <= 0.05."]
    agree = res["features"]["agreement"].get(ref, {}).get("originals")
    if agree:
        hist = res["features"]["shared_codebook"]
        feats = sorted((f for f in agree if f != "combined"), key=lambda f: agree[f]["pearson"])
        L.append("* **What resolution changes in the features**: "
                 + ", ".join(f"{f} (kernel correlation {agree[f]['pearson']:.2f}, "
                             f"{100 * agree[f]['top10_overlap']:.0f}% of the 10 nearest "
                             f"neighbours kept, same-photo histogram intersection "
                             f"{hist[f]['same_image']:.2f})" for f in feats)
                 + " between the originals and our copies: the fine-grained descriptors move "
                 "most, colour hardly at all.")
    if "originals@224" in res["conditions"]:
        a = span("originals@224", "R@10")
        same = n_sig("originals@224", "R@10") == 0
        L.append(("* **The re-encode itself costs nothing measurable.** The originals shrunk to "
                  "224x224 here behave like our copies" if same else
                  "* **The re-encode.** The originals shrunk to 224x224 here against our copies")
                 + f" (R@10 {a[0]:+.1f} to {a[1]:+.1f} points; p <= 0.05 "
                 f"in {n_sig('originals@224', 'R@10')} of {n} pairs, its kernel correlates "
                 f"{res['features']['agreement'][ref]['originals@224']['combined']['pearson']:.3f}"
                 " with ours)" + (": what our copies lose is the detail of the larger images, "
                                  "not JPEG quality or the aspect ratio." if same else "."))
    if "224@448" in res["conditions"]:
        a, st = span("224@448", "R@10"), res["features"]["kernel_stats"]
        agree = res["features"]["agreement"]
        L.append(f"* **Restoring the scale is not restoring the detail.** Our copies enlarged to "
                 f"448x448 get the originals' kernel statistics (combined kernel: off-diagonal "
                 f"mean {st['224@448']['combined']['mean_offdiag']:.3f} vs "
                 f"{st['originals']['combined']['mean_offdiag']:.3f} for the originals and "
                 f"{st[ref]['combined']['mean_offdiag']:.3f} for ours; effective dimension "
                 f"{st['224@448']['combined']['effective_dim']:.0f} vs "
                 f"{st['originals']['combined']['effective_dim']:.0f} and "
                 f"{st[ref]['combined']['effective_dim']:.0f}) and a kernel closer to theirs "
                 f"(Pearson {agree['originals']['224@448']['combined']['pearson']:.3f} against "
                 f"{agree['originals'][ref]['combined']['pearson']:.3f}), but only "
                 f"{a[0]:+.1f} to {a[1]:+.1f} points of R@10 (p <= 0.05 in "
                 f"{n_sig('224@448', 'R@10')} of {n}). So the originals' gain is not a kernel "
                 "scale or normalisation that a setting could restore. " + kappa_sentence(res)
                 + " There is no cheap fix for the 8K reproduction: it needs the original "
                 "photos.")
    vs = res.get("against_enlarged", {}).get("cv", {}).get("gold", {})
    if vs:
        d10 = [100 * vs[d][s]["effect"]["R@10"]["diff"] for s, d in pairs]
        n10 = sum(vs[d][s]["p"]["R@10"] <= 0.05 for s, d in pairs)
        nmed = sum(vs[d][s]["p"]["rank"] <= 0.05 for s, d in pairs)
        L.append(f"* **The originals also beat the enlargement**: {min(d10):+.1f} to "
                 f"{max(d10):+.1f} points of R@10 over `224@448` (p <= 0.05 in {n10} of {n} "
                 f"pairs; median rank in {nmed} of {n}).")
    rows = [r for r in gap_shares(res) if "a" in r and "b" in r]
    if rows:
        def shares(pred) -> list[float]:
            return [100 * r[k]["share"][0] for r in rows if pred(r) for k in ("a", "b")]

        def span(v: list[float]) -> str:
            return f"{min(v):.0f}-{max(v):.0f}%"

        def join(parts: list[str]) -> str:
            return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]

        names = {"R@10": "S@10", "R-P": "R-precision", "R@1": "annotation R@1"}
        main = [(names[m], shares(lambda r, m=m: r["system"] == "tri5sem" and r["metric"] == m))
                for m in ("R@10", "R-P", "R@1")]
        main = [(n, v) for n, v in main if v]
        other = shares(lambda r: r["system"] != "tri5sem")
        short = [r for r in rows if "calibration" in r and r["calibration"]["estimate"][0]
                 < r["ours_448_full"]]
        L.append("* **How much of the gap to the paper resolution explains** (estimates; table "
                 "below). For Tri5Sem, the paper's best system, the originals would close "
                 + join([f"{span(v)} of the {n} gaps" for n, v in main])
                 + (f"; for the other claims (R@1 of BoW5 and TagRank, R-precision of Tri5) "
                    f"{span(other)}" if other else "")
                 + ". Each range spans the two estimates: (a) scales our 224-px 8K numbers by "
                 "the originals' ratio and understates the known 448-px effect in "
                 f"{len(short)} of {len([r for r in rows if 'calibration' in r])} claims; (b) "
                 "scales our measured 448-px 8K numbers by the originals' ratio over the "
                 "enlargement. Their 95% intervals are wide (pools of 125).")
        rest = [(n, [100 - x for x in v]) for n, v in main]
        exact_share = max(100 * (r["ours_full"] - r["ours"]) / (r["paper"] - r["ours"])
                          for r in rows if r.get("ours_full") is not None)
        L.append("* **What remains** for Tri5Sem: "
                 + join([f"{span(v)} of the {n} gaps" for n, v in rest])
                 + f". The KCCA is not it (exact kernels close at most {exact_share:.0f}% of "
                 "a gap, `-full` rows), nor the re-encode, the kernel scale or the dev selection "
                 "(above). The candidates we cannot test without the paper's materials are the "
                 "lost texture filter bank (ours is an oriented-edge bank), codebooks learned on "
                 "PASCAL rather than Flickr8K, the BNC statistics behind Tri5Sem (GloVe here) "
                 "and details of the caption preprocessing.")
    return L


def full_scale_reference(stored: dict) -> dict:
    """Each paper claim next to our full 8K number (from a ``hodosh_reproduction.json`` record)
    and where the controlled runs measure the same metric (cross-validation, pooled)."""
    metrics = stored.get("results", {}).get("metrics", {})
    out = []
    for text, paper, key in PAPER_CLAIMS:
        if key[0] == "expert":
            continue  # no expert judgments inside the small pools
        protocol, d, system, metric = key
        ours = metrics.get(protocol, {}).get(d, {}).get(system, {}).get(metric)
        if ours is None:
            continue
        row = {"claim": text, "paper": paper, "ours": 100 * ours, "system": system,
               "direction": d, "metric": metric,
               "controlled": ["cv", "crowd" if protocol.endswith("crowd") else "gold"]}
        for tag in ("full", "448-full"):  # exact kernels at 224 px and at 448 px
            v = metrics.get(protocol, {}).get(d, {}).get(f"{system}-{tag}", {}).get(metric)
            row[f"ours_{tag.replace('-', '_')}"] = None if v is None else 100 * v
        out.append(row)
    return {"claims": out, "source": {k: stored.get(k) for k in ("command", "commit", "date")}}


def with_full_scale(payload: dict, record: dict | None) -> dict:
    """The originals payload compared with the 8K numbers of ``record`` (the report's own),
    instead of the ones recorded when the originals ran."""
    if not record or not record.get("results", {}).get("metrics"):
        return payload
    results = dict(payload["results"], full_scale=full_scale_reference(record))
    return dict(payload, results=results)


def originals_section(payload: dict) -> str:
    """The report's section on issue 18, from ``hodosh_originals.json``."""
    res = payload["results"]
    im = res["images"]
    L = [ORIGINALS_START,
         "\n## Originals against our 224-px copies (the same pipeline, the same photos)\n",
         f"Regenerate: `{payload['command']}` ({minutes(res['timings']['total_s'])} on "
         f"the 2-core machine; commit `{payload['commit']}`, {payload['date'][:10]}). Results: "
         "`benchmarks/results/hodosh_originals.json`.\n",
         f"{im['n']:,} Flickr8K photos at their original resolution (median "
         f"{im['median_width']:.0f}x{im['median_height']:.0f}, {im['median_pixels_vs_224']:.1f}x "
         "the pixels of a 224x224 copy; the first 1,000 file names: "
         f"{res['splits']['official'][0]} train, {res['splits']['official'][1]} dev, "
         f"{res['splits']['official'][2]} test images of the official split) and the same photos "
         "in other copies:\n"]
    L += [f"* `{c}`: {d}" for c, d in res["conditions"].items()]
    L.append("\nEvery copy runs the same pipeline: its own codebooks learned the same way from "
             "the same 200 of the set's 753 official training photos, visual words, pyramid "
             "kernels, the same text kernels (fitted on the training captions of each split), "
             "exact KCCA on every training image (the settings table's `hodosh-NAME-full` "
             "records, rank capped by the training set) and the same dev selection and Borda "
             "ensembles. Splits, folds and captions are shared, so the copies differ only in "
             "their pixels. Stars: different from the `224` copy of the same system "
             f"(`xmodal.eval.compare`: McNemar for R@K / S@K, paired randomization for the "
             "per-query rank (medR column) and R-precision): *** p <= 0.01, ** p <= 0.05, "
             "* p <= 0.1. In the cross-validation, fold f is tested, fold f + 1 selects and the "
             "other six train (750 photos); codebooks come from official training photos, some "
             "of which are then in a test fold (no captions are involved in a codebook).")
    L += originals_conclusion(res)
    L += originals_tables(res)
    L += effects_table(res)
    L += gap_table(res)
    L += selection_table(res)
    L += features_tables(res["features"])
    return "\n".join(L) + "\n" + ORIGINALS_END + "\n"


def with_originals_section(text: str, section: str) -> str:
    """``text`` with its originals section replaced (or inserted before the paper comparison)."""
    if ORIGINALS_START in text and ORIGINALS_END in text:
        head, rest = text.split(ORIGINALS_START, 1)
        return head + section.rstrip("\n") + rest.split(ORIGINALS_END, 1)[1]
    anchor = "\n## Paper numbers against ours"
    if anchor in text:
        head, tail = text.split(anchor, 1)
        return head.rstrip("\n") + "\n\n" + section + anchor + tail
    return text.rstrip("\n") + "\n\n" + section


def write_originals_section(path: Path, payload: dict, main: dict | None = None) -> None:
    """Rewrite only the originals section of the report at ``path``, compared with the 8K
    numbers of ``main`` (a ``hodosh_reproduction.json`` record) where given."""
    path = Path(path)
    text = path.read_text() if path.is_file() else "# Hodosh et al. (2013) on Flickr8K\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    section = originals_section(with_full_scale(payload, main))
    path.write_text(with_originals_section(text, section))
