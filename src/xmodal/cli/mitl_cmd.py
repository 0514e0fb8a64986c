"""``xmodal mitl``: find missing positives with machine annotators and human (or simulated)
judges — propose, HITs, workers, aggregate, export, next-round, simulate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.errors import XmodalError

mitl_app = typer.Typer(
    help="Machine-in-the-loop discovery of missing positives (ECCV Caption §3): machine "
    "annotators propose candidate pairs, people judge them at /judge, the verified positives "
    "extend a protocol's ground truth.",
    no_args_is_help=True,
)
workers_app = typer.Typer(help="Register and list the people who judge a campaign.",
                          no_args_is_help=True)
crowd_app = typer.Typer(help="Crowd platforms: export HITs for MTurk, Label Studio or Prolific, "
                        "import their results, estimate the pay.", no_args_is_help=True)
app.add_typer(mitl_app, name="mitl")
mitl_app.add_typer(workers_app, name="workers")
mitl_app.add_typer(crowd_app, name="crowd")

CAMPAIGN = typer.Argument(..., help="the campaign database (SQLite), e.g. flickr.mitl.db")
JSON_ALWAYS = typer.Option(False, "--json", help="the output is JSON either way (accepted so "
                           "that every command takes --json)")


def _protocol(spec: dict[str, Any]):
    from xmodal.eval.protocols import get_protocol

    if spec.get("name") == "folder":
        return get_protocol("folder", spec.get("data"), captions=spec.get("captions"))
    return get_protocol(spec["name"], spec.get("data"))


def _campaign_protocol(campaign):
    spec = campaign.meta("protocol")
    if not spec:
        raise XmodalError(f"{campaign.path}: the campaign has no protocol; start it with "
                          "'xmodal mitl propose'")
    return _protocol(spec)


def _echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2))


def _print_propose(stats: dict[str, Any]) -> None:
    t = Table(title=f"candidates (top-{stats['k']} per annotator; queries "
                    f"{stats['queries']})")
    for col in ("annotator", "proposed", "already positive", "candidates", "unique"):
        t.add_column(col, justify="right" if col != "annotator" else "left")
    for name, a in stats["annotators"].items():
        t.add_row(name, str(a["proposed"]), str(a["already_positive"]), str(a["candidates"]),
                  str(a["unique"]))
    console.print(t)
    names = list(stats["annotators"])
    if len(names) > 1:
        o = Table(title="pairwise overlap of candidates (shared pairs / Jaccard)")
        o.add_column("")
        for n in names:
            o.add_column(n, justify="right")
        for a in names:
            cells = []
            for b in names:
                v = stats["overlap"].get(f"{a}|{b}") or stats["overlap"].get(f"{b}|{a}")
                cells.append("-" if v is None else f"{v['shared']} / {v['jaccard']:.2f}")
            o.add_row(a, *cells)
        console.print(o)
    console.print(f"{stats['total_proposed']} proposals -> {stats['unique_candidates']} unique "
                  "candidate pairs")


@mitl_app.command("propose")
def propose_command(
    campaign: Path = CAMPAIGN,
    protocol: str = typer.Option(..., "--protocol", "-p", help="protocol to extend "
                                 "(`xmodal protocols`)"),
    annotator: list[str] = typer.Option(
        ..., "--annotator", "-a", help="a machine annotator: a registered model name, a saved "
        "model directory or a .npy/.npz score file (images x texts); NAME=SPEC names it. "
        "Repeat for several."),
    data: Path | None = typer.Option(None, "--data", help="data root; for -p folder, the photo "
                                     "folder"),
    captions: Path | None = typer.Option(None, "--captions", help="for -p folder: the caption "
                                         "file"),
    queries: int = typer.Option(100, "--queries", "-n", help="queries sampled per direction "
                                "(0 = all)"),
    k: int = typer.Option(5, "--k", help="candidates per annotator and query"),
    seed: int = typer.Option(0, "--seed", help="seed of the query sample"),
    judge_originals: bool = typer.Option(False, "--judge-originals", help="also have the "
                                         "sampled queries' original positive pairs judged "
                                         "(for the precision of the original ground truth)"),
    gold: str = typer.Option("auto", "--gold", help="check pairs in every HIT: auto (a "
                             "protocol positive and a drawn negative), none (no check pairs; "
                             "for small collections), or a CSV FILE of image_id,text_id,label "
                             "(positive / negative) with your own"),
    as_json: bool = typer.Option(False, "--json", help="print the statistics as JSON"),
) -> None:
    """Start a campaign: sample queries and store every annotator's top-K as candidates.

    Examples:

      xmodal mitl propose flickr.db -p flickr8k-hodosh -a dual -a hodosh-nn -a tagger-lemmas

      xmodal mitl propose trip.db -p folder --data ~/Pictures/trip --captions trip.csv \\
          -a dual -a mine=my_scores.npz -n 0
    """
    from xmodal.mitl.propose import load_annotator, propose
    from xmodal.mitl.store import Campaign

    if campaign.exists():
        raise XmodalError(f"{campaign} already exists; a campaign is proposed once (use "
                          "'xmodal mitl next-round' for more candidates)")
    if captions is not None and protocol != "folder":
        raise XmodalError("--captions is for the folder protocol (-p folder --data FOLDER)")
    spec = {"name": protocol, "data": str(data.expanduser().resolve()) if data else None,
            "captions": str(captions.expanduser().resolve()) if captions else None}
    proto = _protocol(spec)
    built = []
    for a in annotator:
        console.print(f"scoring with {a} …")
        built.append(load_annotator(a, proto, seed))
    from xmodal.mitl.hits import negatives_available, read_gold_file

    gold_spec = ({"mode": gold} if gold in ("auto", "none")
                 else {"mode": "file", "file": str(Path(gold).resolve()),
                       **read_gold_file(gold, proto)})
    with Campaign(campaign, create=True) as c:
        try:
            c.set_meta_now("protocol", spec)
            c.set_meta_now("gold", gold_spec)
            stats = propose(c, proto, built, queries or None, k, seed, judge_originals)
            if gold == "auto" and negatives_available(c, proto) == 0:
                raise XmodalError(
                    "no known negative can be drawn: every pair of this collection is a "
                    "positive or in an annotator's top-25 (a small collection, or all queries "
                    "sampled). Propose again with --gold none (HITs without check pairs) or "
                    "--gold FILE (your own known positive and negative pairs).")
        except BaseException:
            c.close()
            for extra in ("", "-wal", "-shm"):  # nothing half-made
                Path(f"{campaign}{extra}").unlink(missing_ok=True)
            raise
    if as_json:
        _echo_json(stats)
    else:
        _print_propose(stats)
        console.print(f"next: xmodal mitl hits {campaign}")


@mitl_app.command("hits")
def hits_command(
    campaign: Path = CAMPAIGN,
    size: int = typer.Option(16, "--size", help="pairs to judge per HIT (plus 2 golden pairs)"),
    judgments: int = typer.Option(3, "--judgments", help="different workers per pair"),
    seed: int = typer.Option(0, "--seed", help="seed of the shuffle and the golden pairs"),
    qualify: int = typer.Option(0, "--qualify", help="an entry test of N check pairs that "
                                "every worker on this server takes before any real HIT"),
    min_accuracy: float = typer.Option(0.8, "--min-accuracy", help="with --qualify: the share "
                                       "of the entry test a worker must answer right"),
    as_json: bool = typer.Option(False, "--json", help="print {hits, size, gold, judgments, "
                                 "entry_test} as JSON"),
) -> None:
    """Bundle the waiting candidates into HITs (N pairs + 1 known positive + 1 known negative).

    Examples:

      xmodal mitl hits flickr.db --size 16 --judgments 3

      xmodal mitl hits flickr.db --qualify 10 --min-accuracy 0.8
    """
    from xmodal.mitl.hits import make_hits, make_qualification
    from xmodal.mitl.store import Campaign

    entry = {"pairs": qualify, "min_accuracy": min_accuracy} if qualify else None
    with Campaign(campaign) as c:
        if qualify:
            make_qualification(c, _campaign_protocol(c), qualify, min_accuracy, seed)
            if not as_json:
                console.print(f"entry test: {qualify} check pairs, {min_accuracy:.0%} right to "
                              "go on")
            if not c.unassigned_pairs():
                if as_json:
                    _echo_json({"hits": 0, "entry_test": entry})
                return
        hits = make_hits(c, _campaign_protocol(c), size, judgments, seed)
        gold = 0 if (c.meta("gold") or {}).get("mode") == "none" else 2
        if as_json:
            _echo_json({"hits": len(hits), "size": size, "gold": gold, "judgments": judgments,
                        "entry_test": entry})
            return
        console.print(f"{len(hits)} HITs of about {size} + {gold} pairs, {judgments} workers "
                      "each. "
                      f"next: xmodal mitl workers add {campaign} NAME; xmodal serve "
                      f"--campaign {campaign}")


@workers_app.command("add")
def workers_add(
    campaign: Path = CAMPAIGN,
    name: str = typer.Argument(..., help="the worker's name"),
    reviewer: bool = typer.Option(False, "--reviewer", help="may accept or reject HITs at "
                                  "/review"),
    as_json: bool = typer.Option(False, "--json", help="print {worker, role, token, link}"),
) -> None:
    """Register a worker and print their token (shown once; only its hash is stored).

    Example: xmodal mitl workers add flickr.db alice
    """
    from xmodal.mitl.store import Campaign

    from xmodal.mitl.blind import make_signin_code

    with Campaign(campaign) as c:
        token = c.add_worker(name, "reviewer" if reviewer else "worker")
        code, page = make_signin_code(c, name)
    if as_json:
        _echo_json({"worker": name, "role": "reviewer" if reviewer else "worker",
                    "token": token, "link": f"/{page}?code={code}"})
        return
    console.print(f"{'reviewer' if reviewer else 'worker'} {name!r} added. Send them the "
                  f"sign-in link /{page}?code={code} (it signs one browser in, once; a new one: "
                  f"'xmodal mitl workers link {campaign} {name}') and the token below (typed "
                  "into the page it signs in any browser; scripts send it as X-Worker-Token)")
    typer.echo(token)


@workers_app.command("reissue")
def workers_reissue(campaign: Path = CAMPAIGN,
                    name: str = typer.Argument(..., help="the worker's name"),
                    as_json: bool = typer.Option(False, "--json", help="print {worker, token, "
                                                 "link}")) -> None:
    """Give a worker a new token (printed once) and sign-in link; the old token, its sessions
    and its unused links stop working.

    Example: xmodal mitl workers reissue flickr.db alice
    """
    from xmodal.mitl.store import Campaign

    from xmodal.mitl.blind import drop_signin_codes, make_signin_code

    with Campaign(campaign) as c:
        token = c.reissue_token(name)
        drop_signin_codes(c, name)  # the old links go with the old token
        code, page = make_signin_code(c, name)
    if as_json:
        _echo_json({"worker": name, "token": token, "link": f"/{page}?code={code}"})
        return
    console.print(f"new token for {name!r}; their sign-in link: /{page}?code={code}")
    typer.echo(token)


@workers_app.command("link")
def workers_link(campaign: Path = CAMPAIGN,
                 name: str = typer.Argument(..., help="the worker's name"),
                 as_json: bool = typer.Option(False, "--json")) -> None:
    """A new one-time sign-in link for a worker (/judge?code=…, /review?code=… for a
    reviewer): it signs one browser in and is burned, so the address the browser keeps in its
    history opens nothing. Valid 14 days; the worker's token is unchanged.

    Example: xmodal mitl workers link flickr.db alice
    """
    from xmodal.mitl.blind import SIGNIN_TTL_S, make_signin_code
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        code, page = make_signin_code(c, name)
    link = f"/{page}?code={code}"
    if as_json:
        _echo_json({"worker": name, "link": link, "valid_days": SIGNIN_TTL_S // 86400})
        return
    console.print(f"sign-in link for {name!r} (once, 14 days; put the server's address before "
                  "it):")
    typer.echo(link)


@workers_app.command("revoke")
def workers_revoke(campaign: Path = CAMPAIGN,
                   name: str = typer.Argument(..., help="the worker's name"),
                   as_json: bool = typer.Option(False, "--json", help="print {worker, "
                                                "revoked}")) -> None:
    """Stop a worker from signing in (their token and open sessions are refused at once); the
    judgments they made stay. 'reissue' lets them in again.

    Example: xmodal mitl workers revoke flickr.db alice
    """
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        c.revoke_worker(name)
    if as_json:
        _echo_json({"worker": name, "revoked": True})
        return
    console.print(f"{name!r} can no longer sign in to {campaign}")


@workers_app.command("list")
def workers_list(campaign: Path = CAMPAIGN,
                 as_json: bool = typer.Option(False, "--json")) -> None:
    """List the workers with their submitted, accepted, in-review and rejected HITs."""
    from xmodal.mitl.store import Campaign

    with Campaign(campaign, readonly=True) as c:
        rows = c.workers()
    if as_json:
        _echo_json(rows)
        return
    t = Table()
    for col in ("name", "role", "submitted", "accepted", "review", "rejected", "revoked"):
        t.add_column(col)
    for r in rows:
        t.add_row(*(str(r[k]) for k in ("name", "role", "submitted", "accepted", "review",
                                        "rejected")), "yes" if r["revoked"] else "")
    console.print(t)


@mitl_app.command("status")
def status_command(campaign: Path = CAMPAIGN,
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """How far a campaign is: queries, candidates, HITs, submitted / accepted / in review, the
    workers and reviewers, and the entry test apart (taken / passed / failed)."""
    from xmodal.mitl.store import Campaign

    with Campaign(campaign, readonly=True) as c:
        progress = c.progress()
    if as_json:
        _echo_json(progress)
    else:
        entry = progress.pop("entry_test", None)
        for k, v in progress.items():
            console.print(f"{k:>11}: {v}")
        if entry:
            console.print(f" entry test: {entry['pairs']} pairs, pass mark "
                          f"{entry['pass_mark']:.0%}; taken {entry['taken']}, passed "
                          f"{entry['passed']}, failed {entry['failed']}")


@mitl_app.command("answers")
def answers_command(
    campaign: Path = CAMPAIGN,
    out: Path = typer.Argument(..., help="output file: .csv, .jsonl or .parquet"),
    as_json: bool = typer.Option(False, "--json", help="print what was written as JSON"),
) -> None:
    """Write every answer of the campaign, one row per worker and pair: worker, platform, HIT,
    pair (image and text ids), its role (to judge or a check), the answer (empty for "can't
    tell"), reason, start / submit times, seconds the HIT took, status and whether it counts.

    Examples:

      xmodal mitl answers flickr.db answers.csv

      xmodal mitl answers flickr.db answers.parquet --json
    """
    from xmodal.mitl.api import Campaign
    from xmodal.mitl.judgments import write_answers

    with Campaign.open(campaign) as c:
        result = write_answers(c.answers(), out)
    if as_json:
        _echo_json(result)
    else:
        console.print(f"{result['rows']} answers ({result['judgments']} judgments) of "
                      f"{result['workers']} workers -> {result['path']}")


RULE = typer.Option("eccv", "--rule", help="eccv: '100% yes' or 'partially yes' is a positive "
                    "answer; strict: only '100% yes'")
TIES = typer.Option("negative", "--ties", help="verdict of a tied pair: negative, positive or "
                    "unjudged")
MIN_GOLD = typer.Option(None, "--min-gold-accuracy", help="drop workers whose accuracy on the "
                        "golden pairs is below this (e.g. 0.7)")


@mitl_app.command("aggregate")
def aggregate_command(
    campaign: Path = CAMPAIGN, rule: str = RULE, ties: str = TIES,
    min_gold_accuracy: float | None = MIN_GOLD,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Verdict per pair (majority of binarised answers), gold accuracy per worker, agreement
    (Krippendorff's α).

    Example: xmodal mitl aggregate flickr.db --min-gold-accuracy 0.7 --json
    """
    from xmodal.mitl.aggregate import summarize
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        report = summarize(c, rule, ties, min_gold_accuracy)
    if as_json:
        _echo_json(report)
        return
    for kind, v in report["verdicts"].items():
        console.print(f"{kind}: {v['positive']} positive, {v['negative']} negative, "
                      f"{v['unjudged']} unjudged")
    if not report["verdicts"]:
        console.print("no accepted HIT yet")
    ag = report["agreement"]
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    console.print(f"Krippendorff's α over {ag['pairs']} pairs: binary {fmt(ag['alpha_binary'])}, "
                  f"ordinal {fmt(ag['alpha_ordinal'])}")
    for w, g in report["workers"].items():
        console.print(f"  {w}: gold {g['correct']}/{g['gold']} ({100 * g['accuracy']:.0f}%)"
                      + ("  [dropped]" if w in report["dropped_workers"] else ""))


@mitl_app.command("export")
def export_command(
    campaign: Path = CAMPAIGN,
    out: Path = typer.Argument(..., help="output directory for image_to_caption.json and "
                               "caption_to_image.json"),
    rule: str | None = typer.Option(None, "--rule", help="as 'aggregate' (default: the settings "
                                    "aggregate ran with; a different value is refused)"),
    ties: str | None = typer.Option(None, "--ties", help="as 'aggregate' (default: the "
                                    "settings aggregate ran with)"),
    min_gold_accuracy: float | None = MIN_GOLD,
    as_json: bool = JSON_ALWAYS,
) -> None:
    """Write the extended positives (original ∪ verified) in the eccv-caption JSON layout,
    with the settings 'xmodal mitl aggregate' ran with (recorded in mitl_export.json).

    Example: xmodal mitl aggregate flickr.db --min-gold-accuracy 0.7 &&
    xmodal mitl export flickr.db flickr-positives/ &&
    xmodal eval -p flickr8k-hodosh -m dual --positives flickr-positives/
    """
    from xmodal.mitl.aggregate import verdicts
    from xmodal.mitl.export import export, export_settings
    from xmodal.mitl.store import Campaign

    with Campaign(campaign, readonly=True) as c:
        settings = export_settings(c.result("aggregate"), {
            "rule": rule, "ties": ties, "min_gold_accuracy": min_gold_accuracy})
        found, dropped = verdicts(c, **settings)
        if not found:
            raise XmodalError(f"{campaign}: no accepted judgments yet; nothing to export")
        result = export(_campaign_protocol(c), found, out, settings, campaign, dropped)
    _echo_json(result)


@mitl_app.command("next-round")
def next_round_command(
    campaign: Path = CAMPAIGN,
    budget: int = typer.Option(..., "--budget", help="how many new pairs to propose"),
    strategy: str = typer.Option("targeted", "--strategy", help="targeted (consensus x query "
                                 "productivity) or deeper (the next ranks)"),
    as_json: bool = JSON_ALWAYS,
) -> None:
    """Propose the next round's candidates from the annotators' stored top-25 lists.

    Example: xmodal mitl next-round flickr.db --budget 2000 && xmodal mitl hits flickr.db
    """
    from xmodal.mitl.rounds import propose_next_round
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        _echo_json(propose_next_round(c, _campaign_protocol(c), budget, strategy))


@mitl_app.command("simulate")
def simulate_command(
    protocol: str = typer.Option("flickr8k-hodosh", "--protocol", "-p", help="a Flickr8K "
                                 "protocol over the Hodosh test pool"),
    judgments: str = typer.Option(..., "--judgments", help="expert or crowd"),
    judgment_file: Path | None = typer.Option(
        None, "--judgment-file", help="answers in Hodosh et al.'s file layout instead of the "
        "dataset's (ExpertAnnotations.txt / CrowdFlowerAnnotations.txt)"),
    annotator: list[str] | None = typer.Option(None, "--annotator", "-a", help="machine "
                                               "annotators (default: five families)"),
    model: list[str] | None = typer.Option(None, "--model", "-m", help="extra models ranked "
                                           "in the Table-5 study"),
    campaign: Path | None = typer.Option(None, "--campaign", help="campaign database to "
                                         "create (replaced if an earlier simulation made it; "
                                         "default: mitl-PROTOCOL-JUDGMENTS.db in --out)"),
    out_dir: Path | None = typer.Option(None, "--out", help="folder for the simulation's "
                                        "campaign databases (default: a new temporary "
                                        "folder)"),
    queries: int = typer.Option(0, "--queries", "-n", help="queries per direction (0 = all)"),
    size: int = typer.Option(16, "--size"),
    replication: int = typer.Option(3, "--judgments-per-pair"),
    budget: int | None = typer.Option(None, "--round2-budget", help="pairs proposed in round 2 "
                                      "(default: a quarter of round 1's)"),
    plot: Path | None = typer.Option(None, "--plot", help="save the positives-per-judgment "
                                     "figure here (PNG)"),
    positives: Path | None = typer.Option(None, "--export", help="also export the extended "
                                          "positives to this directory"),
    data: Path | None = typer.Option(None, "--data", help="data root (default: $XMODAL_DATA)"),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="print the full report as JSON"),
) -> None:
    """Run the whole loop with simulated workers answering from Flickr8K's recorded judgments.

    Prints coverage, the Table-2 precision/recall of the original positives and the Kendall τ
    table; a pair without a recorded judgment stays unjudged.

    Examples:

      xmodal mitl simulate -p flickr8k-hodosh --judgments crowd --json

      xmodal mitl simulate --judgments expert --plot yield.png --export expert-positives/
    """
    from xmodal.mitl.pipeline import (DEFAULT_ANNOTATORS, DEFAULT_EXTRA_MODELS, plot_yield,
                                      run_simulated_study)
    from xmodal.mitl.simulate import SOURCES, read_judgment_file, recorded_from_flickr8k

    if judgments not in SOURCES:
        raise XmodalError(f"--judgments must be one of {SOURCES}, not {judgments!r}")
    proto = _protocol({"name": protocol, "data": str(data) if data else None})
    if judgment_file is not None:
        recorded = read_judgment_file(judgment_file, judgments)
    else:
        from xmodal.data import load_flickr8k

        ds = proto.dataset if hasattr(proto.dataset, "expert") else load_flickr8k(data)
        recorded = recorded_from_flickr8k(ds, judgments)
    if campaign is None:
        import tempfile

        folder = out_dir or Path(tempfile.mkdtemp(prefix="xmodal-mitl-sim-"))
        campaign = folder / f"mitl-{protocol}-{judgments}.db"
    console.print(f"[dim]simulated campaign: {campaign}[/]")
    report = run_simulated_study(
        proto, recorded, judgments, campaign, annotator or DEFAULT_ANNOTATORS,
        DEFAULT_EXTRA_MODELS if model is None else model, queries or None, 5, size,
        replication, seed, budget, positives, log=lambda m: console.print(f"[dim]{m}[/]"))
    if plot is not None:
        plot_yield(report["yield"], plot, f"{protocol}, simulated {judgments} judges")
    if as_json:
        _echo_json(report)
        return
    _print_study(report)


