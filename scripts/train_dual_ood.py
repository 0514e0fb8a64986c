"""Out-of-domain check: scikit-image sample photos (not Flickr8K), one sentence query each.

Gallery A: the 13 sample photos. Gallery B: the same photos mixed with the 1,000 Flickr8K test
images as distractors. For each query we report the rank of its photo (1 = first).

Usage: ``python scripts/train_dual_ood.py --model dual --model efficientnet-minilm-zeroshot``
"""

from __future__ import annotations

import argparse
import json
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

QUERIES = {
    "astronaut": "an astronaut in a space suit",
    "camera": "a man with a camera on a tripod",
    "chelsea": "a cat",
    "clock": "a clock",
    "coffee": "a cup of coffee",
    "coins": "old coins",
    "hubble_deep_field": "galaxies in deep space",
    "moon": "the surface of the moon",
    "rocket": "a rocket on the launch pad",
    "stereo_motorcycle": "a motorcycle",
    "brick": "a brick wall",
    "grass": "green grass",
    "page": "a page of printed text",
}


def sample_photos() -> list[Image.Image]:
    import skimage.data as skdata

    photos = []
    for name in QUERIES:
        arr = getattr(skdata, name)()
        if name == "stereo_motorcycle":
            arr = arr[0]
        photos.append(Image.fromarray(arr).convert("RGB"))
    return photos


def ranks(S: np.ndarray) -> list[int]:
    """S: (n_gallery, n_queries) with query j's photo at gallery row j."""
    return [int((S[:, j] > S[j, j]).sum()) + 1 for j in range(S.shape[1])]


if __name__ == "__main__":
    from xmodal.data import load_flickr8k
    from xmodal.models.dual import load_embedding_model

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=None)
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(args.data, judgments=False)
    distractors = [ds.image_path(i) for i in ds.split("test")]
    photos = sample_photos()
    out = {}
    for spec in args.model or ["dual"]:
        model = load_embedding_model(None if spec == "dual" else spec)
        E = model.embed_images(photos, progress=False)
        D = model.embed_images(distractors, progress=False)
        T = model.embed_texts(list(QUERIES.values()), progress=False)
        ra = ranks(E @ T.T)
        rb = ranks(np.concatenate([E, D]) @ T.T)
        out[spec] = {
            "photos_only": dict(zip(QUERIES, ra)),
            "with_flickr8k_test_distractors": dict(zip(QUERIES, rb)),
            "top1_photos_only": f"{sum(r == 1 for r in ra)}/{len(ra)}",
            "top1_with_distractors": f"{sum(r == 1 for r in rb)}/{len(rb)}",
            "top5_with_distractors": f"{sum(r <= 5 for r in rb)}/{len(rb)}",
        }
    print(json.dumps({"queries": QUERIES, "results": out}, indent=2))
