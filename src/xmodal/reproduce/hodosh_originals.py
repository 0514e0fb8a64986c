"""Issue 18: is the gap to Hodosh et al. (2013) our 224-px re-encodes, or the code?

The same pipeline (visual words and spatial-pyramid image kernels, text kernels, exact KCCA,
dev-selected Borda ensembles: :class:`xmodal.models.hodosh.HodoshKCCA` with the parameters of the
settings table's ``hodosh-NAME-full`` records) is run on one set of Flickr8K photos held in
several copies (:data:`CONDITIONS`): our 224x224 re-encodes, the original-resolution photos, and
two controls (the originals shrunk to 224x224 here, our copies enlarged to 448x448). Every copy
learns its own codebooks from the same 200 of the set's official training images; captions, text
kernels, splits and folds are shared, so the copies differ only in their pixels.

Protocols, both restricted to the photo set:

* ``official``: train on its official training images, select (kappa, n) on its dev images, test
  on its test images x caption ``#2`` (both directions);
* ``cv``: k seeded folds over all photos (:func:`xmodal.eval.selection.kfold`); fold f is tested,
  fold f + 1 selects, the rest trains; per-query ranks (within each fold's pool) are pooled, so
  every photo is a query once per direction.

Relevance is the original pair (``gold``) or also every pair the crowd judged relevant (``crowd``,
yes-fraction >= 0.5, as ``flickr8k-hodosh-crowd``). Every copy is compared with the 224-px copies
through :func:`xmodal.eval.compare.compare` (McNemar for R@K, paired randomization for ranks and
R-precision). :func:`feature_comparison` compares the pixel features themselves.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.compare import compare
from xmodal.eval.metrics import retrieval_metrics
from xmodal.eval.protocol_types import pairs_to_relevance
from xmodal.reproduce.output import log

RESULT = "hodosh_originals"
REFERENCE = "224"
ENLARGED = "224@448"
# name: (which copy of the pixels, image kernel kind of xmodal.models.hodosh, description)
CONDITIONS = {
    "224": ("copies", "pyramid-native",
            "our 224x224 re-encodes (xmodal's Flickr8K release), as stored"),
    "originals": ("originals", "pyramid-native",
                  "the original photos at their own resolution (about 500x375)"),
    "originals@224": ("originals", "pyramid",
                      "the originals shrunk to 224x224 here (area interpolation, no re-encode)"),
    "224@448": ("copies", "pyramid448",
                "our 224x224 copies enlarged to 448x448 (cubic; the full run's '-448' systems)"),
}
DEFAULT_SYSTEMS = ("bow5", "tagrank", "tri5", "tri5sem")
FOLDS = 8
MIN_YES = 0.5
FEATURES = ("colour", "texture", "sift")
TESTS = {"R@1": "mcnemar", "R@5": "mcnemar", "R@10": "mcnemar", "rank": "randomization"}
CROWD_TESTS = {**TESTS, "R-P": "randomization"}
SUMMARY_KEYS = ("R@1", "R@5", "R@10", "medR", "meanR", "R-P", "mAP@R")
DEFAULT_ORIGINALS = Path(os.environ.get(  # beside the repository, as the issue suggests
    "XMODAL_FLICKR8K_ORIGINALS",
    Path(__file__).resolve().parents[3].parent / "data" / "flickr8k-originals"))


# ------------------------------------------------------------------------------------ data
def datasets(originals: str | Path, data=None) -> dict:
    """``{"copies": Flickr8k, "originals": Flickr8kOriginals, "ids": the photo set}``."""
    from xmodal.data.flickr8k_originals import load_flickr8k_originals
    from xmodal.recipes.flickr8k import load_hodosh_data

    orig = load_flickr8k_originals(originals, data)
    copies = load_hodosh_data(data).data
    missing = [i for i in orig.image_ids if not copies.image_path(i).is_file()]
    if missing:
        raise XmodalError(f"{len(missing)} original photos have no 224-px copy, e.g. {missing[0]}")
    return {"copies": copies, "originals": orig, "ids": list(orig.image_ids)}


def image_set_name(copy: str, ids: Sequence[str]) -> str:
    """The cache name of one copy of the photo set (own codebooks, words and kernels)."""
    from xmodal.models.hodosh import config_hash

    prefix = "flickr8k224" if copy == "copies" else "flickr8k-originals"
    return f"{prefix}-{config_hash(sorted(ids))}"


def hodosh_data(ds: dict, condition: str, train: Sequence[str], dev: Sequence[str],
                test: Sequence[str]):
    """The :class:`HodoshData` of one copy and one split (image kernels over the whole set)."""
    from xmodal.models.hodosh import HodoshData
    from xmodal.recipes.flickr8k import caption_tokens

    copy = CONDITIONS[condition][0]
    return HodoshData(ds[copy], list(train), list(dev), list(test),
                      image_set=image_set_name(copy, ds["ids"]), kernel_ids=list(ds["ids"]),
                      tokens_of=caption_tokens)


def splits(ds: dict, folds: int = FOLDS, seed: int = 0) -> dict[str, tuple[list, list, list]]:
    """``{"official": (train, dev, test), "cv-0": ..., ...}`` over the photo set."""
    from xmodal.eval.selection import kfold

    o = ds["originals"]
    out = {"official": (o.split("train"), o.split("dev"), o.split("test"))}
    ids = ds["ids"]
    parts = [held for _, held in kfold(len(ids), folds, seed)]
    for f in range(folds):
        test, dev = parts[f], parts[(f + 1) % folds]
        rest = sorted(set(range(len(ids))) - set(test) - set(dev))
        out[f"cv-{f}"] = ([ids[i] for i in rest], [ids[i] for i in dev], [ids[i] for i in test])
    return out


def system_params(system: str, kind: str, n_train: int) -> dict:
    """The settings table's exact-kernel record ``hodosh-SYSTEM-full`` with this image kernel,
    its rank and landmarks capped by the training set (so: exact KCCA on every training image)."""
    from xmodal.recipes.flickr8k import get_hodosh_setting

    params = dict(get_hodosh_setting(f"hodosh-{system}-full").params)
    params.update(image_kernel=kind, rank=min(params["rank"], n_train),
                  n_landmarks=max(params["n_landmarks"], n_train))
    return params


# ------------------------------------------------------------------------------------ runs
def relevance(ds: dict, images: Sequence[str], kind: str):
    """(n_images, n_captions) relevance of a pool of images x their caption #2."""
    caps = [f"{i}#2" for i in images]
    pairs = [(i, f"{i}#2") for i in images]
    if kind == "crowd":
        pairs += [(c.image_id, c.caption_id) for c in ds["copies"].crowd
                  if c.yes_fraction >= MIN_YES]
    return pairs_to_relevance(list(images), caps, pairs)


