"""Prolific's external-study flow on the judging server (``xmodal serve --campaign``).

The study URL (``xmodal mitl crowd export CAMPAIGN OUT --platform prolific``) opens
``/prolific?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…``: the participant is registered by their
Prolific id (a worker named ``prolific:PID``), gets a fresh worker token and a page with the
link to their HITs; once they have submitted a HIT, ``/prolific/done`` shows the completion
code and the link back to Prolific.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from xmodal.errors import XmodalError
from xmodal.mitl.crowd import participant_done, register_participant

router = APIRouter(tags=["crowd"])

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


@router.get("/prolific", include_in_schema=False)
async def prolific_start(request: Request, PROLIFIC_PID: str = Query(""),  # noqa: N803
                         STUDY_ID: str = Query(""), SESSION_ID: str = Query("")):  # noqa: N803
    campaign = _campaign(request)
    if campaign is None:
        return _page("No study here", "<p>This server is not running a judging campaign.</p>",
                     404)
    try:
        token = await run_in_threadpool(register_participant, campaign, PROLIFIC_PID,
                                        STUDY_ID, SESSION_ID)
    except XmodalError as exc:
        return _page("Cannot start", f"<p>{escape(str(exc))}</p>", 400)
    done = "/prolific/done?" + urlencode({"PROLIFIC_PID": PROLIFIC_PID})
    body = (f"<p>You will judge whether sentences describe photos, in small batches (HITs). "
            f"Keep this tab open.</p>"
            f'<p><a id="start" class="button" href="/judge?{urlencode({"token": token})}" '
            f'target="_blank" rel="noopener">Open the HITs</a></p>'
            f"<p>When you have submitted your HITs, come back here:</p>"
            f'<p><a id="done" class="button" href="{escape(done)}">Get my completion code</a>'
            f"</p>")
    return _page("Welcome", body)


@router.get("/prolific/done", include_in_schema=False)
async def prolific_done(request: Request, PROLIFIC_PID: str = Query("")):  # noqa: N803
    campaign = _campaign(request)
    if campaign is None:
        return _page("No study here", "<p>This server is not running a judging campaign.</p>",
                     404)
    submitted, code = await run_in_threadpool(participant_done, campaign, PROLIFIC_PID)
    if code is None:
        return _page("Not finished yet", "<p>Submit at least one HIT first (you have submitted "
                     f"{submitted}), then come back to this page.</p>", 409)
    url = f"https://app.prolific.com/submissions/complete?cc={code}"
    return _page("Thank you", f'<p>Your completion code: <strong id="code">{escape(code)}'
                 f'</strong></p><p><a id="complete" href="{escape(url)}">Back to Prolific</a>'
                 f"</p>")
