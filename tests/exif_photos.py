"""Copies of Flickr8K photos carrying real EXIF (written with piexif): dates with and without a
UTC offset, GPS positions in three cities, three cameras, and photos without any EXIF.

``PLAN`` is the ground truth the filter tests check against: it is written into the files here
and read back only through xmodal's own metadata extraction."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import piexif

PLACES = {
    "lisbon": (38.7223, -9.1393, "Lisbon", "Portugal"),
    "porto": (41.1496, -8.6109, "Porto", "Portugal"),
    "paris": (48.8566, 2.3522, "Paris", "France"),
    "saopaulo": (-23.5505, -46.6333, "São Paulo", "Brazil"),
}
CAMERAS = [("Canon", "Canon EOS 5D Mark IV"), ("Apple", "iPhone 12"),
           ("NIKON CORPORATION", "NIKON D750")]


@dataclass
class Planned:
    name: str
    taken_at: str | None  # what the EXIF says (local time), None: no EXIF date
    offset: str | None
    place: str | None  # a PLACES key
    camera: tuple[str, str] | None


def _rational(x: float) -> tuple[int, int]:
    f = Fraction(x).limit_denominator(1_000_000)
    return f.numerator, f.denominator


def _dms(value: float) -> tuple:
    value = abs(value)
    d = int(value)
    m = int((value - d) * 60)
    s = (value - d - m / 60) * 3600
    return (d, 1), (m, 1), _rational(s)


def exif_bytes(p: Planned) -> bytes:
    zeroth, exif, gps = {}, {}, {}
    if p.camera:
        zeroth[piexif.ImageIFD.Make] = p.camera[0].encode()
        zeroth[piexif.ImageIFD.Model] = p.camera[1].encode()
    zeroth[piexif.ImageIFD.Orientation] = 1
    if p.taken_at:
        exif[piexif.ExifIFD.DateTimeOriginal] = p.taken_at.replace("-", ":", 2).replace(
            "T", " ").encode()
    if p.offset:
        exif[piexif.ExifIFD.OffsetTimeOriginal] = p.offset.encode()
    if p.place:
        lat, lon = PLACES[p.place][:2]
        gps = {piexif.GPSIFD.GPSLatitudeRef: b"N" if lat >= 0 else b"S",
               piexif.GPSIFD.GPSLatitude: _dms(lat),
               piexif.GPSIFD.GPSLongitudeRef: b"E" if lon >= 0 else b"W",
               piexif.GPSIFD.GPSLongitude: _dms(lon)}
    return piexif.dump({"0th": zeroth, "Exif": exif, "GPS": gps})


def plan(n: int) -> list[Planned]:
    """``n`` photos: every 7th without EXIF, the rest spread over 2019-2024, places and
    cameras (some with a date but no GPS or no camera)."""
    out = []
    places = [*PLACES, None]
    for i in range(n):
        if i % 7 == 6:
            out.append(Planned(f"p{i:03d}.jpg", None, None, None, None))
            continue
        year, month, day = 2019 + i % 6, 1 + (i * 5) % 12, 1 + (i * 11) % 28
        out.append(Planned(
            f"{'sub/' if i % 3 == 0 else ''}p{i:03d}.jpg",
            f"{year}-{month:02d}-{day:02d}T{8 + i % 12:02d}:{(i * 7) % 60:02d}:00",
            "+01:00" if i % 2 else None,
            places[i % len(places)],
            CAMERAS[i % len(CAMERAS)] if i % 5 else None))
    return out


def make_photos(flickr8k_root: Path, folder: Path, n: int = 60) -> list[Planned]:
    """Copy ``n`` Flickr8K photos into ``folder`` with the planned EXIF; returns the plan."""
    images = sorted((flickr8k_root / "Flicker8k_Dataset").glob("*.jpg"))[:n]
    planned = plan(n)
    for src, p in zip(images, planned):
        dst = folder / p.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if p.taken_at is None and p.camera is None and p.place is None:
            shutil.copyfile(src, dst)
            piexif.remove(str(dst))  # whatever the original carried
        else:
            piexif.insert(exif_bytes(p), str(src), str(dst))
    return planned
