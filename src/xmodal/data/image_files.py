"""Opening image files: the formats xmodal reads, and big JPEGs without Pillow's pixel limit.

Importing this module lets Pillow read HEIC/HEIF photos (the iPhone default) through
pillow-heif; AVIF is read by Pillow itself.
"""

from __future__ import annotations

import io
import os

from PIL import Image, JpegImagePlugin

JPEG_MAGIC = b"\xff\xd8\xff"
RAW_EXTENSIONS = {".dng", ".cr2", ".cr3", ".nef", ".nrw", ".arw", ".srf", ".sr2", ".orf",
                  ".rw2", ".raf", ".pef", ".srw", ".x3f", ".3fr", ".iiq", ".erf", ".kdc"}


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


def raw_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of a RAW camera file's picture as the sensor recorded it (LibRaw's
    visible area, before any development halves it), turned upright; None when LibRaw (rawpy)
    cannot read it. Its embedded preview is often smaller."""
    try:
        import rawpy
    except ImportError:
        return None
    try:
        with rawpy.imread(io.BytesIO(data)) as raw:
            w, h, flip = raw.sizes.width, raw.sizes.height, raw.sizes.flip
    except (rawpy.LibRawError, OSError, ValueError):
        return None
    if not w or not h:
        return None
    return (h, w) if flip in (5, 6) else (w, h)  # turned on its side to be seen


def raw_preview(data: bytes) -> bytes | None:
    """A RAW camera file as JPEG bytes: its embedded preview when it has a JPEG one (most do, at
    full or near-full size), else LibRaw's half-size development; turned upright. None when
    LibRaw (rawpy) cannot read it."""
    try:
        import rawpy
    except ImportError:
        return None
    try:
        with rawpy.imread(io.BytesIO(data)) as raw:
            flip = raw.sizes.flip
            try:
                thumb = raw.extract_thumb()
            except (rawpy.LibRawNoThumbnailError, rawpy.LibRawUnsupportedThumbnailError):
                thumb = None
            if thumb is not None and thumb.format == rawpy.ThumbFormat.JPEG:
                image = Image.open(io.BytesIO(thumb.data))
                image.draft("RGB", (1024, 1024))
                image = image.convert("RGB")
            elif thumb is not None and thumb.format == rawpy.ThumbFormat.BITMAP:
                image = Image.fromarray(thumb.data)
            else:
                image = Image.fromarray(raw.postprocess(half_size=True, use_camera_wb=True))
                flip = 0  # LibRaw's development is upright already
    except (rawpy.LibRawError, OSError, ValueError):
        return None
    # LibRaw's flip: 3 = upside down, 5 = turned left, 6 = turned right
    turn = {3: Image.Transpose.ROTATE_180, 5: Image.Transpose.ROTATE_90,
            6: Image.Transpose.ROTATE_270}.get(flip)
    if turn is not None:
        image = image.transpose(turn)
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=92)
    return out.getvalue()
