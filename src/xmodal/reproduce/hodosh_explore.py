"""What was tried to close the gap to Hodosh et al. (``reports/hodosh.md``, "What was tried").

Variations of two registered systems, ``hodosh-bow5`` and ``hodosh-tri5sem``: larger kappas,
other diagonal factors, the image kernel cubed, fewer or more landmarks, a larger rank. Each is
the registered setting with a few hyperparameters overridden, trained on the training split and
scored on the dev pool only (its whole (kappa, n) grid); the test pool is never read. The
registered settings themselves ("used" rows) are read from ``hodosh_reproduction.json``'s dev
selection, which the main run recorded.

Kernel blocks are cached as for the main systems; the 3,000-landmark runs slice their image
kernel out of the cached 6,000 x 6,000 training kernel of the exact (``-full``) systems. The
time of every new kernel block and of every fit is recorded (the report's cost section).
"""

from __future__ import annotations

import dataclasses
import time

from xmodal.reproduce.output import log

# name -> (registered system, overrides of its hyperparameters)
EXPLORATIONS: dict[str, tuple[str, dict]] = {
    "bow5-kappa-large": ("bow5", {"kappas": [10.0, 25.0, 100.0, 300.0]}),
    "bow5-d3": ("bow5", {"diag_factor": 3.0}),
    "bow5-p3": ("bow5", {"power": 3.0}),
    "bow5-750": ("bow5", {"n_landmarks": 750}),
    "bow5-3000": ("bow5", {"n_landmarks": 3000}),
    "bow5-3000-r3000": ("bow5", {"n_landmarks": 3000, "rank": 3000}),
    "tri5sem-d1": ("tri5sem", {"diag_factor": 1.0}),
    "tri5sem-d2": ("tri5sem", {"diag_factor": 2.0}),
    "tri5sem-d8": ("tri5sem", {"diag_factor": 8.0}),
}
# landmark counts whose image kernel is sliced from the cached kernel over all training images
SLICED = 3000


def grid_columns(system) -> dict:
    """A fitted system's dev grid as columns: ``{"kappa": [...], "n": [...], "i2t": {metric:
    [...]}, "t2i": {...}}`` (the layout of the main run's dev selection)."""
    grid = system.dev_grid_
    out = {"kappa": [r["kappa"] for r in grid], "n": [r["n"] for r in grid]}
    for task in ("i2t", "t2i"):
        out[task] = {m: [r[task][m] for r in grid] for m in ("R@1", "R@5", "R@10", "medR")}
    return out


def explore(names=None, data=None, command: str = "") -> dict:
    """Train each exploration of :data:`EXPLORATIONS` and record its dev grid, fit time and the
    time of the image-kernel blocks it had to compute."""
    from xmodal.models.hodosh import HodoshKCCA, ImageSide, landmarks, n_grid_for
    from xmodal.recipes.flickr8k import load_hodosh_data
    from xmodal.recipes.settings import get_setting
    from xmodal.reproduce.output import stamp

    hd = load_hodosh_data(data)
    sliced = dataclasses.replace(hd, kernel_ids=list(hd.train_ids))
    out = {}
    for name in names or EXPLORATIONS:
        base, over = EXPLORATIONS[name]
        params = {**get_setting(f"hodosh-{base}").params, **over}
        if over.get("rank", 0) > max(params["n_grid"]):
            params["n_grid"] = list(n_grid_for(over["rank"]))
        data_for = sliced if params["n_landmarks"] == SLICED else hd
        image = ImageSide(data_for, params["image_kernel"], params["power"])
        marks = landmarks(hd.train_ids, params["n_landmarks"], params["seed"])
        blocks = {}  # the train block of a sliced run is a slice, not a computation
        parts = (("train", hd.train_ids), ("dev", hd.dev_ids))[data_for is sliced:]
        for rows_name, rows in parts:
            t = time.time()
            image.block(rows, marks)  # computed here (or read from the cache) for the fit
            blocks[f"{rows_name} x {len(marks)}"] = round(time.time() - t, 1)
        system = HodoshKCCA(**params).fit(data_for)
        out[name] = {"system": base, "overrides": over, "params": params,
                     "kernel_blocks_s": blocks, "fit_s": round(system.fit_seconds_, 1),
                     "pivots": [len(system.model_.pivots_x_), len(system.pivot_items_)],
                     "dev": grid_columns(system), "run": stamp(command)}
        log(f"{name}: fit {system.fit_seconds_:.0f} s, blocks {blocks}")
    return out


def reproduce(names=None, data=None, out=None,
              command: str = "xmodal reproduce hodosh --part explore") -> dict:
    """Run the explorations and write ``hodosh_exploration.json`` to ``out`` (kept runs of the
    other explorations stay)."""
    from pathlib import Path

    from xmodal.reproduce.output import RESULTS, read_json, record

    path = Path(out or RESULTS) / "hodosh_exploration.json"
    kept = (read_json(path) or {}).get("results", {})
    results = {**kept, **explore(names, data, command)}
    record("hodosh_exploration", {k: results[k] for k in EXPLORATIONS if k in results}, command,
           out or RESULTS)
    return results
