"""Sweeps: every model x every protocol, resumable, one JSON file per finished cell.

``run_sweep(models, protocols, out)`` evaluates the grid into ``out/``:

- ``cells/<protocol>__<model>.json``: the cell's full report (the ``xmodal eval --json`` shape,
  with per-query values), written atomically (temporary file + rename) as soon as the cell is
  done. A cell whose file exists is finished: a resumed sweep (the same command after a crash or
  ``kill -9``) loads it and recomputes nothing.
- ``cache/<model>/<dataset>.npz``: image and text embeddings of embedding models
  (:func:`xmodal.factory.embedding_model_or_none`), keyed by image file (path, size,
  mtime) and by text, per dataset folder, so protocols over the same photos (``flickr8k-5cap``,
  ``skimage-ood``) embed them once. Other models (``random``, kernel models) are scored afresh.
- ``errors.json``: cells that could not run (a model that does not apply to a protocol, data
  that is missing), with the reason; they are tried again on resume.
- ``sweep.json``: the grid and the seed; resuming with another seed is refused.

Temporary files a killed sweep leaves (``.NAME.PID.tmp``) are deleted when the sweep resumes.

The tables (``results.csv`` / ``.parquet`` / ``.md``) are rendered from the cell files by
:mod:`xmodal.eval.sweep_table`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xmodal.errors import XmodalError

CELLS, CACHE = "cells", "cache"


def slug(name: str) -> str:
    """A file-name-safe form of a model or protocol name (hash-suffixed when changed)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "x"
    if s != name:
        s += "-" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return s


def cell_path(out: str | os.PathLike, protocol: str, model: str) -> Path:
    return Path(out) / CELLS / f"{slug(protocol)}__{slug(model)}.json"


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


