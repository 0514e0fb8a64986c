"""``reports/gist.md`` from ``benchmarks/results/gist.json`` (nothing recomputed):
``templates/gist.md`` filled with the results table, the example-set table and the numbers its
findings cite, after the findings' claims are checked against the JSON."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xmodal.reproduce.render import md_row, reference_data, render_template

NAMES = reference_data("gist")["names"]  # the report's name of each system
METRICS = ("MAP", "nDCG@10", "P@10")
SMALLEST_P = 1e-4  # 10,000 sign flips


def row(name: str, x: dict, p: dict | None) -> str:
    """One system's row: metrics, candidates (where it has its own) and p-values vs full."""
    cand = ([f"{x['candidates_per_query']:.1f}", f"{x['recall_in_candidates']:.3f}"]
            if "candidates_per_query" in x else ["–", "–"])
    sig = "–" if not p else " / ".join(f"{p[m]:.4f}" for m in ("AP", "nDCG@10", "P@10"))
    return md_row([NAMES[name], *(f"{x[m]:.3f}" for m in METRICS), *cand, sig])


def claims(out: dict) -> dict[str, bool]:
    """The findings the template states, each true of ``out``."""
    r, p = out["results"], out["p_values_vs_full"]

    def beats(a: str, b: str) -> bool:
        return all(r[a][m] > r[b][m] for m in METRICS)

    return {
        "the full model beats the single-modality rows and every baseline, p = 0.0001 each":
            all(beats("full", s) and max(p[s].values()) <= SMALLEST_P
                for s in ("caption", "image", "ql", "max_cluster_rel", "random_seeds")),
        "the image adds a little (under 0.02 MAP) to the human caption":
            0 < r["full"]["MAP"] - r["caption"]["MAP"] < 0.02,
        "lifting tags changes MAP by a non-significant amount": p["full_nolift"]["AP"] > 0.05,
        "about two thirds of the relevant concepts never become candidates":
            0.6 < 1 - r["full"]["recall_in_candidates"] < 0.72,
        "all numbers far below the paper's 0.69 MAP": r["full"]["MAP"] < 0.69 / 2,
        "with automatic captions the image adds too":
            r["auto_full"]["MAP"] > r["auto_caption"]["MAP"],
        "human captions far better (1.5x MAP) than retrieved ones":
            r["caption"]["MAP"] > 1.5 * r["auto_caption"]["MAP"],
        "border/cluster and intermediate-graph features: MAP differences not significant":
            min(p["no_border_features"]["AP"], p["no_intermediate_features"]["AP"]) > 0.05,
        "the paper's 15 features alone are significantly worse on MAP":
            r["paper_features_only"]["MAP"] < r["full"]["MAP"]
            and p["paper_features_only"]["AP"] <= 0.05,
    }


def write_report(out: dict, path: Path) -> None:
    """Write the report for the result dict ``out`` (``gist.json``) to ``path``."""
    r, p = out["results"], out["p_values_vs_full"]
    examples = [md_row([lab, len(sub), f"{np.nanmean([e['AP'] for e in sub]):.3f}",
                        f"{np.nanmean([e['P@10'] for e in sub]):.3f}",
                        f"{np.mean([e['in_candidates'] for e in sub]):.3f}"])
                for lab in ("literal", "non-literal")
                for sub in [[e for e in out.get("examples", []) if e["label"] == lab]] if sub]
    top_w = sorted(out["final_weights"].items(), key=lambda kv: -abs(kv[1]))[:8]
    values = {"date": out["date"], "commit": out["git_commit"], "n": out["n_queries"],
              "nv": out["n_queries_with_relevant"], "rel": out["mean_relevant_per_query"],
              "r": r, "image_gain": r["full"]["MAP"] - r["caption"]["MAP"],
              "table": "\n".join(row(k, r[k], p.get(k)) for k in NAMES if k in r),
              "examples": "\n".join(examples) or "| (Flickr8K images missing) | | | | |",
              "weights": ", ".join(f"`{k}` {v:+.3f}" for k, v in top_w),
              "runtime": out["runtime_s"] / 60}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_template("gist", values, claims(out)))
