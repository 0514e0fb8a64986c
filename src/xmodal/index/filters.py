"""Filters on a photo search, as one registry: date range, place, distance from a point, camera
and folder.

Every filter is one :class:`FilterSpec` in :data:`FILTERS` (its name, how its text is parsed,
the SQL that selects the photos passing it, its help and an example). Everything else is
generated from that list: the :class:`PhotoFilter` object, the ``--after``/``--place``/...
options of ``xmodal search``, ``similar`` and ``photos`` (:mod:`xmodal.cli.filter_options`), the
HTTP query parameters, the web page's filter bar (``GET /api/filters``), the "no indexed photo
passes" message and the facets (:func:`facets`). Adding a filter is one spec entry here (or
:func:`register` from outside), one metadata extractor (:data:`xmodal.index.metadata.EXTRACTORS`)
for what it reads from a file, and one migration step for its column.

A filter selects file ids in SQLite; the search then ranks exactly those photos (see
``AnnIndex.search(among=...)``: an ID selector on the exact index, an exact product over the
selected vectors when the index is an HNSW graph), so a filtered search returns the true top k
among the photos that pass, at any collection size.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xmodal.errors import XmodalError

if TYPE_CHECKING:  # the CLI builds its options from this module: numpy and SQLite load later
    import numpy as np

    from xmodal.index.store import Store


def fold(text: str) -> str:
    from xmodal.index.store import fold as store_fold

    return store_fold(text)

DEFAULT_KM = 10.0
_PERIOD = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")
Where = tuple[list[str], list]  # SQL conditions over ``files f`` and ``photo_meta m``, params


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


def parse_point(text: Any) -> tuple[float, float]:
    """``"38.72,-9.14"`` (or a pair already) -> (38.72, -9.14), checked."""
    try:
        if isinstance(text, (tuple, list)):
            lat, lon = (float(p) for p in text)
        else:
            lat, lon = (float(p) for p in str(text).replace(" ", "").split(","))
    except (TypeError, ValueError):
        raise XmodalError(f"--near {text!r}: give a position as LAT,LON in degrees, "
                          "such as 38.72,-9.14") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise XmodalError(f"--near {text!r}: latitude must be within ±90 and longitude ±180")
    return lat, lon


# ----- facets: what the filters can select, with photo counts ---------------------------------
@dataclass(frozen=True)
class Facet:
    """Counts of searchable photos per value of some metadata. ``select`` are the grouped SQL
    expressions (over ``files f`` and ``photo_meta m``), named by ``names`` in each row; a
    copy of a photo (same SHA-1) counts once, as search results show it once. ``suggest``
    turns the rows into (value, photo count) pairs a filter field offers."""

    key: str  # facets()[key]
    label: str  # what it lists, in words ("places")
    select: tuple[str, ...]
    names: tuple[str, ...]
    where: str = ""
    order: str = "n DESC"
    suggest: Callable[[list[dict]], list[tuple[str, int]]] = lambda rows: []

    def rows(self, store: Store, among: np.ndarray | None = None) -> list[dict]:
        """The counts over the searchable photos, or over the ids ``among`` only."""
        return [dict(zip((*self.names, "count"), r))
                for r in store.group_counts(self.select, self.where, self.order, among)]


def _place_names(rows: list[dict]) -> list[tuple[str, int]]:
    """A place filter matches one name (a city, a region or a country): each with the photos
    under it, a photo counted once when its city and region share a name."""
    counts: dict[str, int] = {}
    for r in rows:
        for name in {r["city"], r["region"], r["country"]}:
            if name:
                counts[name] = counts.get(name, 0) + r["count"]
    return sorted(counts.items(), key=lambda x: -x[1])


YEARS = Facet("years", "dates", ("substr(m.taken_at, 1, 4)",), ("year",),
              order="1 IS NULL, 1 DESC",
              suggest=lambda rows: [(r["year"], r["count"]) for r in rows if r["year"]])
PLACES = Facet("places", "places", ("m.city", "m.region", "m.country"),
               ("city", "region", "country"), where="m.country IS NOT NULL",
               order="n DESC, m.country, m.city", suggest=_place_names)
CAMERAS = Facet("cameras", "cameras", ("m.camera",), ("camera",),
                order="m.camera IS NULL, n DESC, m.camera",
                suggest=lambda rows: [(r["camera"], r["count"]) for r in rows if r["camera"]])


# ----- the registry ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FilterSpec:
    """One search filter. ``parse`` turns what a user typed (or a value already parsed) into
    the stored value, raising XmodalError with a message naming ``--name``; ``where`` gives the
    SQL conditions selecting the photos that pass (None for a setting of another filter, such
    as ``km``); ``refine`` an exact check of the rows SQL selected, on ``refine_columns``;
    ``check`` a test across filters once all are parsed; ``hint`` what the index holds, for the
    message when no photo passes."""

    name: str  # the --option, the API parameter, the PhotoFilter attribute
    help: str
    example: str
    label: str  # the web page's field
    parse: Callable[[Any], Any] = lambda value: value
    where: Callable[[Any, PhotoFilter, Store], Where] | None = None
    type: type = str  # of the option and the API parameter
    max_length: int = 200
    facet: Facet | None = None  # where the values the field suggests come from
    check: Callable[[PhotoFilter], None] | None = None
    refine_columns: tuple[str, ...] = ()
    refine: Callable[[Any, PhotoFilter, np.ndarray], np.ndarray] | None = None
    hint: Callable[[Store], str] | None = None
    title: str | None = None  # the field's tooltip (default: the help)
    minimum: float | None = None  # for a number: exclusive lower bound
    maximum: float | None = None
    css: str = ""  # an extra class of the page's field


def _text(name: str) -> Callable[[Any], str | None]:
    def parse(value: Any) -> str | None:
        if not str(value).strip():
            raise XmodalError(f"--{name} is empty")
        return str(value)
    return parse


def _date(name: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        period(value, f"--{name}")
        return str(value).strip()
    return parse


def _km(value: Any) -> float:
    try:
        km = float(value)
    except (TypeError, ValueError):
        raise XmodalError(f"--km {value!r}: give a distance in km, such as 10") from None
    if not km > 0:
        raise XmodalError("--km must be a distance above 0")
    return km


def _folder(value: Any) -> str | None:
    return str(value) if str(value).strip() else None


def _dates_in_order(f: PhotoFilter) -> None:
    if f.after and f.before and period(f.after)[0] >= period(f.before)[1]:
        raise XmodalError(f"--after {f.after} is later than --before {f.before}: "
                          "no photo can pass both")


def _km_needs_near(f: PhotoFilter) -> None:
    if f.km is not None and f.near is None:
        raise XmodalError("--km needs --near LAT,LON")


def _place_where(value: str, f: PhotoFilter, store: Store) -> Where:
    one = "f.id IN (SELECT file_id FROM photo_places WHERE name = ?)"
    parts = [fold(p) for p in value.split(",") if p.strip()]
    if len(parts) > 1:  # "Paris, France" as results and facets write it: every part
        return [f"({one} OR ({' AND '.join([one] * len(parts))}))"], [fold(value), *parts]
    return [one], [parts[0] if parts else fold(value)]


def _camera_where(value: str, f: PhotoFilter, store: Store) -> Where:
    keys = store.camera_keys(fold(value))
    return [f"m.camera_key IN ({','.join('?' * len(keys))})"], keys


def _under_where(value: str, f: PhotoFilter, store: Store) -> Where:
    # every path that starts with the prefix, as a range of the path index (paths compare by
    # code point; the range ends just past the separator)
    prefix = os.path.abspath(Path(value).expanduser()).rstrip(os.sep) + os.sep
    return ["f.path >= ? AND f.path < ?"], [prefix, prefix[:-1] + chr(ord(os.sep) + 1)]


def _near_where(value: tuple[float, float], f: PhotoFilter, store: Store) -> Where:
    """A box around the circle (the exact distance is :func:`_near_refine`'s)."""
    import numpy as np

    lat, lon = value
    km = f.km or DEFAULT_KM
    dlat = km / 110.5 + 1e-6
    where, params = ["m.lat BETWEEN ? AND ?"], [lat - dlat, lat + dlat]
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
    return where, params


def _near_refine(value: tuple[float, float], f: PhotoFilter, cols: np.ndarray) -> np.ndarray:
    from xmodal.index.metadata import km_between

    return km_between(value[0], value[1], cols[:, 0], cols[:, 1]) <= (f.km or DEFAULT_KM)


def _places_hint(store: Store) -> str:
    places = sorted({p["city"] or p["country"] for p in PLACES.rows(store)})[:8]
    return "places in the index: " + (", ".join(places) or "none (no GPS)")


def _cameras_hint(store: Store) -> str:
    cams = [c["camera"] for c in CAMERAS.rows(store) if c["camera"]][:8]
    return "cameras: " + (", ".join(cams) or "none recorded")


DATE_TITLE = "a year, month or day: 2023, 2023-06 or 2023-06-14"
FILTERS: list[FilterSpec] = [
    FilterSpec("after", "Taken in or after this year, month or day (2023, 2023-06, 2023-06-14).",
               "2023-06", "After", parse=_date("after"), max_length=32, facet=YEARS,
               where=lambda v, f, s: (["m.taken_at >= ?"], [period(v)[0]]), title=DATE_TITLE),
    FilterSpec("before", "Taken in or before this year, month or day.", "2024", "Before",
               parse=_date("before"), max_length=32, facet=YEARS, check=_dates_in_order,
               where=lambda v, f, s: (["m.taken_at < ?"], [period(v)[1]]), title=DATE_TITLE),
    FilterSpec("place", "Taken in this city, region or country (any case; from GPS, offline), "
               "or 'Paris, France' as results show it.", "Lisbon", "Place",
               parse=_text("place"), where=_place_where, facet=PLACES, hint=_places_hint),
    FilterSpec("camera", "Camera make or model contains this (e.g. 'iphone', 'EOS').", "iPhone",
               "Camera", parse=_text("camera"), where=_camera_where, facet=CAMERAS,
               hint=_cameras_hint),
    FilterSpec("near", "Taken near LAT,LON (degrees), e.g. 38.72,-9.14.", "38.72,-9.14", "Near",
               parse=parse_point, where=_near_where, max_length=64,
               refine_columns=("m.lat", "m.lon"), refine=_near_refine,
               title="a position in degrees, e.g. 38.72,-9.14"),
    FilterSpec("km", "Radius for --near in km (default 10).", "10", "km", parse=_km, type=float,
               check=_km_needs_near, minimum=0, maximum=20_100),
    FilterSpec("under", "Only photos inside this folder (at any depth).", "/photos/2023",
               "Folder", parse=_folder, where=_under_where, max_length=4096, css="folder"),
]


def spec(name: str) -> FilterSpec:
    for s in FILTERS:
        if s.name == name:
            return s
    raise XmodalError(f"no filter named {name!r} (filters: {', '.join(names())})")


def names() -> list[str]:
    return [s.name for s in FILTERS]


def register(new: FilterSpec) -> FilterSpec:
    """Add a filter (or replace the one of that name): the CLI options, the API parameters
    and the page's filter bar built after this call have it."""
    FILTERS[:] = [s for s in FILTERS if s.name != new.name] + [new]
    _changed()
    return new


def unregister(name: str) -> None:
    FILTERS[:] = [s for s in FILTERS if s.name != name]
    _changed()


_LISTENERS: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener`` whenever the registry changes (the CLI options and the API
    parameters regenerate their signatures this way)."""
    _LISTENERS.append(listener)
    return listener


def _changed() -> None:
    for listener in _LISTENERS:
        listener()


# ----- the filter object ----------------------------------------------------------------------
class PhotoFilter:
    """Which photos a search may return: one value per registered filter (None: not used).
    Dates are inclusive periods: ``after="2023"`` keeps photos taken on 1 January 2023 or
    later, ``before="2023-06"`` those taken up to the end of June 2023. ``place`` matches a
    city, region, country or country code (any case, accents optional), or several joined by
    commas ("Paris, France": each must match); ``camera`` a part of the camera's make and
    model; ``near`` a (lat, lon) or "LAT,LON" within ``km`` (default 10); ``under`` a folder."""

    __slots__ = ("_values",)

    def __init__(self, **values: Any):
        unknown = sorted(set(values) - set(names()))
        if unknown:
            raise TypeError(f"unknown filter {', '.join(unknown)} (filters: {', '.join(names())})")
        parsed = {s.name: (None if values.get(s.name) is None else s.parse(values[s.name]))
                  for s in FILTERS}
        object.__setattr__(self, "_values", parsed)
        for s in FILTERS:
            if s.check is not None:
                s.check(self)

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        if name in names():  # registered after this filter was made
            return None
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a PhotoFilter is immutable: use replace()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PhotoFilter) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, str(v)) for k, v in self.to_dict().items())))

    def __repr__(self) -> str:
        return "PhotoFilter(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

    def replace(self, **changes: Any) -> PhotoFilter:
        return PhotoFilter(**{**self._values, **changes})

    @property
    def active(self) -> bool:
        return bool(self.to_dict())

    def to_dict(self) -> dict:
        return {k: v for k, v in self._values.items() if v not in (None, "")}

    def ids(self, store: Store) -> np.ndarray | None:
        """File ids of the photos that pass (None when nothing is filtered)."""
        if not self.active:
            return None
        used = [s for s in FILTERS if self._values.get(s.name) not in (None, "")]
        where, params = [], []
        for s in used:
            if s.where is not None:
                w, p = s.where(self._values[s.name], self, store)
                where += w
                params += p
        refine = [s for s in used if s.refine is not None]
        columns = [c for s in refine for c in s.refine_columns]
        if not refine:
            return store.ids_matching(where, params)
        ids, cols = store.ids_matching(where, params, columns=columns)
        at = 0
        for s in refine:
            width = len(s.refine_columns)
            keep = s.refine(self._values[s.name], self, cols[:, at:at + width])
            ids, cols, at = ids[keep], cols[keep], at + width
        return ids

    def nothing_passes(self, store: Store) -> XmodalError:
        """The error for a filter that no indexed photo passes, naming what there is."""
        hints = [s.hint(store) for s in FILTERS if s.hint is not None
                 and self._values.get(s.name) not in (None, "")]
        hint = f" ({'; '.join(hints)})" if hints else ""
        shown = ", ".join(f"{k}={v}" for k, v in self.to_dict().items())
        return XmodalError(f"no indexed photo passes the filter {shown}{hint}; "
                           f"'xmodal photos --facets' lists {_and(facet_labels())}")


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def all_facets() -> list[Facet]:
    """The facets of the registered filters, each once, in the order of the filters."""
    out: list[Facet] = []
    for s in FILTERS:
        if s.facet is not None and s.facet.key not in {f.key for f in out}:
            out.append(s.facet)
    return out


def facet_labels() -> list[str]:
    return [f.label for f in all_facets()]


def facets(store: Store) -> dict[str, list[dict]]:
    """Per facet of the registered filters (``years``, ``places``, ``cameras``, ...): the
    values of the searchable photos with photo counts (byte-identical copies count once)."""
    return {f.key: f.rows(store) for f in all_facets()}


def describe(store: Store | None = None) -> list[dict[str, Any]]:
    """The registry as data, for the web page's filter bar (``GET /api/filters``): name,
    label, help, example, input type and bounds, and with a store the values each field
    suggests (from its facet) with photo counts."""
    out, rows = [], {}  # each facet counted once (after and before share the years)
    for s in FILTERS:
        item = {"name": s.name, "label": s.label, "help": s.help, "example": s.example,
                "title": s.title or s.help, "type": "number" if s.type is float else "text",
                "min": s.minimum, "max": s.maximum, "max_length": s.max_length, "css": s.css,
                "facet": s.facet.key if s.facet else None}
        if store is not None and s.facet is not None:
            if s.facet.key not in rows:
                rows[s.facet.key] = s.facet.rows(store)
            item["suggest"] = [list(x) for x in s.facet.suggest(rows[s.facet.key])]
        out.append(item)
    return out


__all__ = ["DEFAULT_KM", "FILTERS", "Facet", "FilterSpec", "PhotoFilter", "describe", "facets",
           "names", "on_change", "parse_point", "period", "register", "spec", "unregister"]