def _print_study(report: dict[str, Any]) -> None:
    _print_propose(report["propose"])
    t = Table(title="coverage: candidates with a recorded judgment")
    for col in ("annotator", "candidates", "judged", "coverage", "positive", "precision"):
        t.add_column(col, justify="right" if col != "annotator" else "left")
    for n, c in report["coverage"].items():
        prec = "-" if c["precision"] is None else f"{100 * c['precision']:.1f}"
        t.add_row(n, str(c["candidates"]), str(c["judged"]), f"{100 * c['coverage']:.1f}%",
                  str(c["positive"]), prec)
    console.print(t)
    t2 = Table(title="Table 2: original positives vs human-verified")
    for col in ("direction", "precision", "recall"):
        t2.add_column(col)
    for d, v in report["table2"].items():
        t2.add_row(d, *("-" if v[k] is None else f"{100 * v[k]:.1f}"
                        for k in ("precision", "recall")))
    console.print(t2)
    for d, tau in report["table5"]["kendall"].items():
        tt = Table(title=f"Kendall τ-b between metric rankings ({d})")
        cols = list(tau)
        tt.add_column("")
        for c in cols:
            tt.add_column(c.replace("original", "orig").replace("extended", "ext"),
                          justify="right")
        for a in cols:
            tt.add_row(a, *("-" if tau[a][b] is None else f"{tau[a][b]:.2f}" for b in cols))
        console.print(tt)


