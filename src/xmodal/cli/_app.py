"""The Typer application objects every command module registers on."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    name="xmodal",
    help="Associate images with sentences: search photos by sentence, describe and tag images, "
    "and evaluate image-text matching models.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
train_app = typer.Typer(help="Train a model and save it to a directory.", no_args_is_help=True)
app.add_typer(train_app, name="train")

# Progress bars, tables and messages go to stderr so that --json output on stdout stays clean.
console = Console(stderr=True)


@app.callback()
def global_options(
    engine: str = typer.Option(
        None, "--engine", help="Inference engine of the encoders: onnx (the default when "
        "onnxruntime is installed) or torch. Same as $XMODAL_ENGINE.",
    ),
) -> None:
    """Associate images with sentences: search photos by sentence, describe and tag images,
    and evaluate image-text matching models."""
    import os

    if engine is not None:
        from xmodal.errors import XmodalError
        from xmodal.features.onnx_engine import ENGINES

        if engine not in ENGINES:
            raise XmodalError(f"--engine must be one of {ENGINES}, not {engine!r}")
        os.environ["XMODAL_ENGINE"] = engine
