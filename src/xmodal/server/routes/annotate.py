"""Describe an uploaded image (rank a caption pool) and tag it (rank keywords)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, File, Form, UploadFile

from xmodal.describe import rank_pool
from xmodal.server.errors import ApiError
from xmodal.server.serialize import keyword_json
from xmodal.server.state import ServerState, get_state
from xmodal.server.uploads import read_captions, read_image

router = APIRouter(prefix="/api", tags=["annotate"])


@router.post("/describe", summary="Rank captions for an uploaded image")
async def describe(
    image: UploadFile | None = File(None, description="the image (JPEG, PNG, ...)"),
    captions: UploadFile | None = File(
        None, description="optional caption file: one caption per line, or id<TAB>caption"
    ),
    limit: int = Form(10, ge=1, description="how many captions to return"),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Captions from the pool ranked by how well they describe the image. The pool is the uploaded
    caption file if one is sent, otherwise the captions of the indexed collection."""
    if limit > state.limits.max_k:
        raise ApiError(400, f"limit must be at most {state.limits.max_k}")
    picture = await read_image(image, state.limits, state.decode_gate)
    uploaded = await read_captions(captions, state.limits) if captions is not None else None
    lib = state.backends

    def work() -> tuple[str, list[str], list[str], list[tuple[int, float]]]:
        if uploaded is not None:
            ids, texts = uploaded
            text_vecs, offsets = lib.caption_vectors(texts)
            pool = "upload"
        else:
            ids, texts, text_vecs, offsets = lib.collection_captions()
            pool = "collection"
        # the same ranking as `xmodal describe` (xmodal.describe.rank_pool)
        return pool, ids, texts, rank_pool(lib.embed_images([picture])[0], text_vecs, limit,
                                           offsets)

    if uploaded is not None:  # model-only: off the library thread, searches go on meanwhile
        await lib.run(lib.model)
        pool, ids, texts, ranked = await lib.run_heavy(work)
    else:
        pool, ids, texts, ranked = await lib.run(work)
    return {
        "pool": pool,
        "pool_size": len(texts),
        "image": {"width": picture.width, "height": picture.height},
        "captions": [
            {"rank": r + 1, "id": ids[i], "text": texts[i], "score": score}
            for r, (i, score) in enumerate(ranked)
        ],
    }


@router.post("/tag", summary="Keywords for an uploaded image")
async def tag(
    image: UploadFile | None = File(None, description="the image (JPEG, PNG, ...)"),
    limit: int = Form(10, ge=1, description="how many keywords to return"),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """Keywords ranked by the default tagger (503 when no tagger is installed)."""
    if limit > state.limits.max_k:
        raise ApiError(400, f"limit must be at most {state.limits.max_k}")
    picture = await read_image(image, state.limits, state.decode_gate)
    lib = state.backends
    words = await lib.run(lambda: list(lib.tagger().tag(picture, limit)))
    return {"keywords": [keyword_json(w) for w in words[:limit]]}