@crowd_app.command("export")
def crowd_export(
    campaign: Path = CAMPAIGN,
    out: Path = typer.Argument(..., help="output folder"),
    platform: str = typer.Option(..., "--platform", help="mturk, label-studio or prolific"),
    image_url: str | None = typer.Option(None, "--image-url", help="public URL where OUT/images "
                                         "will be served (e.g. https://example.org/hits/images)"),
    public_url: str | None = typer.Option(None, "--public-url", help="for prolific: the public "
                                          "URL of 'xmodal serve --campaign'"),
    study_id: str | None = typer.Option(None, "--study-id", help="for prolific: the study's "
                                        "STUDY_ID (only its links sign in; kept for later "
                                        "exports)"),
    predictions: bool = typer.Option(False, "--predictions/--no-predictions", help="label-studio: "
                                     "give every task (check pairs too) one prediction per "
                                     "machine annotator, with its real score (off by default: "
                                     "pre-filled answers bias the annotators)"),
    as_json: bool = JSON_ALWAYS,
) -> None:
    """Export the HITs for a crowd platform: MTurk batch CSV + question template, Label Studio
    tasks + labeling config, or the Prolific study link; images under opaque names.

    Examples:

      xmodal mitl crowd export flickr.db hits/ --platform mturk --image-url https://me.org/images

      xmodal mitl crowd export flickr.db ls/ --platform label-studio --image-url http://localhost:8081/images
    """
    from xmodal.mitl.crowd import export
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        _echo_json(export(c, platform, out, image_url, public_url, predictions, study_id))


