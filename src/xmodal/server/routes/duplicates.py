"""Near-duplicate groups of the indexed photos (read only: the server never moves a file)."""

from __future__ import annotations

import os
import weakref
from typing import Any

from fastapi import APIRouter, Depends, Query

from xmodal.index import duplicates as dup
from xmodal.server.serialize import hit_json
from xmodal.server.state import ServerState, get_state

router = APIRouter(prefix="/api", tags=["duplicates"])

# the last groups found per server, keyed by (store generation, thresholds): finding them reads
# every vector, so paging through a large collection must not search again for each page
_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def member_json(m: dup.Member) -> dict[str, Any]:
    """One photo of a group: the fields of a search hit (id, thumbnail and preview URLs; its
    similarity to the suggested keep as ``score``) plus size, resolution, date, keep and
    ``why`` it is (or is not) the keep."""
    out = hit_json((m.path, m.similarity, m.path), 0)
    out.pop("rank", None)
    out.update(bytes=m.bytes, width=m.width, height=m.height, date=m.date,
               date_source=m.date_source, keep=m.keep, identical=m.identical, why=m.why,
               camera_original=m.camera_original, turned=m.turned)
    return out


def _groups(lib: Any, threshold: float, hash_weight: float) -> list[dup.DuplicateGroup]:
    index = lib.index()
    key = (index.store.generation, threshold, hash_weight)
    hit = _cache.get(lib)
    if hit is not None and hit[0] == key:
        # files moved aside since (xmodal duplicates --move-to) leave their groups
        groups = []
        for g in hit[1]:
            members = [m for m in g.members if os.path.exists(m.path)]
            if len(members) > 1 and members[0].keep:
                groups.append(dup.DuplicateGroup(members))
        return groups
    groups = dup.find_duplicates(index, threshold=threshold, hash_weight=hash_weight)
    _cache[lib] = (key, groups)
    return groups


@router.get("/duplicates", summary="Groups of near-duplicate indexed photos")
async def duplicates(
    threshold: float = Query(dup.THRESHOLD, ge=-1.0, le=1.0,
                             description="cosine two photos with the same perceptual hash need"),
    hash_weight: float = Query(dup.HASH_WEIGHT, ge=0.0, le=4.0,
                               description="how much the perceptual hash counts (0: embeddings "
                               "only)"),
    limit: int = Query(50, ge=1, le=200, description="groups per page"),
    offset: int = Query(0, ge=0, le=1_000_000, description="groups to skip (paging)"),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Groups of resized, cropped, re-encoded, edited, mirrored or identical copies, largest
    first; in each group the suggested keep (the camera original, then the earliest taken, no
    added border, the most pixels ...) comes first, each photo saying why it is or is not kept."""
    lib = state.backends
    groups = await lib.run(_groups, lib, threshold, hash_weight)
    page = groups[offset:offset + limit]
    return {
        "threshold": threshold,
        "hash_weight": hash_weight,
        "total_groups": len(groups),
        "total_extra": sum(len(g.extra) for g in groups),
        "extra_bytes": sum(g.extra_bytes for g in groups),
        "offset": offset,
        "limit": limit,
        "has_more": offset + limit < len(groups),
        "groups": [{"size": len(g.members), "extra_bytes": g.extra_bytes,
                    "members": [member_json(m) for m in g.members]} for g in page],
    }
