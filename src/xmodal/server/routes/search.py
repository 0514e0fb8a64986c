"""Search by sentence, similar images, and thumbnails of indexed images."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import FileResponse

from xmodal.server.errors import ApiError
from xmodal.server.serialize import hit_json
from xmodal.server.state import ServerState, get_state
from xmodal.server.thumbnails import THUMBNAIL_SIZES

router = APIRouter(prefix="/api", tags=["search"])


def _check_page(state: ServerState, limit: int, offset: int) -> None:
    if limit > state.limits.max_k:
        raise ApiError(400, f"limit must be at most {state.limits.max_k}")
    if offset > state.limits.max_offset:
        raise ApiError(400, f"offset must be at most {state.limits.max_offset}")


def _page(hits: list[Any], offset: int, limit: int) -> dict[str, Any]:
    """One page from ``hits``, the results starting at ``offset`` plus (maybe) one more."""
    page = hits[:limit]
    return {
        "offset": offset,
        "limit": limit,
        "has_more": len(hits) > limit,
        "results": [hit_json(h, offset + i + 1) for i, h in enumerate(page)],
    }


@router.get("/search", summary="Rank indexed images by a sentence")
async def search(
    q: str = Query(..., min_length=1, max_length=1000, description="the sentence to search for"),
    limit: int = Query(24, ge=1, description="results per page"),
    offset: int = Query(0, ge=0, description="results to skip (paging)"),
    under: str | None = Query(None, max_length=4096,
                              description="only images inside this folder (absolute path)"),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Images ranked by how well they match ``q``; ``has_more`` says whether a next page exists."""
    if not q.strip():
        raise ApiError(400, "the query is empty: type a sentence to search for")
    _check_page(state, limit, offset)
    lib = state.backends
    where = {"under": under} if under else {}
    hits = await lib.run(lambda: list(lib.index().search(q, limit + 1, offset, **where)))
    return {"query": q, **_page(hits, offset, limit)}


@router.get("/similar", summary="Images similar to an indexed image")
async def similar(
    id: str = Query(..., min_length=1, description="id of an indexed image"),
    limit: int = Query(12, ge=1),
    offset: int = Query(0, ge=0),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Indexed images ranked by similarity to image ``id`` (the image itself excluded)."""
    _check_page(state, limit, offset)
    lib = state.backends

    def work() -> list[Any]:
        lib.indexed_path(id)  # 404 unless indexed: never embed an arbitrary file
        return list(lib.index().similar(id, offset + limit + 1))

    hits = [h for h in await lib.run(work) if hit_json(h, 0)["id"] != id]
    return {"id": id, **_page(hits[offset:], offset, limit)}


@router.get(
    "/thumbnail",
    summary="JPEG thumbnail of an indexed image",
    response_class=FileResponse,
    responses={200: {"content": {"image/jpeg": {}}}},
)
async def thumbnail(
    id: str = Query(..., min_length=1, description="id of an indexed image"),
    size: str = Query("small", description="small (256 px) or large (768 px)"),
    state: ServerState = Depends(get_state),
) -> FileResponse:
    """A thumbnail generated on first request and served from the disk cache afterwards."""
    if size not in THUMBNAIL_SIZES:
        raise ApiError(400, f"size must be one of {', '.join(THUMBNAIL_SIZES)}")
    lib = state.backends
    path = await lib.run(lib.indexed_path, id)
    if not path.is_file():
        raise ApiError(404, f"the image file of {id!r} is missing: {path}")
    try:
        from starlette.concurrency import run_in_threadpool

        thumb = await run_in_threadpool(state.thumbnails.get, path, THUMBNAIL_SIZES[size])
    except OSError as exc:
        raise ApiError(422, f"the image file of {id!r} cannot be decoded: {exc}") from None
    return FileResponse(thumb, media_type="image/jpeg", headers={"Cache-Control": "max-age=86400"})
