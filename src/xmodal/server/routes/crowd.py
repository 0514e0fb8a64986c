"""Prolific's external-study flow on the judging server (``xmodal serve --campaign``).

The study URL (``xmodal mitl crowd export CAMPAIGN OUT --platform prolific --study-id ID``)
opens ``/prolific?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…``. Only the configured study's links
sign in; the first visit binds the PID to Prolific's SESSION_ID and this browser to the PID
(a signed cookie), so a visit with another SESSION_ID for the same PID, or another PID from the
same browser, is refused (nobody's sign-in is rotated). The participant's browser gets the judging
session cookie directly: no token is in any address. ``/prolific/done`` shows the completion
code to that browser once it has submitted a real HIT, never after a failed entry test.
"""

from __future__ import annotations

import hashlib
import hmac
from html import escape

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from xmodal.errors import XmodalError
from xmodal.mitl import blind
from xmodal.mitl.crowd import ParticipantRefused, participant_done, register_participant
from xmodal.server.routes.judge import COOKIES, set_session

router = APIRouter(tags=["crowd"])
PARTICIPANT_COOKIE = "xmodal_prolific"

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="stylesheet" href="/static/style.css"></head>
<body><main style="max-width:40em;margin:2em auto;padding:0 1em;overflow-wrap:anywhere">
<h1>{title}</h1>{body}</main></body></html>"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(PAGE.format(title=escape(title), body=body), status_code=status,
                        headers={"Cache-Control": "no-store"})


def _campaign(request: Request):
    handle = getattr(request.app.state, "campaign", None)
    return None if handle is None else handle.get()


def _mac(campaign, pid: str) -> str:
    return hmac.new(blind.secret(campaign), f"prolific:{pid}".encode(),
                    hashlib.sha256).hexdigest()[:32]


def _browser_pid(campaign, request: Request) -> str | None:
    """The PID this browser took part as (a cookie signed with the campaign's secret)."""
    value = request.cookies.get(PARTICIPANT_COOKIE) or ""
    pid, _, mac = value.rpartition(".")
    return pid if pid and hmac.compare_digest(mac, _mac(campaign, pid)) else None


NO_STUDY = ("No study here", "<p>This server is not running a judging campaign.</p>", 404)


@router.get("/prolific", include_in_schema=False)
async def prolific_start(request: Request, PROLIFIC_PID: str = Query(""),  # noqa: N803
                         STUDY_ID: str = Query(""), SESSION_ID: str = Query("")):  # noqa: N803
    campaign = _campaign(request)
    if campaign is None:
        return _page(*NO_STUDY)

    def work():
        worker = register_participant(campaign, PROLIFIC_PID, STUDY_ID, SESSION_ID,
                                      _browser_pid(campaign, request))
        return worker, blind.make_session(campaign, worker, "judge")

    try:
        worker, session = await run_in_threadpool(work)
    except ParticipantRefused as exc:
        return _page("Cannot take part", f"<p>{escape(str(exc))}.</p>", 409)
    except XmodalError as exc:
        return _page("Cannot start", f"<p>{escape(str(exc))}</p>", 400)
    body = ("<p>You will judge whether sentences describe photos, in small batches (HITs). "
            "Keep this tab open.</p>"
            '<p><a id="start" class="button" href="/judge" target="_blank" rel="noopener">'
            "Open the HITs</a></p>"
            "<p>When you have submitted your HITs, come back here:</p>"
            '<p><a id="done" class="button" href="/prolific/done">Get my completion code</a>'
            "</p>")
    response = _page("Welcome", body)
    set_session(response, request, "judge", session)
    response.set_cookie(PARTICIPANT_COOKIE, f"{PROLIFIC_PID}.{_mac(campaign, PROLIFIC_PID)}",
                        max_age=30 * 24 * 3600, path="/", httponly=True, samesite="lax",
                        secure=request.url.scheme == "https")
    return response


@router.get("/prolific/done", include_in_schema=False)
async def prolific_done(request: Request):
    campaign = _campaign(request)
    if campaign is None:
        return _page(*NO_STUDY)
    worker = await run_in_threadpool(blind.session_worker, campaign,
                                     request.cookies.get(COOKIES["judge"]), "judge")
    pid = _browser_pid(campaign, request)
    if worker is None or pid is None or worker.name != f"prolific:{pid}":
        return _page("Open the study link first", "<p>This browser has not started the study: "
                     "open it from Prolific.</p>", 401)
    done = await run_in_threadpool(participant_done, campaign, worker)
    if done["failed_entry_test"]:
        return _page("No completion code", "<p>You did not pass the entry test, so this study "
                     "has no HITs for you and there is no completion code. Please return the "
                     "study on Prolific (“Return submission”).</p>", 403)
    if done["code"] is None:
        return _page("Not finished yet", f"<p>Submit at least {done['need']} HIT"
                     f"{'s' if done['need'] != 1 else ''} first (you have submitted "
                     f"{done['submitted']}), then come back to this page.</p>", 409)
    code = done["code"]
    url = f"https://app.prolific.com/submissions/complete?cc={code}"
    return _page("Thank you", f'<p>Your completion code: <strong id="code">{escape(code)}'
                 f'</strong></p><p><a id="complete" href="{escape(url)}">Back to Prolific</a>'
                 f"</p>")
