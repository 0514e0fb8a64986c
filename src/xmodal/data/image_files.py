"""Opening image files: the formats xmodal reads, and big JPEGs without Pillow's pixel limit.

Importing this module lets Pillow read HEIC/HEIF photos (the iPhone default) through
pillow-heif; AVIF is read by Pillow itself.
"""

from __future__ import annotations

import io
import os

from PIL import Image, JpegImagePlugin

JPEG_MAGIC = b"\xff\xd8\xff"


def register_image_formats() -> None:
    """Let Pillow open HEIC/HEIF files through pillow-heif (idempotent)."""
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        from pillow_heif import register_heif_opener
    except ImportError:  # without it, HEIC files are reported as unreadable images
        return
    register_heif_opener()
    _REGISTERED = True


_REGISTERED = False
register_image_formats()


def open_image(source: bytes | str | os.PathLike) -> Image.Image:
    """Open image bytes or a file lazily (header only). JPEGs are opened by the JPEG plugin
    itself, which skips Pillow's global pixel limit: callers apply their own limit (or trust an
    indexed file) and use draft mode, which decodes at down to 1/8 scale."""
    if isinstance(source, bytes):
        if source[:3] == JPEG_MAGIC:
            return JpegImagePlugin.JpegImageFile(io.BytesIO(source))
        return Image.open(io.BytesIO(source))
    with open(source, "rb") as f:
        magic = f.read(3)
    if magic == JPEG_MAGIC:
        return JpegImagePlugin.JpegImageFile(os.fspath(source))
    return Image.open(source)
