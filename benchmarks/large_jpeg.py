"""Time and memory to check and shrink big camera / phone JPEGs before they are embedded.

For each size a synthetic photo-like JPEG (smooth gradients plus noise, quality 90) is written to
a temporary folder; a fresh Python process then runs ``xmodal.index.scan.load_checked`` on it
(the indexer's and ``xmodal tag``'s loader: header check, draft-mode decode at down to 1/8 scale,
shrink to 448 px) and reports its wall time (imports excluded) and the process's peak resident
memory (with the imports' share beside it). A plain
full decode with Pillow (``Image.open(...).load()``) is timed beside it for comparison.

    python -m benchmarks.large_jpeg
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SIZES = {"12 MP (4000x3000)": (4000, 3000), "48 MP (8064x6048)": (8064, 6048),
         "108 MP (12000x9000)": (12000, 9000), "200 MP (16320x12240)": (16320, 12240)}

# peak memory from /proc/self/status VmHWM, which starts afresh in the new process (getrusage's
# ru_maxrss would carry over the parent's peak across exec on Linux)
PROBE = """
import json, sys, time
from PIL import Image
from xmodal.index.scan import load_checked
path, how = sys.argv[1], sys.argv[2]
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
before = hwm()
t = time.perf_counter()
if how == "xmodal":
    image, reason = load_checked(path)
    size = image.size if image else reason
else:
    Image.MAX_IMAGE_PIXELS = None
    with Image.open(path) as im:
        im.load()
        size = im.size
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "peak_rss_mb": hwm(), "rss_before_mb": before,
                  "result": size}))
"""


def photo_like(width: int, height: int, path: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    rows = []
    for a in range(0, height, 1024):  # build in strips to bound this process's memory
        yy = y[a : a + 1024]
        strip = np.stack([(yy + 0 * x), (x + 0 * yy), ((yy + x) / 2)], axis=2)
        strip += rng.normal(0, 12, strip.shape[:2])[..., None]
        rows.append(np.clip(strip, 0, 255).astype(np.uint8))
    Image.fromarray(np.concatenate(rows)).save(path, quality=90)


def probe(path: Path, how: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(path), how], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    from benchmarks._record import record

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (w, h) in SIZES.items():
            path = Path(tmp) / f"{w}x{h}.jpg"
            photo_like(w, h, path)
            row = {"file_mb": round(path.stat().st_size / 1e6, 1)}
            for how in ("xmodal", "full_decode"):
                best = min((probe(path, how) for _ in range(3)), key=lambda r: r["seconds"])
                row[how] = {"seconds": round(best["seconds"], 3),
                            "peak_rss_mb": round(best["peak_rss_mb"]),
                            "rss_after_imports_mb": round(best["rss_before_mb"]),
                            "result": best["result"]}
            results[name] = row
            print(name, json.dumps(row), flush=True)
    print(record("large_jpeg", results))


if __name__ == "__main__":
    main()
