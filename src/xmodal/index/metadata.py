"""What a photo file says about itself: date taken, camera, GPS position and place, orientation.

Read at index time from the bytes the indexer has already loaded (EXIF through Pillow for JPEG,
HEIC/HEIF, PNG, TIFF and WebP; RAW camera files through their TIFF structure, their embedded
preview or LibRaw's own timestamp). A photo without a readable date falls back to the file's
modification time, marked ``date_source = "mtime"``. Place names come from an offline reverse
geocoder (``reverse_geocode``, GeoNames cities shipped inside the package): nothing is fetched.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from PIL import Image

from xmodal.data.image_files import RAW_EXTENSIONS, open_image


EXIF_IFD, GPS_IFD = 0x8769, 0x8825
MAKE, MODEL, ORIENTATION, DATETIME = 0x010F, 0x0110, 0x0112, 0x0132
DATETIME_ORIGINAL, DATETIME_DIGITIZED = 0x9003, 0x9004
OFFSET_TIME_ORIGINAL, OFFSET_TIME = 0x9011, 0x9010
# (population, km): the nearest place of at least this population within this distance names
# the city, the largest first; a photo in a city's neighbourhood is filed under the city
CITY_TIERS = ((1_000_000, 15.0), (100_000, 10.0), (15_000, 6.0))
# A position farther than this from every place the geocoder knows (GeoNames places of 1,000
# people or more) gets no place name: at sea, in a desert or on an ice sheet the nearest town
# is no answer (a mid-Atlantic point was labelled with an Azores town 780 km away). The
# position itself is kept (--near still finds it).
PLACE_MAX_KM = 50.0


@dataclass
class PhotoMeta:
    """Metadata of one photo. ``taken_at`` is local time as the camera recorded it
    (``YYYY-MM-DDTHH:MM:SS``); ``utc_offset`` its offset from UTC when known (``+01:00``)."""

    taken_at: str | None = None
    utc_offset: str | None = None
    date_source: str | None = None  # "exif", "raw" or "mtime"
    camera_make: str | None = None
    camera_model: str | None = None
    lat: float | None = None
    lon: float | None = None
    orientation: int | None = None
    city: str | None = None
    region: str | None = None
    country: str | None = None
    country_code: str | None = None
    # what the EXTRACTORS of registered filters read: photo_meta column -> value
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def camera(self) -> str | None:
        """Make and model as one name, without the make repeated ("Canon EOS 5D")."""
        make, model = (self.camera_make or "").strip(), (self.camera_model or "").strip()
        if model.lower().startswith(make.lower().split(" ")[0]) and make:
            return model or None
        return " ".join(p for p in (make, model) if p) or None

    @property
    def place(self) -> str | None:
        return place_name(self.city, self.region, self.country)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        return {**d, **extra, "camera": self.camera, "place": self.place}


# More metadata for a search filter (see xmodal.index.filters): photo_meta column -> a function
# of (path, the file's bytes or None, the metadata read so far) returning the value to store.
# The column itself comes from a migration step of the photo index (xmodal.index.store).
EXTRACTORS: dict[str, Callable[[str, bytes | None, PhotoMeta], Any]] = {}


def place_name(city: str | None, region: str | None, country: str | None) -> str | None:
    """'Lisbon, Portugal' (a region named like its city is said once), or None."""
    parts = [city, region if region != city else None, country]
    return ", ".join(p for p in parts if p) or None


def read_metadata(path: str, data: bytes | None = None, mtime_ns: int | None = None,
                  geocode: bool = True) -> PhotoMeta:
    """The metadata of one photo file (``data``: its bytes when already read). Never raises
    for a bad or foreign file: what cannot be read stays None."""
    meta = PhotoMeta()
    raw = Path(path).suffix.lower() in RAW_EXTENSIONS
    try:
        if data is None:
            data = Path(path).read_bytes()
        exif = _exif_of(data)
        if exif is None and raw:  # a DNG whose first IFD is sensor data, or the preview's
            exif = _tiff_exif(data) or _exif_of(_raw_preview(data) or b"")
        if exif is not None:
            _fill_from_exif(meta, exif)
        if raw and meta.taken_at is None:
            _fill_from_libraw(meta, data)
    except Exception:  # noqa: BLE001 - metadata is a bonus: a strange file still gets indexed
        pass
    if meta.taken_at is None and mtime_ns is not None:
        stamp = datetime.fromtimestamp(mtime_ns / 1e9).astimezone()
        meta.taken_at = stamp.replace(tzinfo=None).isoformat(timespec="seconds")
        meta.utc_offset = _format_offset(stamp.utcoffset())
        meta.date_source = "mtime"
    if geocode and meta.lat is not None and meta.lon is not None:
        meta.city, meta.region, meta.country, meta.country_code = place_of(meta.lat, meta.lon)
    for column, extract in EXTRACTORS.items():
        try:
            meta.extra[column] = extract(path, data, meta)
        except Exception:  # noqa: BLE001 - as above: what cannot be read stays None
            meta.extra[column] = None
    return meta


def _exif_of(data: bytes) -> Image.Exif | None:
    if not data:
        return None
    try:
        with open_image(data) as im:
            if im.format == "PNG" and "exif" not in im.info and not _png_may_hold_exif(data):
                return None  # Pillow would decode the whole image to look past its pixels
            exif = im.getexif()
    except Exception:  # noqa: BLE001 - not an image Pillow can open
        return None
    return exif if len(exif) else None


def _png_may_hold_exif(data: bytes) -> bool:
    """Whether a PNG may carry EXIF after its pixel data: an ``eXIf`` chunk or ImageMagick's
    "Raw profile type exif" text. A byte search, so a false alarm only costs Pillow's decode."""
    return b"eXIf" in data or b"Raw profile type exif" in data


