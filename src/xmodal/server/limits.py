"""Limits that keep one bad request from hurting the server: upload size, image pixels, pool size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerLimits:
    """Upper bounds applied to every request.

    max_body_bytes: a request body larger than this is refused with 413 before it is read in full.
    max_image_bytes: an uploaded image file larger than this is refused with 413.
    max_image_pixels: width x height above this is refused with 413 *before* pixels are decoded
        (decompression bombs: a small PNG that claims 20,000 x 20,000 pixels).
    max_jpeg_pixels: the same for JPEG, which is decoded at down to 1/8 scale (draft mode), so
        48-200 megapixel phone and camera photos are accepted at a small decoding cost.
    max_caption_bytes / max_captions: bounds on an uploaded caption file.
    max_k: the largest page size or number of results one request may ask for.
    max_concurrent_decodes: uploads decoded at once (each may hold width x height x 3 bytes).
    max_concurrent_requests: requests in progress at once; beyond it a JSON 503 with
        Retry-After (connections that have not finished sending their headers do not count,
        so slow-header sockets cannot lock others out).
    """

    max_body_bytes: int = 25 * 1024 * 1024
    max_image_bytes: int = 20 * 1024 * 1024
    max_image_pixels: int = 40_000_000
    max_jpeg_pixels: int = 1_000_000_000
    max_caption_bytes: int = 2 * 1024 * 1024
    max_captions: int = 5_000
    max_k: int = 200
    max_offset: int = 10_000
    max_concurrent_decodes: int = 2
    max_concurrent_requests: int = 64
