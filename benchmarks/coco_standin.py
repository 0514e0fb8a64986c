"""A stand-in for a local COCO copy, for the worked example of docs/benchmarks.md on a machine
without COCO: the first N Flickr8K test photos (symlinked) with their five captions, written in
Karpathy's ``dataset_coco.json`` layout (``val2014/COCO_val2014_<id>.jpg``; image ids 1..N,
caption ids 10 * id + k). It is *not* COCO: the numbers it gives say nothing about COCO, and
xmodal labels every protocol on it partial ("partial (239 of 5,000 images)").

    python -m benchmarks.coco_standin /tmp/coco-standin 239
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def build(out: Path, n: int, data: Path | None = None) -> Path:
    from xmodal.data import load_flickr8k

    ds = load_flickr8k(data)
    images = []
    for k, name in enumerate(list(ds.split("test"))[:n], start=1):
        target = out / "val2014" / f"COCO_val2014_{k:012d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(Path(ds.image_path(name)).resolve())
        caps = ds.captions_of(name)
        images.append({"filepath": "val2014", "filename": target.name, "cocoid": k,
                       "imgid": k - 1, "split": "test",
                       "sentids": [10 * k + j for j in range(len(caps))],
                       "sentences": [{"raw": c.text, "tokens": c.text.split(), "imgid": k - 1,
                                      "sentid": 10 * k + j} for j, c in enumerate(caps)]})
    (out / "dataset_coco.json").write_text(json.dumps({"images": images, "dataset": "coco"}))
    return out


if __name__ == "__main__":
    folder = build(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 239)
    print(folder)