def _tiff_exif(data: bytes) -> Image.Exif | None:
    """The EXIF of a TIFF-structured RAW file (DNG, NEF, CR2, ARW ...) read from its IFDs,
    without opening it as an image (Pillow cannot open raw sensor data)."""
    if data[:4] not in (b"II*\x00", b"MM\x00*"):
        return None
    exif = Image.Exif()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exif.load(data)
    except Exception:  # noqa: BLE001 - a damaged header: try the preview instead
        return None
    return exif if len(exif) else None


def _fill_from_exif(meta: PhotoMeta, exif: Image.Exif) -> None:
    sub = _ifd(exif, EXIF_IFD)
    for tag, offset_tag in ((DATETIME_ORIGINAL, OFFSET_TIME_ORIGINAL),
                            (DATETIME_DIGITIZED, OFFSET_TIME)):
        stamp = parse_exif_datetime(sub.get(tag))
        if stamp is not None:
            meta.taken_at, meta.date_source = stamp, "exif"
            meta.utc_offset = _clean_offset(sub.get(offset_tag))
            break
    if meta.taken_at is None:
        stamp = parse_exif_datetime(exif.get(DATETIME))
        if stamp is not None:
            meta.taken_at, meta.date_source = stamp, "exif"
            meta.utc_offset = _clean_offset(sub.get(OFFSET_TIME))
    meta.camera_make = _text(exif.get(MAKE))
    meta.camera_model = _text(exif.get(MODEL))
    orientation = exif.get(ORIENTATION)
    if isinstance(orientation, int) and 1 <= orientation <= 8:
        meta.orientation = orientation
    gps = _ifd(exif, GPS_IFD)
    lat, lon = _degrees(gps.get(2), gps.get(1)), _degrees(gps.get(4), gps.get(3))
    if lat is not None and lon is not None and abs(lat) <= 90 and abs(lon) <= 180 \
            and (lat, lon) != (0.0, 0.0):
        meta.lat, meta.lon = round(lat, 6), round(lon, 6)


def _ifd(exif: Image.Exif, tag: int) -> dict:
    try:
        return dict(exif.get_ifd(tag))
    except Exception:  # noqa: BLE001 - a broken pointer to a sub-IFD
        return {}


def _raw_preview(data: bytes) -> bytes | None:
    """The JPEG preview embedded in a RAW file (LibRaw through rawpy), or None."""
    try:
        import rawpy

        with rawpy.imread(io.BytesIO(data)) as raw:
            thumb = raw.extract_thumb()
    except Exception:  # noqa: BLE001 - rawpy missing, or no preview / not a RAW file
        return None
    return thumb.data if thumb.format.name == "JPEG" else None


def _fill_from_libraw(meta: PhotoMeta, data: bytes) -> None:
    import rawpy

    with rawpy.imread(io.BytesIO(data)) as raw:
        stamp = raw.other.timestamp
    if stamp and stamp.year > 1971:
        meta.taken_at = stamp.replace(tzinfo=None).isoformat(timespec="seconds")
        meta.date_source = "raw"


