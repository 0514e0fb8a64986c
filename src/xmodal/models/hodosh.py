"""Hodosh, Young & Hockenmaier (2013) ranking systems on Flickr8K: NN5 and KCCA ensembles.

A *system* pairs a text kernel (``xmodal.features.text_kernels``) with an image kernel:

* ``pyramid`` – colour, texture and SIFT spatial-pyramid intersection kernels, averaged and
  raised to the power p (``xmodal.features.image_kernels``);
* ``histogram`` – the same with a single pyramid level;
* ``effnet`` – cosine similarity of EfficientNet-Lite0 pooled features (clipped at 0), to the
  power p: the "modern image features" variant.

Training (§4.1.3): a low-rank KCCA (:mod:`xmodal.models.kcca`) on the 6,000 training images, the
text side built from the five captions of each image. The image kernel is computed only against
``n_landmarks`` seeded training images (pivots are chosen among them), the text kernel in full.
For each task the 5 best (kappa, n) settings on the dev pool (1,000 dev images x their caption
``#2``) by R@1, by R@5 and by R@10 (15 models) are combined by Borda count with median-rank
tie-breaks (:func:`xmodal.eval.stats.borda`).

Everything expensive is cached under ``cache_dir()/hodosh``: visual words, image-kernel blocks,
text-kernel matrices and trained systems (saved model directories, ``config.json`` + ``.npz``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError
from xmodal.eval.selection import ranked
from xmodal.features.image_kernels import (
    ImageKernelCache,
    combine_kernels,
    cosine_kernel,
    histogram_intersection,
    pyramid_histograms,
)
from xmodal.models.kcca import KCCA, LandmarkKernel, PrecomputedKernel
from xmodal.models.modeldir import read_model_dir, write_model_dir
from xmodal.paths import cache_dir

KAPPAS = (0.1, 0.5, 1.0, 5.0)
N_GRID = (
    10, 15, 20, 25, 30, 40, 50, 60, 75, 90, 100, 125, 150, 175, 200, 250, 300, 350, 400, 450,
    500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000,
)
# "pyramid112" / "pyramid448": the pyramid kernel on images resized to 112 x 112 or 448 x 448 with
# the same pixel-level feature parameters: the first halves the detail (a resolution ablation),
# the second gives descriptors the scale and density relative to the image content that they had
# on the paper's ~500 x 375 originals (upsampling adds no detail). "pyramid-native": every image at
# its own resolution (the same as "pyramid" on our 224 x 224 copies; the originals keep theirs).
RESIZED_PYRAMIDS = {"pyramid112": 112, "pyramid448": 448, "pyramid-native": None}
IMAGE_KERNELS = ("pyramid", "histogram", "effnet", *RESIZED_PYRAMIDS)
TOP_PER_METRIC = 5
SELECT_METRICS = ("R@1", "R@5", "R@10")


def _log(msg: str) -> None:
    print(f"[hodosh] {msg}", file=sys.stderr, flush=True)


def config_hash(*parts: Any) -> str:
    """A short stable hash of JSON-able parts (cache keys)."""
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cache_root() -> Path:
    """The folder of the Hodosh kernel and system caches (under ``$XMODAL_CACHE``)."""
    p = cache_dir() / "hodosh"
    p.mkdir(parents=True, exist_ok=True)
    return p


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
@dataclass
class HodoshData:
    """Flickr8K as the paper uses it: 6,000 training images with 5 captions, dev/test pools.

    ``image_set`` names the copy of the pixels in the cache keys (visual words, image kernels):
    ``"flickr8k"`` is our 224-px release; another name (e.g. the original-resolution photos, whose
    ``data.image_path`` points elsewhere) gets its own codebooks, words and kernels. With
    ``kernel_ids``, image kernels are computed once over these images and sliced (folds of a
    cross-validation share one matrix)."""

    data: Any
    train_ids: list[str]
    dev_ids: list[str]
    test_ids: list[str]
    image_set: str = "flickr8k"
    kernel_ids: list[str] | None = None
    # data root -> {caption id: preprocessed tokens}; the recipe that loads the data supplies it
    tokens_of: Callable[[Any], dict[str, list]] | None = None

    @property
    def tokens(self) -> dict[str, list]:
        if self.tokens_of is None:
            raise XmodalError("these Hodosh data carry no caption tokens; load them with "
                              "xmodal.recipes.flickr8k.load_hodosh_data")
        return self.tokens_of(self.data.root)

    @property
    def tokens_digest(self) -> str:
        """A hash of every caption's tokens: the text kernels' and trained systems' cache keys
        hold it, so that a change in caption preprocessing never serves stale ones."""
        if not hasattr(self, "_tokens_digest"):
            self._tokens_digest = config_hash(sorted(self.tokens.items()))
        return self._tokens_digest

    def train_docs(self) -> list[list[list]]:
        tok = self.tokens
        return [[tok[c.id] for c in self.data.captions_of(i)] for i in self.train_ids]

    def pool(self, image_ids: Sequence[str], index: int = 2) -> tuple[list[str], list[list[list]]]:
        """Caption ids ``<image>#index`` and their one-caption docs."""
        tok = self.tokens
        ids = [f"{i}#{index}" for i in image_ids]
        return ids, [[tok[c]] for c in ids]

    def image_path(self, image_id: str) -> Path:
        return self.data.image_path(image_id)


