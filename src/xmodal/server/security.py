"""Who may talk to the server: allowed Host names, an access token, standard security headers.

- **Host check.** Requests whose ``Host`` header is not an allowed name get a JSON 400: a page
  on another site that rebinds its DNS name to 127.0.0.1 cannot read the API.
- **Access token** (``xmodal serve --token``; required when listening beyond loopback). Every
  request must carry it: ``Authorization: Bearer TOKEN``, or the ``xmodal_token`` cookie that
  opening any page with ``?access_token=TOKEN`` once sets (HttpOnly, SameSite=Strict), so the
  web pages work unchanged. Comparisons are constant-time.
- **Judging without the shared token** (``judging=True``: a campaign is served). The judging
  routes sign their own visitors in (a worker's one-time link, token or session cookie, or a
  Prolific study link, see :mod:`xmodal.server.routes.crowd`), so they alone are open without
  the access token: :data:`JUDGING_PAGES` and ``/api/mitl/`` except its review routes. A study
  link or a worker's link therefore holds nothing that opens photo search, the review pages,
  the evaluation pages or the API docs: those still need the access token.
- **Same origin for writes.** A POST, PUT, PATCH or DELETE whose ``Origin`` is another origin
  (or ``null``), or that the browser marks ``Sec-Fetch-Site: cross-site`` / ``same-site``, gets
  a JSON 403: a page elsewhere cannot make a visitor's browser write with its cookies.
  Requests without these headers (scripts, curl) are not browser cross-site requests and pass.
- **Headers** on every response: no MIME sniffing, no framing, no referrer.
- **Access log** (:func:`redact_access_log`): uvicorn's access lines show paths without their
  query strings, so no token reaches a log file.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from xmodal.server.errors import error_response

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
COOKIE = "xmodal_token"
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# what a worker's browser needs to judge (the judge page, its instructions and assets, the
# Prolific entry and completion pages); the judging API is /api/mitl/ less its review routes
JUDGING_PAGES = frozenset({"/judge", "/judge/instructions", "/prolific", "/prolific/done",
                           "/static/judge.js", "/static/common.js", "/static/style.css",
                           "/static/favicon.svg"})
JUDGING_API = "/api/mitl/"


def is_judging_path(path: str) -> bool:
    """A path the judging routes answer by themselves (worker sign-in, no shared token)."""
    if "//" in path or "/." in path or "\\" in path:
        return False
    if path in JUDGING_PAGES:
        return True
    return path.startswith(JUDGING_API) and not path.startswith(JUDGING_API + "review")


def continue_page(url: str) -> HTMLResponse:
    """A page that replaces itself (and its entry in the history) with ``url``; a link for
    browsers without scripts."""
    link = html.escape(url, quote=True)
    return HTMLResponse(
        '<!doctype html><meta charset="utf-8"><title>xmodal</title>'
        f'<p>Signed in. <a id="continue" href="{link}">Continue</a></p>'
        '<script>location.replace(document.getElementById("continue").href)</script>',
        headers={"Cache-Control": "no-store"})


class RedactQuery(logging.Filter):
    """Drops the query string from uvicorn's access lines (``'%s - "%s %s HTTP/%s" %d'``, the
    path is the third argument) and from any other record's string arguments that look like a
    path with one."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(a.split("?", 1)[0] if isinstance(a, str) and a.startswith("/")
                                and "?" in a else a for a in args)
        return True


def redact_access_log(name: str = "uvicorn.access") -> None:
    """Install :class:`RedactQuery` on the access logger (once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactQuery) for f in logger.filters):
        logger.addFilter(RedactQuery())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """The name part of a Host header: ``[::1]:8000`` -> ``::1``, ``a.b:80`` -> ``a.b``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class AccessGuard:
    """ASGI middleware: Host check, optional token, security headers (HTTP only)."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] | None = None,
                 token: str | None = None, allowed_origins: Iterable[str] = (),
                 judging: bool = False) -> None:
        self.app = app
        self.judging = judging  # the judging routes are open without the token
        self.allowed = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        self.token = token or None
        # origins besides the request's own Host (a public URL in front of a proxy)
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = _host_name(request.headers.get("host", ""))
        if self.allowed is not None and "*" not in self.allowed and host not in self.allowed:
            await error_response(400, f"host {host!r} is not served here")(scope, receive, send)
            return
        refusal = self._cross_origin(request)
        if refusal:
            await error_response(403, refusal)(scope, receive, send)
            return
        if self.token is not None:
            given = request.query_params.get("access_token")
            if given is not None and hmac.compare_digest(given, self.token) \
                    and request.method == "GET" and not request.url.path.startswith("/api/"):
                # a page opened with ?access_token=: keep it in a cookie, drop it from the
                # address. Not a redirect: a SameSite=Strict cookie is not sent on a redirect
                # of a navigation that another site started (a study link on Prolific, a link
                # in an e-mail); a page of ours that replaces itself is a same-site navigation.
                response = continue_page(str(request.url.remove_query_params("access_token")))
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
                await response(scope, receive, send)
                return
            if not self._authorized(request) and not (self.judging
                                                      and is_judging_path(scope["path"])):
                await error_response(401, "this server needs its access token: open a page "
                                     "with ?access_token=TOKEN or send 'Authorization: "
                                     "Bearer TOKEN'")(scope, receive, send)
                return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _cross_origin(self, request: Request) -> str | None:
        """Why a state-changing request is refused as cross-origin, or None."""
        if request.method not in UNSAFE_METHODS:
            return None
        site = request.headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site"):
            return f"a {request.method} from another site is refused (Sec-Fetch-Site: {site})"
        origin = request.headers.get("origin")
        if origin is None:
            return None
        # the Host, or the public name a reverse proxy puts in X-Forwarded-Host (a page on
        # another site cannot set that header on a request it makes a browser send)
        own = {request.headers.get(h, "").split(",")[0].strip().lower()
               for h in ("host", "x-forwarded-host")} - {""}
        parts = urlsplit(origin.strip().lower())
        if origin.strip().lower() == "null" or not parts.netloc:
            return "a request with an opaque origin ('null') is refused"
        if parts.netloc in own or origin.strip().rstrip("/").lower() in self.origins:
            return None
        return (f"a {request.method} from origin {origin!r} is refused: this server only "
                f"takes writes from its own pages")

    def _authorized(self, request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        candidates = [auth[7:].strip()] if auth.lower().startswith("bearer ") else []
        candidates.append(request.cookies.get(COOKIE, ""))
        return any(c and hmac.compare_digest(c, self.token) for c in candidates)
