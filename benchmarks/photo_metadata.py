"""What reading photo metadata at index time costs: indexing with and without it, side by side.

    python -m benchmarks.photo_metadata                  # 400 Flickr8K photos, 3 rounds, ~5 min
    python -m benchmarks.photo_metadata --photos 100 --rounds 1

The photos are copies of Flickr8K test photos carrying EXIF written with piexif (date with
offset, camera, GPS in four cities; every 7th without EXIF: file time), as in the filter tests.
Each round indexes them into a fresh database twice with the default model, once as shipped and
once with metadata extraction replaced by nothing, alternating which goes first, in one process
(the model loaded once, its encoders exported before timing). Reported: the whole update
(``elapsed_s``: reading, hashing, decoding, metadata, embedding, SQLite, FAISS) per variant,
median over rounds, and the overhead as a ratio; plus ``read_metadata`` alone per photo.

Writes ``benchmarks/results/photo_metadata.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._record import record
from xmodal.paths import data_root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import xmodal.index.photo_index as photo_index
    from tests.exif_photos import make_photos
    from xmodal.factory import load_embedding_model
    from xmodal.index import PhotoIndex
    from xmodal.index.metadata import PhotoMeta, read_metadata

    shipped = photo_index.read_metadata
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "photos"
        make_photos(data_root() / "flickr8k", folder, args.photos)
        files = sorted(p for p in folder.rglob("*.jpg"))
        model = load_embedding_model(None)
        PhotoIndex(Path(tmp) / "warm.db", model=model).update(folder, progress=False)

        t = time.perf_counter()
        for p in files:
            read_metadata(str(p), p.read_bytes(), p.stat().st_mtime_ns)
        per_photo_ms = 1000 * (time.perf_counter() - t) / len(files)

        runs: dict[str, list[dict]] = {"with": [], "without": []}
        for r in range(args.rounds):
            order = ["with", "without"] if r % 2 == 0 else ["without", "with"]
            for variant in order:
                photo_index.read_metadata = (shipped if variant == "with"
                                             else lambda *a, **k: PhotoMeta())
                try:
                    db = Path(tmp) / f"{variant}-{r}.db"
                    stats = PhotoIndex(db, model=model).update(folder, progress=False)
                finally:
                    photo_index.read_metadata = shipped
                assert stats.added == len(files), stats
                runs[variant].append({"elapsed_s": round(stats.elapsed_s, 3),
                                      "embed_s": round(stats.embed_s, 3)})
                print(variant, runs[variant][-1], flush=True)
    med = {v: statistics.median(x["elapsed_s"] for x in rs) for v, rs in runs.items()}
    out = {
        "photos": len(files), "rounds": args.rounds, "model": "default (dual)",
        "runs": runs,
        "median_elapsed_s": med,
        "images_per_s": {v: round(len(files) / s, 1) for v, s in med.items()},
        "overhead_ratio": round(med["with"] / med["without"], 3),
        "read_metadata_ms_per_photo": round(per_photo_ms, 3),
        "load_average": os.getloadavg()[0],
    }
    print(out)
    record("photo_metadata", out)


if __name__ == "__main__":
    main()
