"""Literal gist on Flickr8K test images (``reports/gist.md``) and the shipped gist ranker.

Stages are cached under ``cache_dir()/gist/bench`` (queries, candidates per input
configuration), so a rerun only redoes the cross-validation and the report. The ranker is
evaluated by 5-fold cross-validation with folds split by image (:mod:`xmodal.eval.selection`),
every row is compared with the full model by a paired randomization test
(:mod:`xmodal.eval.compare`), and the full model refitted on all queries is the shipped ranker
``xmodal/assets/gist/ranker`` (a :mod:`xmodal.models.modeldir` directory).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np

from xmodal.eval.compare import compare
from xmodal.eval.selection import group_folds
from xmodal.gist.benchmark import GistQuery, concept_predicate, literal_gist_queries, load_examples
from xmodal.gist.image_tags import image_logits, tags_from_logits
from xmodal.gist.mentions import Mention, extract_mentions, load_nlp
from xmodal.gist.pipeline import FEATURES, GistConfig, build_candidates
from xmodal.gist.rank import CoordinateAscentRanker, query_metrics
from xmodal.paths import cache_dir
from xmodal.reproduce.output import log

CONFIGS = {
    "full": {"caption": "human", "image": True, "lift": True},
    "caption": {"caption": "human", "image": False, "lift": True},
    "image": {"caption": None, "image": True, "lift": True},
    "full_nolift": {"caption": "human", "image": True, "lift": False},
    "auto_full": {"caption": "auto", "image": True, "lift": True},
    "auto_caption": {"caption": "auto", "image": False, "lift": True},
}
# Feature ablations of the paper's Table 6 (on the full model's candidates).
BORDER_FEATURES = ("is_border", "max_cluster_rel", "mean_cluster_rel", "sum_cluster_rel",
                   "in_top_seed_cluster", "in_top_core_cluster", "seeds_in_cluster",
                   "core_in_cluster")
INTERMEDIATE_FEATURES = ("is_intermediate", "pagerank_intermediate", "betweenness_intermediate")
FEATURE_ABLATIONS = {
    "no_border_features": BORDER_FEATURES,
    "no_intermediate_features": INTERMEDIATE_FEATURES,
    "paper_features_only": ("is_caption_seed", "is_image_seed", "is_lifted_tag", "caption_rel",
                            "image_rel", "caption_mentions", "image_confidence", "prior"),
}
N_FOLDS = 5
SEED = 0
METRICS = ("AP", "P@10", "nDCG@10")
ASSET = Path(__file__).resolve().parents[1] / "assets" / "gist" / "ranker"


def bench_dir() -> Path:
    d = cache_dir() / "gist" / "bench"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _flickr(data=None):
    from xmodal.data import load_flickr8k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_flickr8k(data, judgments=False)


# ---------------------------------------------------------------------- stage 1: queries + tags
def load_queries(graph, fresh: bool, limit: int | None = None,
                 data=None) -> tuple[list[GistQuery], list[list]]:
    """The benchmark's queries (cached) and the ImageNet tags of their images."""
    qfile = bench_dir() / "queries_v1.json"
    ds = _flickr(data)
    if qfile.is_file() and not fresh:
        queries = [GistQuery(r["image_id"], r["caption"], [Mention(*m) for m in r["mentions"]],
                             r["grades"]) for r in json.loads(qfile.read_text())]
    else:
        from tqdm import tqdm

        log("linking the reference captions of the test images")
        queries = literal_gist_queries(ds, graph, load_nlp(), "test", 2, progress=tqdm)
        qfile.write_text(json.dumps([
            {"image_id": q.image_id, "caption": q.caption,
             "mentions": [[m.text, m.lemma, m.start] for m in q.mentions], "grades": q.grades}
            for q in queries]))
    log(f"{len(queries)} queries")
    queries = queries[:limit] if limit else queries
    logits = image_logits([ds.image_path(q.image_id) for q in queries], progress=True)
    return queries, [tags_from_logits(z, graph) for z in logits]


