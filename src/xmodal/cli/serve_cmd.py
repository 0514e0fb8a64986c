"""``xmodal serve``: the HTTP API and web page over a photo index and saved evaluation reports."""

from __future__ import annotations

from pathlib import Path

import typer

from xmodal.cli._app import app, console


@app.command(
    "serve",
    epilog="Examples: xmodal serve --db photos.db --reports reports/json --port 8000  "
    "(then open http://127.0.0.1:8000/ ; the API is documented at /docs).  "
    "On a network: xmodal serve --host 0.0.0.0 --token \"$(openssl rand -hex 16)\" "
    "(then open http://HOST:8000/?access_token=TOKEN once).",
)
def serve(
    db: Path = typer.Option(
        None,
        "--db",
        help="photo index to search, built with 'xmodal index FOLDER' "
        "(default: $XMODAL_DB, else $XDG_DATA_HOME/xmodal/photos.db, else "
        "~/.local/share/xmodal/photos.db)",
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on"),
    port: int = typer.Option(8000, "--port", help="TCP port to listen on"),
    reports: Path = typer.Option(
        Path("reports"), "--reports", help="folder of saved 'xmodal eval --json' reports"
    ),
    model: str = typer.Option(
        None, "--model", help="embedding model for describe (default: the index's model)"
    ),
    tagger: Path = typer.Option(
        None, "--tagger", help="tagging model directory for the tag endpoint (default: the "
        "shipped tagger, Flickr8K + Conceptual Captions; train your own with "
        "'xmodal train tagger')"
    ),
    thumbnails: Path = typer.Option(
        None, "--thumbnails", help="thumbnail cache folder (default: <cache>/thumbnails)"
    ),
    threads: int = typer.Option(
        1, "--threads", help="torch/FAISS threads per request (1 is fastest on a busy machine)"
    ),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level"),
    ann: Path = typer.Option(
        None, "--ann", help="serve an index folder built by 'xmodal ann build' (millions of "
        "images, memory-mapped) instead of a photo database"
    ),
    campaign: Path = typer.Option(
        None, "--campaign", help="a machine-in-the-loop campaign database ('xmodal mitl "
        "propose') to judge at /judge and review at /review"
    ),
    token: str = typer.Option(
        None, "--token", envvar="XMODAL_TOKEN", help="access token every request must carry "
        "(required when --host is not a loopback address); open the page once with "
        "?access_token=TOKEN, API clients send 'Authorization: Bearer TOKEN'. With --campaign, "
        "the judging pages (/judge, /prolific, /api/mitl/ but review) sign workers in by "
        "themselves and need no access token"
    ),
    allow_host: list[str] = typer.Option(
        None, "--allow-host", help="another Host name to answer (e.g. the machine's DNS name); "
        "loopback names and --host are always allowed"
    ),
) -> None:
    """Serve the search / describe / tag API and the web page (search and evaluation reports)."""
    import uvicorn

    from xmodal.index import default_db_path
    from xmodal.server import create_app

    from xmodal.errors import XmodalError
    from xmodal.server.security import LOOPBACK_NAMES, is_loopback

    if not is_loopback(host) and not token:
        raise XmodalError(f"--host {host} makes your photos reachable from other machines: pass "
                          "--token TOKEN (or set XMODAL_TOKEN) so that only people with the "
                          "token can use the server")
    hosts = [*LOOPBACK_NAMES, *(allow_host or [])]
    if host in ("0.0.0.0", "::"):
        if not allow_host:
            hosts.append("*")  # any name reaches it; the token protects it
    else:
        hosts.append(host)
    if campaign is not None:
        from xmodal.mitl.store import Campaign

        with Campaign(campaign, readonly=True) as c:  # images checked before anyone judges
            missing = c.missing_images()
        if missing:
            shown = "\n  ".join(missing[:10])
            more = f"\n  … and {len(missing) - 10} more" if len(missing) > 10 else ""
            raise XmodalError(f"{campaign}: {len(missing)} image(s) of the campaign are not "
                              f"found, so workers could not see them:\n  {shown}{more}\nmove "
                              "the photos back or correct the paths in the campaign's images "
                              "table")
    index = None
    if ann is not None:
        from xmodal.scale.ann_search import ann_collection

        index = ann_collection(ann)  # a bad folder fails here, not on the first request
    db = db if db is not None else default_db_path()
    if ann is None and not db.exists():
        console.print(f"[yellow]note:[/] no photo index at {db} yet; search answers 503 until "
                      f"you build one with 'xmodal index FOLDER --db {db}'")
    if tagger is not None:
        from xmodal.models.tagger import load_tagger

        tagger = load_tagger(tagger)  # a bad directory fails here, not on the first request
    web = create_app(None if ann is not None else db, index=index, reports_dir=reports,
                     thumbnail_dir=thumbnails, model_spec=model, threads=threads,
                     tagger=tagger, campaign=campaign, preload=True, allowed_hosts=hosts, access_token=token)
    console.print(f"xmodal: serving on http://{host}:{port}/  (API docs at /docs)")
    if campaign is not None:
        console.print(f"judging: http://{host}:{port}/judge?token=TOKEN  ·  review: "
                      f"http://{host}:{port}/review?token=REVIEWER_TOKEN")
    # Requests beyond 64 in progress get a JSON 503 from the app (ConcurrencyLimit); uvicorn's
    # own limit counts open sockets, including ones that never finish their header, so it is
    # set high enough that a handful of slow clients cannot lock everyone out.
    uvicorn.run(web, host=host, port=port, log_level=log_level, limit_concurrency=1024,
                timeout_keep_alive=5, h11_max_incomplete_event_size=16 * 1024)
