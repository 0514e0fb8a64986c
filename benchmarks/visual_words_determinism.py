"""Issue 15 check: are the Hodosh pixel features the same when computed again?

Learns the 224-px Flickr8K codebooks again from the training images (the same seeded sample and
MiniBatchKMeans) and recomputes the word maps of some test images with the cached codebooks,
then compares both with what ``$XMODAL_CACHE/hodosh`` holds, and times both steps (the
report's cost section). Identical codebooks and word maps
mean the image kernels, and so every KCCA system trained from them, come out the same when a
cache is rebuilt. Needs the cache of an earlier ``xmodal reproduce hodosh``.

    XMODAL_CACHE=/tmp/hcache python -m benchmarks.visual_words_determinism --images 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._record import record


def main(argv: list[str] | None = None) -> dict:
    from xmodal.data import load_flickr8k
    from xmodal.errors import XmodalError
    from xmodal.features.visual_words import (FEATURES, VisualWordCache, learn_codebooks,
                                              load_image, word_maps)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=40, help="test images whose maps to redo")
    ap.add_argument("--no-record", action="store_true", help="print only")
    args = ap.parse_args(argv)
    cache = VisualWordCache("flickr8k")
    if not (cache.codebook_file.is_file() and cache.words_file.is_file()):
        raise XmodalError(f"no cached codebooks and word maps in {cache.root}; run "
                          "xmodal reproduce hodosh first")
    ds = load_flickr8k()
    t0 = time.time()
    books = learn_codebooks([ds.image_path(i) for i in ds.split("train")], cache.cfg,
                            progress=False)
    with np.load(cache.codebook_file) as z:
        stored_books = {f: z[f] for f in FEATURES}
    with np.load(cache.words_file) as z:
        ids = list(z["image_ids"])
        stored_maps = {f: z[f] for f in FEATURES}
    res = {"cache": str(cache.root), "codebook_seconds": round(time.time() - t0, 1),
           "codebook_max_abs_diff": {f: float(np.abs(books[f] - stored_books[f]).max())
                                     for f in FEATURES},
           "images": args.images, "cells": {f: 0 for f in FEATURES},
           "cells_different": {f: 0 for f in FEATURES}}
    t0 = time.time()
    for i in ds.split("test")[: args.images]:
        maps = word_maps(load_image(ds.image_path(i), cache.cfg.size), stored_books, cache.cfg)
        n = ids.index(i)
        for f in FEATURES:
            res["cells"][f] += int(maps[f].size)
            res["cells_different"][f] += int((maps[f] != stored_maps[f][n]).sum())
    # loading, word maps and the comparison: what extracting visual words costs an image
    res["word_maps_seconds"] = round(time.time() - t0, 1)
    print(res)
    if not args.no_record:
        print(f"wrote {record('visual_words_determinism', res)}")
    return res


if __name__ == "__main__":
    main()
