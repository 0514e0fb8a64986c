"""Filters on a photo search: date range, place, distance from a point, camera and folder.

A filter selects file ids in SQLite; the search then ranks exactly those photos (see
``AnnIndex.search(among=...)``: an ID selector on the exact index, an exact product over the
selected vectors when the index is an HNSW graph), so a filtered search returns the true top k
among the photos that pass, at any collection size.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields
from datetime import date
from pathlib import Path

import numpy as np

from xmodal.errors import XmodalError
from xmodal.index.metadata import km_between
from xmodal.index.store import Store, fold

DEFAULT_KM = 10.0
_PERIOD = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")


def period(text: str, option: str = "date") -> tuple[str, str]:
    """(first day, the day after the last) of ``2023``, ``2023-06`` or ``2023-06-14``, as ISO
    dates that compare as strings with the stored ``taken_at``."""
    m = _PERIOD.match(str(text).strip())
    if not m:
        raise XmodalError(f"{option} {text!r}: give a year, a month or a day, "
                          "such as 2023, 2023-06 or 2023-06-14")
    year, month, day = int(m[1]), m[2] and int(m[2]), m[3] and int(m[3])
    try:
        if day:
            start = date(year, month, day)
            end = date.fromordinal(start.toordinal() + 1)
        elif month:
            start = date(year, month, 1)
            end = date(year + month // 12, month % 12 + 1, 1)
        else:
            start, end = date(year, 1, 1), date(year + 1, 1, 1)
    except ValueError:
        raise XmodalError(f"{option} {text!r} is not a real date") from None
    return start.isoformat(), end.isoformat()


def parse_point(text: str) -> tuple[float, float]:
    """``"38.72,-9.14"`` -> (38.72, -9.14), checked."""
    try:
        lat, lon = (float(p) for p in str(text).replace(" ", "").split(","))
    except ValueError:
        raise XmodalError(f"--near {text!r}: give a position as LAT,LON in degrees, "
                          "such as 38.72,-9.14") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise XmodalError(f"--near {text!r}: latitude must be within ±90 and longitude ±180")
    return lat, lon


@dataclass(frozen=True)
class PhotoFilter:
    """Which photos a search may return. Dates are inclusive periods: ``after="2023"`` keeps
    photos taken on 1 January 2023 or later, ``before="2023-06"`` those taken up to the end of
    June 2023. ``place`` matches a city, region, country or country code (any case, accents
    optional), or several joined by commas ("Paris, France": each must match); ``camera`` a
    part of the camera's make and model."""

    after: str | None = None
    before: str | None = None
    place: str | None = None
    near: tuple[float, float] | None = None
    km: float | None = None
    camera: str | None = None
    under: str | None = None

    def __post_init__(self) -> None:
        if self.after:
            period(self.after, "--after")
        if self.before:
            period(self.before, "--before")
        if self.after and self.before and period(self.after)[0] >= period(self.before)[1]:
            raise XmodalError(f"--after {self.after} is later than --before {self.before}: "
                              "no photo can pass both")
        if self.km is not None and not (self.km > 0):
            raise XmodalError("--km must be a distance above 0")
        if self.km is not None and self.near is None:
            raise XmodalError("--km needs --near LAT,LON")
        for name in ("place", "camera"):
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                raise XmodalError(f"--{name} is empty")

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) not in (None, "") for f in fields(self))

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) not in (None, "")}

    def ids(self, store: Store) -> np.ndarray | None:
        """File ids of the photos that pass (None when nothing is filtered)."""
        if not self.active:
            return None
        where, params = [], []
        if self.after:
            where.append("m.taken_at >= ?")
            params.append(period(self.after)[0])
        if self.before:
            where.append("m.taken_at < ?")
            params.append(period(self.before)[1])
        if self.place:
            one = "f.id IN (SELECT file_id FROM photo_places WHERE name = ?)"
            parts = [fold(p) for p in self.place.split(",") if p.strip()]
            if len(parts) > 1:  # "Paris, France" as results and facets write it: every part
                where.append(f"({one} OR ({' AND '.join([one] * len(parts))}))")
                params += [fold(self.place), *parts]
            else:
                where.append(one)
                params.append(parts[0] if parts else fold(self.place))
        if self.camera:
            keys = store.camera_keys(fold(self.camera))
            where.append(f"m.camera_key IN ({','.join('?' * len(keys))})")
            params += keys
        if self.under:
            # every path that starts with the prefix, as a range of the path index (paths
            # compare by code point; the range ends just past the separator)
            prefix = os.path.abspath(Path(self.under).expanduser()).rstrip(os.sep) + os.sep
            where.append("f.path >= ? AND f.path < ?")
            params += [prefix, prefix[:-1] + chr(ord(os.sep) + 1)]
        if self.near:
            lat, lon = self.near
            km = self.km or DEFAULT_KM
            dlat = km / 110.5 + 1e-6  # a box around the circle, then the exact distance
            where.append("m.lat BETWEEN ? AND ?")
            params += [lat - dlat, lat + dlat]
            coslat = max(np.cos(np.radians(min(abs(lat) + dlat, 89.999))), 1e-6)
            dlon = km / (111.32 * coslat) + 1e-6
            if dlon < 180:
                lo, hi = lon - dlon, lon + dlon
                if lo < -180 or hi > 180:  # the box crosses the antimeridian
                    where.append("(m.lon >= ? OR m.lon <= ?)")
                    params += [lo + 360 if lo < -180 else lo, hi - 360 if hi > 180 else hi]
                else:
                    where.append("m.lon BETWEEN ? AND ?")
                    params += [lo, hi]
        if not self.near:
            return store.ids_matching(where, params)
        ids, lat, lon = store.ids_matching(where, params, positions=True)
        return ids[km_between(self.near[0], self.near[1], lat, lon) <= (self.km or DEFAULT_KM)]

    def nothing_passes(self, store: Store) -> XmodalError:
        """The error for a filter that no indexed photo passes, naming what there is."""
        hints = []
        if self.place:
            places = sorted({p["city"] or p["country"] for p in store.facets()["places"]})[:8]
            hints.append("places in the index: " + (", ".join(places) or "none (no GPS)"))
        if self.camera:
            cams = [c["camera"] for c in store.facets()["cameras"] if c["camera"]][:8]
            hints.append("cameras: " + (", ".join(cams) or "none recorded"))
        hint = f" ({'; '.join(hints)})" if hints else ""
        shown = ", ".join(f"{k}={v}" for k, v in self.to_dict().items())
        return XmodalError(f"no indexed photo passes the filter {shown}{hint}; "
                           "'xmodal photos --facets' lists dates, places and cameras")
