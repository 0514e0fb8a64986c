"""Turn library results (hits, keywords) into plain JSON dictionaries for the API."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def _score(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# what a photo search knows about a hit beyond its score (SearchResult), shown when known
PHOTO_FIELDS = ("taken_at", "date_source", "place", "camera", "width", "height")


def hit_json(hit: Any, rank: int | None) -> dict[str, Any]:
    """One ranked image: id, rank, score, and the URLs of its thumbnails; plus, when known, the
    calibrated match probability (``relevance``), the date taken and where that date came from
    (``date_source``: exif, raw or mtime), the place, the camera and the size in pixels."""
    if isinstance(hit, (tuple, list)):
        item_id, score = hit[0], hit[1]
        path = hit[2] if len(hit) > 2 else None
    else:
        item_id = _field(hit, "id", "image_id", "item_id", "path")
        score = _field(hit, "score", "similarity")
        path = _field(hit, "path")
    item_id = str(item_id)
    out: dict[str, Any] = {"rank": rank, "id": item_id, "score": _score(score)}
    if path is not None:
        out["path"] = str(path)
    caption = _field(hit, "caption") if not isinstance(hit, (tuple, list)) else None
    if caption:
        out["caption"] = str(caption)
    if not isinstance(hit, (tuple, list)):
        relevance = _score(_field(hit, "relevance"))
        if relevance is not None:
            out["relevance"] = relevance
        for name in PHOTO_FIELDS:
            value = _field(hit, name)
            if value is not None:
                out[name] = value
    duplicates = getattr(hit, "duplicates", None)
    if duplicates:  # the same photo elsewhere in the collection
        out["duplicates"] = [str(d) for d in duplicates]
    q = quote(item_id, safe="")
    out["thumbnail"] = f"/api/thumbnail?id={q}&size=small"
    out["preview"] = f"/api/thumbnail?id={q}&size=large"
    return out


def keyword_json(item: Any) -> dict[str, Any]:
    """One keyword: ``{"word": str, "score": float | None}``."""
    if isinstance(item, str):
        return {"word": item, "score": None}
    if isinstance(item, (tuple, list)):
        return {"word": str(item[0]), "score": _score(item[1]) if len(item) > 1 else None}
    return {"word": str(_field(item, "word", "keyword", "label")),
            "score": _score(_field(item, "score", "probability"))}


def json_safe(obj: Any) -> Any:
    """Replace NaN/inf (not valid JSON) by None and numpy scalars by Python numbers, recursively."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return json_safe(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
