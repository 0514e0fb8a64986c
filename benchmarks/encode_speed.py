"""Encoder throughput as feature extraction runs it, and what one full extraction costs.

    python -m benchmarks.encode_speed                 # 200 photos and 2,000 captions a model
    python -m benchmarks.encode_speed --images 64 --texts 512

Times, in this process and on the configured engine (ONNX Runtime by default), the calls that
``xmodal train dual`` makes to extract its features, with the disk cache off (cold):
EfficientNet-Lite0 and -Lite2 on Flickr8K test photos (pooled features and ImageNet logits) and
MiniLM and MPNet on Flickr8K captions; then Lite2 again from the disk cache (warm). Each model
is warmed up on a few items first. It also records the sizes of the dual encoder's training data
(Flickr8K, and Conceptual Captions 18k when it is on this machine), so the report can say how
long extracting them once takes at these rates. Written to ``benchmarks/results/encode_speed.json``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

from benchmarks._record import record

os.environ.setdefault("HF_HUB_OFFLINE", "1")

IMAGE_BACKBONES = ("lite0", "lite2")
TEXT_ENCODERS = ("minilm", "mpnet")


def per_second(fn, items: list) -> float:
    t = time.perf_counter()
    fn(items)
    return round(len(items) / (time.perf_counter() - t), 2)


def training_data_sizes() -> dict:
    """Images and captions of Flickr8K and (when present) Conceptual Captions 18k."""
    from xmodal.data import load_flickr8k
    from xmodal.data.conceptual_captions import load_conceptual_captions
    from xmodal.errors import XmodalError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f8k = load_flickr8k(judgments=False)
    sizes = {"flickr8k": {"images": len(f8k.image_ids), "captions": len(f8k.captions)}}
    try:
        cc = load_conceptual_captions()
    except XmodalError:
        return sizes
    sizes["cc"] = {"images": len(cc.image_ids), "captions": len(cc.captions)}
    return sizes


def main() -> None:
    from xmodal.data import load_flickr8k
    from xmodal.features import encode_texts, extract_image_features
    from xmodal.features.onnx_engine import engine

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=200, help="photos per image model")
    ap.add_argument("--texts", type=int, default=2000, help="captions per text model")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_flickr8k(judgments=False)
    paths = [ds.image_path(i) for i in ds.split("test")[: args.images]]
    texts = [c.text for c in ds.captions[: args.texts]]
    out = {"engine": engine(), "images": len(paths), "texts": len(texts), "cold": {}}
    for bb in IMAGE_BACKBONES:
        def extract(items, bb=bb, cache=False):
            extract_image_features(items, backbone=bb, cache=cache, progress=False)

        extract(paths[:4])
        out["cold"][bb] = per_second(extract, paths)
        print(bb, out["cold"][bb], "images/s", flush=True)
    for enc in TEXT_ENCODERS:
        def encode(items, enc=enc):
            encode_texts(items, encoder=enc, cache=False, progress=False)

        encode(texts[:8])
        out["cold"][enc] = per_second(encode, texts)
        print(enc, out["cold"][enc], "captions/s", flush=True)
    extract_image_features(paths, backbone="lite2", progress=False)  # fill the cache
    out["lite2_cached"] = per_second(
        lambda items: extract_image_features(items, backbone="lite2", progress=False), paths)
    out["training_data"] = training_data_sizes()
    print(out)
    record("encode_speed", out)


if __name__ == "__main__":
    main()