# --------------------------------------------------------------------------------------------
# image kernels
# --------------------------------------------------------------------------------------------
class ImageSide:
    """Computes (and caches) image-kernel blocks between sets of Flickr8K image ids."""

    def __init__(self, hd: HodoshData, kind: str = "pyramid", power: float = 2.0):
        if kind not in IMAGE_KERNELS:
            raise XmodalError(f"unknown image kernel {kind!r}; choose from {IMAGE_KERNELS}")
        # duck-typed data without the two fields: the 224-px release, no kernel slicing
        self.image_set = getattr(hd, "image_set", "flickr8k")
        self.kernel_ids = getattr(hd, "kernel_ids", None)
        if kind == "effnet" and self.image_set != "flickr8k":
            raise XmodalError("the effnet image kernel reads the cached features of the 224-px "
                              f"release only, not of image set {self.image_set!r}")
        self.hd, self.kind, self.power = hd, kind, float(power)
        self.store = ImageKernelCache(cache_root() / "image_kernels")

    # per-feature base kernels (not yet averaged / powered)
    def _histograms(self, ids: Sequence[str], feature: str) -> np.ndarray:
        from xmodal.features.visual_words import VisualWordCache, VisualWordConfig

        if self.kind in RESIZED_PYRAMIDS:
            cache = VisualWordCache(self.image_set,
                                    VisualWordConfig(size=RESIZED_PYRAMIDS[self.kind]))
        else:
            cache = VisualWordCache(self.image_set)
        words = cache.words(
            list(ids),
            [self.hd.image_path(i) for i in ids],
            train_paths=[self.hd.image_path(i) for i in self.hd.train_ids],
        )[feature]
        n_words = dict(zip(("colour", "texture", "sift"), cache.cfg.n_words))[feature]
        levels = 1 if self.kind == "histogram" else 3
        return pyramid_histograms(words, n_words, levels=levels)

    def _effnet(self, ids: Sequence[str]) -> np.ndarray:
        from xmodal.features import flickr8k_image_features

        all_ids, feats = flickr8k_image_features(self.hd.data, progress=False)
        pos = {k: n for n, k in enumerate(all_ids)}
        return np.asarray(feats.pooled)[[pos[i] for i in ids]]

    def block(self, rows: Sequence[str], cols: Sequence[str]) -> np.ndarray:
        """The image kernel ``K[rows, cols]`` (float32)."""
        rows, cols = list(rows), list(cols)
        universe = self.kernel_ids
        if universe is not None and (rows, cols) != (universe, universe):
            pos = {k: n for n, k in enumerate(universe)}
            if all(i in pos for i in rows) and all(i in pos for i in cols):
                full = self.block(universe, universe)
                return np.ascontiguousarray(full[np.ix_([pos[i] for i in rows],
                                                        [pos[i] for i in cols])])
        if self.kind == "effnet":
            base = self.store.get(
                "effnet-cos", rows, cols,
                lambda: cosine_kernel(self._effnet(rows), self._effnet(cols)),
            )
            return np.asarray(base, dtype=np.float32) ** self.power
        parts = [self.feature_block(rows, cols, f) for f in ("colour", "texture", "sift")]
        return combine_kernels(parts, self.power)

    def feature_block(self, rows: Sequence[str], cols: Sequence[str], feature: str) -> np.ndarray:
        """One feature's pyramid (or histogram) intersection kernel ``K[rows, cols]``, before the
        three are averaged and powered (cached)."""
        rows, cols = list(rows), list(cols)
        name = f"{self.kind}-{feature}"
        if self.image_set != "flickr8k":
            name = f"{self.image_set}-{name}"

        def compute():
            t0 = time.time()
            a = self._histograms(rows, feature)
            b = a if rows == cols else self._histograms(cols, feature)
            k = histogram_intersection(a, b)
            _log(f"{name}: {len(rows)}x{len(cols)} in {time.time() - t0:.0f}s")
            return k

        return np.asarray(self.store.get(name, rows, cols, compute))


