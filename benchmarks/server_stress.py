"""The server under load and attack on loopback: clients 1/4/16/64, slow headers, a big describe.

    python -m benchmarks.server_stress          # ~3 minutes on 2 cores

Starts ``xmodal serve`` (subprocess, 127.0.0.1) over the 10,000-image index of
``benchmarks.server_load`` with a synthetic model whose *caption pools* go through the real
MiniLM text encoder (so a describe costs what it costs), then measures:

1. ``GET /api/search`` at 1, 4, 16 and 64 concurrent keep-alive clients: requests/s, latency
   p50/p95/p99 at the client, errors, and errors whose body is not JSON;
2. the slow-header attack: 70 sockets send an incomplete request header and hold it; meanwhile a
   fresh client sends normal searches (status and seconds recorded);
3. starvation: search p95 while a describe ranks a 5,000-caption uploaded pool, against idle p95.

Writes ``benchmarks/results/server_stress.json``.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import sys
import threading
import time

import numpy as np

from benchmarks._record import record
from benchmarks.server_load import SyntheticModel, build_index, run_load, start_server


class PoolEncodingModel(SyntheticModel):
    """Synthetic vectors, but a caption pool (more than one text) is really encoded by MiniLM
    first, so a big describe costs the CPU time it costs in real use."""

    def embed_texts(self, texts, *, progress: bool = False) -> np.ndarray:
        if len(texts) > 1:
            from xmodal.features.text_encoder import encode_texts

            encode_texts(list(texts), cache=False, progress=False)
        return super().embed_texts(texts, progress)


def pool_encoding_model() -> PoolEncodingModel:
    return PoolEncodingModel()


def slow_header_attack(url: str, sockets: int = 70, probes: int = 5) -> dict:
    host, port = url.rsplit("/", 1)[-1].split(":")
    held = []
    for _ in range(sockets):
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(b"GET /api/search?q=slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        held.append(s)
    import httpx

    time.sleep(1.0)
    results = []
    for n in range(probes):
        t0 = time.perf_counter()
        try:
            r = httpx.get(url + "/api/search", params={"q": f"a dog {n}", "limit": 10}, timeout=10)
            json_body = r.headers.get("content-type", "").startswith("application/json")
            results.append({"status": r.status_code, "json": json_body,
                            "seconds": round(time.perf_counter() - t0, 3)})
        except httpx.HTTPError as exc:
            results.append({"status": None, "error": type(exc).__name__,
                            "seconds": round(time.perf_counter() - t0, 3)})
    for s in held:
        s.close()
    return {"held_sockets": sockets, "probes": results,
            "all_answered_within_1s": all(p.get("status") == 200 and p["seconds"] <= 1.0
                                          for p in results)}


def describe_starvation(url: str, n_captions: int = 5000) -> dict:
    import httpx
    from PIL import Image

    idle = run_load(url, 1, 100, 30, 7)
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (120, 30, 30)).save(buf, "PNG")
    pool = "\n".join(f"a photo of thing number {n} near the river" for n in range(n_captions))
    done = {}

    def describe() -> None:
        t0 = time.perf_counter()
        r = httpx.post(url + "/api/describe", files={"image": ("p.png", buf.getvalue()),
                                                     "captions": ("c.txt", pool.encode())},
                       timeout=300)
        done.update(status=r.status_code, seconds=round(time.perf_counter() - t0, 2))

    t = threading.Thread(target=describe)
    t.start()
    time.sleep(0.5)
    during = run_load(url, 1, 10_000, 1e9, 8, stop=lambda: not t.is_alive())
    t.join()
    return {"captions": n_captions, "describe": done, "search_idle": idle["latency_ms"],
            "search_during_describe": during["latency_ms"],
            "searches_during_describe": during["requests_ok"],
            "p95_ratio": round(during["latency_ms"]["p95"] / idle["latency_ms"]["p95"], 2)}


def main() -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    db = build_index(10_000, SyntheticModel.dim)
    proc, url = start_server(db, "python:benchmarks.server_stress:pool_encoding_model")
    try:
        run_load(url, 1, 30, 60, 1)  # warm up
        levels = {str(c): run_load(url, c, 400 * max(1, c // 4), 20, 0) for c in (1, 4, 16, 64)}
        attack = slow_header_attack(url)
        starvation = describe_starvation(url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    results = {"what": "xmodal serve on loopback, 10,000-image index, synthetic query vectors",
               "clients": levels, "slow_header_attack": attack,
               "describe_starvation": starvation, "pid_env": os.getpid()}
    print(results)
    record("server_stress", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
