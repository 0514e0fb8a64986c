"""Fill the disk cache with EfficientNet-Lite0 (pooled, logits, maps; plain and mirrored) and
MiniLM features of all of Flickr8K. Usage: ``nice -n 5 python scripts/train_dual_features.py``.
"""

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from xmodal.features import flickr8k_image_features, flickr8k_text_features  # noqa: E402

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None)
    ap.add_argument("--no-flip", action="store_true")
    args = ap.parse_args()
    ids, T = flickr8k_text_features(args.data)
    print("captions", T.shape, flush=True)
    ids, f = flickr8k_image_features(args.data, maps=True)
    print("images", f.pooled.shape, f.ok.all(), flush=True)
    if not args.no_flip:
        ids, f = flickr8k_image_features(args.data, maps=True, flip=True)
        print("flipped images", f.pooled.shape, f.ok.all(), flush=True)
