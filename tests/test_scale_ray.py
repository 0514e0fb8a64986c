"""xmodal embed on a real Ray cluster of this machine: a head node and a worker node (one CPU
each, 127.0.0.1), 2,000 Flickr8K images and three bad files; the worker node is killed mid-job.

Checks: every image exactly once, bad files recorded with a reason, embeddings equal to the
single-process path (cosine >= 0.9999), the job completes after losing a node, and a re-run
writes nothing twice. The nodes are stopped in the fixture's teardown, also when a check fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.ray_cluster import LocalRayCluster

pytest.importorskip("ray.data")

N_IMAGES = 2000
SHARD = 100
# the fastest image path of the project (EfficientNet-Lite0 on ONNX Runtime + the zero-shot
# bridge): the test checks the distribution, not the model, and stays well under 3 minutes
MODEL = "efficientnet-minilm-zeroshot"


@pytest.fixture
def ray_cluster():
    cluster = LocalRayCluster(cpus=1)
    try:
        cluster.add_node(cpus=1)
        cluster.wait_for_nodes(2)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def source(flickr8k_root, tmp_path_factory) -> Path:
    """2,000 Flickr8K images (links) and three bad files: text, truncated JPEG, empty."""
    images = sorted((flickr8k_root / "Flicker8k_Dataset").glob("*.jpg"))[:N_IMAGES]
    if len(images) < N_IMAGES:
        pytest.skip(f"need {N_IMAGES} Flickr8K images, found {len(images)}")
    src = tmp_path_factory.mktemp("src")
    for p in images:
        (src / p.name).symlink_to(p)
    bad = src / "bad"
    bad.mkdir()
    (bad / "not-an-image.jpg").write_text("hello")
    (bad / "truncated.jpg").write_bytes(images[0].read_bytes()[:600])
    (bad / "empty.jpg").write_bytes(b"")
    return src


def _rows(out: Path) -> dict:
    import pyarrow.parquet as pq

    rows = []
    for f in sorted(out.glob("shard-*.parquet")):
        rows += pq.read_table(f).to_pylist()
    return rows


def _by_path(rows) -> dict:
    return {r["path"]: r for r in rows}


@pytest.mark.slow
def test_ray_cluster_embeds_every_image_once_and_survives_a_lost_node(
        source, ray_cluster, tmp_path):
    from xmodal.scale.embed import run_embed

    # the single-process path: the same SRC embedded in this process
    ref_rows = _rows(Path(run_embed(source, tmp_path / "ref", engine="local", model_spec=MODEL,
                                    shard_size=SHARD)["out"]))
    env = {**ray_cluster.env, "XMODAL_CACHE": os.environ.get("XMODAL_CACHE", str(tmp_path))}
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "xmodal", "embed", str(source), str(out), "--engine", "ray",
           "--address", ray_cluster.address,  # default options: workers and CPUs sized
           "--shard-size", str(SHARD), "--model", MODEL, "--json", "--quiet"]
    job = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    killed_at = None
    try:
        deadline = time.time() + 150
        while time.time() < deadline and job.poll() is None:
            done = len(list(out.glob("shard-*.parquet")))
            if killed_at is None and done >= 3:
                ray_cluster.kill_node(ray_cluster.nodes[1])  # the worker node, mid-job
                killed_at = done
            time.sleep(0.2)
        stdout, stderr = job.communicate(timeout=max(1, deadline - time.time()))
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr[-3000:]
    total = -(-(N_IMAGES + 3) // SHARD)
    assert killed_at is not None and killed_at < total, "the node was not killed mid-job"
    summary = json.loads(stdout)
    print(f"worker node killed after {killed_at} of {total} shards; {summary}")
    assert summary["images"] == N_IMAGES + 3 and summary["shards"] == total

    rows = _rows(out)
    expected = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(source) for f in fs)
    counts = Counter(r["path"] for r in rows)
    assert sorted(counts) == expected and set(counts.values()) == {1}  # each exactly once
    bad = {Path(r["path"]).name: r["error"] for r in rows if not r["ok"]}
    assert set(bad) == {"not-an-image.jpg", "truncated.jpg", "empty.jpg"}
    assert bad["empty.jpg"] == "empty file" and all(bad.values())
    assert sum(r["ok"] for r in rows) == N_IMAGES

    ref = _by_path(ref_rows)
    a = np.array([r["embedding"] for r in rows if r["ok"]], np.float64)
    b = np.array([ref[r["path"]]["embedding"] for r in rows if r["ok"]], np.float64)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() >= 0.9999
    assert all(r["sha1"] == ref[r["path"]]["sha1"] for r in rows)

    # a re-run finds every shard done and writes nothing (no duplicate, no Ray needed)
    again = run_embed(source, out, engine="local", model_spec=MODEL, shard_size=SHARD)
    assert again["shards_written"] == 0 and again["shards_skipped_done"] == total
    assert len(_rows(out)) == N_IMAGES + 3
