"""Fill the disk cache with the Flickr8K features the dual encoder (and others) use.

EfficientNet-Lite0 pooled features, ImageNet logits and 7x7 feature maps of all 8,091 images
(optionally of their mirror images too) and MiniLM embeddings of all 40,455 captions. Order:
test, dev, train, then the rest, so evaluation can start first. Runs are incremental: an
interrupted run keeps what it finished.

Usage: ``nice -n 5 python scripts/train_dual_features.py [--only images|texts] [--flip]``
"""

import argparse
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from xmodal.data import load_flickr8k  # noqa: E402
from xmodal.features import extract_image_features, encode_texts  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--only", choices=["images", "texts"], default=None)
    ap.add_argument("--flip", action="store_true", help="also the mirrored images")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(args.data, judgments=False)
    groups = [ds.split("test"), ds.split("dev"), ds.split("train")]
    seen = {i for g in groups for i in g}
    groups.append([i for i in ds.image_ids if i not in seen])
    for ids in groups:
        if args.only in (None, "texts"):
            caps = [c.text for i in ids for c in ds.captions_of(i)]
            T = encode_texts(caps)
            print("captions", T.shape, flush=True)
        if args.only in (None, "images"):
            f = extract_image_features([ds.image_path(i) for i in ids], maps=True)
            print("images", f.pooled.shape, bool(f.ok.all()), flush=True)
    if args.flip and args.only in (None, "images"):
        for ids in groups:
            f = extract_image_features([ds.image_path(i) for i in ids], maps=True, flip=True)
            print("flipped images", f.pooled.shape, bool(f.ok.all()), flush=True)
