"""Opening image files: the formats xmodal reads, and big JPEGs without Pillow's pixel limit.

Importing this module lets Pillow read HEIC/HEIF photos (the iPhone default) through
pillow-heif; AVIF is read by Pillow itself.
"""

from __future__ import annotations

import io
import os

from PIL import Image, JpegImagePlugin

JPEG_MAGIC = b"\xff\xd8\xff"


try:  # without pillow-heif, HEIC files are reported as unreadable images
    from pillow_heif import register_heif_opener
except ImportError:
    pass
else:
    register_heif_opener()


def open_image(source: bytes | str | os.PathLike, formats=None) -> Image.Image:
    """Open image bytes or a file lazily (header only). JPEGs are opened by the JPEG plugin
    itself, which skips Pillow's global pixel limit: callers apply their own limit (or trust an
    indexed file) and use draft mode, which decodes at down to 1/8 scale. Other images go
    through ``Image.open`` (``formats``: the Pillow formats to try, default all)."""
    if isinstance(source, bytes):
        if source[:3] == JPEG_MAGIC:
            return JpegImagePlugin.JpegImageFile(io.BytesIO(source))
        return Image.open(io.BytesIO(source), formats=formats)
    with open(source, "rb") as f:
        magic = f.read(3)
    if magic == JPEG_MAGIC:
        return JpegImagePlugin.JpegImageFile(os.fspath(source))
    return Image.open(source, formats=formats)
