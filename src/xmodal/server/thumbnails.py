"""Thumbnails of indexed images, generated once and cached on disk as JPEG.

The cache key is the image's absolute path, its modification time and size, and the thumbnail
size, so an edited photo gets a fresh thumbnail and an unchanged one is never decoded twice.
Files are written to a temporary name and renamed, so a reader never sees half a thumbnail.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from pathlib import Path

from PIL import Image, ImageOps

from xmodal.data.image_files import open_image
from xmodal.index.scan import too_large

THUMBNAIL_SIZES = {"small": 256, "large": 768}


class ThumbnailCache:
    """JPEG thumbnails under ``root/<pixels>/<hash>.jpg``; ``generated`` counts files made."""

    def __init__(self, root: str | os.PathLike, quality: int = 85) -> None:
        self.root = Path(root)
        self.quality = quality
        self.generated = 0
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _key(self, image_path: Path, pixels: int) -> str:
        st = image_path.stat()
        raw = f"{image_path.resolve()}|{st.st_mtime_ns}|{st.st_size}|{pixels}"
        return hashlib.sha1(raw.encode()).hexdigest()

    def get(self, image_path: str | os.PathLike, pixels: int) -> Path:
        """The thumbnail file for ``image_path`` at most ``pixels`` on its long side."""
        image_path = Path(image_path)
        key = self._key(image_path, pixels)
        target = self.root / str(pixels) / key[:2] / f"{key}.jpg"
        if target.is_file():
            return target
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if not target.is_file():
                self._make(image_path, target, pixels)
                self.generated += 1
        with self._guard:
            self._locks.pop(key, None)
        return target

    def _make(self, source: Path, target: Path, pixels: int) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._write(source, target, pixels)
        except Image.DecompressionBombError as exc:  # Pillow's own refusal, on open
            raise OSError(f"image too large ({exc})") from None

    def _write(self, source: Path, target: Path, pixels: int) -> None:
        with open_image(source) as image:  # indexed JPEGs may exceed Pillow's pixel limit
            reason = too_large(image)  # the file may have been swapped since it was indexed
            if reason:
                raise OSError(reason)
            if image.format == "HEIF":  # its embedded copy, if as big as the thumbnail
                fit = min(pixels / image.width, pixels / image.height, 1.0)
                image.draft(image.mode, (math.ceil(image.width * fit),
                                         math.ceil(image.height * fit)))
            else:
                image.draft("RGB", (pixels, pixels))  # JPEG: decode at reduced scale, faster
            image = ImageOps.exif_transpose(image)
            image.thumbnail((pixels, pixels))
            image = image.convert("RGB")
            tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            image.save(tmp, "JPEG", quality=self.quality)
        os.replace(tmp, target)
