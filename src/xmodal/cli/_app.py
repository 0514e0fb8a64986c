"""The Typer application objects every command module registers on."""

from __future__ import annotations

import sys

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

# Progress bars, warnings and hints go to stderr; a command's result (its table or answer) goes
# to stdout, so that `xmodal search "a dog" > found.txt` and pipes get it. With --json, stdout
# holds the JSON only. Piped, the results are laid out wide enough not to fold paths.
console = Console(stderr=True)
output = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 240)


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
