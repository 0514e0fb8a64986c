"""A cold one-shot ``xmodal search`` right after ``xmodal index``, and the ones after it.

    python -m benchmarks.cold_search            # scikit-image's 16 sample photos, 5 searches

Each command is a new process (start-up, imports, model and ONNX session loading, FAISS,
the search), timed by wall clock with its peak resident memory (``/usr/bin/time``). The encoders
are exported already (``xmodal index`` exports the sentence encoder when it is missing, so the
first search pays nothing extra). Writes ``benchmarks/results/cold_search.json``.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--searches", type=int, default=5)
    args = ap.parse_args()
    from xmodal.cli.demo_cmd import copy_sample_photos

    with tempfile.TemporaryDirectory() as tmp:
        folder, db = Path(tmp) / "photos", str(Path(tmp) / "p.db")
        copy_sample_photos(folder)
        index = timed(["index", str(folder), "--db", db, "-q"])
        searches = [timed(["search", f"a cat number {i}", "--db", db, "-k", "3"])
                    for i in range(args.searches)]
    out = {"photos": 16, "index": index, "searches": searches,
           "first_search_s": searches[0]["s"],
           "later_searches_median_s": statistics.median(s["s"] for s in searches[1:]),
           "load_average": os.getloadavg()[0]}
    print(out)
    record("cold_search", out)


if __name__ == "__main__":
    main()