def landmarks(train_ids: Sequence[str], n: int, seed: int = 0) -> list[str]:
    """A seeded random subset of training images (in training order)."""
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(train_ids), size=min(n, len(train_ids)), replace=False))
    return [train_ids[i] for i in pick]


# --------------------------------------------------------------------------------------------
# text kernels
# --------------------------------------------------------------------------------------------
class TextSide:
    """A fitted text kernel plus cached matrices for the training and pool documents."""

    def __init__(self, hd: HodoshData, name: str):
        from xmodal.features.text_kernels import make_text_kernel

        self.hd, self.name = hd, name
        self.train_docs = hd.train_docs()
        self.kernel = make_text_kernel(name)
        self._fitted = False

    def _fit(self) -> None:
        if not self._fitted:
            t0 = time.time()
            self.kernel.fit(self.train_docs)
            self._fitted = True
            _log(f"text kernel {self.name}: fitted in {time.time() - t0:.0f}s")

    def _cached(self, tag: str, compute) -> np.ndarray:
        from xmodal.features import text_kernels

        version = str(getattr(text_kernels, "KERNELS_VERSION", "1"))
        prefix = "" if version == "1" else f"v{version}-"  # caches from version 1 keep their names
        path = cache_root() / "text_kernels" / f"{prefix}{self.name}-{tag}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            return np.load(path, mmap_mode="r")
        self._fit()
        t0 = time.time()
        k = np.asarray(compute(), dtype=np.float32)
        _log(f"text kernel {self.name}: {tag} {k.shape} in {time.time() - t0:.0f}s")
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, k)
        tmp.replace(path)
        return k

    def train(self) -> np.ndarray:
        key = config_hash(self.hd.train_ids, self.hd.tokens_digest)
        return self._cached(f"train-{key}", lambda: self.kernel.gram(self.train_docs))

    def against(self, docs: Sequence, tag: str, columns: Sequence[int] | None = None):
        """``K[docs, training items]`` (all items, or only ``columns``), cached under ``tag``."""
        cols = list(range(len(self.train_docs))) if columns is None else list(columns)
        key = f"{tag}-{config_hash(self.hd.train_ids, cols, self.hd.tokens_digest)}"
        return self._cached(key, lambda: self.kernel.kernel(docs, [self.train_docs[c] for c in cols]))


# --------------------------------------------------------------------------------------------
# evaluation helpers
# --------------------------------------------------------------------------------------------
def pool_metrics(scores: np.ndarray, relevance=None) -> dict[str, dict[str, float]]:
    """R@K/medR of both tasks for a square pool where only the diagonal is relevant."""
    from xmodal.eval.metrics import retrieval_metrics

    n_i, n_t = scores.shape
    rel = relevance if relevance is not None else np.eye(n_i, n_t, dtype=bool)
    rel_t = rel.T if not hasattr(rel, "tocsr") else rel.T.tocsr()
    return {
        "i2t": retrieval_metrics(scores, rel),
        "t2i": retrieval_metrics(np.ascontiguousarray(scores.T), rel_t),
    }


