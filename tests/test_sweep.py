"""Sweeps: the grid, per-cell files, the embedding cache, the tables, and resuming after
``kill -9`` without recomputing finished cells (small grids over tiny local copies made from
Flickr8K photos, ``tests/benchmark_layouts.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import tests.benchmark_layouts as bl
from xmodal.eval.sweep import cell_path, run_sweep, slug
from xmodal.eval.sweep_table import tidy_rows, write_tables

LOGGED = "python:tests.sweep_models:LoggedColourModel"


@pytest.fixture()
def grid(tmp_path, flickr8k_root, monkeypatch):
    """Three tiny protocols over different photos, and the log of embedded images."""
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    log = tmp_path / "embedded.log"
    monkeypatch.setenv("XMODAL_TEST_EMBED_LOG", str(log))
    csv, _ = bl.caption_table(tmp_path / "ct", bl.flickr8k_photos(flickr8k_root, 3, 0))
    f30k, _ = bl.flickr30k_karpathy(tmp_path / "f30k", bl.flickr8k_photos(flickr8k_root, 3, 3))
    xm, _ = bl.xm3600(tmp_path / "xm", bl.flickr8k_photos(flickr8k_root, 3, 6))
    data = {"caption-file": csv, "flickr30k": f30k, "xm3600": xm}
    return data, log


def _embedded(log):
    return log.read_text().splitlines() if log.exists() else []


def test_sweep_grid_cells_cache_tables_and_resume(tmp_path, grid, flickr8k_root):
    data, log = grid
    npz = bl.hand_embeddings(tmp_path / "hand.npz", [f"pics/p{k}.jpg" for k in range(3)],
                             [f"pics/p{k}.jpg#{j}" for k in range(3) for j in (0, 1)])
    models, protocols = [LOGGED, "random", str(npz)], ["caption-file", "flickr30k", "xm3600"]
    out = tmp_path / "runs"
    result = run_sweep(models, protocols, out, data=data)
    assert len(result["computed"]) == 7 and not result["resumed"]
    # the .npz holds the caption-file ids only: the other two cells could not run, with why
    assert sorted(e["protocol"] for e in result["errors"]) == ["flickr30k", "xm3600"]
    assert all("have no embedding" in e["error"] for e in result["errors"])
    cell = json.loads(cell_path(out, "flickr30k", LOGGED).read_text())
    assert cell["directions"]["t2i"]["R@1"] == 1.0 and cell["model"] == LOGGED
    assert len(cell["per_query"]["t2i"]["rank"]) == 6  # per-query numbers kept
    assert len(_embedded(log)) == 9  # 3 photos per protocol, once each
    assert list((out / "cache" / slug(LOGGED)).glob("*.npz"))

    rows = write_tables(out, models, protocols)
    hand = {(r["direction"], r["metric"]): r["value"] for r in rows
            if r["model"] == str(npz)}
    assert hand[("t2i", "R@1")] == pytest.approx(0.5)
    assert hand[("i2t", "MAP")] == pytest.approx(bl.HAND_METRICS["i2t"]["MAP"])
    import pyarrow.parquet as pq

    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == len(rows) and table.column_names[:5] == [
        "model", "protocol", "direction", "metric", "value"]
    header = (out / "results.csv").read_text().splitlines()[0]
    assert header == "model,protocol,direction,metric,value,n_queries,seed"
    md = (out / "results.md").read_text()
    assert "| caption-file | `random` | i2t |" in md and "Cells that did not run" in md

    # resume: finished cells are loaded, only the failed ones are tried again
    again = run_sweep(models, protocols, out, data=data)
    assert len(again["resumed"]) == 7 and not again["computed"] and len(again["errors"]) == 2
    assert len(_embedded(log)) == 9
    # protocols over the same copy (coco5k, coco1k) embed its photos once
    coco = bl.coco_karpathy(tmp_path / "coco", bl.flickr8k_photos(flickr8k_root, 3, 0),
                            [1, 2, 3], [[11, 12], [21, 22], [31, 32]])
    run_sweep([LOGGED], ["coco5k", "coco1k"], out, data={"": coco})
    assert len(_embedded(log)) == 12
    assert any(r["metric"] == "fold-mean R@1" for r in tidy_rows(out, [LOGGED], ["coco1k"]))
    assert {r["n_queries"] for r in tidy_rows(out, [LOGGED], ["xm3600"])} == {3, 6}


def test_sweep_killed_midway_resumes_without_recomputing(tmp_path, grid):
    data, log = grid
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "xmodal", "eval", "-m", LOGGED, "-m", "random",
           "-p", "caption-file", "-p", "flickr30k", "-p", "xm3600", "--out", str(out)]
    cmd += [arg for p, d in data.items() for arg in ("--data", f"{p}={d}")]
    env = {**os.environ, "XMODAL_TEST_EMBED_DELAY": "0.4"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = cell_path(out, "caption-file", LOGGED)
    deadline = time.time() + 60
    while not first.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert first.exists(), proc.stderr.read().decode() if proc.poll() is not None else "timeout"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*.json")}
    assert 1 <= len(done) < 6  # killed midway
    before = len(_embedded(log))

    env["XMODAL_TEST_EMBED_DELAY"] = "0"
    r = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert len(summary["resumed"]) == len(done)
    assert len(summary["computed"]) == 6 - len(done) and not summary["errors"]
    assert len(list((out / "cells").glob("*.json"))) == 6
    for path, mtime in done.items():  # finished cells were not rewritten
        assert path.stat().st_mtime_ns == mtime
    # the resumed run embedded only the photos of protocols whose colour cell was unfinished
    again = [line.split(" ", 1)[1] for line in _embedded(log)[before:]]
    assert not any(str(tmp_path / "ct") in p for p in again)
    assert "done before" in r.stderr
    assert (out / "results.csv").is_file() and (out / "results.md").is_file()
