"""Walking a photo folder and checking each file before it reaches the encoder."""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from xmodal.data.folder import IMAGE_EXTENSIONS
from xmodal.data.image_files import RAW_EXTENSIONS, open_image, raw_preview, raw_size

MAX_PIXELS = 64_000_000  # refuse larger images (decompression bombs): 8000 x 8000
# JPEGs decode at down to 1/8 scale (draft mode), so a 1-gigapixel photo costs about 16 MP to
# decode: big camera and phone photos (100-200 MP) are indexed, not refused as bombs
JPEG_MAX_PIXELS = 1_000_000_000
JPEG_MIN_BYTES_PER_KPIXEL = 1  # a JPEG holds at least this many bytes per 1,000 pixels
MAX_BYTES = 200 * 1024 * 1024
MAX_SIDE = 448  # images are shrunk to this before embedding (the encoders read 224 x 224)
# A HEIC photo usually embeds a small copy (an iPhone's: 320 x 240) that decodes about 100x
# faster than the photo; the image tower reads it when its shorter side is at least this share
# of the tower's input side (benchmarks/results/heic_thumbnails.json measures what it costs)
HEIF_THUMBNAIL_MIN_SHARE = 0.9


BAD_NAME = "file name is not valid UTF-8"  # cannot be stored in the database: counted only


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes from the file system (surrogate escapes)
        return False
    return True


@dataclass(frozen=True)
class FileInfo:
    path: str  # absolute, resolved
    size: int
    mtime_ns: int


def walk_images(root: Path) -> tuple[list[FileInfo], list[tuple[str, str]]]:
    """(candidate image files, [(path, reason)] for files that are plainly not images).

    Recursive, sorted, hidden folders skipped, symlinks to files followed once.
    """
    found: list[FileInfo] = []
    other: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = os.path.join(dirpath, name)
            if not _utf8(path):
                other.append((path, BAD_NAME))
                continue
            try:
                st = os.stat(path)
            except OSError as exc:
                other.append((os.path.abspath(path), f"cannot stat: {exc.strerror}"))
                continue
            if not os.path.isfile(path):
                continue
            if Path(name).suffix.lower() not in IMAGE_EXTENSIONS:
                other.append((os.path.abspath(path), "not an image file (extension)"))
                continue
            found.append(FileInfo(os.path.abspath(path), st.st_size, st.st_mtime_ns))
    return found, other


def read_bytes(path: str) -> tuple[bytes | None, str | None]:
    """(file content, None), or (None, reason) for an empty, oversized or unreadable file."""
    try:
        size = os.path.getsize(path)
        if size == 0:
            return None, "empty file"
        if size > MAX_BYTES:
            return None, f"file too large ({size / 1e6:.0f} MB)"
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        return None, f"cannot read: {exc.strerror}"
    if not data:
        return None, "empty file"
    return data, None


def too_large(im: Image.Image) -> str | None:
    """Why an opened (not yet decoded) image is too large to decode, or None. JPEGs decode at
    down to 1/8 scale, so their limit is higher. Used wherever xmodal decodes an image file."""
    w, h = im.size
    limit = JPEG_MAX_PIXELS if im.format == "JPEG" else MAX_PIXELS
    if w * h > limit:
        return (f"image too large ({w}x{h} pixels; the limit is {limit / 1e6:,.0f} million for "
                f"{im.format or 'this format'})")
    return None


def _decode(im: Image.Image, n_bytes: int, square: int | None, thumbnails: bool,
            sensor: tuple[int, int] | None) -> tuple[Image.Image | None, str | None]:
    """:func:`load_checked`'s decoding of an opened image (``n_bytes``: the file's size)."""
    reason = too_large(im)
    if reason:
        return None, reason
    size = im.size  # before draft mode shrinks it
    if im.format == "JPEG" and n_bytes * JPEG_MIN_BYTES_PER_KPIXEL < size[0] * size[1] / 1000:
        # even a flat grey JPEG needs about 0.5 byte per 8x8 block (~8 bytes per 1,000 pixels):
        # a header that claims far more pixels than the data can hold is a doctored or damaged
        # file, not a huge photo
        return None, (f"corrupt image: the header claims {size[0]}x{size[1]} pixels "
                      f"but the file holds only {n_bytes:,} bytes")
    side = square or MAX_SIDE
    if im.format == "JPEG":
        im.draft("RGB", (side, side))  # decode at a reduced scale: fast
    elif im.format == "HEIF" and thumbnails:
        need = math.ceil(HEIF_THUMBNAIL_MIN_SHARE * side) if square else side
        im.draft(im.mode, (need, need))  # pillow-heif: an embedded copy that fits
    im.load()
    out = ImageOps.exif_transpose(im).convert("RGB")
    if out.size != im.size:  # EXIF orientation 5-8: the photo is seen on its side
        size = size[::-1]
    if square:
        out = out.resize((square, square), Image.BILINEAR)
    else:
        out.thumbnail((MAX_SIDE, MAX_SIDE), Image.BILINEAR)
    out.info["original_size"] = sensor or size
    return out, None


def load_checked(
    path: str, data: bytes | None = None, square: int | None = None, thumbnails: bool = True
) -> tuple[Image.Image | None, str | None]:
    """(RGB image, None) for a readable image, or (None, reason) for a bad one.

    ``data`` is the file's content when the caller has read it already (to hash it).
    The image comes back shrunk so that its longer side is at most ``MAX_SIDE`` pixels, or, with
    ``square``, resized to ``square`` x ``square`` as an image tower reads it (a JPEG is then
    decoded straight at the smallest scale that still covers that size: one resize; a HEIC's
    embedded copy is decoded instead of the photo when it is big enough, unless ``thumbnails``
    is False: see :data:`HEIF_THUMBNAIL_MIN_SHARE`); its full size, upright (EXIF orientation
    applied; for a RAW file the sensor's picture, not the preview decoded), is in
    ``image.info["original_size"]``.

    Refuses empty files, files over MAX_BYTES, images over MAX_PIXELS (JPEG: JPEG_MAX_PIXELS;
    checked from the header, before decoding) and truncated or corrupt data (the whole image is
    decoded; a HEIC read through its embedded copy is refused when truncated, since its boxes
    then point past the end of the file).
    """
    if data is None:
        data, reason = read_bytes(path)
        if data is None:
            return None, reason
    sensor = None
    if Path(path).suffix.lower() in RAW_EXTENSIONS:
        sensor = raw_size(data)  # the photo's size: the preview decoded below may be smaller
        data = raw_preview(data) or data  # LibRaw cannot: maybe Pillow can (TIFF-based RAW)
    try:
        with warnings.catch_warnings():
            # our own limits below replace Pillow's pixel warning (which would refuse big JPEGs)
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with open_image(data) as im:
                return _decode(im, len(data), square, thumbnails, sensor)
    except UnidentifiedImageError:
        return None, "not a readable image"
    except Image.DecompressionBombError:
        return None, (f"image too large (over {2 * Image.MAX_IMAGE_PIXELS / 1e6:,.0f} million "
                      "pixels)")
    except OSError as exc:  # truncated or corrupt data
        return None, f"corrupt image: {' '.join(str(exc).split())}"
    except Exception as exc:  # PIL (and libheif) raise assorted errors on malformed files
        return None, f"corrupt image: {type(exc).__name__}: {' '.join(str(exc).split())}"