def run_split(ds: dict, condition: str, system: str, split: tuple,
              selected: list | None = None) -> dict[str, np.ndarray]:
    """``{"i2t": S, "t2i": S}`` on the split's test pool (images x caption #2); the 15 dev-selected
    (kappa, n) of each task are appended to ``selected`` if given."""
    from xmodal.models.hodosh import HodoshKCCA, config_hash

    import json

    from xmodal.models.hodosh import cache_root

    train, dev, test = split
    hd = hodosh_data(ds, condition, train, dev, test)
    params = system_params(system, CONDITIONS[condition][1], len(train))
    # the scores and selection of a run are cached (a rerun of the report takes seconds)
    key = config_hash(params, hd.image_set, list(train), list(dev), list(test),
                      HodoshKCCA.SAVE_VERSION)
    path = cache_root() / "originals_runs" / f"{condition}-{system}-{key}.npy"
    sel_path = path.with_suffix(".json")
    if not (path.is_file() and sel_path.is_file()):
        model = HodoshKCCA(**params).fit(hd)
        caps, docs = hd.pool(hd.test_ids)
        scores = model.score(hd.test_ids, docs, f"pool-{config_hash(caps)}")
        chosen = {t: [(r["kappa"], r["n"]) for r in rows] for t, rows in model.selected_.items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        sel_path.write_text(json.dumps(chosen))
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, np.stack([scores["i2t"], scores["t2i"]]))  # both (images, captions)
        tmp.replace(path)
    if selected is not None:
        selected.append(json.loads(sel_path.read_text()))
    both = np.load(path)
    return {"i2t": both[0], "t2i": both[1]}


