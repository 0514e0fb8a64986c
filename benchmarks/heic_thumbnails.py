"""What reading a HEIC photo through its embedded copy costs and saves (the default model).

    python -m benchmarks.heic_thumbnails                # 500 dev photos, ~5 minutes

iPhones store a 320 x 240 copy inside each HEIC photo; ``scan.load_checked`` gives the image
tower that copy instead of decoding the photo when its shorter side is at least
``HEIF_THUMBNAIL_MIN_SHARE`` of the tower's input side (240 of 260 for the default model).

Quality, on the Flickr8K **dev** split: each photo enlarged to 1024 x 768 (the copy then has
less detail than the tower reads, as with a camera photo; the photos themselves are 224 px, so
the whole-photo path has no more detail than the source either: a proxy) and saved as HEIC
quality 80 with a 320-px copy, as an iPhone does. Both paths are embedded with the default
model: cosine between a photo's two vectors, and t2i / i2t R@1 over the photos with their five
captions each. Speed: ``load_checked`` per photo both ways on 12 MP HEICs (4000 x 3000).

Writes ``benchmarks/results/heic_thumbnails.json``.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks._record import record


def heic_bytes(image, size: tuple[int, int]) -> bytes:
    """``image`` enlarged to ``size`` as HEIC quality 80 with a 320-px embedded copy."""
    from PIL import Image

    buf = io.BytesIO()
    image.convert("RGB").resize(size, Image.BICUBIC).save(buf, format="HEIF", quality=80,
                                                           thumbnails=[320])
    return buf.getvalue()


def make_heic(src: str, dest: str) -> None:
    from PIL import Image

    with Image.open(src) as im:
        Path(dest).write_bytes(heic_bytes(im, (1024, 768)))


def r1(image_vecs: np.ndarray, text_vecs: np.ndarray, owner: np.ndarray) -> dict[str, float]:
    """t2i and i2t R@1 (%) of unit vectors; ``owner[j]``: the photo of caption ``j``."""
    from xmodal.eval.metrics import retrieval_metrics

    scores = text_vecs @ image_vecs.T
    t2i = [[int(o)] for o in owner]
    i2t = [np.flatnonzero(owner == i).tolist() for i in range(len(image_vecs))]
    return {"t2i_R@1": round(100 * retrieval_metrics(scores, t2i)["R@1"], 2),
            "i2t_R@1": round(100 * retrieval_metrics(scores.T, i2t)["R@1"], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--photos", type=int, default=500, help="Flickr8K dev photos (of 1,000)")
    ap.add_argument("--camera", type=int, default=3, help="12 MP HEICs timed")
    args = ap.parse_args()
    from PIL import Image

    from xmodal.data import load_flickr8k
    from xmodal.factory import load_embedding_model
    from xmodal.index import scan

    model = load_embedding_model(None)
    square = model.image_input_size
    ds = load_flickr8k(judgments=False)
    ids = ds.split("dev")[: args.photos]
    work = Path(tempfile.mkdtemp(prefix="xmodal-heic-"))
    try:
        t = time.perf_counter()
        files = [work / f"{i}.heic" for i in ids]
        with ProcessPoolExecutor(2) as pool:
            list(pool.map(make_heic, [str(ds.image_path(i)) for i in ids], map(str, files)))
        print(f"made {len(files)} HEICs in {time.perf_counter() - t:.0f} s", flush=True)
        vecs = {}
        for way, thumbnails in (("whole", False), ("copy", True)):
            images = [scan.load_checked(str(f), square=square, thumbnails=thumbnails)[0]
                      for f in files]
            vecs[way] = model.embed_images(images, progress=False, cache=False)
        captions = [(n, c.text) for n, i in enumerate(ids) for c in ds.captions_of(i)]
        owner = np.array([n for n, _ in captions])
        texts = model.embed_texts([c for _, c in captions], progress=False)
        cos = np.sum(vecs["whole"] * vecs["copy"], axis=1)
        quality = {"photos": len(ids), "captions": len(captions),
                   "cosine_mean": round(float(cos.mean()), 4),
                   "cosine_min": round(float(cos.min()), 4),
                   **{way: r1(v, texts, owner) for way, v in vecs.items()}}
        print(quality, flush=True)

        rng = np.random.default_rng(0)
        camera = []
        for k in range(args.camera):
            with Image.open(ds.image_path(ids[k])) as im:
                grain = rng.normal(0, 5, (3000, 4000, 1))
                big = np.asarray(im.convert("RGB").resize((4000, 3000), Image.BICUBIC), float)
                camera.append(heic_bytes(Image.fromarray(np.clip(big + grain, 0, 255)
                                                         .astype(np.uint8)), (4000, 3000)))
        speed = {}
        for way, thumbnails in (("whole", False), ("copy", True)):
            t = time.perf_counter()
            for data in camera:
                scan.load_checked("camera.heic", data, square, thumbnails=thumbnails)
            speed[f"{way}_ms_per_photo"] = round(1000 * (time.perf_counter() - t) / len(camera), 1)
        speed["photos"], speed["file_mb_mean"] = len(camera), round(
            sum(map(len, camera)) / len(camera) / 1e6, 2)
        print(speed, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record("heic_thumbnails", {
        "model": "default", "tower_input_px": square,
        "min_share": scan.HEIF_THUMBNAIL_MIN_SHARE,
        "photos": "Flickr8K dev photos (224 px) enlarged to 1024x768, HEIC q80 with a 320-px "
                  "copy (320x240); speed: 12 MP (4000x3000, grain sd 5) HEICs, one thread",
        "quality_dev": quality, "decode_12mp": speed})


if __name__ == "__main__":
    main()
