"""The application factory: ``create_app(db_path, ...)`` builds the FastAPI app (API + web page)."""

from __future__ import annotations

import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import logging

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from xmodal import __version__
from xmodal.paths import cache_dir
from xmodal.server.backends import Backends
from xmodal.server.body_limit import BodySizeLimit, ConcurrencyLimit
from xmodal.server.errors import install_error_handlers
from xmodal.server.limits import ServerLimits
from xmodal.server.reports import ReportStore
from xmodal.server.routes import annotate, crowd, duplicates, judge, meta, reports, search
from xmodal.server.security import AccessGuard, redact_access_log
from xmodal.server.state import ServerState
from xmodal.server.thumbnails import ThumbnailCache

STATIC_DIR = Path(__file__).parent / "static"
log = logging.getLogger("uvicorn.error")


def _mount_swagger_ui(app: FastAPI) -> None:
    """Swagger UI at /docs from the assets that the fastapi-offline package ships (Swagger UI 5,
    which reads FastAPI's OpenAPI 3.1); nothing is loaded from another host."""
    import fastapi_offline
    from fastapi.openapi.docs import get_swagger_ui_html

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/swagger-ui", StaticFiles(directory=assets), name="swagger")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui():
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title="xmodal API",
            swagger_js_url="/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url="/swagger-ui/swagger-ui.css",
            swagger_favicon_url="/swagger-ui/favicon.png")


def _page(path: Path):
    async def serve_page() -> FileResponse:
        return FileResponse(path)

    return serve_page


def create_app(
    db_path: str | os.PathLike | None = None,
    *,
    reports_dir: str | os.PathLike | None = None,
    thumbnail_dir: str | os.PathLike | None = None,
    limits: ServerLimits | None = None,
    model_spec: str | None = None,
    threads: int | None = None,
    index: Any = None,
    model: Any = None,
    tagger: Any = None,
    campaign: str | os.PathLike | None = None,
    preload: bool = False,
    allowed_hosts: list[str] | None = None,
    access_token: str | None = None,
    allowed_origins: list[str] | None = None,
) -> FastAPI:
    """Build the xmodal web application.

    db_path: the photo index (``xmodal.index.PhotoIndex``) to search; opened on first use.
    reports_dir: folder searched for saved ``xmodal eval --json`` reports.
    thumbnail_dir: disk cache for thumbnails (default: ``<cache_dir>/thumbnails``).
    model_spec: embedding model for describe (default: the index's model or the default model).
    threads: torch / FAISS threads for the library calls (None, the default: leave the process
        settings alone; ``xmodal serve`` passes 1, see ``backends._limit_threads``).
    index, model, tagger: ready objects to use instead of loading them (tests inject fakes).
    campaign: a machine-in-the-loop campaign database to judge at ``/judge`` and review at
        ``/review`` (``xmodal mitl``).
    preload: load the index and models at start-up (``xmodal serve`` does) instead of on the
        first request.
    allowed_hosts: Host names the server answers (None: any; ``xmodal serve`` passes the
        loopback names and its own address); access_token: required on every request when set
        (see :mod:`xmodal.server.security`); allowed_origins: origins besides the server's own
        Host whose pages may POST / PUT / DELETE (e.g. the public URL in front of a proxy that
        rewrites Host). With a campaign, its judging routes sign workers in by themselves and
        need no access token (a worker's or a study's link holds nothing more).
    """
    backends = Backends(
        db_path, index=index, model=model, tagger=tagger, model_spec=model_spec, threads=threads
    )
    state = ServerState(
        backends=backends,
        thumbnails=ThumbnailCache(thumbnail_dir or cache_dir() / "thumbnails"),
        reports=ReportStore(reports_dir),
        limits=limits or ServerLimits(),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if preload:  # models load at start-up, not on the first request
            try:
                log.info("xmodal: %s", await backends.run(backends.warm_up))
            except Exception as exc:  # noqa: BLE001 - the server still starts; routes say why
                log.warning("xmodal: could not preload the models: %s", exc)
        redact_access_log()  # again, after uvicorn configured its loggers
        yield
        backends.close()

    app = FastAPI(
        title="xmodal",
        version=__version__,
        description="Search photos by sentence, describe and tag images, browse evaluation "
        "reports. The web page is at `/`, the evaluation page at `/eval`.",
        lifespan=lifespan,
        # FastAPI's default /docs loads Swagger UI from a CDN (blank offline): ours serves
        # the assets of the fastapi-offline package
        docs_url=None,
        redoc_url=None,
    )
    app.state.xmodal = state
    app.state.campaign = judge.CampaignHandle(campaign) if campaign is not None else None
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_bytes=state.limits.max_body_bytes)
    app.add_middleware(ConcurrencyLimit, max_requests=state.limits.max_concurrent_requests)
    app.add_middleware(AccessGuard, allowed_hosts=allowed_hosts, token=access_token,
                       allowed_origins=allowed_origins or (), judging=campaign is not None)
    for module in (search, annotate, meta, reports, judge, duplicates, crowd):
        app.include_router(module.router)
    app.include_router(judge.pages)  # /judge and /review: a token link becomes a cookie
    redact_access_log()
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    _mount_swagger_ui(app)

    # the web pages: search (/), evaluation reports, judging and review of a MITL campaign
    for route, page in (("/", "index.html"), ("/eval", "eval.html"), ("/judge", "judge.html"),
                        ("/review", "review.html"), ("/duplicates", "duplicates.html")):
        serve = search.search_page if page == "index.html" else _page
        app.add_api_route(route, serve(STATIC_DIR / page), include_in_schema=False)

    return app
