"""The Typer application objects every command module registers on."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from importlib.util import find_spec

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


# ----- the product / research boundary -----------------------------------------------------------
# The extras of pyproject.toml that commands need beyond the core install, and the modules whose
# absence shows that one is not installed.
EXTRA_MODULES = {
    "export": ("torch", "onnx", "sentence_transformers"),
    "research": ("sklearn", "torch"),
    "train": ("sklearn", "torch"),
    "scale": ("ray", "pyarrow"),
}
# Help panels (`xmodal --help`) and the extra each command needs; a command not listed is in the
# Photos panel and runs in the core install.
PANELS = {
    "Photos": ("index", "search", "similar", "describe", "photos", "forget", "prune",
               "duplicates", "tag", "serve", "demo", "prepare"),
    "Evaluate": ("eval", "protocols", "models", "compare"),
    "Research": ("reproduce", "gist", "mitl", "train"),
    "Scale": ("embed", "ann"),
}
NEEDS_EXTRA = {"reproduce": "research", "gist": "research", "mitl": "research",
               "train": "train", "embed": "scale", "ann": "scale", "prepare": "export"}
# Commands that run in the core install for some inputs (the default model on a protocol, saved
# runs) and need an extra for others (a research setting): they run, and a missing module of the
# extra ends them with the same message instead of a traceback.
MAY_NEED_EXTRA = {"eval": "research", "protocols": "research", "models": "research",
                  "compare": "research"}


def install_line(extra: str) -> str:
    return f"pip install 'xmodal[{extra}]'"


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` this environment lacks (empty: installed)."""
    return [m for m in EXTRA_MODULES[extra] if find_spec(m) is None]


def check_extra(command: str, extra: str) -> None:
    """Exit 2 with one message naming the extra to install when ``extra`` is missing."""
    missing = missing_modules(extra)
    if missing:
        from rich.markup import escape

        console.print(f"[bold red]error:[/] `xmodal {command}` needs the {extra} extra, which "
                      f"this install lacks (no {', '.join(missing)}); install it with: "
                      f"{escape(install_line(extra))}", soft_wrap=True)
        raise typer.Exit(2)


def requires_extra(extra: str, command: str | None = None, upfront: bool = True) -> Callable:
    """Decorator of a command that needs ``extra``: in an install without it, the command
    exits 2 with the install line instead of running (and failing deep inside). With
    ``upfront=False`` the command runs, and only an import of one of the extra's modules that
    fails ends it so."""
    def gate(fn: Callable) -> Callable:
        name = command or fn.__name__.removesuffix("_command")

        @functools.wraps(fn)
        def gated(*args, **kwargs):
            if upfront:
                check_extra(name, extra)
            try:
                return fn(*args, **kwargs)
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] not in EXTRA_MODULES[extra]:
                    raise
                check_extra(name, extra)  # exits 2 (the module is missing)
                raise

        gated.xmodal_extra = extra
        return gated
    return gate


def _gate_group(group: typer.Typer, command: str, extra: str) -> None:
    for info in group.registered_commands:
        info.callback = requires_extra(extra, command)(info.callback)
    for sub in group.registered_groups:
        _gate_group(sub.typer_instance, command, extra)


def organise(root: typer.Typer) -> None:
    """Put every registered command in its help panel and gate those that need an extra (called
    once, after the command modules registered their commands)."""
    panel_of = {name: panel for panel, names in PANELS.items() for name in names}
    for info in root.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        info.rich_help_panel = panel_of.get(name, "Photos")
        if name in NEEDS_EXTRA or name in MAY_NEED_EXTRA:
            info.callback = requires_extra(NEEDS_EXTRA.get(name) or MAY_NEED_EXTRA[name], name,
                                           upfront=name in NEEDS_EXTRA)(info.callback)
    for group in root.registered_groups:
        group.rich_help_panel = panel_of.get(group.name, "Photos")
        if group.name in NEEDS_EXTRA:
            _gate_group(group.typer_instance, group.name, NEEDS_EXTRA[group.name])


@app.callback()
def global_options(
    ctx: typer.Context,
    engine: str = typer.Option(
        None, "--engine", help="Inference engine of the encoders: onnx (the default when "
        "onnxruntime is installed) or torch. Same as $XMODAL_ENGINE.",
    ),
) -> None:
    """Associate images with sentences: search photos by sentence, describe and tag images,
    and evaluate image-text matching models."""
    import os

    # before the command parses its arguments: a gated command says what to install first
    if ctx.invoked_subcommand in NEEDS_EXTRA:
        check_extra(ctx.invoked_subcommand, NEEDS_EXTRA[ctx.invoked_subcommand])

    if engine is not None:
        from xmodal.errors import XmodalError
        from xmodal.features.onnx_engine import ENGINES

        if engine not in ENGINES:
            raise XmodalError(f"--engine must be one of {ENGINES}, not {engine!r}")
        os.environ["XMODAL_ENGINE"] = engine
