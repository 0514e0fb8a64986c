"""ASGI middleware that refuses request bodies above a size limit (413) without reading them in full."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from xmodal.server.errors import ApiError, error_response


class BodySizeLimit:
    """Answer 413 when ``Content-Length`` exceeds ``max_bytes``; stop a streamed body at the limit."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body too large: the limit is {self.max_bytes // (1024 * 1024)} MB"
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "invalid Content-Length header")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    await error_response(413, message)(scope, receive, send)
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_bytes:
                    raise ApiError(413, message)
            return msg

        await self.app(scope, limited_receive, send)


class ConcurrencyLimit:
    """Answer a JSON 503 (``Retry-After: 1``) while ``max_requests`` requests are in progress.

    Counted per request, after its header arrived: uvicorn's own connection limit answers in
    plain text and counts sockets that never finish their header; ``xmodal serve`` sets that one
    high and relies on this one."""

    def __init__(self, app: ASGIApp, max_requests: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            response = error_response(503, "the server is busy; try again in a moment")
            response.headers["Retry-After"] = "1"
            await response(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