def _cosine_scores(zx: np.ndarray, zy: np.ndarray, n: int) -> np.ndarray:
    a = zx[:, :n]
    b = zy[:, :n]
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return a @ b.T


def best_dev_row(rows: list[dict], task: str) -> dict:
    """The dev-grid row with the best R@5 + R@10 on ``task`` (ties: the lower medR, then the
    grid order): the single best dev model."""
    return ranked(rows, lambda r: (r[task]["R@5"] + r[task]["R@10"], -r[task]["medR"]))[0]


def select_settings(rows: list[dict], task: str) -> list[dict]:
    """The 5 best settings by each of R@1, R@5, R@10 on ``task`` (15, repeats kept).

    Ties on a metric are broken by the lower median rank, then by the sum of the three metrics
    (compared at :data:`xmodal.eval.selection.SCORE_REL_PRECISION`, so that sums equal but for
    float rounding tie), then by the grid's order.
    """
    chosen = []
    for metric in SELECT_METRICS:
        best = ranked(rows, lambda r: (r[task][metric], -r[task]["medR"],
                                       sum(r[task][m] for m in SELECT_METRICS)))
        chosen.extend({"kappa": r["kappa"], "n": r["n"], "by": metric}
                      for r in best[:TOP_PER_METRIC])
    return chosen


