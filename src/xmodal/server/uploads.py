"""Validate uploaded files: images are checked by decoding them, never by their declared type.

An image upload must be non-empty, at most ``max_image_bytes``, in a format Pillow decodes
(JPEG, PNG, GIF, WebP, BMP, TIFF, HEIC/HEIF, AVIF), declare at most ``max_image_pixels`` pixels
in its header (``max_jpeg_pixels`` for JPEG, which is decoded at a reduced scale; checked before
any pixel is decoded, so decompression bombs cost nothing), and decode completely (a truncated
JPEG is refused). Caption files are UTF-8 text, one caption per line, optionally
``id<TAB>caption``.
"""

from __future__ import annotations

import asyncio
import warnings

from fastapi import UploadFile
from PIL import Image, ImageFile, UnidentifiedImageError
from starlette.concurrency import run_in_threadpool

from xmodal.data.image_files import open_image
from xmodal.errors import XmodalError
from xmodal.server.errors import ApiError
from xmodal.server.limits import ServerLimits

IMAGE_FORMATS = ("JPEG", "PNG", "GIF", "WEBP", "BMP", "TIFF", "HEIF", "AVIF")
DECODE_SIDE = 1024  # JPEGs decode at the smallest scale (1/2, 1/4, 1/8) at least this large


async def read_bounded(upload: UploadFile | None, max_bytes: int, what: str) -> bytes:
    """The bytes of an uploaded file; 400 when missing or empty, 413 when above ``max_bytes``."""
    if upload is None:
        raise ApiError(400, f"no {what} uploaded: send it as a multipart form field")
    data = await upload.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ApiError(413, f"{what} too large: the limit is {max_bytes // (1024 * 1024)} MB")
    if not data:
        raise ApiError(400, f"the uploaded {what} is empty")
    return data


def decode_image(data: bytes, limits: ServerLimits) -> Image.Image:
    """Decode image bytes into an RGB image, refusing non-images, bombs and truncated files."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            # JPEG skips Pillow's pixel limit: max_jpeg_pixels below replaces it
            image = open_image(data, formats=IMAGE_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ApiError(413, _too_many_pixels_message(limits.max_image_pixels)) from None
    except UnidentifiedImageError:
        raise ApiError(
            415, "the upload is not an image this server can read (JPEG, PNG, GIF, WebP, BMP, "
            "TIFF, HEIC, AVIF)"
        ) from None
    except Exception as exc:  # noqa: BLE001 - malformed headers raise assorted errors in Pillow
        raise ApiError(400, f"the image could not be read: {exc}") from None
    # Someone may have relaxed Pillow globally (LOAD_TRUNCATED_IMAGES): check JPEGs ourselves.
    relaxed = ImageFile.LOAD_TRUNCATED_IMAGES and image.format == "JPEG"
    if relaxed and not data.rstrip(b"\0").endswith(b"\xff\xd9"):
        raise ApiError(400, "the image is corrupt or truncated: the JPEG has no end marker")
    width, height = image.size
    if width <= 0 or height <= 0:
        raise ApiError(400, "the image has no pixels")
    limit = limits.max_jpeg_pixels if image.format == "JPEG" else limits.max_image_pixels
    if width * height > limit:
        raise ApiError(413, _too_many_pixels_message(limit, width, height))
    try:
        if image.format == "JPEG":
            image.draft("RGB", (DECODE_SIDE, DECODE_SIDE))
        image.load()
        return image.convert("RGB")
    except Exception as exc:  # noqa: BLE001 - truncated or corrupt pixel data
        raise ApiError(400, f"the image is corrupt or truncated: {exc}") from None


def _too_many_pixels_message(limit: int, width: int = 0, height: int = 0) -> str:
    size = f" ({width} x {height})" if width else ""
    return (f"image has too many pixels{size}: the limit is {limit:,} pixels; "
            "resize it and try again")


async def read_image(
    upload: UploadFile | None, limits: ServerLimits, gate: asyncio.Semaphore | None = None
) -> Image.Image:
    """Read and decode an uploaded image (see module docstring for what is refused), off the
    event loop; ``gate`` bounds how many uploads are decoded at once."""
    data = await read_bounded(upload, limits.max_image_bytes, "image")
    if gate is None:
        return await run_in_threadpool(decode_image, data, limits)
    async with gate:
        return await run_in_threadpool(decode_image, data, limits)


def parse_captions(data: bytes, limits: ServerLimits) -> tuple[list[str], list[str]]:
    """Caption ids and texts from an uploaded caption file, read like every caption file
    (:func:`xmodal.data.caption_files.read_caption_pool`: one caption per line,
    ``id<TAB>caption``, CSV or JSONL)."""
    from xmodal.data.caption_files import read_caption_pool

    try:
        ids, texts = read_caption_pool(data, name="the caption file")
    except XmodalError as exc:
        status = 415 if "not UTF-8" in str(exc) else 400
        raise ApiError(status, str(exc)) from None
    if len(texts) > limits.max_captions:
        raise ApiError(
            413, f"the caption file has {len(texts):,} captions: the limit is {limits.max_captions:,}"
        )
    return ids, texts


async def read_captions(upload: UploadFile, limits: ServerLimits) -> tuple[list[str], list[str]]:
    data = await read_bounded(upload, limits.max_caption_bytes, "caption file")
    return parse_captions(data, limits)
