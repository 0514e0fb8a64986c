"""Health check and collection statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends

from xmodal import __version__
from xmodal.server.serialize import json_safe
from xmodal.server.state import ServerState, get_state

router = APIRouter(prefix="/api", tags=["meta"])


@router.get("/health", summary="Is the server up?")
async def health(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """Always cheap: never loads a model. Says what is loaded so far."""
    lib = state.backends
    return {
        "status": "ok",
        "version": __version__,
        "db": lib.db_path.name if lib.db_path is not None else None,  # a name, never a path
        "index_loaded": lib.index_loaded,
        "model_loaded": lib.model_loaded,
        "reports": state.reports.root is not None,
    }


@router.get("/stats", summary="Statistics of the indexed collection")
async def stats(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """What the photo index reports about itself (images, captions, model, ...)."""
    lib = state.backends
    result = await lib.run(lambda: lib.index().stats())
    if not isinstance(result, dict):
        result = dict(getattr(result, "__dict__", {}) or {"value": str(result)})
    if isinstance(result.get("db"), str):  # public answers name files, never their paths
        result["db"] = Path(result["db"]).name
    return json_safe(result)
