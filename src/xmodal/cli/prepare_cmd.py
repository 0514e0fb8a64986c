"""``xmodal prepare``: export a model's towers to ONNX once (the export extra), so that the core
install searches with ONNX Runtime alone."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from xmodal.cli._app import app, console, output


def _size_mb(path: Path) -> float:
    files = [path, path.with_name(f"{path.name}.data")]
    return round(sum(f.stat().st_size for f in files if f.is_file()) / 1e6, 1)


@app.command("prepare")
def prepare_command(
    model: str | None = typer.Option(None, "--model", "-m", help="The model whose towers to "
                                     "export: default, fast, or a saved dual-encoder directory."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: {model, towers, files}."),
) -> None:
    """Export a model's towers to ONNX once, so photo search runs without torch.

    Writes the image and text towers and the tokenizer into the models folder
    ($XMODAL_MODELS, else $XMODAL_CACHE/models) and deletes earlier copies. Needs the export
    extra (torch, sentence-transformers, onnx) for this one run."""
    from xmodal.factory import prepare_model

    t0 = time.perf_counter()
    console.print(f"preparing the towers of model {model or 'default'}, once ...")
    done = prepare_model(model)
    done["seconds"] = round(time.perf_counter() - t0, 1)
    done["sizes_mb"] = {Path(f).name: _size_mb(Path(f)) for f in done["files"]}
    if as_json:
        typer.echo(json.dumps(done, indent=2))
        return
    for f in done["files"]:
        output.print(f"{f}  ({done['sizes_mb'][Path(f).name]} MB)")
    console.print(f"ready in {done['seconds']} s: xmodal index and search run on ONNX Runtime")
