"""HTTP API and web page for xmodal: search photos by sentence, describe and tag images, and browse
saved evaluation reports. Build the app with :func:`create_app`; run it with ``xmodal serve``.

The server is thin: every answer comes from a library call (``xmodal.index``, ``xmodal.models``);
this package only parses requests, validates uploads, caches thumbnails and serialises results.
"""

from xmodal.server.app import create_app
from xmodal.server.limits import ServerLimits

__all__ = ["ServerLimits", "create_app"]
