"""The whole loop on simulated workers, as ``xmodal mitl simulate`` runs it.

propose (machine annotators) -> HITs -> simulated workers answering from recorded judgments ->
aggregate -> export -> the study (coverage, ECCV Table 2, Table 5 with Kendall τ-b, the
single-annotator bias study) -> a second round by two strategies, each on its own copy of the
round-1 campaign, with the positives found per judgment spent.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.positives import apply_positives
from xmodal.eval.protocol_types import Protocol
from xmodal.mitl import study
from xmodal.mitl.aggregate import summarize, verdicts
from xmodal.mitl.export import export, extended_positives
from xmodal.mitl.hits import make_hits
from xmodal.mitl.propose import Annotator, load_annotator, propose
from xmodal.mitl.rounds import propose_next_round, yield_curve
from xmodal.mitl.simulate import Recorded, simulate
from xmodal.mitl.store import Campaign

# five machine annotators of different families for the Flickr8K pools
DEFAULT_ANNOTATORS = ("dual", "efficientnet-minilm-zeroshot", "hodosh-bow5-effnet", "hodosh-nn",
                      "tagger-lemmas")
# models ranked in the Table-5 study: the annotators plus these
DEFAULT_EXTRA_MODELS = ("hodosh-tri5sem-effnet", "hodosh-bow1", "random")

Log = Callable[[str], None]


def copy_campaign(campaign: Campaign, path: Path) -> Campaign:
    """A consistent copy of the campaign database (SQLite's online backup)."""
    if path.exists():
        path.unlink()
    dst = sqlite3.connect(path)
    campaign.conn.backup(dst)
    dst.close()
    return Campaign(path)


def round2_path(campaign_path: Path, strategy: str) -> Path:
    return campaign_path.with_name(f"{campaign_path.stem}-round2-{strategy}.db")


def replace_simulated(campaign_path: Path) -> None:
    """Remove an earlier simulation's campaign (and its round-2 copies) so that the simulation
    can run again; any other file at that path is refused, never overwritten."""
    try:
        with Campaign(campaign_path, readonly=True) as old:
            simulated = old.meta("simulated")
    except XmodalError:
        simulated = None
    if not simulated:
        raise XmodalError(f"{campaign_path} exists and is not a simulated campaign; choose "
                          "another --campaign or --out")
    for path in (campaign_path, *(round2_path(campaign_path, s) for s in ("targeted",
                                                                           "deeper"))):
        for extra in ("", "-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)


def run_simulated_study(
    protocol: Protocol,
    recorded: Recorded,
    source: str,
    campaign_path: Path,
    annotators: Sequence[str] = DEFAULT_ANNOTATORS,
    extra_models: Sequence[str] = DEFAULT_EXTRA_MODELS,
    n_queries: int | None = None,
    k: int = 5,
    size: int = 16,
    replication: int = 3,
    seed: int = 0,
    round2_budget: int | None = None,
    positives_out: Path | None = None,
    log: Log = lambda _: None,
) -> dict[str, Any]:
    """Run the loop and the study; every step is stored in the campaign at ``campaign_path``."""
    campaign_path = Path(campaign_path)
    if campaign_path.exists():
        replace_simulated(campaign_path)
    campaign_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    scores: dict[str, dict[str, np.ndarray]] = {}
    built: list[Annotator] = []
    for spec in dict.fromkeys([*annotators, *extra_models]):
        log(f"scoring {spec} on {protocol.name}")
        a = load_annotator(spec, protocol, seed)
        scores[a.name] = a.scores
        if spec in annotators:
            built.append(a)
    campaign = Campaign(campaign_path, create=True)
    campaign.set_meta_now("protocol", {"name": protocol.name})
    campaign.set_meta_now("simulated", source)
    log("proposing candidates")
    proposal = propose(campaign, protocol, built, n_queries, k, seed, judge_originals=True)
    hits = make_hits(campaign, protocol, size, replication, seed)
    log(f"{len(hits)} HITs; simulated {source} workers judging")
    sim1 = simulate(campaign, recorded, source)
    found, _ = verdicts(campaign)
    aggregate = summarize(campaign)
    queries = {d: [r[0] for r in campaign.q(
        "SELECT item FROM queries WHERE direction = ? ORDER BY id", (d,))]
        for d in protocol.directions}
    extended = apply_positives(protocol, *extended_positives(protocol, found),
                               source="round-1 verified positives")
    log("ranking models under original and extended positives")
    report: dict[str, Any] = {
        "protocol": protocol.name, "judgments": source, "campaign": str(campaign_path),
        "annotators": list(annotators), "models": list(scores),
        "settings": {"k": k, "hit_size": size, "replication": replication, "seed": seed,
                     "queries_per_direction": n_queries or "all"},
        "propose": proposal, "simulation": sim1, "aggregate": aggregate,
        "coverage": study.coverage(campaign, found, k),
        "table2": study.benchmark_quality(protocol, found, queries),
        "table5": study.ranking_study(protocol, extended, scores),
        "bias": study.bias_study(campaign, protocol, found, scores, k),
    }
    # round 2: the same budget by two strategies, each on a copy of the round-1 campaign
    budget = round2_budget or max(1, proposal["unique_candidates"] // 4)
    curves = {"round 1": yield_curve(campaign, 1)}
    report["round2"] = {"budget": budget}
    for strategy in ("targeted", "deeper"):
        copy = copy_campaign(campaign, round2_path(campaign_path, strategy))
        log(f"round 2 ({strategy}): {budget} more pairs")
        added = propose_next_round(copy, protocol, budget, strategy)
        make_hits(copy, protocol, size, replication, seed + 1)
        sim = simulate(copy, recorded, source)
        curves[f"round 2 {strategy}"] = yield_curve(copy, 2)
        report["round2"][strategy] = {"proposed": added, "simulation": sim,
                                      "campaign": str(copy.path)}
        copy.close()
    for name, c in curves.items():
        shown, pos = c["judgments_shown"][-1], c["positives"][-1]
        c["positives_per_100_judgments"] = 100 * pos / shown if shown else None
    report["yield"] = curves
    if positives_out is not None:
        report["export"] = export(protocol, found, positives_out)
    report["elapsed_s"] = time.perf_counter() - t0
    campaign.save_result("study", report)
    campaign.close()
    return report


def plot_yield(curves: dict[str, Any], path: Path, title: str) -> Path:
    """Positives found against judgments spent, one line per round / strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, c in curves.items():
        ax.plot(c["judgments_shown"], c["positives"], label=name)
    ax.set_xlabel("judgments spent (pairs shown to workers)")
    ax.set_ylabel("verified positives found")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
