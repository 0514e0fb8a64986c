"""What every route needs, stored on ``app.state.xmodal``: backends, thumbnails, reports, limits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from fastapi import Request

from xmodal.server.backends import Backends
from xmodal.server.limits import ServerLimits
from xmodal.server.reports import ReportStore
from xmodal.server.thumbnails import ThumbnailCache


@dataclass
class ServerState:
    backends: Backends
    thumbnails: ThumbnailCache
    reports: ReportStore
    limits: ServerLimits
    decode_gate: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.decode_gate = asyncio.Semaphore(self.limits.max_concurrent_decodes)


def get_state(request: Request) -> ServerState:
    """FastAPI dependency: the server state of the app handling ``request``."""
    return request.app.state.xmodal
