"""Does ``xmodal duplicates`` keep the camera original, and find turned and letterboxed copies?

    python -m benchmarks.duplicates_keep                       # 15 families, default model
    python -m benchmarks.duplicates_keep --print > now.json    # numbers only, nothing recorded
    python -m benchmarks.duplicates_keep --before before.json  # record, with an older run beside

A phone-style library as a new user has it, built in a temporary folder from Flickr8K (nothing
is written into the data folder): ``--families`` photos drawn with a fixed seed, each given a
camera's EXIF (make, model, DateTimeOriginal, GPS) and copied the ways people copy photos, every
copy written after its original:

* ``brightened``: brightness +20%, same size, the EXIF kept (an editor that names itself nowhere);
* ``edited``: brightness -15%, same size, the EXIF kept with ``Software`` = an editor's name;
* ``letterboxed``: on a black 16:9 canvas 1.5 times the original's height, the EXIF kept;
* ``turned``: turned 90 degrees in its pixels, no EXIF (so no orientation tag);
* ``reencoded``: JPEG quality 30, the EXIF kept.

Each family is one true group. Measured with the default model and the library's defaults: the
families whose suggested keep is the original, each kind of copy found in its original's group,
groups that are exactly a family, and pairs across families (false). ``--before`` adds the
numbers of another run (e.g. an older commit's code, run with ``--print`` and its ``src`` on
``PYTHONPATH``) to the record. Writes ``benchmarks/results/duplicates_keep.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

KINDS = ("brightened", "edited", "letterboxed", "turned", "reencoded")
SEED = 40
EDITOR = "Adobe Photoshop Lightroom Classic 13.0 (Windows)"
CAMERAS = [("Apple", "iPhone 13"), ("samsung", "SM-G991B"), ("Google", "Pixel 7")]


def exif_for(n: int, software: str | None = None) -> bytes:
    import piexif

    make, model = CAMERAS[n % len(CAMERAS)]
    zeroth = {piexif.ImageIFD.Make: make.encode(), piexif.ImageIFD.Model: model.encode(),
              piexif.ImageIFD.Orientation: 1}
    if software:
        zeroth[piexif.ImageIFD.Software] = software.encode()
    stamp = f"2023:{1 + n % 12:02d}:{1 + n % 27:02d} {8 + n % 12:02d}:{n % 60:02d}:00"
    exif = {piexif.ExifIFD.DateTimeOriginal: stamp.encode()}
    gps = {piexif.GPSIFD.GPSLatitudeRef: b"N", piexif.GPSIFD.GPSLatitude:
           ((38, 1), (43, 1), (n * 7 % 60, 1)), piexif.GPSIFD.GPSLongitudeRef: b"W",
           piexif.GPSIFD.GPSLongitude: ((9, 1), (8, 1), (n * 11 % 60, 1))}
    return piexif.dump({"0th": zeroth, "Exif": exif, "GPS": gps})


def build(root: Path, folder: Path, n: int) -> dict[str, str]:
    """Write the families; returns {file path: family name}."""
    from PIL import Image, ImageEnhance

    images = sorted((root / "Flicker8k_Dataset").glob("*.jpg"))
    picks = random.Random(SEED).sample(images, n)
    truth = {}
    for k, src in enumerate(picks):
        fam = folder / f"family{k:02d}"
        fam.mkdir(parents=True, exist_ok=True)
        with Image.open(src) as im:
            im = im.convert("RGB")
        w, h = im.size
        exif = exif_for(k)
        canvas = Image.new("RGB", (round(h * 1.5 * 16 / 9), round(h * 1.5)))
        big = im.resize((round(w * 1.5), round(h * 1.5)), Image.LANCZOS)
        canvas.paste(big, ((canvas.width - big.width) // 2, 0))
        files = {
            "original": (im, {"quality": 85, "exif": exif}),
            "brightened": (ImageEnhance.Brightness(im).enhance(1.2),
                           {"quality": 95, "exif": exif}),
            "edited": (ImageEnhance.Brightness(im).enhance(0.85),
                       {"quality": 95, "exif": exif_for(k, EDITOR)}),
            "letterboxed": (canvas, {"quality": 90, "exif": exif}),
            "turned": (im.transpose(Image.Transpose.ROTATE_90), {"quality": 90}),
            "reencoded": (im, {"quality": 30, "exif": exif}),
        }
        for m, (kind, (image, options)) in enumerate(files.items()):
            path = fam / f"{src.stem}-{m}-{kind}.jpg"
            image.save(path, "JPEG", **options)
            stamp = 1_700_000_000 + 3600 * m  # the original first, each copy an hour later
            os.utime(path, (stamp, stamp))
            truth[str(path.resolve())] = fam.name
    return truth


def kind_of(path: str) -> str:
    return Path(path).stem.rsplit("-", 1)[-1]


def measure(folder: Path, db: Path, truth: dict[str, str]) -> dict:
    from xmodal.factory import open_photo_index
    from xmodal.index import duplicates as dup

    index = open_photo_index(db, create=True)
    index.update(folder, progress=False)
    groups = dup.find_duplicates(index)
    index.close()
    found = {kind: 0 for kind in KINDS}
    kept_original, exact, false_pairs = 0, 0, 0
    for g in groups:
        fams = [truth[m.path] for m in g.members]
        families = set(fams)
        false_pairs += sum(fams.count(a) * fams.count(b) for a in families for b in families
                           if a < b)
        if len(families) == 1 and len(fams) == 1 + len(KINDS):
            exact += 1
    originals = {truth[p]: p for p in truth if kind_of(p) == "original"}
    group_of = {m.path: n for n, g in enumerate(groups) for m in g.members}
    for path, fam in truth.items():
        kind = kind_of(path)
        if kind in found and path in group_of and group_of[path] == group_of.get(originals[fam]):
            found[kind] += 1
    for g in groups:
        if kind_of(g.keep.path) == "original":
            kept_original += 1
    keeps = {}
    for g in groups:
        keeps[kind_of(g.keep.path)] = keeps.get(kind_of(g.keep.path), 0) + 1
    n = len(originals)
    return {"families": n, "keep_is_original": kept_original, "keep_by_kind": keeps,
            "found_in_originals_group": found, "exact_groups": exact, "groups": len(groups),
            "false_pairs": false_pairs,
            "example_reasons": [{"path": Path(m.path).name, "why": getattr(m, "why", None)}
                                for m in groups[0].members] if groups else []}


def main() -> None:
    from xmodal.paths import data_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", type=int, default=15)
    ap.add_argument("--work", type=Path, default=None, help="folder for the photos (reused)")
    ap.add_argument("--print", action="store_true", help="print the numbers; record nothing")
    ap.add_argument("--before", type=Path, default=None,
                    help="the --print output of another run, recorded beside these numbers")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="xmodal-dupkeep-"))
    folder, truth_file = work / "photos", work / "truth.json"
    if not truth_file.is_file():
        shutil.rmtree(folder, ignore_errors=True)
        truth_file.parent.mkdir(parents=True, exist_ok=True)
        truth_file.write_text(json.dumps(build(data_root() / "flickr8k", folder, args.families)))
    truth = json.loads(truth_file.read_text())
    db = work / f"photos-{os.getpid()}.db"
    results = measure(folder, db, truth)
    for suffix in ("", "-wal", "-shm", ".lock", ".faiss"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    if args.print:
        json.dump(results, sys.stdout, indent=2)
        return
    from benchmarks._record import record

    out = {"seed": SEED, "copies": list(KINDS), "editor": EDITOR, "now": results}
    if args.before:
        out["before"] = json.loads(args.before.read_text())
    print(record("duplicates_keep", out), file=sys.stderr)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
