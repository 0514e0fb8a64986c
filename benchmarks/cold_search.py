"""A cold one-shot ``xmodal search`` right after ``xmodal index``, and the ones after it.

    python -m benchmarks.cold_search                 # a 10,000-photo index, 5 searches
    python -m benchmarks.cold_search --photos 16     # scikit-image's 16 sample photos only

Each command is a new process (start-up, imports, model and ONNX session loading, FAISS,
the search), timed by wall clock with its peak resident memory (``/usr/bin/time``). The encoders
are exported already (``xmodal index`` exports the sentence encoder when it is missing, so the
first search pays nothing extra). The index holds scikit-image's 16 sample photos, indexed by
``xmodal index``; with ``--photos N`` above 16, N - 16 synthetic unit vectors under the same
model id are added to its SQLite store and the ANN structure is rebuilt before the searches (a
library's size without indexing thousands of photos; the search reads the same files either
way). Writes ``benchmarks/results/cold_search.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._record import record


def timed(args: list[str]) -> dict:
    t0 = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "xmodal", *args],
                         capture_output=True, text=True, check=True)
    return {"s": round(time.perf_counter() - t0, 3),
            "peak_mb": round(int(run.stderr.strip().splitlines()[-1]) / 1024)}


def pad_index(db: Path, n: int, seed: int = 0) -> None:
    """Add ``n`` synthetic unit vectors under the index's model id, then rebuild its ANN."""
    import numpy as np

    from benchmarks.synthetic_index import insert_vectors
    from xmodal.index import PhotoIndex
    from xmodal.index.store import Store

    store = Store(db)
    mid, dim = store.get_meta("model"), int(store.get_meta("dim"))
    first = int(store.conn.execute("SELECT MAX(id) FROM files").fetchone()[0]) + 1
    vecs = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with store.transaction() as conn:
        insert_vectors(conn, first, 0, vecs, mid)
    store.close()
    index = PhotoIndex(db)
    index.rebuild_ann()
    index.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--searches", type=int, default=5)
    ap.add_argument("--photos", type=int, default=10_000)
    args = ap.parse_args()
    from xmodal.cli.demo_cmd import copy_sample_photos

    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp) / "photos", str(Path(tmp) / "p.db")
        copy_sample_photos(folder)
        index = timed(["index", str(folder), "--db", db, "-q"])
        if args.photos > 16:
            pad_index(Path(db), args.photos - 16)
        searches = [timed(["search", f"a cat number {i}", "--db", db, "-k", "3"])
                    for i in range(args.searches)]
    out = {"photos": max(16, args.photos), "index_of_16_sample_photos": index, "searches": searches,
           "first_search_s": searches[0]["s"],
           "later_searches_median_s": statistics.median(s["s"] for s in searches[1:]),
           "load_average": os.getloadavg()[0]}
    print(out)
    record("cold_search", out)


if __name__ == "__main__":
    main()