def selection_summary(runs: list) -> dict:
    """How often each kappa was among the selected settings, and the median n, per task."""
    out = {}
    for t in ("i2t", "t2i"):
        picks = [kn for r in runs for kn in r[t]]
        kappas = sorted({k for k, _ in picks})
        out[t] = {"kappa_share": {str(k): round(sum(x == k for x, _ in picks) / len(picks), 3)
                                  for k in kappas},
                  "median_n": float(np.median([n for _, n in picks]))}
    return out


EFFECT_KEYS = ("R@1", "R@5", "R@10", "R-P")


def paired_bootstrap(a: dict, b: dict, keys=EFFECT_KEYS, n: int = 2000, seed: int = 0) -> dict:
    """``{metric: [mean(a) - mean(b), ratio mean(a) / mean(b), 95% CI of the ratio]}`` over the
    same queries, resampled jointly (percentile bootstrap); the median rank as a difference."""
    rng = np.random.default_rng(seed)
    valid = ~(np.isnan(a["rank"]) | np.isnan(b["rank"]))
    idx = rng.integers(0, int(valid.sum()), size=(n, int(valid.sum())))
    out = {}
    for k in keys:
        x, y = np.asarray(a[k])[valid], np.asarray(b[k])[valid]
        bx, by = x[idx].mean(1), y[idx].mean(1)
        ratio = bx / np.maximum(by, 1e-12)
        out[k] = {"diff": float(x.mean() - y.mean()),
                  "ratio": float(x.mean() / y.mean()) if y.mean() > 0 else float("nan"),
                  "ratio_ci": [float(np.percentile(ratio, 2.5)), float(np.percentile(ratio, 97.5))]}
    ra, rb = np.asarray(a["rank"])[valid], np.asarray(b["rank"])[valid]
    out["medR"] = {"diff": float(np.median(ra) - np.median(rb))}
    return out


def per_query(ds: dict, test: Sequence[str], scores: dict) -> dict:
    """``{relevance: {direction: per-query arrays}}`` of one pool."""
    out: dict = {}
    for rel_kind in ("gold", "crowd"):
        rel = relevance(ds, test, rel_kind)
        for d in ("i2t", "t2i"):
            s = scores[d] if d == "i2t" else np.ascontiguousarray(scores[d].T)
            r = rel if d == "i2t" else rel.T.tocsr()
            _, pq = retrieval_metrics(np.ascontiguousarray(s), r, per_query=True)
            out.setdefault(rel_kind, {})[d] = pq
    return out


def summary(pq: dict) -> dict:
    """Means (R@K, R-P, mAP@R), median and mean rank, over the queries with a relevant item."""
    valid = ~np.isnan(pq["rank"])
    out = {k: float(np.mean(pq[k][valid])) for k in ("R@1", "R@5", "R@10", "R-P", "mAP@R")}
    out["medR"] = float(np.median(pq["rank"][valid]))
    out["meanR"] = float(np.mean(pq["rank"][valid]))
    out["n_queries"] = int(valid.sum())
    return out


