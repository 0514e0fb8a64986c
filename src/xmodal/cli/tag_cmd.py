"""``xmodal tag``: the top keywords of each image (shipped tagger or a saved one)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from xmodal.cli._app import app
from xmodal.errors import XmodalError

TAG_HELP = (
    "Tag images with keywords (offline; the default model was trained on Flickr8K and "
    "Conceptual Captions: 1,023 words)."
    "\n\nEach score is the probability that a caption of the image would use the keyword. "
    "Keywords are ordered by that probability relative to how common the keyword is, so a "
    "specific word (\"pool\") can come before a generic one (\"dog\") with a higher "
    "probability.\n\nExamples:\n\n  xmodal tag photo.jpg\n\n  xmodal tag a.jpg b.png -n 10 "
    "--json\n\n  xmodal tag photo.jpg --model my_tagger/"
)


@app.command("tag", help=TAG_HELP)
def tag_command(
    images: list[Path] = typer.Argument(..., help="Image files to tag (JPEG, PNG, HEIC, AVIF, WebP, ...)."),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="A saved tagging model directory (default: the shipped "
        "keyword model)."
    ),
    n: int = typer.Option(5, "-n", "--top", help="Number of keywords per image."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON to stdout."),
) -> None:
    """Tag images with keywords (see ``TAG_HELP``)."""
    from xmodal.models.tagger import load_default_tagger, load_tagger

    if n < 1:
        raise XmodalError("-n must be at least 1")
    for p in images:
        if not p.exists():
            raise XmodalError(f"image not found: {p}")
        if p.is_dir():
            raise XmodalError(f"{p} is a folder; pass image files (e.g. {p}/*.jpg)")
    tagger = load_tagger(model) if model is not None else load_default_tagger()
    results = tagger.tag_many([str(p) for p in images], n=n)
    if as_json:
        payload = [
            {"image": str(p), "tags": [{"word": w, "score": round(s, 4)} for w, s in tags]}
            for p, tags in zip(images, results)
        ]
        typer.echo(json.dumps(payload, indent=2))
        return
    table = Table(title=f"top {n} keywords", show_lines=False)
    table.add_column("image", overflow="fold")
    table.add_column("keywords (probability)")
    for p, tags in zip(images, results):
        table.add_row(str(p), ", ".join(f"{w} ({s:.2f})" for w, s in tags))
    Console().print(table)  # results to stdout; errors and progress go to stderr