@crowd_app.command("import")
def crowd_import(
    campaign: Path = CAMPAIGN,
    results: Path = typer.Argument(..., help="MTurk batch results CSV, Label Studio JSON "
                                   "export, or Prolific submissions CSV (--platform prolific)"),
    platform: str | None = typer.Option(None, "--platform", help="mturk, label-studio or "
                                        "prolific (default: mturk for .csv, label-studio for "
                                        ".json)"),
    as_json: bool = JSON_ALWAYS,
) -> None:
    """Import a platform's results; importing the same file again adds nothing. MTurk: the
    whole batch file or nothing, one assignment per row, and RESULTS.decisions.csv (Approve /
    Reject) to upload back. Label Studio: by task, each annotation one judgment, with a report
    of what was dropped. Prolific: the study's submissions export screens out participants who
    are not in it (or returned, timed out, were rejected).

    Examples:

      xmodal mitl crowd import flickr.db Batch_123_batch_results.csv

      xmodal mitl crowd import flickr.db project-1-at-2026-11-28.json

      xmodal mitl crowd import flickr.db prolific_export_6f1a.csv --platform prolific
    """
    from xmodal.mitl.crowd import import_results
    from xmodal.mitl.store import Campaign

    with Campaign(campaign) as c:
        _echo_json(import_results(c, results, platform))