def evaluate(ds: dict, systems: Sequence[str], conditions: Sequence[str],
             folds: int = FOLDS, seed: int = 0) -> dict:
    """Every (split, system, condition): metrics, paired tests against the 224-px copies."""
    from rich.progress import Progress

    all_splits = splits(ds, folds, seed)
    jobs = [(c, s, name) for name in all_splits for s in systems for c in conditions]
    pq: dict = {}  # protocol -> relevance -> direction -> system -> condition -> arrays
    chosen: dict = {}  # protocol -> system -> condition -> selected settings of each split
    t0 = time.time()
    with Progress(transient=False) as bar:
        task = bar.add_task("KCCA runs", total=len(jobs))
        for condition, system, name in jobs:
            bar.update(task, description=f"{system} on {condition}, {name}")
            protocol = "official" if name == "official" else "cv"
            scores = run_split(ds, condition, system, all_splits[name],
                               chosen.setdefault(protocol, {}).setdefault(system, {})
                               .setdefault(condition, []))
            for rel_kind, dirs in per_query(ds, all_splits[name][2], scores).items():
                for d, values in dirs.items():
                    slot = (pq.setdefault(protocol, {}).setdefault(rel_kind, {})
                            .setdefault(d, {}).setdefault(system, {}))
                    if condition in slot:  # cv: pool the folds' per-query values
                        slot[condition] = {k: np.concatenate([slot[condition][k], v])
                                           for k, v in values.items()}
                    else:
                        slot[condition] = values
            bar.advance(task)
    res: dict = {"metrics": {}, "significance": {}, "effects": {}, "against_enlarged": {},
                 "runs_seconds": round(time.time() - t0, 1),
                 "selection": {p: {s: {c: selection_summary(r) for c, r in per_c.items()}
                                   for s, per_c in per_s.items()} for p, per_s in chosen.items()}}
    for protocol, rels in pq.items():
        for rel_kind, dirs in rels.items():
            tests = CROWD_TESTS if rel_kind == "crowd" else TESTS
            for d, per_sys in dirs.items():
                for system, per_cond in per_sys.items():
                    m = {c: summary(v) for c, v in per_cond.items()}
                    (res["metrics"].setdefault(protocol, {}).setdefault(rel_kind, {})
                     .setdefault(d, {}))[system] = m
                    if REFERENCE in per_cond and len(per_cond) > 1:
                        (res["significance"].setdefault(protocol, {}).setdefault(rel_kind, {})
                         .setdefault(d, {}))[system] = compare(per_cond, REFERENCE, tests)
                        (res["effects"].setdefault(protocol, {}).setdefault(rel_kind, {})
                         .setdefault(d, {}))[system] = {
                            c: paired_bootstrap(v, per_cond[REFERENCE])
                            for c, v in per_cond.items() if c != REFERENCE}
                    if {"originals", ENLARGED} <= set(per_cond):  # the originals vs enlarging
                        pair = {c: per_cond[c] for c in ("originals", ENLARGED)}
                        (res["against_enlarged"].setdefault(protocol, {}).setdefault(rel_kind, {})
                         .setdefault(d, {}))[system] = {
                            "p": compare(pair, ENLARGED, tests)["originals"],
                            "effect": paired_bootstrap(pair["originals"], pair[ENLARGED])}
    res["splits"] = {n: [len(x) for x in sp] for n, sp in all_splits.items()}
    return res


# ------------------------------------------------------------------------------ features
def _offdiag(k: np.ndarray) -> np.ndarray:
    return k[~np.eye(len(k), dtype=bool)]


def kernel_stats(k: np.ndarray) -> dict:
    """Scale and spread of a kernel matrix: off-diagonal mean / sd, and the participation ratio
    ``(sum l)^2 / sum l^2`` of the centred kernel's eigenvalues (its effective dimension)."""
    k = np.asarray(k, dtype=np.float64)
    n = len(k)
    h = np.eye(n) - 1.0 / n
    ev = np.clip(np.linalg.eigvalsh(h @ k @ h), 0, None)
    off = _offdiag(k)
    return {"mean_offdiag": float(off.mean()), "sd_offdiag": float(off.std()),
            "effective_dim": float(ev.sum() ** 2 / (ev ** 2).sum())}