_TMP = re.compile(r"^\..+\.(\d+)\.tmp(\.npz)?$")


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Delete the temporary files that a killed sweep left in ``out`` (``.NAME.PID.tmp``, the
    cache's ``.NAME.PID.tmp.npz``) whose process is gone; returns them."""
    removed = []
    for path in [*out.glob(".*.tmp*"), *out.glob(f"{CELLS}/.*.tmp*"),
                 *out.glob(f"{CACHE}/*/.*.tmp*")]:
        m = _TMP.match(path.name)
        if m is None or _alive(int(m.group(1))):
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def read_cell(path: Path) -> dict[str, Any] | None:
    """A finished cell's report, or None (absent or unreadable: it will be recomputed)."""
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return report if isinstance(report, dict) and "directions" in report else None


# ---------------------------------------------------------------------- embedding cache

class EmbeddingCache:
    """Embeddings of one model on one dataset: image file keys and texts -> rows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.images: dict[str, np.ndarray] = {}
        self.texts: dict[str, np.ndarray] = {}
        self.dirty = False
        if path.is_file():
            try:
                with np.load(path, allow_pickle=False) as z:
                    self.images = dict(zip(z["image_keys"].tolist(), z["image_emb"]))
                    self.texts = dict(zip(z["text_keys"].tolist(), z["text_emb"]))
            except (OSError, ValueError, KeyError):
                self.images, self.texts = {}, {}  # a torn cache is rebuilt

    @staticmethod
    def image_key(path: Any) -> str:
        p = Path(path)
        try:
            st = p.stat()
        except OSError:
            return str(p)
        return f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}"

    def _get(self, table: dict[str, np.ndarray], keys: list[str], items: list,
             embed: Callable[[list], np.ndarray]) -> np.ndarray:
        todo: dict[str, Any] = {}
        for k, item in zip(keys, items):
            if k not in table and k not in todo:
                todo[k] = item
        if todo:
            table.update(zip(todo, np.asarray(embed(list(todo.values())), np.float32)))
            self.dirty = True
        return np.stack([table[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)

    def image_emb(self, paths: list, embed: Callable[[list], np.ndarray]) -> np.ndarray:
        return self._get(self.images, [self.image_key(p) for p in paths], list(paths), embed)

    def text_emb(self, texts: list[str], embed: Callable[[list], np.ndarray]) -> np.ndarray:
        return self._get(self.texts, list(texts), list(texts), embed)

    def save(self) -> None:
        if not self.dirty:
            return
        dim = len(next(iter(self.images.values()), next(iter(self.texts.values()), [])))

        def rows(table: dict[str, np.ndarray]) -> np.ndarray:
            return np.stack(list(table.values())) if table else np.zeros((0, dim), np.float32)

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, image_keys=np.array(list(self.images), dtype=str),
                 image_emb=rows(self.images), text_keys=np.array(list(self.texts), dtype=str),
                 text_emb=rows(self.texts))
        os.replace(tmp, self.path)
        self.dirty = False


def dataset_key(protocol) -> str:
    """The cache file name of a protocol's dataset: its folder's name and a hash of its path."""
    ds = protocol.dataset
    root = getattr(ds, "root", None) or getattr(getattr(ds, "others", None), "root", None)
    root = str(Path(root).resolve()) if root is not None else protocol.name
    return f"{slug(Path(root).name)[:40]}-{hashlib.sha1(root.encode()).hexdigest()[:10]}"


def embedding_scores(protocol, model: Any, cache: EmbeddingCache) -> dict[str, np.ndarray]:
    """Score matrices per direction from cached (or newly computed) embeddings."""
    from xmodal.models.embedding_specs import (embed_images, embed_texts, image_files,
                                               scores_from_embeddings)

    out: dict[str, np.ndarray] = {}
    for name, d in protocol.directions.items():
        shared = [o for o, od in protocol.directions.items()
                  if o in out and od.image_ids == d.image_ids and od.text_ids == d.text_ids]
        if shared:
            out[name] = out[shared[0]]
            continue
        images = cache.image_emb(image_files(protocol, d), lambda x: embed_images(model, x))
        texts = cache.text_emb(list(d.texts), lambda x: embed_texts(model, x))
        cache.save()
        out[name] = scores_from_embeddings(model, images, texts)
    return out


# --------------------------------------------------------------------------------- sweep

def _build_protocol(name: str, data: Any, captions: Any, options: dict | None = None):
    from xmodal.eval.protocols import get_protocol

    if name == "folder":
        return get_protocol(name, data, captions=captions)
    return get_protocol(name, data, **(options or {}).get(name, {}))


def run_cell(protocol, protocol_name: str, model: str, out: Path, seed: int,
             models: dict[str, Any]) -> dict[str, Any]:
    """One cell's report (per-query values included)."""
    from xmodal.eval.benchmark_protocols import fold_scores
    from xmodal.eval.runner import direction_scores, evaluate
    from xmodal.factory import embedding_model_or_none, get_scorer

    t0 = time.perf_counter()
    if model not in models:
        models[model] = embedding_model_or_none(model, protocol_name)
    emb = models[model]
    if emb is not None:
        cache = EmbeddingCache(out / CACHE / slug(model) / f"{dataset_key(protocol)}.npz")
        scores = embedding_scores(protocol, emb, cache)
    else:
        scores = direction_scores(protocol, get_scorer(model, protocol_name), seed)
    report = evaluate(protocol, fold_scores(protocol, scores), model=model, seed=seed,
                      per_query=True)
    report["protocol"] = protocol_name
    report["elapsed_s"] = time.perf_counter() - t0
    return report


def run_sweep(
    models: list[str],
    protocols: list[str],
    out: str | os.PathLike,
    *,
    data: dict[str, Any] | None = None,
    captions: Any = None,
    seed: int = 0,
    progress: Any = None,
    strict: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Evaluate every model on every protocol into ``out`` (see the module docstring).

    ``data`` maps a protocol name to its ``--data`` (key ``""``: every other protocol).
    ``options`` maps a protocol name to its builder's options (e.g. ``{"xm3600": {"language":
    "de"}}``). ``strict``: a cell on a partial copy of its benchmark is an error instead of a labelled
    result. ``progress(event, protocol, model, detail)`` is called with ``"skip"``, ``"start"``,
    ``"done"`` and ``"error"``. Returns ``{"computed", "resumed", "errors"}`` (cell lists).
    """
    from xmodal.eval.coverage import check_strict

    out = Path(out)
    data = dict(data or {})
    remove_stale_temporaries(out)
    models, protocols = list(dict.fromkeys(models)), list(dict.fromkeys(protocols))
    manifest_path = out / "sweep.json"
    manifest = {"models": [], "protocols": [], "seed": seed}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError:
            pass
        if manifest.get("seed", seed) != seed:
            raise XmodalError(f"{out} holds a sweep with seed {manifest.get('seed')}; resume it "
                              f"with --seed {manifest.get('seed')} or use another --out")
    manifest["models"] = list(dict.fromkeys([*manifest.get("models", []), *models]))
    manifest["protocols"] = list(dict.fromkeys([*manifest.get("protocols", []), *protocols]))
    manifest["seed"] = seed
    write_atomic(manifest_path, json.dumps(manifest, indent=2).encode())
    note = progress or (lambda *a: None)
    result: dict[str, list] = {"computed": [], "resumed": [], "errors": []}
    loaded: dict[str, Any] = {}
    for p in protocols:
        todo = []
        for m in models:
            if read_cell(cell_path(out, p, m)) is not None:
                result["resumed"].append([p, m])
                note("skip", p, m, "")
            else:
                todo.append(m)
        if not todo:
            continue
        try:
            proto = _build_protocol(p, data.get(p, data.get("")), captions, options)
        except XmodalError as exc:
            for m in todo:
                result["errors"].append({"protocol": p, "model": m, "error": str(exc)})
                note("error", p, m, str(exc))
            continue
        for m in todo:
            note("start", p, m, "")
            try:
                report = run_cell(proto, p, m, out, seed, loaded)
                if strict:
                    check_strict(report)
            except XmodalError as exc:
                result["errors"].append({"protocol": p, "model": m, "error": str(exc)})
                note("error", p, m, str(exc))
                continue
            write_atomic(cell_path(out, p, m), (json.dumps(report, indent=1) + "\n").encode())
            result["computed"].append([p, m])
            note("done", p, m, f"{report['elapsed_s']:.1f} s")
    write_atomic(out / "errors.json", (json.dumps(result["errors"], indent=2) + "\n").encode())
    return result
