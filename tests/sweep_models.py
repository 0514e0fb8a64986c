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