def kernel_agreement(a: np.ndarray, b: np.ndarray, top: int = 10) -> dict:
    """How alike two kernels over the same images are: Pearson and Spearman correlation of the
    off-diagonal entries, the mean per-image Spearman correlation of the similarity rows, and the
    mean overlap of each image's ``top`` nearest neighbours."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    oa, ob = _offdiag(a), _offdiag(b)
    n = len(a)
    mask = ~np.eye(n, dtype=bool)
    rows = [stats.spearmanr(a[i][mask[i]], b[i][mask[i]]).statistic for i in range(n)]
    na = np.argsort(-np.where(mask, a, -np.inf), axis=1)[:, :top]
    nb = np.argsort(-np.where(mask, b, -np.inf), axis=1)[:, :top]
    overlap = [len(set(x) & set(y)) / top for x, y in zip(na, nb)]
    return {"pearson": float(np.corrcoef(oa, ob)[0, 1]),
            "spearman": float(stats.spearmanr(oa, ob).statistic),
            "row_spearman": float(np.mean(rows)), f"top{top}_overlap": float(np.mean(overlap))}


def _kernels(ds: dict, condition: str, train: Sequence[str]) -> dict[str, np.ndarray]:
    """The per-feature and combined (p = 2) image kernels of one copy over the whole set."""
    from xmodal.models.hodosh import ImageSide

    hd = hodosh_data(ds, condition, train, [], [])
    side = ImageSide(hd, CONDITIONS[condition][1], 2.0)
    ids = ds["ids"]
    out = {f: np.asarray(side.feature_block(ids, ids, f)) for f in FEATURES}
    out["combined"] = np.asarray(side.block(ids, ids))
    return out


def shared_codebook_histograms(ds: dict, train: Sequence[str]) -> dict:
    """Level-0 visual-word histograms of every photo as a 224-px copy and as an original, both
    quantised with the 224-px copies' codebooks: the same image's two versions against each
    other (intersection, 1 = identical) and against the other images."""
    import shutil

    from xmodal.features.image_kernels import histogram_intersection, pyramid_histograms
    from xmodal.features.visual_words import VisualWordCache, VisualWordConfig
    from xmodal.models.hodosh import cache_root

    ids = ds["ids"]
    native = VisualWordConfig(size=None)
    copies = VisualWordCache(image_set_name("copies", ids), native)
    copies.codebooks([ds["copies"].image_path(i) for i in train])
    root = cache_root() / f"{image_set_name('originals', ids)}-books224-{native.key()}"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "codebooks.npz").is_file():
        shutil.copyfile(copies.codebook_file, root / "codebooks.npz")
    orig = VisualWordCache("", native, root=root)
    wc = copies.words(ids, [ds["copies"].image_path(i) for i in ids])
    wo = orig.words(ids, [ds["originals"].image_path(i) for i in ids])
    out = {}
    for f, n_words in zip(FEATURES, native.n_words):
        hc = pyramid_histograms(wc[f], n_words, levels=1)
        ho = pyramid_histograms(wo[f], n_words, levels=1)
        cross = histogram_intersection(ho, hc)  # originals x copies
        same = np.diagonal(cross)
        within = histogram_intersection(hc)
        self_rank = 1 + (cross > same[:, None]).sum(1)  # rank of its own copy among the copies
        out[f] = {"same_image": float(same.mean()), "same_image_sd": float(same.std()),
                  "other_images_copies": float(_offdiag(within).mean()),
                  "other_images_cross": float(_offdiag(cross).mean()),
                  "own_copy_rank1": float(np.mean(self_rank == 1)),
                  "own_copy_median_rank": float(np.median(self_rank))}
    return out


def feature_comparison(ds: dict, conditions: Sequence[str]) -> dict:
    """Kernel statistics per copy, agreement of every copy's kernels with the 224-px copies' and
    with the originals', and the shared-codebook histogram comparison."""
    train = ds["originals"].split("train")
    k = {c: _kernels(ds, c, train) for c in conditions}
    out: dict = {"kernel_stats": {c: {f: kernel_stats(m) for f, m in kc.items()}
                                  for c, kc in k.items()},
                 "agreement": {}}
    for ref in (REFERENCE, "originals"):
        if ref not in k:
            continue
        out["agreement"][ref] = {c: {f: kernel_agreement(k[c][f], k[ref][f]) for f in k[c]}
                                 for c in conditions if c != ref}
    out["shared_codebook"] = shared_codebook_histograms(ds, train)
    return out


