"""Human judging of a machine-in-the-loop campaign: HITs for workers, a review queue for reviewers.

Who is asking: an ``X-Worker-Token`` header (scripts), or a session cookie. A worker's link
``/judge?code=CODE`` (``/review?code=…`` for reviewers) holds a one-time sign-in code: the server
burns it, answers with an HttpOnly, SameSite=Strict session cookie and a 303 to the page without
the query, so no usable credential stays in the address bar, the history, a later URL or the
access log. A token typed into the page goes once, in a POST body (``/api/mitl/session``).
Tokens in query strings are refused on every API route. State-changing requests from another
origin are refused by :class:`xmodal.server.security.AccessGuard`.

What a worker sees of a HIT (:mod:`xmodal.mitl.blind`): items with the same three fields
(``id``, ``text``, ``image``), opaque ids per assignment in a per-assignment order, per-worker HIT
numbers, and no verdict on the check pairs; images only of the worker's own HITs. Drafts carry
a version (another tab's save answers 409) and have size limits; every save is activity that
extends the lease. The campaign is SQLite: each request runs in the thread pool on that thread's
own connection.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Body, Depends, Header, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from xmodal.errors import XmodalError
from xmodal.mitl import blind
from xmodal.mitl.answers import ANSWERS, SKIP_LABEL
from xmodal.mitl.store import MAX_REASON_CHARS, Campaign, CampaignConflict, Worker
from xmodal.server.errors import ApiError
from xmodal.server.thumbnails import THUMBNAIL_SIZES

try:  # a store without the self-review check (older) still imports
    from xmodal.mitl.store import SelfReview
except ImportError:  # pragma: no cover
    SelfReview = CampaignConflict  # type: ignore[misc,assignment]

router = APIRouter(prefix="/api/mitl", tags=["judging"])
pages = APIRouter(include_in_schema=False)
STATIC = Path(__file__).resolve().parents[1] / "static"
COOKIES = {"judge": "xmodal_judge", "review": "xmodal_review"}
SESSION_MAX_AGE_S = 30 * 24 * 3600
MAX_DRAFT_BYTES = 64 * 1024
LIMITS = {"reason_chars": MAX_REASON_CHARS, "draft_bytes": MAX_DRAFT_BYTES}
WORKER_IMAGE = "/api/mitl/assignments/{aid}/items/{item}/image"
REVIEW_IMAGE = "/api/mitl/review/{aid}/items/{item}/image"


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
    except SelfReview as exc:
        raise ApiError(403, str(exc)) from None
    except CampaignConflict as exc:
        raise ApiError(409, str(exc)) from None
    except XmodalError as exc:
        raise ApiError(400, str(exc)) from None


def _page_of(request: Request) -> str:
    if request.url.path.startswith("/api/mitl/review") or \
            request.headers.get("x-mitl-page") == "review":
        return "review"
    return "judge"


def set_session(response, request: Request, page: str, value: str) -> None:
    response.set_cookie(COOKIES[page], value, max_age=SESSION_MAX_AGE_S, path="/",
                        httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


async def current_worker(request: Request,
                         x_worker_token: str | None = Header(None)) -> Worker:
    if "token" in request.query_params or "access_token" in request.query_params:
        raise ApiError(400, "tokens are not accepted in URLs (they end up in logs and browser "
                            "history): send the X-Worker-Token header, or open the page link "
                            "/judge?token=... once to get a session cookie")
    handle = _handle(request)
    if x_worker_token:
        worker = await _call(lambda: handle.get().worker_for(x_worker_token))
        if worker is None:
            raise ApiError(401, "unknown worker token")
        return worker
    page = _page_of(request)
    session = request.cookies.get(COOKIES[page])
    if not session:
        raise ApiError(401, "a worker token is required: open the link you were given "
                            "(/judge?token=...), or send the X-Worker-Token header; tokens "
                            "come from 'xmodal mitl workers add NAME'")
    worker = await _call(lambda: blind.session_worker(handle.get(), session, page))
    if worker is None:
        raise ApiError(401, "unknown worker token: this session has ended (the token was "
                            "revoked or reissued); open your new link")
    return worker


async def current_reviewer(worker: Worker = Depends(current_worker)) -> Worker:
    if worker.role != "reviewer":
        raise ApiError(403, "this page is for reviewers ('xmodal mitl workers add NAME "
                            "--reviewer')")
    return worker


# ----- pages: a one-time link becomes a session cookie and a clean URL ---------------------
async def _page(request: Request, page: str, file: str):
    """``/judge?code=CODE`` (``/review?code=…``): a one-time sign-in code (``xmodal mitl
    workers add`` / ``link``), burned on first use, exchanged for a session cookie and a 303 to
    the page without the query; the address the browser keeps opens nothing again. A worker's
    token is never taken from an address (the browser would keep it in its history): such a
    link signs nothing in, and the page asks for the token, sent in a POST body."""
    code = request.query_params.get("code")
    token = request.query_params.get("token")
    if code is None and token is None:
        return FileResponse(STATIC / file, headers={"Cache-Control": "no-store"})
    rest = request.url.remove_query_params(["code", "token"]).query
    clean = request.url.path + (f"?{rest}" if rest else "")
    handle = getattr(request.app.state, "campaign", None)
    if token is not None or handle is None:
        return RedirectResponse(clean + "#token-in-address", 303)
    worker = await _call(lambda: blind.redeem_signin_code(handle.get(), code, page))
    if worker is None:
        return RedirectResponse(clean + "#used-link", 303)
    value = await _call(lambda: blind.make_session(handle.get(), worker, page))
    response = RedirectResponse(clean, 303)
    set_session(response, request, page, value)
    return response


@pages.get("/judge")
async def judge_page(request: Request):
    return await _page(request, "judge", "judge.html")


@pages.get("/review")
async def review_page(request: Request):
    return await _page(request, "review", "review.html")


@pages.get("/judge/instructions")
async def instructions_page():
    return FileResponse(STATIC / "instructions.html")


# ----- sessions ----------------------------------------------------------------------------
@router.post("/session", summary="Exchange a worker token for a session cookie")
async def open_session(request: Request, body: dict[str, Any] = Body(
        ..., examples=[{"token": "TOKEN", "page": "judge"}])) -> JSONResponse:
    page = body.get("page", "judge")
    if page not in COOKIES:
        raise ApiError(422, "page must be 'judge' or 'review'")
    token = str(body.get("token") or "").strip()
    h = _handle(request)
    worker = await _call(lambda: h.get().worker_for(token)) if token else None
    if worker is None:
        raise ApiError(401, "unknown worker token")
    value = await _call(lambda: blind.make_session(h.get(), worker, page))
    response = JSONResponse({"name": worker.name, "role": worker.role})
    set_session(response, request, page, value)
    return response


@router.delete("/session", summary="End this page's session (the cookie is removed)")
async def close_session(request: Request) -> JSONResponse:
    response = JSONResponse({"ended": True})
    response.delete_cookie(COOKIES[_page_of(request)], path="/")
    return response


@router.get("/me", summary="Who the session or token belongs to")
async def me(worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    return {"name": worker.name, "role": worker.role}


# ----- judging -----------------------------------------------------------------------------
def _payload(campaign: Campaign, assignment_id: int | None, worker: Worker) -> dict[str, Any]:
    if assignment_id is None:
        return {"assignment": None, "answers": ANSWERS, "skip": SKIP_LABEL, "limits": LIMITS,
                **blind.hit_number(campaign, worker, 0)}
    raw = campaign.assignment(assignment_id, worker)
    out = blind.public_view(campaign, worker, raw, WORKER_IMAGE)
    out["answers"] = ANSWERS
    out["skip"] = SKIP_LABEL  # answer 0: can't tell (no judgment)
    out["limits"] = LIMITS
    return out


@router.post("/next", summary="The worker's open HIT, or a new one")
async def next_hit(request: Request, worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    """Returns the worker's unfinished HIT first (judging is resumable), else assigns a HIT that
    still needs judgments; ``assignment`` is null when none is left for this worker. ``number``
    / ``of`` / ``left`` count the worker's own HITs."""
    h = _handle(request)
    return await _call(lambda: _payload(h.get(), h.get().next_assignment(worker), worker))