# --------------------------------------------------------------------------------------------
# KCCA system
# --------------------------------------------------------------------------------------------
class HodoshKCCA:
    """A Hodosh KCCA system: one text kernel, one image kernel, a dev-selected Borda ensemble."""

    def __init__(
        self,
        text_kernel: str = "bow5",
        image_kernel: str = "pyramid",
        power: float = 2.0,
        diag_factor: float = 1.0,
        rank: int = 1500,
        n_landmarks: int = 1500,
        text_landmarks: bool = False,
        kappas: Sequence[float] = KAPPAS,
        n_grid: Sequence[int] = N_GRID,
        seed: int = 0,
    ):
        self.text_kernel = text_kernel
        self.image_kernel = image_kernel
        self.power = power
        self.diag_factor = diag_factor
        self.rank = rank
        self.n_landmarks = n_landmarks
        self.text_landmarks = text_landmarks
        self.kappas = tuple(kappas)
        self.n_grid = tuple(n_grid)
        self.seed = seed

    def config(self) -> dict:
        return {
            "type": "hodosh-kcca",
            "text_kernel": self.text_kernel,
            "image_kernel": self.image_kernel,
            "power": self.power,
            "diag_factor": self.diag_factor,
            "rank": self.rank,
            "n_landmarks": self.n_landmarks,
            "text_landmarks": self.text_landmarks,
            "kappas": list(self.kappas),
            "n_grid": list(self.n_grid),
            "seed": self.seed,
        }

    def fit(self, hd: HodoshData) -> HodoshKCCA:
        t0 = time.time()
        self.hd_ = hd
        image = ImageSide(hd, self.image_kernel, self.power)
        text = TextSide(hd, self.text_kernel)
        marks = landmarks(hd.train_ids, self.n_landmarks, self.seed)
        pos = {k: n for n, k in enumerate(hd.train_ids)}
        mark_idx = np.array([pos[m] for m in marks])
        k_img = image.block(hd.train_ids, marks)  # (6000, m)
        img_src = LandmarkKernel(k_img, mark_idx, np.ones(len(hd.train_ids)))
        if self.text_landmarks:  # text kernel only against the landmark items (Nystrom)
            k_txt = text.against(self.train_docs_of(text), "train-landmarks", list(mark_idx))
            txt_src = LandmarkKernel(k_txt, mark_idx, np.ones(len(hd.train_ids)))
        else:
            txt_src = PrecomputedKernel(text.train())
        self.model_ = KCCA(kappa=self.kappas[0], rank=self.rank, diag_factor=self.diag_factor)
        self.model_.fit(img_src, txt_src)
        self.train_seconds_ = time.time() - t0
        _log(
            f"{self.text_kernel}/{self.image_kernel}: KCCA factors "
            f"{len(self.model_.pivots_x_)}x{len(self.model_.pivots_y_)} in {self.train_seconds_:.0f}s"
        )
        self.landmarks_ = marks
        mark_pos = {int(t): j for j, t in enumerate(mark_idx)}
        self.pivot_cols_ = [mark_pos[int(i)] for i in self.model_.pivots_x_]
        self.pivot_items_ = [int(i) for i in self.model_.pivots_y_]

        # dev grid
        dev_caps, dev_docs = hd.pool(hd.dev_ids)
        kx_dev = image.block(hd.dev_ids, marks)[:, self.pivot_cols_]
        ky_dev = text.against(dev_docs, f"dev-{config_hash(dev_caps)}", self.pivot_items_)
        fx, fy = self.model_.features_x(kx_dev), self.model_.features_y(ky_dev)
        rows, weights = [], {}
        for kappa in self.kappas:
            self.model_.solve(kappa)
            weights[kappa] = (self.model_.wx_.copy(), self.model_.wy_.copy())
            zx, zy = fx @ self.model_.wx_, fy @ self.model_.wy_
            for n in self.n_grid:
                if n > zx.shape[1]:
                    continue
                m = pool_metrics(_cosine_scores(zx, zy, n))
                rows.append({"kappa": kappa, "n": n, "i2t": m["i2t"], "t2i": m["t2i"]})
        self.dev_grid_ = rows
        self.selected_ = {task: select_settings(rows, task) for task in ("i2t", "t2i")}
        self.weights_ = weights  # all kappas (ensembles and the single-model ablation)
        self.model_.release_training_factors()
        self.fit_seconds_ = time.time() - t0
        return self

    @staticmethod
    def train_docs_of(text: TextSide) -> list:
        return text.train_docs

    # scoring ---------------------------------------------------------------------------------
    def _projections(self, kx: np.ndarray, ky: np.ndarray):
        fx, fy = self.model_.features_x(kx), self.model_.features_y(ky)
        return {k: (fx @ wx, fy @ wy) for k, (wx, wy) in self.weights_.items()}

    def score_kernels(self, kx: np.ndarray, ky: np.ndarray) -> dict[str, np.ndarray]:
        """Borda ensemble scores (n_images, n_texts) per task, from kernel values of the images
        against the pivot images (``landmarks_[pivot_cols_]``) and of the texts against ``pivot_items_``."""
        from xmodal.eval.stats import borda

        proj = self._projections(kx, ky)
        out = {}
        for task, settings in self.selected_.items():
            mats = []
            for s in settings:
                zx, zy = proj[s["kappa"]]
                sc = _cosine_scores(zx, zy, s["n"])
                mats.append(sc if task == "i2t" else sc.T)
            agg = borda(mats)
            out[task] = agg if task == "i2t" else np.ascontiguousarray(agg.T)
        return out

    def score_single(self, kx, ky, kappa: float, n: int) -> np.ndarray:
        zx, zy = self._projections(kx, ky)[kappa]
        return _cosine_scores(zx, zy, n)

    def best_single(self, task: str) -> dict:
        """The dev setting with the best R@5 + R@10 on ``task`` (for the single-model ablation)."""
        if not self.dev_grid_:
            raise XmodalError("this saved system has no dev grid")
        kept = [r for r in self.dev_grid_ if r["kappa"] in self.weights_ and
                r["n"] <= self.weights_[r["kappa"]][0].shape[1]]
        return best_dev_row(kept, task)

    def score(
        self, image_ids: Sequence[str], docs: Sequence, tag: str, single: bool = False
    ) -> dict[str, np.ndarray]:
        """Ensemble scores for Flickr8K images (ids) and preprocessed one-caption docs; with
        ``single=True`` the one best dev (kappa, n) per task instead of the Borda ensemble."""
        if self.hd_ is None:
            raise XmodalError("this Hodosh system was loaded without its data; pass them: "
                              "HodoshKCCA.load(path, xmodal.recipes.flickr8k.load_hodosh_data())")
        hd = self.hd_
        image = ImageSide(hd, self.image_kernel, self.power)
        text = TextSide(hd, self.text_kernel)
        kx = image.block(list(image_ids), self.landmarks_)[:, self.pivot_cols_]
        ky = text.against(docs, tag, self.pivot_items_)
        if not single:
            return self.score_kernels(kx, ky)
        out = {}
        for task in ("i2t", "t2i"):
            best = self.best_single(task)
            if best["kappa"] not in self.weights_:  # weights are kept only for ensemble kappas
                raise XmodalError(f"kappa {best['kappa']} was not kept; retrain the system")
            out[task] = self.score_single(kx, ky, best["kappa"], best["n"])
        return out

    # persistence ------------------------------------------------------------------------------
    SAVE_TYPE, SAVE_VERSION = "hodosh-kcca", 1

    def get_params(self) -> dict:
        return {k: v for k, v in self.config().items() if k != "type"}

    def save(self, directory: str | Path, provenance: dict | None = None) -> Path:
        state = {
            "selected": self.selected_,
            "landmarks": self.landmarks_,
            "pivot_cols": self.pivot_cols_,
            "pivot_items": self.pivot_items_,
            "fit_seconds": round(self.fit_seconds_, 1),
            "train_ids_hash": None if self.hd_ is None else config_hash(self.hd_.train_ids),
            "dev_grid": self.dev_grid_,
        }
        m = self.model_
        f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731 - halves the files
        arrays = {
            "lx": f32(m.lx_), "ly": f32(m.ly_), "mean_x": f32(m.mean_x_), "mean_y": f32(m.mean_y_),
            "pivots_x": m.pivots_x_, "pivots_y": m.pivots_y_,
        }
        # keep, per kappa, only the leading directions some selected or single-best model uses
        need: dict[float, int] = {}
        for task in ("i2t", "t2i"):
            used = list(self.selected_[task])
            if self.dev_grid_:
                used.append(self.best_single(task))
            for u in used:
                need[u["kappa"]] = max(need.get(u["kappa"], 0), int(u["n"]))
        for k, n in need.items():
            wx, wy = self.weights_[k]
            arrays[f"wx_{k}"] = np.asarray(wx[:, :n], dtype=np.float32)
            arrays[f"wy_{k}"] = np.asarray(wy[:, :n], dtype=np.float32)
        return write_model_dir(directory, type=self.SAVE_TYPE, version=self.SAVE_VERSION,
                               params=self.get_params(), arrays=arrays, state=state,
                               provenance=provenance)

    @classmethod
    def load(cls, directory: str | Path, hd: HodoshData | None = None) -> HodoshKCCA:
        saved = read_model_dir(directory, cls.SAVE_TYPE, cls.SAVE_VERSION, "Hodosh KCCA system")
        sys_ = cls(**saved.params)
        sys_.hd_ = hd  # None: set it before scoring
        st = saved.state
        sys_.selected_ = st["selected"]
        sys_.landmarks_ = st["landmarks"]
        sys_.pivot_cols_ = st["pivot_cols"]
        sys_.pivot_items_ = st["pivot_items"]
        sys_.fit_seconds_ = st.get("fit_seconds", float("nan"))
        sys_.dev_grid_ = st.get("dev_grid", [])
        m = KCCA(rank=sys_.rank, diag_factor=sys_.diag_factor)
        z = saved.arrays
        f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
        m.lx_, m.ly_ = f64(z["lx"]), f64(z["ly"])
        m.mean_x_, m.mean_y_ = f64(z["mean_x"]), f64(z["mean_y"])
        m.pivots_x_, m.pivots_y_ = z["pivots_x"], z["pivots_y"]
        sys_.weights_ = {
            float(k[3:]): (f64(z[k]), f64(z["wy_" + k[3:]])) for k in z if k.startswith("wx_")
        }
        sys_.model_ = m
        return sys_


def n_grid_for(rank: int) -> tuple[int, ...]:
    """The dev grid of projection dimensions n, extended in steps of 500 up to ``rank``."""
    return N_GRID + tuple(range(max(N_GRID) + 500, rank + 1, 500))
