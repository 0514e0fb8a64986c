"""``xmodal demo``: index a built-in set of real photographs and search them by sentence.

The photographs are the sample images that ship inside scikit-image (a cat, a cup of coffee, a
rocket on its launch pad, an astronaut, a motorcycle, coins, the moon, ...), copied to a temporary
folder, so the demo runs offline on a fresh install. Any other folder can be given instead.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.cli.photos_cmd import match_percent
from xmodal.errors import XmodalError

# scikit-image sample files that are real photographs (not drawings or synthetic test patterns),
# with the name each gets in the demo folder.
SAMPLE_PHOTOS = {
    "astronaut.png": "astronaut.png",  # Eileen Collins, NASA portrait
    "coffee.png": "coffee.png",  # a cup of coffee on a saucer
    "chelsea.png": "chelsea.png",  # Chelsea the cat
    "rocket.jpg": "rocket.jpg",  # a rocket on the launch pad
    "motorcycle_left.png": "motorcycle.png",  # a red motorcycle in a garage
    "camera.png": "camera.png",  # a man with a camera on a tripod
    "coins.png": "coins.png",  # old coins on a dark background
    "moon.png": "moon.png",  # the surface of the moon
    "hubble_deep_field.jpg": "hubble_deep_field.jpg",  # galaxies
    "retina.jpg": "retina.jpg",  # a human retina (fundus photograph)
    "page.png": "page.png",  # a photographed page of printed text
    "text.png": "text.png",  # handwriting on a page, photographed at an angle
    "brick.png": "brick.png",  # a brick wall
    "grass.png": "grass.png",  # grass
    "gravel.png": "gravel.png",  # gravel
    "ihc.png": "immunohistochemistry.png",  # stained tissue under a microscope
}
# the last has no photo among the samples: the answer says so
DEFAULT_QUERIES = ["a cat", "a cup of coffee", "a rocket launch", "a dog on the beach"]


def sample_photo_dir() -> Path:
    """The folder of scikit-image's bundled sample images."""
    try:
        import skimage.data
    except ImportError as exc:  # pragma: no cover - scikit-image is a dependency
        raise XmodalError("the demo needs scikit-image: pip install scikit-image") from exc
    return Path(skimage.data.__file__).parent


def copy_sample_photos(dest: Path) -> list[Path]:
    """Copy the built-in sample photographs to ``dest``; returns the copied files."""
    src = sample_photo_dir()
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name, target in SAMPLE_PHOTOS.items():
        if (src / name).is_file():
            out.append(Path(shutil.copyfile(src / name, dest / target)))
    if not out:
        raise XmodalError(f"no sample photographs found in {src}: reinstall scikit-image")
    return out


@app.command("demo")
def demo_command(
    folder: Path | None = typer.Argument(
        None, help="Folder of photos to index (default: built-in sample photographs)."
    ),
    db: Path | None = typer.Option(
        None, "--db", help="Database to use (default: a temporary one, removed afterwards)."
    ),
    query: list[str] | None = typer.Option(
        None, "--query", "-q", help="A search to run (repeatable; default: "
        + ", ".join(repr(q) for q in DEFAULT_QUERIES) + ")."
    ),
    k: int = typer.Option(3, "-k", "--top", help="Results shown per search.", min=1),
    model: str | None = typer.Option(None, "--model", help="Embedding model (default: built in)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: a list of {query, results}."),
) -> None:
    """The main job in one command: index photos, then search them by sentence.

    Copies the sample photographs that ship with scikit-image (a cat, a cup of coffee, a rocket,
    an astronaut, ...) to a temporary folder, indexes them with the default model and runs four
    example searches, as 'xmodal search' answers them: weak matches hidden below the calibrated
    cutoff, and "no good match" for a search that has none. Everything runs offline on the CPU.

    Examples:

      xmodal demo

      xmodal demo ~/Pictures --db photos.db -q "a dog on a beach" -q "a birthday cake"
    """
    from xmodal.factory import open_photo_index

    out = Console(soft_wrap=False)  # results on stdout; progress on stderr
    say = console.print if as_json else out.print  # keep stdout pure JSON with --json
    queries = list(query) if query else DEFAULT_QUERIES
    with tempfile.TemporaryDirectory(prefix="xmodal-demo-") as tmp:
        if folder is None:
            folder = Path(tmp) / "photos"
            copied = copy_sample_photos(folder)
            say(f"copied {len(copied)} sample photographs to {folder}: {_names(copied)}")
        db_path = db if db is not None else Path(tmp) / "demo.db"
        index = open_photo_index(db_path, model, create=True)
        stats = index.update(folder, progress=True)
        say(
            f"indexed {stats.added + stats.updated} photos ({stats.unchanged} unchanged, "
            f"{stats.skipped} skipped) in {stats.elapsed_s:.1f} s"
        )
        runs = [(q, index.find(q, k)) for q in queries]  # as 'xmodal search' answers
        index.close()
        if as_json:
            typer.echo(json.dumps([{"query": q, **a.to_dict()} for q, a in runs], indent=2))
            return
        root = Path(folder).expanduser().resolve()

        def shown(path: str) -> str:
            p = Path(path)
            return str(p.relative_to(root) if p.is_relative_to(root) else p)

        for q, answer in runs:
            out.print(f'\n$ xmodal search "{q}" -k {k}', markup=False, highlight=False)
            if answer.results:
                out.print(_table(answer, shown))
            if answer.no_good_match:
                best = answer.closest
                out.print(f"No photo matches {q!r} well. The closest is {shown(best.path)} "
                          f"(score {best.score:.3f}); show the closest ones with --min-score 0.",
                          markup=False, highlight=False)
            elif answer.hidden:
                out.print(f"{answer.hidden} of the best {answer.considered} matches hidden "
                          "below the cutoff; "
                          "--min-score 0 shows them", markup=False, highlight=False)


def _table(answer, shown) -> Table:
    table = Table()
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    matched = answer.calibrated
    if matched:
        table.add_column("match", justify="right")
    table.add_column("photo", overflow="fold")
    for n, r in enumerate(answer.results, start=1):
        cells = [str(n), f"{r.score:.3f}"]
        if matched:
            cells.append(match_percent(r.relevance) if r.relevance is not None else "")
        table.add_row(*cells, shown(r.path))
    return table


def _names(files: list[Path]) -> str:
    return ", ".join(f.stem for f in files)