# ---------------------------------------------------------------------- stage 2: candidates
def automatic_captions(queries, graph, fresh: bool, data=None) -> list[list[Mention]]:
    """Mentions of an automatic caption per query: the caption #0 of the nearest *training* image
    by cosine of pooled EfficientNet-Lite0 features (a retrieval captioner, Ordonez et al. 2011).
    The training images' features come from the feature cache (about 1 h to fill when empty)."""
    from xmodal.features import extract_image_features

    f = bench_dir() / "autocaps_v1.json"
    if f.is_file() and not fresh:
        by_id = {r["image_id"]: r for r in json.loads(f.read_text())}
        if all(q.image_id in by_id for q in queries):  # a --limit run caches fewer queries
            return [[Mention(*m) for m in by_id[q.image_id]["mentions"]] for q in queries]
    ds = _flickr(data)
    train = ds.split("train")
    Xtr = extract_image_features([ds.image_path(i) for i in train], progress=True).pooled
    Xte = extract_image_features([ds.image_path(q.image_id) for q in queries],
                                 progress=False).pooled
    Xtr /= np.linalg.norm(Xtr, axis=1, keepdims=True) + 1e-12
    Xte /= np.linalg.norm(Xte, axis=1, keepdims=True) + 1e-12
    nn = np.argmax(Xte @ Xtr.T, axis=1)
    nlp, known = load_nlp(), concept_predicate(graph)
    raw, out = [], []
    for q, j in zip(queries, nn):
        cap = sorted(ds.captions_of(train[j]), key=lambda c: c.index)[0].text
        ms = extract_mentions(cap, known, nlp)
        out.append(ms)
        raw.append({"image_id": q.image_id, "neighbour": train[j], "caption": cap,
                    "mentions": [[m.text, m.lemma, m.start] for m in ms]})
    f.write_text(json.dumps(raw))
    return out


