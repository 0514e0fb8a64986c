"""The out-of-domain check's photos: 13 scikit-image sample photos, one sentence query each.

They are what users' photo libraries hold and Flickr8K lacks (an astronaut, a rocket, coins, a
printed page...). The ``skimage-ood`` protocol (:mod:`xmodal.eval.protocol_builders`) ranks them
among the 1,000 Flickr8K test photos. The photos ship with scikit-image; :func:`photo_files`
writes them once as lossless PNGs to the cache (``$XMODAL_CACHE/skimage_ood``) so that every
model reads them as files, like any other protocol's images (same pixels as
:func:`sample_photos`).
"""

from __future__ import annotations

import os
from pathlib import Path

from xmodal.errors import XmodalError

PREFIX = "skimage/"  # image ids of the photos in the skimage-ood protocol
QUERIES = {
    "astronaut": "an astronaut in a space suit",
    "camera": "a man with a camera on a tripod",
    "chelsea": "a cat",
    "clock": "a clock",
    "coffee": "a cup of coffee",
    "coins": "old coins",
    "hubble_deep_field": "galaxies in deep space",
    "moon": "the surface of the moon",
    "rocket": "a rocket on the launch pad",
    "stereo_motorcycle": "a motorcycle",
    "brick": "a brick wall",
    "grass": "green grass",
    "page": "a page of printed text",
}


def sample_photos() -> list:
    """The 13 scikit-image sample photos of :data:`QUERIES`, as RGB PIL images, in order."""
    try:
        import skimage.data as skdata
    except ImportError as exc:  # pragma: no cover - scikit-image is a dependency
        raise XmodalError("the out-of-domain photos need scikit-image: pip install "
                          "scikit-image") from exc
    from PIL import Image

    photos = []
    for name in QUERIES:
        arr = getattr(skdata, name)()
        if name == "stereo_motorcycle":  # a stereo pair: the left view
            arr = arr[0]
        photos.append(Image.fromarray(arr).convert("RGB"))
    return photos


def photo_files(folder: str | os.PathLike | None = None) -> dict[str, Path]:
    """``name -> PNG file`` of the 13 photos, written to ``folder`` (default: the cache) when
    missing."""
    if folder is None:
        from xmodal.paths import cache_dir

        folder = cache_dir() / "skimage_ood"
    folder = Path(folder)
    files = {name: folder / f"{name}.png" for name in QUERIES}
    if not all(f.is_file() for f in files.values()):
        folder.mkdir(parents=True, exist_ok=True)
        for (name, path), photo in zip(files.items(), sample_photos()):
            tmp = path.with_suffix(f".tmp{os.getpid()}.png")
            photo.save(tmp, format="PNG")
            os.replace(tmp, path)
    return files


class SampleGallery:
    """Images of the skimage-ood protocol: the photos (ids ``skimage/NAME``) and the
    distractors (ids of ``others``, e.g. Flickr8K test photos), each with a file."""

    def __init__(self, photos: dict[str, Path], others) -> None:
        self.photos = photos  # name -> file
        self.others = others  # a dataset with image_path(id)

    def image_path(self, image_id: str) -> Path:
        if image_id.startswith(PREFIX):
            return self.photos[image_id.removeprefix(PREFIX)]
        return self.others.image_path(image_id)
