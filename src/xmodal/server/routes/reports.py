"""Saved evaluation reports: list them, fetch one, compare two with significance tests."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from xmodal.eval.significance import compare_runs
from xmodal.eval.significance_render import legend
from xmodal.server.errors import ApiError
from xmodal.server.serialize import json_safe
from xmodal.server.state import ServerState, get_state

router = APIRouter(prefix="/api", tags=["reports"])


@router.get("/reports", summary="List saved evaluation reports")
async def list_reports(state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """Every ``xmodal eval --json`` report found under the reports folder, summarised."""
    reports = await run_in_threadpool(state.reports.list)
    return {"reports": json_safe(reports)}


@router.get("/reports/compare", summary="Compare two saved runs with significance tests")
async def compare_reports(
    a: str = Query(..., description="Baseline report name."),
    b: str = Query(..., description="Report compared with it."),
    metric: list[str] | None = Query(None, description="Metrics (default R@1, R@5, R@10, MAP)."),
    test: str = Query("randomization", description="randomization, t or mcnemar."),
    correction: str = Query("holm", description="holm, bh or none."),
    state: ServerState = Depends(get_state),
) -> dict[str, Any]:
    """What ``xmodal compare A.json B.json --json`` prints (plus its ``legend``): per direction and
    metric, both means, the difference with its bootstrap 95% CI, p-value, corrected p-value and
    significance. Both reports need per-query values (``xmodal eval --per-query``)."""
    runs = []
    for name in (a, b):
        try:
            runs.append(await run_in_threadpool(state.reports.get, name))
        except FileNotFoundError:
            raise ApiError(404, f"no report named {name!r}; list them at /api/reports") from None
    result = await run_in_threadpool(compare_runs, runs, metrics=metric, test=test,
                                     correction=correction)
    return json_safe({**result, "legend": legend(result, units=False)})


@router.get("/reports/{name:path}", summary="Fetch one saved evaluation report")
async def get_report(name: str, state: ServerState = Depends(get_state)) -> dict[str, Any]:
    """The full report: protocol, model, per-direction metrics, n_queries, and curves if saved."""
    try:
        report = await run_in_threadpool(state.reports.get, name)
    except FileNotFoundError:
        raise ApiError(404, f"no report named {name!r}; list them at /api/reports") from None
    return json_safe(report)
