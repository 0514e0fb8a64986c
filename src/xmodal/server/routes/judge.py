"""Human judging of a machine-in-the-loop campaign: HITs for workers, a review queue for reviewers.

Every request carries a worker token (``X-Worker-Token`` header, or ``?token=`` for images) made
by ``xmodal mitl workers add``; nothing is read or written without a valid one. The campaign is
SQLite: each request runs in the thread pool on that thread's own connection.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Body, Depends, Header, Query, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool

from xmodal.errors import XmodalError
from xmodal.mitl.answers import ANSWERS
from xmodal.mitl.store import Campaign, CampaignConflict, Worker
from xmodal.server.errors import ApiError
from xmodal.server.thumbnails import THUMBNAIL_SIZES

router = APIRouter(prefix="/api/mitl", tags=["judging"])
class CampaignHandle:
    """Opens the campaign database once per thread."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        Campaign(self.path).close()  # a missing or broken database fails at start-up
        self._local = threading.local()

    def get(self) -> Campaign:
        c = getattr(self._local, "campaign", None)
        if c is None:
            c = self._local.campaign = Campaign(self.path)
        return c


def _handle(request: Request) -> CampaignHandle:
    handle = getattr(request.app.state, "campaign", None)
    if handle is None:
        raise ApiError(404, "no campaign is being served; start the server with "
                            "'xmodal serve --campaign CAMPAIGN.db'")
    return handle


async def _call(fn, *args):
    try:
        return await run_in_threadpool(fn, *args)
    except CampaignConflict as exc:
        raise ApiError(409, str(exc)) from None
    except XmodalError as exc:
        raise ApiError(400, str(exc)) from None


async def _worker(request: Request, token_header: str | None, token_query: str | None) -> Worker:
    handle = _handle(request)
    token = token_header or token_query
    if not token:
        raise ApiError(401, "a worker token is required (X-Worker-Token header); get one from "
                            "'xmodal mitl workers add NAME'")
    worker = await _call(lambda: handle.get().worker_for(token))
    if worker is None:
        raise ApiError(401, "unknown worker token")
    return worker


async def current_worker(request: Request,
                         x_worker_token: str | None = Header(None),
                         token: str | None = Query(None)) -> Worker:
    return await _worker(request, x_worker_token, token)


async def current_reviewer(worker: Worker = Depends(current_worker)) -> Worker:
    if worker.role != "reviewer":
        raise ApiError(403, "this page is for reviewers ('xmodal mitl workers add NAME "
                            "--reviewer')")
    return worker


def _payload(campaign: Campaign, assignment_id: int | None, worker: Worker) -> dict[str, Any]:
    if assignment_id is None:
        return {"assignment": None, "answers": ANSWERS, "progress": campaign.progress()}
    out = campaign.assignment(assignment_id, worker)
    out["answers"] = ANSWERS
    return out


@router.get("/me", summary="Who the token belongs to")
async def me(worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    return {"name": worker.name, "role": worker.role}


@router.post("/next", summary="The worker's open HIT, or a new one")
async def next_hit(request: Request, worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    """Returns the worker's unfinished HIT first (judging is resumable), else assigns a HIT that
    still needs judgments; ``assignment`` is null when none is left for this worker."""
    h = _handle(request)
    return await _call(lambda: _payload(h.get(), h.get().next_assignment(worker), worker))


@router.get("/assignments/{assignment_id}", summary="One of the worker's HITs")
async def get_assignment(assignment_id: int, request: Request,
                         worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    h = _handle(request)
    return await _call(lambda: _payload(h.get(), assignment_id, worker))


@router.put("/assignments/{assignment_id}/draft", summary="Save answers so far (resumable)")
async def save_draft(assignment_id: int, request: Request,
                     draft: dict[str, Any] = Body(..., examples=[{"answers": {"12": {"answer": 1}},
                                                                 "position": 1}]),
                     worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    h = _handle(request)
    await _call(lambda: h.get().save_draft(assignment_id, worker, draft))
    return {"saved": True}


def _answers(body: dict[str, Any]) -> dict[int, tuple[int | None, str | None]]:
    raw = body.get("answers")
    if not isinstance(raw, dict):
        raise ApiError(422, "body must be {\"answers\": {pair_id: {\"answer\": 1-4, \"reason\": "
                            "\"...\"}}}")
    out = {}
    for key, value in raw.items():
        try:
            pid = int(key)
            answer = value.get("answer") if isinstance(value, dict) else value
            reason = value.get("reason") if isinstance(value, dict) else None
            out[pid] = (None if answer is None else int(answer),
                        None if reason is None else str(reason))
        except (TypeError, ValueError):
            raise ApiError(422, f"bad answer for pair {key!r}: {value!r}") from None
    return out


@router.post("/assignments/{assignment_id}/submit", summary="Submit a whole HIT")
async def submit(assignment_id: int, request: Request, body: dict[str, Any] = Body(...),
                 worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    """All answers in one transaction. ``status`` is ``accepted``, or ``review`` when a golden
    pair was answered wrongly."""
    answers = _answers(body)
    h = _handle(request)
    status = await _call(lambda: h.get().submit(assignment_id, worker, answers))
    return {"assignment": assignment_id, "status": status}


@router.get("/image/{pair_id}", summary="The image of a pair")
async def pair_image(pair_id: int, request: Request,
                     worker: Worker = Depends(current_worker)) -> FileResponse:
    h = _handle(request)
    rows = await _call(lambda: h.get().q(
        "SELECT i.path FROM pairs p JOIN images i ON i.id = p.image_id WHERE p.id = ?",
        (pair_id,)))
    if not rows or not rows[0][0]:
        raise ApiError(404, f"pair {pair_id} has no image file in this campaign")
    # the server's thumbnail cache: same pixel limit, decoded once per file version
    thumbnails = request.app.state.xmodal.thumbnails
    try:
        thumb = await run_in_threadpool(thumbnails.get, Path(rows[0][0]), THUMBNAIL_SIZES["large"])
    except OSError as exc:
        raise ApiError(404, f"the image of pair {pair_id} cannot be read ({exc})") from None
    return FileResponse(thumb, media_type="image/jpeg",
                        headers={"Cache-Control": "private, max-age=3600"})


@router.get("/progress", summary="How far the campaign is")
async def progress(request: Request, worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    h = _handle(request)
    return await _call(lambda: h.get().progress())


@router.get("/review", summary="HITs waiting for review (reviewers only)")
async def review_queue(request: Request,
                       reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    h = _handle(request)
    return {"queue": await _call(lambda: h.get().review_queue()), "answers": ANSWERS}


@router.post("/review/{assignment_id}", summary="Accept or reject a HIT (reviewers only)")
async def decide(assignment_id: int, request: Request, body: dict[str, Any] = Body(...),
                 reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    decision = body.get("decision")
    h = _handle(request)
    await _call(lambda: h.get().decide(assignment_id, reviewer, str(decision),
                                       str(body.get("note") or "")))
    return {"assignment": assignment_id, "decision": decision}
