"""Photo search commands: ``xmodal index``, ``search``, ``similar``, ``describe``, ``photos``."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.errors import XmodalError

DB_HELP = "Photo index database (default: $XMODAL_DB or ~/.local/share/xmodal/photos.db)."
MODEL_HELP = (
    "Embedding model: default dual encoder, a saved model directory, or openclip:ARCH:CKPT."
)


def _open(db: Path | None, model: str | None, create: bool = False):
    from xmodal.index import PhotoIndex

    return PhotoIndex(db, model_spec=model, create=create)


def _print_results(title: str, results, as_json: bool, query: str) -> None:
    if as_json:
        typer.echo(
            json.dumps({"query": query, "results": [r.to_dict() for r in results]}, indent=2)
        )
        return
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("path", overflow="fold")
    for n, r in enumerate(results, start=1):
        table.add_row(str(n), f"{r.score:.3f}", r.path)
    console.print(table)
    if not results:
        console.print("[yellow]no results: is the index empty? run 'xmodal index FOLDER'[/]")


@app.command("index")
def index_command(
    folder: Path = typer.Argument(..., help="Folder of photos (searched recursively)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    captions: Path | None = typer.Option(
        None, "--captions", help="Optional caption file to store: CSV (image,caption), TSV "
        "(image<TAB>caption) or JSONL; image names relative to the folder."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the update statistics as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Index a folder of photos: new, changed and deleted files; unreadable files are skipped.

    Safe to interrupt at any moment; running it again finishes the job without duplicates.

    Examples:

      xmodal index ~/Pictures

      xmodal index ./photos --db photos.db --captions captions.csv
    """
    from xmodal.data.folder import read_captions

    if not folder.expanduser().is_dir():
        from xmodal.index import default_db_path

        if (db or default_db_path()).exists():  # says how to forget a folder indexed before
            _open(db, model).update(folder)
        raise XmodalError(f"not a folder: {folder}")
    caps = read_captions(captions) if captions is not None else None
    index = _open(db, model, create=True)
    stats = index.update(folder, captions=caps, progress=not quiet)
    if stats.captions_unmatched:
        console.print(f"[yellow]warning:[/] {stats.captions_unmatched} image name(s) in "
                      f"{captions} match no photo under {folder}; their captions were not stored")
    if as_json:
        typer.echo(json.dumps(stats.to_dict(), indent=2))
        return
    console.print(
        f"indexed {stats.added} new and {stats.updated} changed photos, {stats.unchanged} "
        f"unchanged, {stats.deleted} removed, {stats.skipped} skipped "
        f"({stats.elapsed_s:.1f} s, {stats.images_per_s:.1f} images/s) -> {index.db_path}"
    )
    for reason, n in sorted(stats.skip_reasons.items()):
        console.print(f"  skipped {n}: {reason}")


@app.command("search")
def search_command(
    query: str = typer.Argument(..., help="A sentence describing the photos you want."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    k: int = typer.Option(10, "-k", "--top", help="Number of results."),
    under: Path | None = typer.Option(
        None, "--under", help="Only photos inside this folder (at any depth)."
    ),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {query, results: [{path, score}]}"
    ),
    ann: Path | None = typer.Option(
        None, "--ann", help="Search an index folder built by 'xmodal ann build' instead of a "
        "photo database (paths come from its embedding shards)."
    ),
    nprobe: int | None = typer.Option(
        None, "--nprobe", help="With --ann: inverted lists searched (default: $XMODAL_NPROBE or "
        "the one measured at build time)."
    ),
) -> None:
    """Search indexed photos by sentence.

    Examples:

      xmodal search "a cat sleeping on a sofa"

      xmodal search "children playing in the snow" -k 5 --json

      xmodal search "a boat at sunset" --under ~/Pictures/2019-greece

      xmodal search "a red bus" --ann photos.ann --nprobe 32
    """
    if not query.strip():
        raise XmodalError("the search query is empty: give a sentence such as 'a dog on a beach'")
    if ann is not None:
        from types import SimpleNamespace

        from xmodal.scale.ann_search import search_text

        hits = [SimpleNamespace(**h, to_dict=lambda h=h: h)
                for h in search_text(ann, query, k, nprobe)]
        _print_results(f"search: {query}", hits, as_json, query)
        return
    index = _open(db, model)
    _print_results(f"search: {query}", index.search(query, k, under=under), as_json, query)


@app.command("similar")
def similar_command(
    image: Path = typer.Argument(..., help="An image: indexed or not."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    k: int = typer.Option(10, "-k", "--top", help="Number of results."),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {query, results: [{path, score}]}"
    ),
) -> None:
    """Find indexed photos like an image.

    Example:

      xmodal similar ~/Pictures/cat.jpg -k 5
    """
    index = _open(db, model)
    _print_results(f"similar to {image}", index.similar(image, k), as_json, str(image))


@app.command("describe")
def describe_command(
    image: Path = typer.Argument(..., help="The image to describe."),
    captions: Path = typer.Option(
        ..., "--captions", help="Pool of captions: one per line, id<TAB>caption, CSV or JSONL."
    ),
    k: int = typer.Option(5, "-k", "--top", help="Number of captions."),
    model: str | None = typer.Option(None, "--model", help=MODEL_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {image, results: [{caption, score}]}"
    ),
) -> None:
    """Rank a pool of captions for an image (image annotation as ranking).

    Example:

      xmodal describe photo.jpg --captions captions.txt -k 3
    """
    from xmodal.index.photo_index import load_model, rank_captions

    ranked = rank_captions(load_model(model), str(image), _caption_pool(captions), k)
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
    console.print(table)


def _caption_pool(path: Path) -> list[str]:
    from xmodal.data.caption_files import read_caption_pool

    return read_caption_pool(path)[1]


@app.command("photos")
def photos_command(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    skipped: bool = typer.Option(False, "--skipped", help="List skipped files and why."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Rebuild the FAISS index from SQLite."),
    roots: bool = typer.Option(False, "--roots", help="List the indexed folders."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the state of a photo index (counts, model, indexed folders, skipped files).

    Examples:

      xmodal photos --skipped

      xmodal photos --roots
    """
    from xmodal.index import PhotoIndex

    index = PhotoIndex(db, create=False)
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
            console.print(f"{key:>14}: {value}")
    for r in info.get("roots", []):
        gone = "" if r["exists"] else "  [yellow](folder missing: xmodal forget it)[/]"
        console.print(f"  folder: {r['folder']} ({r['files']} files){gone}")
    for item in info.get("skipped_files", []):
        console.print(f"  skipped: {item['path']} ({item['reason']})")


@app.command("forget")
def forget_command(
    folder: Path = typer.Argument(..., help="An indexed folder (it may no longer exist)."),
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Remove a folder's photos from the index (e.g. after deleting or moving the folder).

    Example: xmodal forget ~/Pictures/old-phone
    """
    from xmodal.index import PhotoIndex

    n = PhotoIndex(db, create=False).forget(folder)
    console.print(f"removed {n} file records under {folder}")


@app.command("prune")
def prune_command(db: Path | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
    """Remove the records of indexed files that no longer exist, in every indexed folder.

    Example: xmodal prune --db photos.db
    """
    from xmodal.index import PhotoIndex

    n = PhotoIndex(db, create=False).prune()
    console.print(f"removed {n} records of missing files")