def image_sizes(ds: dict) -> dict:
    """Pixel sizes of the originals (from the file headers)."""
    from PIL import Image

    sizes = []
    for i in ds["ids"]:
        with Image.open(ds["originals"].image_path(i)) as im:
            sizes.append(im.size)
    w, h = np.array(sizes).T
    return {"n": len(sizes), "median_width": float(np.median(w)),
            "median_height": float(np.median(h)), "max_side": int(max(w.max(), h.max())),
            "min_side": int(min(w.min(), h.min())),
            "median_pixels_vs_224": float(np.median(w * h) / 224 ** 2)}


# ------------------------------------------------------------------------------ reproduce
def prime(ds: dict, conditions: Sequence[str]) -> dict[str, float]:
    """Codebooks (from the official training photos of the set), visual words and image kernels
    of every copy over the whole set; seconds per copy."""
    from xmodal.models.hodosh import ImageSide

    o = ds["originals"]
    out = {}
    for c in conditions:
        t0 = time.time()
        hd = hodosh_data(ds, c, o.split("train"), o.split("dev"), o.split("test"))
        ImageSide(hd, CONDITIONS[c][1]).block(ds["ids"], ds["ids"])
        out[c] = round(time.time() - t0, 1)
        log(f"{c}: visual words and image kernels over {len(ds['ids'])} photos "
            f"({out[c]:.0f} s, 0 if cached)")
    return out


def reproduce(originals: str | Path | None = None, systems: Sequence[str] | None = None,
              conditions: Sequence[str] | None = None, folds: int = FOLDS, data=None,
              out=None, command: str = "xmodal reproduce hodosh --part originals") -> dict:
    """Run everything and write ``hodosh_originals.json``; the report compares it with the
    8K numbers of ``hodosh_reproduction.json`` when it renders."""
    import json

    from xmodal.reproduce.output import RESULTS, record

    systems = list(systems or DEFAULT_SYSTEMS)
    conditions = list(conditions or CONDITIONS)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown or REFERENCE not in conditions:
        raise XmodalError(f"conditions must include {REFERENCE!r} and be among {list(CONDITIONS)}")
    ds = datasets(originals or DEFAULT_ORIGINALS, data)
    t0 = time.time()
    res: dict = {"systems": systems, "conditions": {c: CONDITIONS[c][2] for c in conditions},
                 "reference": REFERENCE, "folds": folds, "min_yes_fraction": MIN_YES,
                 "images": image_sizes(ds),
                 "params": {s: system_params(s, "pyramid-native", 753) for s in systems}}
    res["timings"] = {"features_s": prime(ds, conditions)}
    res.update(evaluate(ds, systems, conditions, folds))
    t1 = time.time()
    res["features"] = feature_comparison(ds, conditions)
    res["timings"].update(runs_s=res.pop("runs_seconds"), comparison_s=round(time.time() - t1, 1),
                          total_s=round(time.time() - t0, 1))
    saved = json.loads(json.dumps(res, default=float))
    path = record(RESULT, saved, command, out or RESULTS)
    log(f"wrote {path}")
    return res
