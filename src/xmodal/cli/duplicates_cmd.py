"""``xmodal duplicates``: near-duplicate groups of the photo index; move the extra copies aside."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from xmodal.cli._app import app, console, output
from xmodal.cli.photos_cmd import DB_HELP
from xmodal.errors import XmodalError


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def _print_groups(groups) -> None:
    import os

    paths = [m.path for g in groups for m in g.members]
    common = os.path.commonpath(paths) if len(paths) > 1 else ""
    if common and not os.path.isdir(common):
        common = os.path.dirname(common)
    relative = common not in ("", "/")
    table = Table(title=f"{len(groups)} group(s) of near-duplicate photos",
                  caption=(f"paths under {common}; " if relative else "")
                  + "* file date (no date taken)")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("photo", overflow="fold", min_width=16, ratio=1)
    table.add_column("pixels", justify="right", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("date", no_wrap=True)
    table.add_column("sim", justify="right", no_wrap=True)
    table.add_column("why", overflow="fold", min_width=12, ratio=1)
    for n, g in enumerate(groups, start=1):
        for k, m in enumerate(g.members):
            res = f"{m.width}x{m.height}" if m.width and m.height else "?"
            mark = "[green]keep[/]" if m.keep else ("[dim]same[/]" if m.identical else "")
            date = (m.date or "?").replace("T", " ")[:16] + ("*" if m.date_source == "mtime"
                                                             else "")
            shown = os.path.relpath(m.path, common) if relative else m.path
            table.add_row(str(n) if k == 0 else "", mark, shown, res, _size(m.bytes), date,
                          "" if m.keep else f"{m.similarity:.2f}", m.why)
        table.add_section()
    output.print(table)
    extra = sum(len(g.extra) for g in groups)
    console.print(f"{extra} photo(s) beside the suggested keeps, "
                  f"{_size(sum(g.extra_bytes for g in groups))}; nothing was moved "
                  "(--move-to DIR moves them aside)")


def _unindex(index, paths: list[str]) -> int:
    """Drop moved files from the index; with another writer at work, say so and go on."""
    try:
        return index.remove(paths, keep_vectors=True)  # --undo puts them back, not embedded
    except XmodalError:  # the writer lock: an 'xmodal index' (or --watch) is at work
        console.print("[yellow]warning:[/] another 'xmodal index' is updating the index: until "
                      "it or the next one ends, searches may list the moved files where they were")
        return 0


def _undo(log: Path, db: Path | None, quiet: bool):
    """Move a log's files back, and into the photo index they came from (--db, else the one
    the log names) where it still exists."""
    from xmodal.index import PhotoIndex
    from xmodal.index import duplicates as dup

    path = db or dup.log_database(log)
    index = None
    if path is not None and Path(path).is_file():
        index = PhotoIndex(path, create=False)
    try:
        report = dup.undo_moves(log, progress=not quiet, index=index)
        if report.index_busy:
            console.print("[yellow]warning:[/] another 'xmodal index' is updating the index: the "
                          "next 'xmodal index' puts the files back into it (not embedded again)")
        return report
    finally:
        if index is not None:
            index.close()


@app.command("duplicates")
def duplicates_command(
    db: Path | None = typer.Option(None, "--db", help=DB_HELP),
    threshold: float | None = typer.Option(
        None, "--threshold", "-t", help="Cosine similarity two photos with the same perceptual "
        "hash need to be grouped (lower: more groups); each differing hash bit raises it by "
        "hash-weight/64. Default chosen on benchmarks/near_duplicates.py."),
    hash_weight: float | None = typer.Option(
        None, "--hash-weight", help="How much the perceptual hash counts (0: embeddings only)."),
    under: Path | None = typer.Option(
        None, "--under", help="Only photos inside this folder (at any depth)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: {db, threshold, hash_weight, groups: [{keep, reason, "
        "size, extra_bytes, members: [{path, bytes, width, height, content_width, "
        "content_height, date, date_original, camera, software, camera_original, turned, keep, "
        "why, ...}]}], moved?}"),
    move_to: Path | None = typer.Option(
        None, "--move-to", help="Move every photo that is not its group's suggested keep into "
        "this folder (its absolute path mirrored below it). Logged first; nothing is deleted."),
    log: Path | None = typer.Option(
        None, "--log", help="With --move-to: the move log to write (JSON Lines; default "
        "DIR/.xmodal-moves-<time>.jsonl)."),
    undo: Path | None = typer.Option(
        None, "--undo", help="Move the files of a move log back where they were (never "
        "overwrites)."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="With --move-to: show what would move, move nothing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Find groups of near-duplicate photos (resized, cropped, re-encoded, edited or mirrored
    copies, copies turned by 90/180/270 degrees, letterboxed copies, bursts, byte-identical
    files) in the photo index, from the stored embeddings and a perceptual hash. Each group
    lists its suggested keep first, the camera original (EXIF date taken and camera, no editing
    software; then the earliest date taken, the most pixels inside uniform borders, the oldest
    file), and says why each photo is or is not kept. Nothing is moved or deleted unless you
    ask with --move-to; --undo LOG puts the moved files back (and into the index, without
    embedding them again).

    Examples:

      xmodal duplicates

      xmodal duplicates --db photos.db --json > groups.json

      xmodal duplicates --under ~/Pictures/2019 --threshold 0.6

      xmodal duplicates --move-to ~/duplicates --log ~/duplicates/moves.jsonl

      xmodal duplicates --undo ~/duplicates/moves.jsonl
    """
    from xmodal.index import duplicates as dup

    if undo is not None:
        if move_to is not None:
            raise XmodalError("give either --undo LOG or --move-to DIR, not both")
        report = _undo(undo, db, quiet)
        if as_json:
            typer.echo(json.dumps(report.to_dict(), indent=2))
            return
        left = len(report.restored) - report.reindexed
        console.print(f"moved {len(report.restored)} file(s) back from the log {undo}"
                      + (f" and into the index {report.db} (not embedded again)"
                         if report.reindexed else "")
                      + (f"; 'xmodal index FOLDER' makes {left} of them searchable again"
                         if left else ""))
        for s in report.skipped:
            console.print(f"  [yellow]left:[/] {s['path']}: {s['reason']}")
        return
    if (log is not None or dry_run) and move_to is None:
        raise XmodalError("--log and --dry-run go with --move-to DIR")

    from xmodal.index import PhotoIndex

    index = PhotoIndex(db, create=False)
    try:
        groups = dup.find_duplicates(
            index, threshold=dup.THRESHOLD if threshold is None else threshold,
            hash_weight=dup.HASH_WEIGHT if hash_weight is None else hash_weight,
            under=under, progress=not quiet)
        moved, unindexed = None, 0
        if move_to is not None:
            moved = dup.move_duplicates(groups, move_to, log, progress=not quiet,
                                        dry_run=dry_run, db=index.db_path)
            if moved.moved and not dry_run:  # else searches list paths that are gone
                unindexed = _unindex(index, [m["from"] for m in moved.moved])
    finally:
        index.close()
    if as_json:
        out = {"db": str(index.db_path),
               "threshold": dup.THRESHOLD if threshold is None else threshold,
               "hash_weight": dup.HASH_WEIGHT if hash_weight is None else hash_weight,
               "groups": [g.to_dict() for g in groups]}
        if moved is not None:
            out["moved"] = {**moved.to_dict(), "dry_run": dry_run, "unindexed": unindexed}
        typer.echo(json.dumps(out, indent=2))
        return
    if not groups:
        console.print("no near-duplicate photos found")
        return
    if moved is None:
        _print_groups(groups)
        return
    verb = "would move" if dry_run else "moved"
    console.print(f"{verb} {len(moved.moved)} file(s) to {moved.dest}"
                  + (f" and removed {unindexed} from the index" if unindexed else ""))
    if dry_run:
        for m in moved.moved:
            console.print(f"  {m['from']} -> {m['to']}")
    for s in moved.skipped:
        console.print(f"  [yellow]not moved:[/] {s['path']}: {s['reason']}")
    if moved.moved and not dry_run:
        console.print(f"log: {moved.log}\nundo with: xmodal duplicates --undo {moved.log}")
