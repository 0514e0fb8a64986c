"""A colour model that logs what it embeds and can be slowed down, so sweep tests can kill a
sweep midway (``kill -9``) and count, across processes, what a resumed sweep embeds again.

``$XMODAL_TEST_EMBED_LOG``: a file that gets one line ``PID PATH`` per embedded image;
``$XMODAL_TEST_EMBED_DELAY``: seconds to sleep per image.
"""

from __future__ import annotations

import os
import time

from tests.fake_models import ColourModel


class LoggedColourModel(ColourModel):
    def embed_images(self, images, *, progress=False, cache=True):
        log = os.environ.get("XMODAL_TEST_EMBED_LOG")
        if log:
            with open(log, "a") as f:
                f.writelines(f"{os.getpid()} {im}\n" for im in images)
        time.sleep(float(os.environ.get("XMODAL_TEST_EMBED_DELAY", "0")) * len(images))
        return super().embed_images(images)


class HashModel:
    """Deterministic, content-keyed random embeddings (an image by its bytes, a text by its
    words): uneven ranks that depend only on what is embedded, not on order or file names."""

    dim = 8

    @staticmethod
    def _vec(key: bytes) -> "np.ndarray":
        import hashlib

        import numpy as np

        seed = int.from_bytes(hashlib.sha1(key).digest()[:8], "little")
        return np.random.default_rng(seed).normal(size=8)

    def embed_images(self, images, *, progress=False, cache=True):
        import numpy as np

        return np.stack([self._vec(open(im, "rb").read()) for im in images]).astype("float32")

    def embed_texts(self, texts, *, progress=False):
        import numpy as np

        return np.stack([sum(self._vec(w.encode()) for w in t.lower().split())
                         for t in texts]).astype("float32")