@crowd_app.command("pay")
def crowd_pay(
    campaign: Path = CAMPAIGN,
    reward: float = typer.Option(..., "--reward", help="reward per HIT (e.g. 0.10)"),
    fee: float = typer.Option(0.0, "--fee", help="platform fee as a fraction (MTurk: 0.2)"),
    entry_reward: float = typer.Option(
        0.0, "--entry-reward", help="reward per entry test taken, passed or failed (default 0: "
        "unpaid, as MTurk's qualification tests; e.g. a Prolific screen-out payment)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Time per HIT per worker and the hourly pay that a reward per HIT gives.

    The entry test is no HIT: it is counted on its own line, unpaid unless --entry-reward.

    Example: xmodal mitl crowd pay flickr.db --reward 0.10 --fee 0.2
    """
    from xmodal.mitl.crowd import pay_report
    from xmodal.mitl.store import Campaign

    if min(reward, fee, entry_reward) < 0:
        raise XmodalError("--reward, --fee and --entry-reward cannot be negative")
    with Campaign(campaign, readonly=True) as c:
        report = pay_report(c, reward, fee, entry_reward)
    if as_json:
        _echo_json(report)
        return
    t = Table(title=f"pay at {reward} per HIT")
    entry = report.get("entry_test")
    cols = ("worker", "HITs", "paid", "median s/HIT", "per hour") + (
        ("entry test",) if entry else ())
    for col in cols:
        t.add_column(col, justify="left" if col == "worker" else "right")
    fmt = lambda x, f: "-" if x is None else f.format(x)  # noqa: E731
    for name, w in report["workers"].items():
        t.add_row(name, str(w["hits"]), str(w["paid_hits"]),
                  fmt(w["median_s_per_hit"], "{:.0f}"), fmt(w["hourly"], "{:.2f}"),
                  *((w["entry_test"] or "-",) if entry else ()))
    console.print(t)
    if entry:
        paid = (f"{entry['paid']} paid at {entry['reward']} cost {entry['cost']:.2f} with fees"
                if entry["paid"] else "unpaid (--entry-reward to pay it)")
        console.print(f"entry test: {entry['taken']} taken ({entry['passed']} passed, "
                      f"{entry['failed']} failed), median {fmt(entry['median_s'], '{:.0f}')} s; "
                      f"{paid}")
    console.print(f"median {fmt(report['median_s_per_hit'], '{:.0f}')} s per HIT -> "
                  f"{fmt(report['hourly'], '{:.2f}')} per hour; {report['paid_hits']} paid HITs; "
                  f"total cost {report['cost']:.2f} with fees")
