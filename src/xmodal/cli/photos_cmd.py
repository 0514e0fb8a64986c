"""Photo search commands: ``xmodal index``, ``search``, ``similar``, ``describe``, ``photos``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from xmodal.cli._app import app, console, output
from xmodal.cli.filter_options import with_filters
from xmodal.errors import XmodalError

DB_HELP = ("Photo index database (default: $XMODAL_DB, else $XDG_DATA_HOME/xmodal/photos.db, "
           "else ~/.local/share/xmodal/photos.db).")
MODEL_HELP = (
    "Embedding model: default dual encoder, a saved model directory, or openclip:ARCH:CKPT."
)


def _open(db: Path | None, model: str | None, create: bool = False, ann: Path | None = None,
          nprobe: int | None = None, embeds: bool = True):
    """What a search runs on: a photo database, or (``ann``) an 'xmodal ann build' folder; both
    answer ``find`` through the same pipeline (xmodal.index.searcher). ``embeds`` False: a
    listing by filter, which needs no model (none is loaded)."""
    if ann is None and not embeds:
        from xmodal.index import PhotoIndex

        return PhotoIndex(db, create=False)
    if ann is not None:
        from xmodal.factory import load_embedding_model
        from xmodal.scale.ann_search import open_search

        return open_search(ann, nprobe, load_embedding_model(model) if model else None)
    from xmodal.factory import open_photo_index

    return open_photo_index(db, model, create=create)


def match_percent(p: float) -> str:
    """A calibrated probability as a percentage; below 10% with one decimal, so that a result
    shown never reads lower than the cutoff that hid others (a cutoff of 1.46%, a tenth of a
    best match at 14.6%, and a result shown at 1.49% both read '1.5%', not '1%')."""
    return f"{100 * p:.1f}%" if p < 0.1 else f"{100 * p:.0f}%"


def _results_table(title: str, results) -> None:
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    matched = any(getattr(r, "relevance", None) is not None for r in results)
    dated = any(getattr(r, "taken_at", None) for r in results)
    placed = any(getattr(r, "place", None) for r in results)
    if matched:
        table.add_column("match", justify="right")
    if dated:
        table.add_column("taken")
    if placed:
        table.add_column("place", overflow="fold")
    table.add_column("path", overflow="fold")
    for n, r in enumerate(results, start=1):
        row = [str(n), f"{r.score:.3f}"]
        if matched:
            row.append("" if r.relevance is None else match_percent(r.relevance))
        if dated:
            stamp = (r.taken_at or "").replace("T", " ")[:16]
            row.append(stamp + (" (file)" if r.date_source == "mtime" else ""))
        if placed:
            row.append(r.place or "")
        table.add_row(*row, r.path)
    output.print(table)


def _print_answer(title: str, answer, as_json: bool, query: str) -> None:
    """A search answer: its results, and a clear word when the cutoff hid everything."""
    if as_json:
        typer.echo(json.dumps({"query": query, **answer.to_dict()}, indent=2))
        return
    if not answer.terms:
        _print_listing(answer)
        return
    if answer.results:
        _results_table(title, answer.results)
    if answer.no_good_match:
        best = answer.closest
        how = (f"{match_percent(best.relevance)} likely to match" if best.relevance is not None
               else f"score {best.score:.3f}")
        output.print(f"[yellow]No photo matches {query!r} well.[/] The closest is {best.path} "
                     f"({how}); show the closest ones with --min-score 0.")
    elif not answer.results:
        console.print("[yellow]no results: is the index empty? run 'xmodal index FOLDER'[/]")
    elif answer.hidden:
        console.print(f"[dim]{answer.hidden} of the best {answer.considered} matches hidden "
                      f"below {_cutoff_text(answer)}; --min-score 0 shows them[/]")


def _print_listing(answer) -> None:
    """Photos listed by a filter alone: by date, a row per photo under its month."""
    from datetime import date

    shown = ", ".join(f"{k} {v}" for k, v in answer.filter.items()) or "every photo"
    order = "oldest first" if answer.sort == "oldest" else "newest first"
    table = Table(title=f"photos: {shown} ({order})")
    for name, justify in (("#", "right"), ("month", "left"), ("taken", "left"),
                          ("place", "left"), ("path", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    month = None
    for n, r in enumerate(answer.results, start=answer.offset + 1):
        this = r.taken_at[:7] if r.taken_at else None
        label = "" if this == month else (
            date.fromisoformat(this + "-01").strftime("%B %Y") if this else "(no date)")
        month = this
        stamp = (r.taken_at or "").replace("T", " ")[:16]
        table.add_row(str(n), label, stamp + (" (file)" if r.date_source == "mtime" else ""),
                      r.place or "", r.path)
    output.print(table)
    if not answer.results:
        console.print("[yellow]no photo on this page[/]" if answer.offset else
                      "[yellow]no results: is the index empty? run 'xmodal index FOLDER'[/]")
    if answer.places:
        console.print("places: " + ", ".join(f"{p['place']} ({p['count']})"
                                             for p in answer.places[:12]))
    if answer.more:
        console.print(f"[dim]more: --offset {answer.offset + len(answer.results)}[/]")


def _cutoff_text(answer) -> str:
    if answer.calibrated:
        return f"{match_percent(answer.min_relevance)} match"
    return f"score {answer.min_relevance:.3f}"


OFFSET = typer.Option(0, "--offset", help="Skip this many results (the next page: --offset "
                      "10 after -k 10).", min=0)
SORT = typer.Option("relevance", "--sort", help="relevance, date (newest first) or oldest; "
                    "by date: the best 100 matches past the cutoff, in date order.")


@app.command("index")
def index_command(
    folder: Path = typer.Argument(..., help="Folder of photos (searched recursively)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    captions: Path | None = typer.Option(
        None, "--captions", help="Optional caption file to store: CSV (image,caption), TSV "
        "(image<TAB>caption) or JSONL; image names relative to the folder."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the update statistics as JSON "
                                 "(with --watch: one JSON line per update)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    watch: bool = typer.Option(False, "--watch", help="Keep running: index new, changed, "
                               "deleted and moved photos within seconds of the change."),
    debounce_ms: int = typer.Option(1000, "--debounce-ms", help="With --watch: wait this long "
                                    "after the last change before indexing.", min=50),
) -> None:
    """Index a folder of photos: new, changed and deleted files; unreadable files are skipped.

    Reads each photo's date taken, camera and GPS position (place names offline) for the
    search filters. Safe to interrupt at any moment; running it again finishes the job without
    duplicates. A moved or renamed photo keeps its vector (same content, no re-embedding).

    Examples:

      xmodal index ~/Pictures

      xmodal index ./photos --db photos.db --captions captions.csv

      xmodal index ~/Pictures --watch        # stays running; Ctrl-C stops it
    """
    from xmodal.data.folder import read_captions

    if not folder.expanduser().is_dir():
        from xmodal.index import PhotoIndex, default_db_path

        if (db or default_db_path()).exists():  # says how to forget a folder indexed before
            PhotoIndex(db, create=False).update(folder)
        raise XmodalError(f"not a folder: {folder}")
    caps = read_captions(captions) if captions is not None else None
    index = _open(db, model, create=True)
    if watch:
        _watch(index, folder, caps, debounce_ms, quiet, as_json)
        return
    stats = index.update(folder, captions=caps, progress=not quiet)
    if stats.captions_unmatched:
        console.print(f"[yellow]warning:[/] {stats.captions_unmatched} image name(s) in "
                      f"{captions} match no photo under {folder}; their captions were not stored")
    if as_json:
        typer.echo(json.dumps(stats.to_dict(), indent=2))
        return
    rate = f", {stats.images_per_s:.1f} images/s" if stats.added + stats.updated else ""
    console.print(
        f"indexed {stats.added} new and {stats.updated} changed photos, {stats.unchanged} "
        f"unchanged, {stats.deleted} removed, {stats.skipped} skipped "
        f"({stats.elapsed_s:.1f} s{rate}) -> {index.db_path}"
    )
    for reason, n in sorted(stats.skip_reasons.items()):
        console.print(f"  skipped {n}: {reason}")


def _watch(index, folder: Path, captions, debounce_ms: int, quiet: bool, as_json: bool) -> None:
    from xmodal.index.watch import watch

    first = True
    for stats in watch(index, folder, debounce_ms=debounce_ms, progress=not quiet,
                       captions=captions):
        if as_json:
            typer.echo(json.dumps(stats.to_dict()), nl=True)
            continue
        changed = stats.added + stats.updated + stats.deleted + stats.skipped
        if first or changed:
            moved = f" ({stats.reused} moved or copied, not re-embedded)" if stats.reused else ""
            console.print(
                f"{time.strftime('%H:%M:%S')} {stats.added} new{moved}, {stats.updated} changed,"
                f" {stats.deleted} removed, {stats.skipped} skipped, {stats.unchanged} unchanged"
                + (f"; watching {stats.folder} (Ctrl-C stops)" if first else ""))
        first = False
    console.print("stopped watching")


@app.command("search")
@with_filters
def search_command(
    query: list[str] = typer.Argument(None, help="A sentence describing the photos you want; or "
                                      "an expression of sentences and images joined by + and -,"
                                      " each with an optional weight W: ('2:a golden retriever' "
                                      "+ pool.jpg - people). May be left out with --like."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    k: int = typer.Option(10, "-k", "--top", help="Number of results.", min=1),
    offset: int = OFFSET,
    like: list[str] = typer.Option([], "--like", help="An example image to add to the query "
                                   "(repeatable; W:path weighs it)."),
    unlike: list[str] = typer.Option([], "--not", help="A sentence to push away (repeatable)."),
    filters: Any = None, sort: str = SORT,
    min_score: float | None = typer.Option(
        None, "--min-score", help="Hide results below this calibrated match probability "
        "(0-1; default: the model's calibrated threshold; 0 shows everything). For a model "
        "without a calibration: a minimum raw score."),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {query, results: [{path, score, relevance, "
        "taken_at, place, camera, ...}], hidden, no_good_match, ...}"
    ),
    ann: Path | None = typer.Option(
        None, "--ann", help="Search an index folder built by 'xmodal ann build' instead of a "
        "photo database: the same filters, cutoff, sorting and answer (paths, dates and places "
        "from the catalog it keeps beside its shards)."
    ),
    nprobe: int | None = typer.Option(
        None, "--nprobe", help="With --ann: inverted lists searched (default: $XMODAL_NPROBE or "
        "the one measured at build time)."
    ),
) -> None:
    """Search indexed photos by sentence, with filters, example images and terms to avoid.

    Results the model judges unlikely to match are hidden (a calibrated cutoff); when nothing
    matches well the answer says so and names the closest photo.

    Examples:

      xmodal search "a cat sleeping on a sofa"

      xmodal search "children playing in the snow" -k 5 --json

      xmodal search "a boat at sunset" --place Lisbon --after 2023-06 --before 2023-08

      xmodal search "a dog" --near 38.72,-9.14 --km 5 --camera iphone --sort date

      xmodal search "a golden retriever" --like pool.jpg --not "people"

      xmodal search "2:golden retriever" + pool.jpg - people

      xmodal search --like pool.jpg --not "people"

      xmodal search "a red bus" --ann photos.ann --nprobe 32
    """
    text = " ".join(query or [])
    if not text.strip() and not like and not (filters.active or sort != "relevance"):
        raise XmodalError("the search query is empty: give a sentence such as 'a dog on a beach'"
                          " (or an example image with --like, or a filter such as --place "
                          "Lisbon to list its photos by date)")
    from xmodal.features.onnx_engine import quick_start

    index = _open(db, model, ann=ann, nprobe=nprobe, embeds=bool(text.strip() or like))
    with quick_start():  # one query in this process: a session quicker to create wins
        answer = index.find(query or [], k, offset, filters=filters, sort=sort,
                            min_relevance=min_score, like=like, unlike=unlike)
    text = text.strip() or " + ".join(like)
    _print_answer(f"search: {text}", answer, as_json, text)


@app.command("similar")
@with_filters
def similar_command(
    image: Path = typer.Argument(..., help="An image: indexed or not."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    k: int = typer.Option(10, "-k", "--top", help="Number of results.", min=1),
    filters: Any = None, sort: str = SORT,
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {query, results: [{path, score, ...}]}"
    ),
) -> None:
    """Find indexed photos like an image (filters as for search).

    Examples:

      xmodal similar ~/Pictures/cat.jpg -k 5

      xmodal similar beach.jpg --after 2022 --place Portugal --sort date
    """
    from xmodal.index.query import Term

    index = _open(db, model)
    answer = index.find([Term(str(image), "image")], k, filters=filters, sort=sort)
    _print_answer(f"similar to {image}", answer, as_json, str(image))


@app.command("describe")
def describe_command(
    image: Path = typer.Argument(..., help="The image to describe."),
    captions: Path = typer.Option(
        ..., "--captions", help="Pool of captions: one per line, id<TAB>caption, CSV or JSONL."
    ),
    k: int = typer.Option(5, "-k", "--top", help="Number of captions.", min=1),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {image, results: [{caption, score}]}"
    ),
) -> None:
    """Rank a pool of captions for an image (image annotation as ranking).

    Example:

      xmodal describe photo.jpg --captions captions.txt -k 3
    """
    from xmodal.factory import load_embedding_model
    from xmodal.index.photo_index import rank_captions

    ranked = rank_captions(load_embedding_model(model), str(image), _caption_pool(captions), k)
    if as_json:
        typer.echo(
            json.dumps(
                {"image": str(image), "results": [{"caption": c, "score": s} for c, s in ranked]},
                indent=2,
            )
        )
        return
    table = Table(title=f"captions for {image}")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("caption", overflow="fold")
    for n, (c, s) in enumerate(ranked, start=1):
        table.add_row(str(n), f"{s:.3f}", c)
    output.print(table)


def _caption_pool(path: Path) -> list[str]:
    from xmodal.data.caption_files import read_caption_pool

    return read_caption_pool(path)[1]


@app.command("photos")
@with_filters
def photos_command(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    skipped: bool = typer.Option(False, "--skipped", help="List skipped files and why."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the FAISS index from SQLite."),
    roots: bool = typer.Option(False, "--roots", help="List the indexed folders."),
    facets: bool = typer.Option(False, "--facets", help="Years, places and cameras with "
                                "photo counts (what the search filters can select)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (a listing: as search's)."),
    filters: Any = None,
    sort: str | None = typer.Option(None, "--sort", help="List the photos: date (newest "
                                    "first, the default with a filter) or oldest."),
    k: int = typer.Option(50, "-k", "--top", help="Photos per page of a listing.", min=1),
    offset: int = OFFSET,
) -> None:
    """Show the state of a photo index (counts, model, indexed folders, skipped files), or
    with a filter (or --sort) list its photos by date, page by page, grouped by month.

    Examples:

      xmodal photos --skipped

      xmodal photos --roots

      xmodal photos --facets

      xmodal photos --place Lisbon --after 2023        # newest first, 50 a page

      xmodal photos --camera iphone --sort oldest -k 20 --offset 20
    """
    from xmodal.index import PhotoIndex

    index = PhotoIndex(db, create=False)
    if filters.active or sort is not None:
        if sort not in (None, "date", "oldest"):
            raise XmodalError(f"--sort {sort}: photos are listed by date or oldest")
        answer = index.find([], k, offset, filters=filters, sort=sort or "date")
        _print_answer("photos", answer, as_json, "")
        return
    if facets:
        _print_facets(index.facets(), as_json)
        return
    info = index.stats()
    if roots:
        info["roots"] = index.roots()
    if rebuild:
        info["ann_vectors"] = index.rebuild_ann()
    if skipped:
        info["skipped_files"] = [{"path": p, "reason": r} for p, r in index.skipped()]
    if as_json:
        typer.echo(json.dumps(info, indent=2))
        return
    for key, value in info.items():
        if key not in ("skipped_files", "roots"):
            output.print(f"{key:>14}: {value}")
    for r in info.get("roots", []):
        gone = "" if r["exists"] else "  [yellow](folder missing: xmodal forget it)[/]"
        within = f", inside {r['inside']}" if r["inside"] else ""
        output.print(f"  folder: {r['folder']} ({r['files']} files{within}){gone}")
    for item in info.get("skipped_files", []):
        output.print(f"  skipped: {item['path']} ({item['reason']})")
    if skipped and not info["skipped_files"]:
        output.print("  no file was skipped")


def _print_facets(facets: dict, as_json: bool) -> None:
    from xmodal.index.metadata import place_name

    if as_json:
        typer.echo(json.dumps(facets, indent=2))
        return
    for title, rows, name in (
        ("years", facets["years"], lambda r: r["year"] or "(no date)"),
        ("places", facets["places"], lambda r: place_name(r["city"], r["region"], r["country"])),
        ("cameras", facets["cameras"], lambda r: r["camera"] or "(unknown camera)"),
    ):
        table = Table(title=title)
        table.add_column(title[:-1])
        table.add_column("photos", justify="right")
        for r in rows:
            table.add_row(str(name(r)), str(r["count"]))
        if not rows:
            table.add_row(f"(no photo has a {title[:-1]})", "0")
        output.print(table)


@app.command("forget")
def forget_command(
    folder: Path = typer.Argument(..., help="An indexed folder (it may no longer exist)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: {folder, removed}."),
) -> None:
    """Remove a folder's photos from the index (e.g. after deleting or moving the folder).

    Example: xmodal forget ~/Pictures/old-phone
    """
    from xmodal.index import PhotoIndex

    n = PhotoIndex(db, create=False).forget(folder)
    if as_json:
        typer.echo(json.dumps({"folder": os.path.abspath(folder.expanduser()), "removed": n}))
        return
    console.print(f"removed {n} file records under {folder}")


@app.command("prune")
def prune_command(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: {removed}."),
) -> None:
    """Remove the records of indexed files that no longer exist, in every indexed folder.

    Example: xmodal prune --db photos.db
    """
    from xmodal.index import PhotoIndex

    n = PhotoIndex(db, create=False).prune()
    if as_json:
        typer.echo(json.dumps({"removed": n}))
        return
    console.print(f"removed {n} records of missing files")
