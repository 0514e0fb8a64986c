"""``xmodal gist``: rank knowledge-graph concepts (WordNet by default) for an image + caption."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.table import Table

from xmodal.cli._app import app, console
from xmodal.errors import XmodalError


@app.command("gist")
def gist_command(
    image: Path = typer.Argument(..., help="Image file (JPEG, PNG, ...)."),
    caption: str = typer.Option("", "--caption", "-c", help="The caption shown with the image."),
    k: int = typer.Option(10, "-k", "--top", help="How many concepts to print."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON to stdout."),
    graph: Path | None = typer.Option(
        None, "--graph", help="A TSV graph folder (nodes.tsv + edges.tsv) instead of WordNet."
    ),
    model: Path | None = typer.Option(
        None, "--model", help="Ranker model directory (default: the shipped one, trained on Flickr8K)."
    ),
    no_image: bool = typer.Option(False, "--no-image", help="Ignore the image (caption only)."),
    keywords: bool = typer.Option(
        False,
        "--keywords",
        help="Add `xmodal tag` keywords as extra image tags (experimental: "
        "the shipped ranker was trained with ImageNet tags only).",
    ),
) -> None:
    """What is this image-caption pair about? Ranked concepts with names and definitions.

    Links the caption's noun phrases and the image's EfficientNet-Lite0 ImageNet classes to
    WordNet synsets, connects and expands them through the graph, clusters, and ranks the
    candidates with a learned linear ranker. Offline; a few seconds.

    Examples:

      xmodal gist photo.jpg --caption "A dog catches a frisbee on the beach" -k 5

      xmodal gist photo.jpg -c "Summer is here" --json

      xmodal gist photo.jpg -c "An orangutan in the forest" --graph tests/data/gist
    """
    from xmodal.gist.detect import GistDetector, concepts_as_dicts
    from xmodal.gist.rank import CoordinateAscentRanker

    t0 = time.time()
    if not image.is_file():
        raise XmodalError(f"image not found: {image}")
    if k < 1:
        raise XmodalError("-k must be at least 1")
    kg = None
    if graph is not None:
        from xmodal.gist.tsv import load_tsv_graph

        kg = load_tsv_graph(graph)
    ranker = CoordinateAscentRanker.load(model) if model is not None else None
    with console.status("loading WordNet, spaCy and EfficientNet-Lite0", spinner="dots"):
        det = GistDetector(graph=kg, ranker=ranker, use_image=not no_image, use_keywords=keywords)
        concepts = det.detect(image, caption, k=k)
    elapsed = time.time() - t0
    tags = [
        {"label": t.label, "confidence": round(t.confidence, 4), "node": t.node}
        for t in det.last_tags
    ]
    seeds = {
        node: {
            "caption_mentions": info.caption_count,
            "image_confidence": round(info.image_confidence, 4),
            "mentions": info.mentions,
        }
        for node, info in det.last_seeds.items()
    }
    if as_json:
        print(
            json.dumps(
                {
                    "image": str(image),
                    "caption": caption,
                    "image_tags": tags,
                    "seeds": seeds,
                    "concepts": concepts_as_dicts(concepts),
                    "seconds": round(elapsed, 2),
                },
                indent=1,
            )
        )
        return
    if tags:
        console.print(
            "image tags: " + ", ".join(f"{t['label']} ({t['confidence']:.2f})" for t in tags)
        )
    if not concepts:
        console.print("no concept found: nothing in the caption or image links to the graph")
        return
    table = Table(title=f"gist of {image.name}")
    table.add_column("#", justify="right")
    table.add_column("concept")
    table.add_column("name")
    table.add_column("definition", overflow="fold")
    table.add_column("from")
    for c in concepts:
        table.add_row(str(c.rank), c.id, c.name, c.definition, c.kind)
    from rich.console import Console

    Console().print(table)  # the result itself goes to stdout
    console.print(f"{elapsed:.1f} s")
