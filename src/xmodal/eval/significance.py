"""Compare saved evaluation runs with significance tests (``xmodal compare``, the web page's A/B
view), in the spirit of ranx's ``compare``.

A run is the report ``xmodal eval --per-query --output RUN.json`` writes: ``protocol``,
``n_queries`` and ``per_query[direction][metric]`` (one value per query, ``None`` where a query has
no value). :func:`compare_runs` tests every other run against a baseline, per direction and metric,
on the per-query numbers paired by query (by the runs' ``query_ids``: the same ids in any
order; runs on different queries are refused unless ``intersect``; runs saved without ids by
position; ``pairing`` in the result says which):

- ``"randomization"``: two-sided paired sign-flip test of the mean difference
  (``scipy.stats.permutation_test``, :func:`xmodal.eval.stats.permutation_test`);
- ``"t"``: paired t-test (``scipy.stats.ttest_rel``);
- ``"mcnemar"``: exact McNemar test, for binary per-query metrics (hit or miss, e.g. R@1).

Each comparison also gets a percentile bootstrap confidence interval of the mean difference.
p-values are corrected (Holm, Benjamini-Hochberg, or none) within each family of comparisons of one
direction and metric (the other runs against the baseline). The result is plain JSON; its renderers
are in :mod:`xmodal.eval.significance_render`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.compare import paired_test
from xmodal.eval.stats import CORRECTIONS, adjust_pvalues, bootstrap_ci, paired_values

TESTS = ("randomization", "t", "mcnemar")
_PAIRED_TEST = {"randomization": "permutation", "t": "t", "mcnemar": "mcnemar"}
DEFAULT_METRICS = ("R@1", "R@5", "R@10", "MAP")
LOWER_IS_BETTER = re.compile(r"^(medR|meanR|rank)$", re.IGNORECASE)
RERUN = "re-run `xmodal eval ... --per-query --output RUN.json`"


def load_run(path: str | Path) -> dict[str, Any]:
    """A saved run (``xmodal eval --per-query --output``), named after its file."""
    path = Path(path)
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise XmodalError(f"no run file {str(path)!r}") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise XmodalError(f"{path} is not a JSON report: {exc}") from None
    if not isinstance(run, dict) or not isinstance(run.get("directions"), dict):
        raise XmodalError(f"{path} is not an `xmodal eval` report (it has no 'directions')")
    run.setdefault("name", path.stem)
    return run


def load_runs(paths: Sequence[str | Path], protocol: str | None = None
              ) -> dict[str, list[dict[str, Any]]]:
    """Runs from files and folders, grouped by protocol (in the order first seen).

    A folder is a sweep (``xmodal eval ... --out DIR``: its ``cells/*.json``, named after their
    models, in the sweep's model order) or a folder of run files. ``protocol`` keeps only that
    protocol's runs. Files alone stay one group (runs of different protocols are refused by
    :func:`compare_runs`)."""
    runs: list[dict[str, Any]] = []
    for path in map(Path, paths):
        if not path.is_dir():
            runs.append(load_run(path))
            continue
        cells = path / "cells"
        files = sorted((cells if cells.is_dir() else path).glob("*.json"))
        found = []
        for f in files:
            try:
                found.append(load_run(f))
            except XmodalError:
                continue  # not a run (sweep.json, errors.json, a torn file)
        if cells.is_dir():
            for r in found:
                r["name"] = str(r.get("model") or r["name"])
            try:
                order = json.loads((path / "sweep.json").read_text()).get("models", [])
            except (OSError, ValueError):
                order = []
            rank = {m: i for i, m in enumerate(order)}
            found.sort(key=lambda r: rank.get(r.get("model"), len(rank)))
        if not found:
            raise XmodalError(f"{path} holds no `xmodal eval` run (a sweep folder has cells/*.json)")
        runs += found
    groups: dict[str, list[dict[str, Any]]] = {}
    if not any(Path(p).is_dir() for p in paths) and protocol is None:
        return {str(runs[0].get("protocol")): runs}  # files: compare_runs checks the protocol
    for r in runs:
        groups.setdefault(str(r.get("protocol")), []).append(r)
    if protocol is not None:
        if protocol not in groups:
            raise XmodalError(f"no run of protocol {protocol!r}; the runs are on "
                              f"{', '.join(groups)}")
        groups = {protocol: groups[protocol]}
    return groups


def _names(runs: Sequence[dict]) -> list[str]:
    names: list[str] = []
    for i, r in enumerate(runs):
        base = str(r.get("name") or r.get("model") or f"run {i + 1}")
        name, k = base, 2
        while name in names:
            name, k = f"{base} ({k})", k + 1
        names.append(name)
    return names


def _query_keys(run: dict, direction: str) -> list[str] | None:
    """The run's query ids for ``direction`` (a repeated id gets its occurrence number), or
    None for a run saved without them."""
    ids = (run.get("query_ids") or {}).get(direction)
    if ids is None:
        return None
    seen: dict[str, int] = {}
    keys = []
    for q in ids:
        k = seen.get(str(q), 0)
        seen[str(q)] = k + 1
        keys.append(str(q) if k == 0 else f"{q}\x00{k}")
    return keys


def _pairing(runs: Sequence[dict], names: list[str], baseline: int,
             intersect: bool) -> tuple[dict[str, list[np.ndarray | None]], dict[str, Any]]:
    """Which per-query value of each run pairs with which: ``{direction: [index array per run,
    or None for the values as they are]}`` and a description of the pairing.

    Runs that all carry ``query_ids`` are paired by id (in the baseline's order); runs whose
    query sets differ are refused unless ``intersect``, which keeps the queries every run has.
    Runs saved without ids are paired by position."""
    directions = list(runs[baseline]["per_query"])
    lacking = [n for n, r in zip(names, runs, strict=True)
               if any(_query_keys(r, d) is None for d in directions)]
    if lacking:
        return ({d: [None] * len(runs) for d in directions},
                {"by": "position", "intersect": False,
                 "note": "paired by position: " + ", ".join(repr(n) for n in lacking)
                 + (" has" if len(lacking) == 1 else " have") + " no query ids (saved before "
                 "runs carried them); re-run xmodal eval --per-query to pair by id"})
    index: dict[str, list[np.ndarray | None]] = {}
    queries: dict[str, int] = {}
    dropped: dict[str, dict[str, int]] = {}
    for d in directions:
        keys = [_query_keys(r, d) or [] for r in runs]
        base_keys, base_name = keys[baseline], names[baseline]
        sets = [set(k) for k in keys]
        if not intersect:
            for n, k, ks in zip(names, keys, sets, strict=True):
                if ks == sets[baseline]:
                    continue
                extra, absent = ks - sets[baseline], sets[baseline] - ks
                shared = len(set.intersection(*sets))
                example = sorted(extra or absent)[0].split("\x00")[0]
                raise XmodalError(
                    f"runs {base_name!r} and {n!r} were evaluated on different {d} queries: "
                    f"{len(extra):,} of {n!r}'s {len(k):,} are not in {base_name!r} and "
                    f"{len(absent):,} of {base_name!r}'s {len(base_keys):,} are not in {n!r} "
                    f"(e.g. {example!r}); evaluate them on the same data, or compare the "
                    f"{shared:,} queries they share with --intersect")
        common = set.intersection(*sets)
        order = [k for k in base_keys if k in common]
        index[d] = []
        for n, k in zip(names, keys, strict=True):
            pos = {q: i for i, q in enumerate(k)}
            index[d].append(np.array([pos[q] for q in order], dtype=np.int64))
            if len(k) != len(order):
                dropped.setdefault(n, {})[d] = len(k) - len(order)
        queries[d] = len(order)
    same_order = all(_query_keys(r, d) == _query_keys(runs[baseline], d)
                     for r in runs for d in directions)
    how = "by query id" + ("" if same_order else " (the runs list their queries in different "
                           "orders)")
    note = f"paired {how}"
    if intersect:
        note += "; --intersect: the queries every run has (" + ", ".join(
            f"{d} {n:,}" for d, n in queries.items()) + ")"
        if dropped:
            note += ", dropped " + "; ".join(
                f"{n}: " + ", ".join(f"{c:,} {d}" for d, c in v.items()) for n, v in dropped.items())
    return index, {"by": "query id", "intersect": intersect, "queries": queries,
                   "dropped": dropped, "note": note}


def _check(runs: Sequence[dict], names: list[str], by_position: bool = True) -> None:
    """Same protocol, directions and queries in every run, and per-query values in each."""
    if len(runs) < 2:
        raise XmodalError("compare needs at least two runs")
    for name, r in zip(names, runs, strict=True):
        if not isinstance(r.get("per_query"), dict) or not r["per_query"]:
            raise XmodalError(f"run {name!r} has no per-query values: {RERUN}")
    first, name0 = runs[0], names[0]
    for name, r in zip(names[1:], runs[1:], strict=True):
        if r.get("protocol") != first.get("protocol"):
            raise XmodalError(f"run {name!r} is on protocol {r.get('protocol')!r}, run {name0!r} on "
                              f"{first.get('protocol')!r}: compare runs of the same protocol")
        if set(r["per_query"]) != set(first["per_query"]):
            raise XmodalError(f"run {name!r} has directions {sorted(r['per_query'])}, run {name0!r} "
                              f"{sorted(first['per_query'])}")
        if by_position and r.get("n_queries") != first.get("n_queries"):
            raise XmodalError(f"run {name!r} has {r.get('n_queries')} queries, run {name0!r} "
                              f"{first.get('n_queries')}: compare runs on the same queries")


def _values(run: dict, name: str, direction: str, metric: str) -> np.ndarray:
    pq = run["per_query"][direction]
    if metric not in pq:
        raise XmodalError(f"run {name!r} has no per-query {metric!r} for {direction}; it has "
                          f"{', '.join(pq)}")
    v = np.array([np.nan if x is None else x for x in pq[metric]], dtype=np.float64)
    ids = (run.get("query_ids") or {}).get(direction)
    n = len(ids) if ids is not None else (run.get("n_queries") or {}).get(direction)
    if n is not None and len(v) != n:
        raise XmodalError(f"run {name!r} has {len(v)} per-query {metric} values for {direction} "
                          f"but {n} queries: {RERUN}")
    return v


def _metrics(runs: Sequence[dict], metrics: Sequence[str] | None) -> list[str]:
    common = [m for d in runs[0]["per_query"].values() for m in d]
    common = [m for i, m in enumerate(common) if m not in common[:i]
              and all(m in d for r in runs for d in r["per_query"].values())]
    if metrics:
        return list(metrics)
    chosen = [m for m in DEFAULT_METRICS if m in common]
    if not chosen and not common:
        raise XmodalError("the runs share no per-query metric")
    return chosen or common


def compare_runs(
    runs: Sequence[dict],
    metrics: Sequence[str] | None = None,
    test: str = "randomization",
    correction: str = "holm",
    n_resamples: int = 10000,
    seed: int = 0,
    alpha: float = 0.05,
    baseline: int = 0,
    confidence: float = 0.95,
    intersect: bool = False,
    all_pairs: bool = False,
) -> dict[str, Any]:
    """Every run against ``runs[baseline]``, per direction and metric: means, difference (run -
    baseline), its bootstrap CI, p-value, corrected p-value, and whether it is significant at
    ``alpha`` (corrected). ``better`` says whether the run beats the baseline (lower is better for
    ranks). With ``all_pairs`` every pair of runs is tested (as ranx's ``compare``), each
    comparison's ``baseline`` naming the run it is against, and the correction is over all the
    pairs of a direction and metric. ``rsum`` (R@1 + R@5 + R@10 of both directions, in percent)
    is there when the runs have those six means. Returns plain JSON (see the module
    docstring)."""
    if test not in TESTS:
        raise XmodalError(f"unknown test {test!r}; choose from {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise XmodalError(f"unknown correction {correction!r}; choose from {', '.join(CORRECTIONS)}")
    names = _names(runs)
    if not 0 <= baseline < len(runs):
        raise XmodalError(f"baseline {baseline} is not one of the {len(runs)} runs")
    _check(runs, names, by_position=False)
    index, pairing = _pairing(runs, names, baseline, intersect)
    if pairing["by"] == "position":
        _check(runs, names)
    metrics = _metrics(runs, metrics)
    directions = list(runs[0]["per_query"])
    means: dict[str, dict[str, dict[str, float | None]]] = {n: {} for n in names}
    rows: list[dict[str, Any]] = []
    base = names[baseline]
    for direction in directions:
        for metric in metrics:
            values = [_values(r, n, direction, metric) for n, r in zip(names, runs, strict=True)]
            values = [v if ix is None else v[ix]
                      for v, ix in zip(values, index[direction], strict=True)]
            for n, v in zip(names, values, strict=True):
                means[n].setdefault(direction, {})[metric] = (
                    None if np.isnan(v).all() else float(np.nanmean(v)))
            family = []
            pairs = ([(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))]
                     if all_pairs else [(baseline, j) for j in range(len(runs)) if j != baseline])
            for i, j in pairs:
                n, v = names[j], values[j]
                a, b = paired_values(values[i], v)
                if test == "mcnemar" and not np.isin(np.r_[a, b], (0.0, 1.0)).all():
                    raise XmodalError(f"McNemar's test needs hit/miss per-query values (0 or 1, "
                                      f"e.g. R@1); {metric} is not: use --test randomization or t")
                lo, hi = bootstrap_ci(a, b, n_resamples, seed, confidence)
                diff = float(np.mean(b - a))
                lower = bool(LOWER_IS_BETTER.match(metric))
                family.append({
                    "run": n, "baseline": names[i], "direction": direction, "metric": metric,
                    "baseline_mean": float(np.mean(a)), "run_mean": float(np.mean(b)),
                    "difference": diff, "ci_low": lo, "ci_high": hi, "n_pairs": len(a),
                    "p_value": paired_test(a, b, _PAIRED_TEST[test], n_resamples, seed),
                    "better": None if diff == 0 else (diff < 0) == lower,
                })
            corrected = adjust_pvalues([c["p_value"] for c in family], correction)
            for c, pc in zip(family, corrected, strict=True):
                c["p_corrected"] = float(pc)
                c["significant"] = bool(pc <= alpha)
            rows.extend(family)
    labels = [_label(i) for i in range(len(runs))]
    return {
        "protocol": runs[0].get("protocol"),
        "runs": [{"name": n, "label": lab, "model": r.get("model")}
                 for n, lab, r in zip(names, labels, runs, strict=True)],
        "baseline": None if all_pairs else base,
        "all_pairs": all_pairs,
        "coverage": runs[baseline].get("coverage"),
        "notes": runs[baseline].get("notes"),
        "rsum": _rsum(means, directions, metrics),
        "directions": directions,
        "metrics": metrics,
        "lower_is_better": [m for m in metrics if LOWER_IS_BETTER.match(m)],
        "n_queries": runs[0].get("n_queries"),
        "pairing": pairing,
        "test": test,
        "correction": correction,
        "correction_family": ("all pairs of runs, per direction and metric" if all_pairs else
                              "the runs compared with the baseline, per direction and metric"),
        "alpha": alpha,
        "confidence": confidence,
        "n_resamples": n_resamples,
        "seed": seed,
        "means": means,
        "comparisons": rows,
    }


RSUM_PARTS = ("R@1", "R@5", "R@10")


def _label(i: int) -> str:
    """Short run labels: a, b, ..., z, aa, ab, ..."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(97 + r) + out
    return out


def _rsum(means: dict, directions: list[str], metrics: list[str]) -> dict[str, float] | None:
    """RSUM (the sum of R@1, R@5 and R@10 of both directions, in percent; 600 is perfect) per
    run, where both directions have the three."""
    if not ({"i2t", "t2i"} <= set(directions) and set(RSUM_PARTS) <= set(metrics)):
        return None
    out = {}
    for run, by_dir in means.items():
        parts = [by_dir[d][m] for d in ("i2t", "t2i") for m in RSUM_PARTS]
        out[run] = None if any(x is None for x in parts) else 100 * float(sum(parts))
    return out
