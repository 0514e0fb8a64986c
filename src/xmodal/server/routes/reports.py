"""Saved evaluation reports: list them and fetch one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool

from xmodal.server.errors import ApiError
from xmodal.server.serialize import json_safe
from xmodal.server.state import ServerState, get_state

router = APIRouter(prefix="/api", tags=["reports"])


@router.get("/reports", summary="List saved evaluation reports")
async def list_reports(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """Every ``xmodal eval --json`` report found under the reports folder, summarised."""
    reports = await run_in_threadpool(state.reports.list)
    return {"reports": json_safe(reports)}


@router.get("/reports/{name:path}", summary="Fetch one saved evaluation report")
async def get_report(name: str, state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """The full report: protocol, model, per-direction metrics, n_queries, and curves if saved."""
    try:
        report = await run_in_threadpool(state.reports.get, name)
    except FileNotFoundError:
        raise ApiError(404, f"no report named {name!r}; list them at /api/reports") from None
    return json_safe(report)
