"""Flickr8K photos at their original resolution, in the ``Images/`` + ``captions.txt`` layout.

Some redistributions of Flickr8K (e.g. the Kaggle copy) hold the original JPEGs (about 500x375)
in one folder and every caption in a CSV file::

    ROOT/Images/1000268201_693b08cb0e.jpg
    ROOT/captions.txt          image,caption   (5 rows per image, in the order #0..#4)

(``ROOT`` may also be the folder above, holding ``data/Images``.) That layout has no splits and no
judgments, so :func:`load_flickr8k_originals` takes them from the official release (``official``,
the ``flickr8k`` folder of :func:`xmodal.data.load_flickr8k`), restricted to the photos present.
Caption ids are ``<image>#<row of the image in captions.txt>``; every caption must equal the
official caption of the same id (an error names the first that does not), so the text side of an
experiment is the same whichever copy of the pixels it reads.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from xmodal.data.caption_files import read_caption_pairs
from xmodal.data.flickr8k import Caption, Flickr8k, load_flickr8k
from xmodal.errors import XmodalError

IMAGE_DIR = "Images"
CAPTIONS = "captions.txt"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


@dataclass
class Flickr8kOriginals(Flickr8k):
    """A :class:`Flickr8k` whose pixels come from ``image_dir`` (the original photos); captions,
    splits and judgments are the official ones, restricted to these photos."""

    image_dir: Path = Path()
    official_root: Path = Path()

    def image_path(self, image_id: str) -> Path:
        return self.image_dir / image_id


def originals_root(path: str | os.PathLike) -> Path:
    """The folder holding ``Images/`` and ``captions.txt`` (``path`` itself or ``path/data``)."""
    p = Path(path).expanduser()
    for cand in (p, p / "data"):
        if (cand / IMAGE_DIR).is_dir() and (cand / CAPTIONS).is_file():
            return cand
    raise XmodalError(f"no Flickr8K originals at {p}: expected {IMAGE_DIR}/ and {CAPTIONS} there "
                      "or under data/")


def load_flickr8k_originals(path: str | os.PathLike, official: str | os.PathLike | None = None,
                            judgments: bool = True) -> Flickr8kOriginals:
    """Load the original-resolution photos under ``path`` with the official captions, splits and
    judgments (``official``: the data root or ``flickr8k`` folder; default ``$XMODAL_DATA``).

    Only photos that are in ``Images/``, in ``captions.txt`` (five captions each) and in the
    official release are kept; photos without captions are counted in a warning.
    """
    root = originals_root(path)
    files = {f.name for f in (root / IMAGE_DIR).iterdir()
             if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES}
    if not files:
        raise XmodalError(f"no images in {root / IMAGE_DIR}")
    pairs = read_caption_pairs(root / CAPTIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the official release's own missing-image warning
        ref = load_flickr8k(official, judgments=judgments)
    captions: list[Caption] = []
    for image_id in sorted(files):
        texts = pairs.get(image_id)
        if texts is None:
            continue
        if len(texts) != 5:
            raise XmodalError(f"{root / CAPTIONS}: {image_id} has {len(texts)} captions, not 5")
        for k, text in enumerate(texts):
            cid = f"{image_id}#{k}"
            try:
                official_text = ref.caption(cid).text
            except XmodalError:
                raise XmodalError(f"{root / CAPTIONS}: {image_id} is not an image of the official "
                                  f"Flickr8K release at {ref.root}") from None
            if text.strip() != official_text:
                raise XmodalError(f"{root / CAPTIONS}: caption {k} of {image_id} differs from the "
                                  f"official {cid}: {text.strip()!r} vs {official_text!r}")
            captions.append(Caption(cid, image_id, k, official_text))
    image_ids = sorted({c.image_id for c in captions})
    uncaptioned = len(files) - len(image_ids)
    if uncaptioned:
        warnings.warn(f"Flickr8K originals: {uncaptioned} image(s) in {root / IMAGE_DIR} have no "
                      f"captions in {CAPTIONS} (skipped)", stacklevel=2)
    keep = set(image_ids)
    splits = {name: [i for i in ids if i in keep] for name, ids in ref.splits.items()}
    expert = [e for e in ref.expert if e.image_id in keep]
    crowd = [c for c in ref.crowd if c.image_id in keep]
    return Flickr8kOriginals(ref.root, image_ids, captions, splits, expert, crowd,
                             image_dir=root / IMAGE_DIR, official_root=ref.root)
