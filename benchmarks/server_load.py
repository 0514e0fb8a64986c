"""Search latency of the HTTP server under a bounded concurrent load on loopback.

Builds (once, cached under ``<cache_dir>/bench/``) a real ``PhotoIndex`` of 10,000 tiny images
whose vectors come from a synthetic model (a seeded random unit vector per image and per text),
starts ``xmodal serve`` in a subprocess on 127.0.0.1, and sends ``GET /api/search`` from 8 client
threads (keep-alive connections) until a request count or a time limit is reached. Latency is
measured at the client: request sent to JSON body parsed. With ``--text-model dual`` the queries
are embedded by the real default text encoder (the image side stays synthetic), so the numbers
include the sentence encoder's cost.

    python -m benchmarks.server_load                    # synthetic text vectors
    python -m benchmarks.server_load --text-model dual  # real sentence encoder per query
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WORDS = [
    "dog", "cat", "child", "man", "woman", "bike", "beach", "snow", "grass", "water", "ball",
    "street", "red", "blue", "running", "jumping", "sitting", "playing", "standing", "two", "a",
    "the", "on", "in", "with", "near",
]


def _unit_from(key: bytes, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha1(key).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class SyntheticModel:
    """Deterministic random unit vectors: images keyed by their pixels, texts by their string."""

    dim = 384
    model_id = "synthetic-384-v1"

    def embed_images(self, images, *, progress: bool = False, cache: bool = True) -> np.ndarray:
        return np.stack([_unit_from(im.convert("RGB").tobytes(), self.dim) for im in images])

    def embed_texts(self, texts, *, progress: bool = False) -> np.ndarray:
        return np.stack([_unit_from(t.encode(), self.dim) for t in texts])


class DualTextModel(SyntheticModel):
    """Synthetic image vectors, but every query goes through the real default text encoder."""

    def __init__(self) -> None:
        from xmodal.factory import load_embedding_model

        self.text_model = load_embedding_model(None)
        if int(self.text_model.dim) != self.dim:
            raise SystemExit(f"the default model embeds in {self.text_model.dim} dimensions, "
                             f"the synthetic index in {self.dim}: change SyntheticModel.dim")

    def embed_texts(self, texts, *, progress: bool = False) -> np.ndarray:
        return np.asarray(self.text_model.embed_texts(list(texts), progress=False), np.float32)


def synthetic_model() -> SyntheticModel:
    return SyntheticModel()


def dual_text_model() -> DualTextModel:
    return DualTextModel()


def build_index(n: int, dim: int) -> Path:
    """A PhotoIndex of ``n`` distinct 8x8 PNGs (cached): built through ``PhotoIndex.update``."""
    from PIL import Image

    from xmodal.index import PhotoIndex
    from xmodal.paths import cache_dir

    root = cache_dir() / "bench" / f"server_load_{n}_{dim}"
    db = root / "photos.db"
    if (root / "done").is_file():
        return db
    photos = root / "photos"
    photos.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        pixels = np.frombuffer(hashlib.sha256(str(i).encode()).digest() * 6, np.uint8)[:192]
        Image.fromarray(pixels.reshape(8, 8, 3)).save(photos / f"img{i:05d}.png")
    model = SyntheticModel()
    model.dim = dim
    model.model_id = f"synthetic-{dim}-v1"
    t0 = time.perf_counter()
    stats = PhotoIndex(db, model=model).update(photos, progress=False)
    print(f"indexed {stats.added} images in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    (root / "done").write_text("ok\n")
    return db


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: Path, model_spec: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-c", "from xmodal.cli import main; main()", "serve", "--db", str(db),
           "--port", str(port), "--model", model_spec, "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def run_load(url: str, clients: int, max_requests: int, max_seconds: float, seed: int,
             unique: bool = False, stop=None) -> dict:
    """``clients`` threads issue searches until ``max_requests`` in total or ``max_seconds``
    (or until ``stop()`` is true). With ``unique`` every query text differs (a number
    appended), so no text-embedding cache hits. Errors whose body is not JSON are counted
    apart (``errors_non_json``)."""
    import httpx

    rng = np.random.default_rng(seed)
    queries = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))) for _ in range(1000)]
    latencies: list[float] = []
    errors = 0
    non_json = 0
    lock = threading.Lock()
    issued = 0
    t_end = time.monotonic() + max_seconds

    def client(cid: int) -> None:
        nonlocal issued, errors, non_json
        with httpx.Client(base_url=url, timeout=30) as http:
            n = cid
            while time.monotonic() < t_end and not (stop is not None and stop()):
                with lock:
                    if issued >= max_requests:
                        return
                    issued += 1
                q = queries[n % len(queries)] + (f" {seed}-{n}" if unique else "")
                n += clients
                t0 = time.perf_counter()
                bad_body = False
                try:
                    r = http.get("/api/search", params={"q": q, "limit": 24})
                    ok = r.status_code == 200 and len(r.json()["results"]) == 24
                    bad_body = not r.headers.get("content-type", "").startswith(
                        "application/json")
                except (httpx.HTTPError, ValueError):
                    ok = False
                dt = time.perf_counter() - t0
                with lock:
                    if ok:
                        latencies.append(dt)
                    else:
                        errors += 1
                        non_json += bad_body

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ms = np.asarray(latencies) * 1000
    return {
        "clients": clients,
        "requests_ok": int(ms.size),
        "errors": errors,
        "errors_non_json": non_json,
        "wall_s": round(wall, 2),
        "throughput_rps": round(ms.size / wall, 1),
        "latency_ms": {
            "p50": round(float(np.percentile(ms, 50)), 2),
            "p95": round(float(np.percentile(ms, 95)), 2),
            "p99": round(float(np.percentile(ms, 99)), 2),
            "mean": round(float(ms.mean()), 2),
            "max": round(float(ms.max()), 2),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=2000, help="total requests (bound)")
    parser.add_argument("--seconds", type=float, default=60.0, help="time bound per run")
    parser.add_argument("--text-model", choices=["synthetic", "dual"], default="synthetic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="result name (default server_load[_dual])")
    args = parser.parse_args(argv)

    from benchmarks._record import record

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the server subprocess is stopped

    spec = f"python:benchmarks.server_load:{args.text_model}_text_model".replace(
        "synthetic_text_model", "synthetic_model")
    dim = SyntheticModel.dim
    db = build_index(args.images, dim)
    proc, url = start_server(db, spec)
    try:
        unique = args.text_model == "dual"  # the text encoder caches embeddings of seen texts
        warm = run_load(url, 1, 30, 60, args.seed + 1, unique)  # loads index, FAISS, encoder
        single = run_load(url, 1, max(50, args.requests // 10), args.seconds / 2, args.seed + 2,
                          unique)
        loaded = run_load(url, args.clients, args.requests, args.seconds, args.seed, unique)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    results = {
        "what": "GET /api/search?q=...&limit=24 on loopback; latency measured at the client",
        "index": {"images": args.images, "dim": dim, "vectors": "synthetic (seeded, unit norm)",
                  "built_with": "xmodal.index.PhotoIndex.update over 8x8 PNG files"},
        "text_model": args.text_model,
        "unique_queries": args.text_model == "dual",
        "server": "xmodal serve --threads 1 (subprocess), uvicorn, one library worker thread",
        "seed": args.seed,
        "bounds": {"requests": args.requests, "seconds": args.seconds},
        "warmup_requests": warm["requests_ok"],
        "single_client": single,
        "concurrent": loaded,
    }
    name = args.name or ("server_load" if args.text_model == "synthetic" else "server_load_dual")
    path = record(name, results)
    print(path.read_text())
    return 0 if loaded["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