_EXIF_DATE = re.compile(r"^\s*(\d{4})[:\-](\d{2})[:\-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})")


def parse_exif_datetime(value: Any) -> str | None:
    """``2023:06:14 10:30:00`` -> ``2023-06-14T10:30:00``; None for blanks and nonsense."""
    text = _text(value)
    m = _EXIF_DATE.match(text or "")
    if not m:
        return None
    try:
        stamp = datetime(*(int(g) for g in m.groups()))
    except ValueError:  # 0000:00:00 00:00:00 and friends
        return None
    return stamp.isoformat(timespec="seconds") if stamp.year > 1800 else None


def _clean_offset(value: Any) -> str | None:
    text = _text(value)
    return text if text and re.fullmatch(r"[+-]\d{2}:\d{2}", text) else None


def _format_offset(delta: timedelta | None) -> str | None:
    if delta is None:
        return None
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    value = value.replace("\x00", "").strip()
    return value or None


def _degrees(value: Any, ref: Any) -> float | None:
    """EXIF GPS (degrees, minutes, seconds) rationals and an N/S/E/W reference -> degrees."""
    try:
        d, m, s = (float(x) for x in value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    if not all(math.isfinite(x) for x in (d, m, s)):
        return None
    deg = d + m / 60 + s / 3600
    return -deg if _text(ref) in ("S", "W") else deg


def place_of(lat: float, lon: float) -> tuple[str | None, str | None, str | None, str | None]:
    """(city, region, country, country code) of a position, offline: the nearest large city
    when the position is inside it (see CITY_TIERS), else the nearest named place; all None
    farther than PLACE_MAX_KM from any (an unknown place)."""
    try:
        import reverse_geocode
    except ImportError:
        return None, None, None, None
    place = None
    for population, km in CITY_TIERS:
        near = reverse_geocode.get((lat, lon), min_population=population)
        if near and km_between(lat, lon, near["latitude"], near["longitude"]) <= km:
            place = near
            break
    place = place or reverse_geocode.get((lat, lon))
    if not place or km_between(lat, lon, place["latitude"], place["longitude"]) > PLACE_MAX_KM:
        return None, None, None, None  # an unknown place
    return (place.get("city") or None, place.get("state") or None,
            place.get("country") or None, place.get("country_code") or None)


def km_between(lat1, lon1, lat2, lon2):
    """Great-circle distance in km (haversine); works on numpy arrays too."""
    import numpy as np

    p1, p2 = np.radians(lat1), np.radians(lat2)
    dp, dl = p2 - p1, np.radians(np.asarray(lon2) - np.asarray(lon1))
    a = np.sin(dp / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    return 2 * 6371.0088 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))


SOFTWARE, PROCESSING_SOFTWARE = 0x0131, 0x000B
_CREATOR_TOOL = re.compile(rb'CreatorTool(?:="|>)([^"<]{1,120})')


@dataclass(frozen=True)
class Origin:
    """What a file's EXIF says about where it came from: the EXIF ``DateTimeOriginal`` (the
    shutter's date, which editors keep but a ``DateTime`` alone does not prove), the camera,
    and the ``Software`` tag (or XMP ``CreatorTool``), which cameras fill with their firmware
    and editors with their own name."""

    date_original: str | None = None
    camera: str | None = None
    software: str | None = None


def read_origin(path: str, data: bytes) -> Origin:
    """The :class:`Origin` of one file's bytes; never raises (what cannot be read is None)."""
    raw = Path(path).suffix.lower() in RAW_EXTENSIONS
    try:
        exif = _exif_of(data)
        if exif is None and raw:
            exif = _tiff_exif(data) or _exif_of(_raw_preview(data) or b"")
    except Exception:  # noqa: BLE001 - a strange file has no origin to tell
        exif = None
    software = None
    if exif is not None:
        meta = PhotoMeta(camera_make=_text(exif.get(MAKE)), camera_model=_text(exif.get(MODEL)))
        software = _text(exif.get(SOFTWARE)) or _text(exif.get(PROCESSING_SOFTWARE))
        date = parse_exif_datetime(_ifd(exif, EXIF_IFD).get(DATETIME_ORIGINAL))
        camera = meta.camera
    else:
        date = camera = None
    tool = _CREATOR_TOOL.search(data[:1 << 17])  # XMP sits near the start of the file
    if tool and not software:
        software = tool.group(1).decode("utf-8", "replace").strip() or None
    return Origin(date, camera, software)