@router.get("/assignments/{assignment_id}", summary="One of the worker's HITs")
async def get_assignment(assignment_id: int, request: Request,
                         worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    h = _handle(request)
    return await _call(lambda: _payload(h.get(), assignment_id, worker))


def _check_reason(reason: Any, where: str) -> str | None:
    if reason is None:
        return None
    reason = str(reason)
    if len(reason.strip()) > MAX_REASON_CHARS:
        raise ApiError(400, f"the reason for {where} has {len(reason.strip()):,} characters; "
                            f"the limit is {MAX_REASON_CHARS:,}")
    return reason


def _to_pairs(campaign: Campaign, assignment_id: int, raw: Any,
              draft: bool) -> dict[int, Any]:
    """Opaque item ids -> pair ids; every item id must be of this assignment."""
    if not isinstance(raw, dict):
        raise ApiError(422, "body must be {\"answers\": {item_id: {\"answer\": 1-4, "
                            "\"reason\": \"...\"}}}")
    ids = blind.id_map(campaign, assignment_id)
    order = list(ids)
    out: dict[int, Any] = {}
    for key, value in raw.items():
        pid = ids.get(str(key))
        if pid is None:
            raise ApiError(400, f"item {key!r} is not in this HIT")
        where = f"pair {order.index(str(key)) + 1} of this HIT"
        if not isinstance(value, dict):
            value = {"answer": value}
        answer = value.get("answer")
        try:
            answer = None if answer is None else int(answer)
        except (TypeError, ValueError):
            raise ApiError(422, f"bad answer for {where}: {answer!r}") from None
        reason = _check_reason(value.get("reason"), where)
        if draft:
            entry = {k: v for k, v in (("answer", answer), ("reason", reason)) if v is not None}
            if entry:
                out[pid] = entry
        else:
            out[pid] = (answer, None if reason is None else reason)
    return out


@router.put("/assignments/{assignment_id}/draft", summary="Save answers so far (resumable)")
async def save_draft(assignment_id: int, request: Request,
                     worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    """Body ``{"answers": {item_id: {"answer": 1-4, "reason": "..."}}, "position": n,
    "version": v}``; ``version`` is the one the page last got (409 when another tab saved
    since). At most 64 KiB, reasons at most 2,000 characters. A save extends the lease."""
    raw = await request.body()
    if len(raw) > MAX_DRAFT_BYTES:
        raise ApiError(413, f"the draft is {len(raw):,} bytes; the limit is 64 KiB "
                            f"({MAX_DRAFT_BYTES:,} bytes)")
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        raise ApiError(422, "the draft must be JSON") from None
    except RecursionError:
        raise ApiError(422, "the draft is nested too deeply to be a draft") from None
    if not isinstance(body, dict):
        raise ApiError(422, "the draft must be a JSON object")
    version = body.get("version")
    if version is not None and not isinstance(version, int):
        raise ApiError(422, "version must be an integer")
    try:
        position = int(body.get("position") or 0)
    except (TypeError, ValueError):
        raise ApiError(422, "position must be an integer") from None
    h = _handle(request)

    def work():
        c = h.get()
        c.assignment(assignment_id, worker)  # not yours: 400
        answers = _to_pairs(c, assignment_id, body.get("answers") or {}, draft=True)
        draft = {"answers": {str(p): v for p, v in answers.items()}, "position": position}
        return c.save_draft(assignment_id, worker, draft, version)

    new = await _call(work)
    return {"saved": True, "version": new}


@router.post("/assignments/{assignment_id}/submit", summary="Submit a whole HIT")
async def submit(assignment_id: int, request: Request, body: dict[str, Any] = Body(...),
                 worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    """All answers in one transaction. The answer is the same whether the check pairs were
    answered rightly or not (a HIT with a wrong check answer waits for review)."""
    h = _handle(request)

    def work():
        c = h.get()
        c.assignment(assignment_id, worker)
        answers = _to_pairs(c, assignment_id, body.get("answers"), draft=False)
        c.submit(assignment_id, worker, answers)

    await _call(work)
    return {"assignment": assignment_id, "submitted": True}


async def _image(request: Request, assignment_id: int, item: str, allowed_sql: str,
                 args: tuple) -> FileResponse:
    """The image of an item of an assignment that ``allowed_sql`` (a query with one row when
    the asker may see it) allows; 404 for anything else, the same as for an unknown item."""
    h = _handle(request)

    def path():
        c = h.get()
        pair = blind.pair_of(c, assignment_id, item) if c.q(allowed_sql, args) else None
        row = c.q("SELECT image_id FROM pairs WHERE id = ?", (pair,)) if pair else []
        return c.image_path(row[0][0]) if row else None

    file = await _call(path)
    if not file:
        raise ApiError(404, "no such image in this HIT")
    thumbnails = request.app.state.xmodal.thumbnails  # same pixel limit, decoded once
    try:
        thumb = await run_in_threadpool(thumbnails.get, Path(file), THUMBNAIL_SIZES["large"])
    except OSError:
        raise ApiError(404, "the image of this item cannot be read on the server") from None
    return FileResponse(thumb, media_type="image/jpeg",
                        headers={"Cache-Control": "private, max-age=3600"})


@router.get("/assignments/{assignment_id}/items/{item}/image",
            summary="The image of an item of the worker's own HIT")
async def item_image(assignment_id: int, item: str, request: Request,
                     worker: Worker = Depends(current_worker)) -> FileResponse:
    return await _image(request, assignment_id, item, "SELECT 1 FROM assignments WHERE id = ? "
                        "AND worker_id = ?", (assignment_id, worker.id))


@router.get("/progress", summary="How far the worker is")
async def progress(request: Request, worker: Worker = Depends(current_worker)) -> dict[str, Any]:
    h = _handle(request)
    return await _call(lambda: blind.hit_number(h.get(), worker, 0))


# ----- review ------------------------------------------------------------------------------
def _queue(campaign: Campaign, reviewer: Worker) -> list[dict[str, Any]]:
    out = []
    for entry in campaign.review_queue():
        if entry["worker"] == reviewer.name:
            continue  # nobody reviews their own HIT
        aid = entry["assignment"]
        for it in entry["items"]:
            it["id"] = blind.item_id(campaign, aid, it["pair_id"])
            it["image"] = REVIEW_IMAGE.format(aid=aid, item=it["id"])
        out.append(entry)
    return out


@router.get("/review", summary="HITs waiting for review (reviewers only; not their own)")
async def review_queue(request: Request,
                       reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    h = _handle(request)
    return {"queue": await _call(lambda: _queue(h.get(), reviewer)), "answers": ANSWERS,
            "me": {"name": reviewer.name, "role": reviewer.role}}


def _disagreements(campaign: Campaign) -> list[dict[str, Any]]:
    from xmodal.mitl.judgments import disagreements

    out = []
    for d in disagreements(campaign):
        aid = d["answers"][0]["assignment"]
        item = blind.item_id(campaign, aid, d["pair"])
        text = campaign.q("SELECT t.text FROM texts t JOIN pairs p ON p.text_id = t.id WHERE "
                          "p.id = ?", (d["pair"],))[0][0]
        out.append({**d, "text": text, "image": REVIEW_IMAGE.format(aid=aid, item=item)})
    return out


@router.get("/review/disagreements",
            summary="Pairs whose counted answers disagree (reviewers only)")
async def review_disagreements(request: Request,
                               reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    """Pairs to judge whose accepted answers say both yes and no (the ECCV rule: 1-2 yes,
    3-4 no; "can't tell" left out), most split first, with every worker's answer and reason."""
    h = _handle(request)
    return {"pairs": await _call(lambda: _disagreements(h.get())), "answers": ANSWERS}


@router.get("/review/{assignment_id}/items/{item}/image",
            summary="The image of an item of a submitted HIT (reviewers only)")
async def review_image(assignment_id: int, item: str, request: Request,
                       reviewer: Worker = Depends(current_reviewer)) -> FileResponse:
    return await _image(request, assignment_id, item, "SELECT 1 FROM assignments WHERE id = ? "
                        "AND submitted_at IS NOT NULL", (assignment_id,))


@router.post("/review/{assignment_id}", summary="Accept or reject a HIT (reviewers only)")
async def decide(assignment_id: int, request: Request, body: dict[str, Any] = Body(...),
                 reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    decision = body.get("decision")
    note = str(body.get("note") or "")
    if len(note) > MAX_REASON_CHARS:
        raise ApiError(400, f"the note has {len(note):,} characters; the limit is "
                            f"{MAX_REASON_CHARS:,}")
    h = _handle(request)
    await _call(lambda: h.get().decide(assignment_id, reviewer, str(decision), note))
    return {"assignment": assignment_id, "decision": decision}


@router.post("/review/{assignment_id}/undo", summary="Undo this reviewer's decision")
async def undo(assignment_id: int, request: Request,
               reviewer: Worker = Depends(current_reviewer)) -> dict[str, Any]:
    h = _handle(request)
    status = await _call(lambda: blind.undo_decision(h.get(), assignment_id, reviewer))
    return {"assignment": assignment_id, "status": status}