def candidates_for(graph, queries, tags, name: str, fresh: bool, limit: int | None = None,
                   auto=None) -> dict:
    """Candidates of every query for input configuration ``name`` (cached): query id, node id,
    kind and the feature matrix, one row per candidate."""
    spec = CONFIGS[name]
    suffix = f"_first{limit}" if limit else ""
    f = bench_dir() / f"cands_{name}_v1{suffix}.npz"
    if f.is_file() and not fresh:
        with np.load(f, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    from tqdm import tqdm

    cfg = GistConfig(lift_tags=spec["lift"])
    qid, nodes, kinds, Xs = [], [], [], []
    for i, (q, t) in enumerate(tqdm(list(zip(queries, tags)), desc=f"candidates[{name}]")):
        mentions = {"human": q.mentions, "auto": auto[i] if auto else [], None: []}
        c = build_candidates(graph, mentions[spec["caption"]], t if spec["image"] else [], cfg)
        qid += [i] * len(c.nodes)
        nodes += c.ids(graph)
        kinds += c.kind
        Xs.append(c.X)
    out = {"qid": np.asarray(qid, np.int64), "nodes": np.asarray(nodes, dtype=str),
           "kind": np.asarray(kinds, dtype=str),
           "X": np.vstack(Xs) if Xs else np.zeros((0, len(FEATURES)))}
    np.savez(f, **out)  # a cache of derived data, not a model
    return out


# ---------------------------------------------------------------------- stage 3: CV + metrics
def labels(C: dict, queries) -> np.ndarray:
    return np.array(
        [C["nodes"][r] in queries[C["qid"][r]].grades for r in range(len(C["qid"]))], float)


def ranked_lists(C: dict, scores: np.ndarray, n_queries: int, rows=None) -> list[list[str]]:
    """Per query, candidate ids sorted by score (ties broken by a fixed random key)."""
    tie = np.random.default_rng(SEED + 1).random(len(scores))
    out: list[list[str]] = [[] for _ in range(n_queries)]
    keep = np.ones(len(scores), bool) if rows is None else rows
    for q in range(n_queries):
        r = np.flatnonzero((C["qid"] == q) & keep)
        order = r[np.lexsort((tie[r], -scores[r]))]
        out[q] = [str(x) for x in C["nodes"][order]]
    return out


def cv_scores(C: dict, queries, fold: np.ndarray, drop: tuple[str, ...] = ()
              ) -> tuple[np.ndarray, list]:
    """Held-out ranker scores of every candidate (each fold's ranker fit on the other folds)."""
    y = labels(C, queries)
    scores = np.zeros(len(y))
    models = []
    keep = [i for i, f in enumerate(FEATURES) if f not in drop]
    X = C["X"][:, keep]
    names = [FEATURES[i] for i in keep]
    for k in range(N_FOLDS):
        train = np.isin(C["qid"], np.flatnonzero(fold != k))
        test = ~train
        m = CoordinateAscentRanker(seed=SEED).fit(X[train], y[train], C["qid"][train], names)
        scores[test] = m.decision_function(X[test])
        models.append(m)
    return scores, models


def evaluate(rankings: list[list[str]], queries) -> dict[str, np.ndarray]:
    per: dict[str, list] = {k: [] for k in METRICS}
    for r, q in zip(rankings, queries):
        m = query_metrics(r, q.grades)
        for k in per:
            per[k].append(m[k])
    return {k: np.asarray(v, float) for k, v in per.items()}


def summary(per: dict[str, np.ndarray]) -> dict[str, float]:
    return {("MAP" if k == "AP" else k): float(np.nanmean(v)) for k, v in per.items()}


def run_examples(graph, ranker, data=None) -> list[dict]:
    """The project-made example set ranked by ``ranker`` (binary relevance of the gists)."""
    ds = _flickr(data)
    ex = load_examples()
    nlp, known = load_nlp(), concept_predicate(graph)
    logits = image_logits([ds.image_path(e["image_id"]) for e in ex])
    out = []
    for e, z in zip(ex, logits):
        c = build_candidates(graph, extract_mentions(e["caption"], known, nlp),
                             tags_from_logits(z, graph))
        order = np.argsort(-ranker.decision_function(c.X), kind="stable") if len(c.nodes) else []
        ranked = [graph.ids[c.nodes[i]] for i in order]
        grades = {g: 1 for g in e["gists"]}
        out.append({"label": e["label"], **query_metrics(ranked, grades),
                    "in_candidates": sum(g in ranked for g in grades) / len(grades)})
    return out


def benchmark(fresh: bool = False, limit: int | None = None, auto_captions: bool = True,
              data=None) -> tuple[dict, CoordinateAscentRanker]:
    """Every row of the report and the final ranker (fit on all queries)."""
    from xmodal.gist.wordnet import load_wordnet_graph

    t0 = time.time()
    graph = load_wordnet_graph()
    queries, tags = load_queries(graph, fresh, limit, data)
    n = len(queries)
    valid = np.array([len(q.grades) > 0 for q in queries])
    fold = group_folds(n, N_FOLDS, SEED)
    results: dict[str, dict] = {}
    per_query: dict[str, dict] = {}
    cands = {}
    auto = None
    for name, spec in CONFIGS.items():
        if spec["caption"] == "auto":
            if not auto_captions:
                continue
            if auto is None:
                auto = automatic_captions(queries, graph, fresh and limit is None, data)
        C = cands[name] = candidates_for(graph, queries, tags, name, fresh, limit, auto)
        y = labels(C, queries)
        log(f"{name}: {len(y)} candidates ({len(y) / n:.1f}/query), {int(y.sum())} relevant")
        s, _ = cv_scores(C, queries, fold)
        per_query[name] = evaluate(ranked_lists(C, s, n), queries)
        results[name] = summary({k: v[valid] for k, v in per_query[name].items()})
        results[name]["candidates_per_query"] = len(y) / n
        results[name]["recall_in_candidates"] = float(np.mean([
            len(set(C["nodes"][C["qid"] == q]) & set(queries[q].grades)) / len(queries[q].grades)
            for q in range(n) if queries[q].grades]))
        log(f"{name}: {results[name]}")
    C = cands["full"]
    for name, drop in FEATURE_ABLATIONS.items():
        s, _ = cv_scores(C, queries, fold, drop)
        per_query[name] = evaluate(ranked_lists(C, s, n), queries)
        results[name] = summary({k: v[valid] for k, v in per_query[name].items()})
        log(f"{name}: {results[name]}")
    col = {f: i for i, f in enumerate(FEATURES)}
    baselines = {"ql": C["X"][:, col["ql_reciprocal_rank"]],
                 "max_cluster_rel": C["X"][:, col["max_cluster_rel"]],
                 "random_seeds": np.random.default_rng(SEED).random(len(C["qid"]))}
    for name, s in baselines.items():
        rows = (C["kind"] == "seed") if name == "random_seeds" else None
        per_query[name] = evaluate(ranked_lists(C, s, n, rows), queries)
        results[name] = summary({k: v[valid] for k, v in per_query[name].items()})
        log(f"{name}: {results[name]}")
    tests = compare({k: {m: v[m][valid] for m in METRICS} for k, v in per_query.items()}, "full",
                    {m: "randomization" for m in METRICS}, seed=SEED)
    final = CoordinateAscentRanker(seed=SEED).fit(C["X"], labels(C, queries), C["qid"], FEATURES)
    out = {"n_queries": int(n), "n_queries_with_relevant": int(valid.sum()),
           "mean_relevant_per_query": float(np.mean([len(q.grades) for q in queries])),
           "results": results, "p_values_vs_full": tests,
           "final_weights": dict(zip(FEATURES, [round(float(w), 4) for w in final.weights_])),
           "examples": run_examples(graph, final, data) if limit is None else [],
           "runtime_s": round(time.time() - t0, 1)}
    return out, final


def reproduce(fresh: bool = False, limit: int | None = None, auto_captions: bool = True,
              data=None, out=None, asset=None, command: str = "xmodal reproduce gist") -> dict:
    """Run the benchmark; unless ``limit`` is set, write the shipped ranker and ``gist.json``
    (:func:`xmodal.reproduce.gist_report.write_report` renders the report from it)."""
    import datetime as dt

    from xmodal.provenance import git_commit
    from xmodal.reproduce.output import RESULTS, machine, write_json

    res, final = benchmark(fresh, limit, auto_captions, data)
    info = {"benchmark": f"flickr8k literal gist, {res['n_queries']} test images, caption #2",
            "git_commit": git_commit(), "date": dt.date.today().isoformat()}
    payload = {"command": command, **info, "machine": machine(), **res}
    if limit is None:
        final.save(asset or ASSET, provenance={**info, "command": command})
        write_json(Path(out or RESULTS) / "gist.json", payload)
    return payload
