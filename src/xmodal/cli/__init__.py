"""The ``xmodal`` command line. Thin: parse, call the library, print. One module per command group.

Each command module registers its commands on ``app`` (or ``train_app``) when imported below.
Progress and logs go to stderr; ``--json`` output goes to stdout.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from xmodal.cli._app import app, console, organise, train_app  # noqa: E402
from xmodal.errors import XmodalError  # noqa: E402

# Command modules (each owns its commands). Keep every one importable at all times.
from xmodal.cli import eval_cmd  # noqa: E402,F401
from xmodal.cli import photos_cmd  # noqa: E402,F401
from xmodal.cli import train_cmd  # noqa: E402,F401
from xmodal.cli import tag_cmd  # noqa: E402,F401
from xmodal.cli import gist_cmd  # noqa: E402,F401
from xmodal.cli import serve_cmd  # noqa: E402,F401
from xmodal.cli import demo_cmd  # noqa: E402,F401
from xmodal.cli import mitl_cmd  # noqa: E402,F401
from xmodal.cli import reproduce_cmd  # noqa: E402,F401
from xmodal.cli import scale_cmd  # noqa: E402,F401
from xmodal.cli import duplicates_cmd  # noqa: E402,F401
from xmodal.cli import compare_cmd  # noqa: E402,F401
from xmodal.cli import prepare_cmd  # noqa: E402,F401

organise(app)  # help panels; commands that need an extra say so in a core install

__all__ = ["app", "console", "main", "train_app"]


def wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for JSON (``--json`` before any ``--``)."""
    args = argv[1:]
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _fail(message: str, code: int, kind: str) -> None:
    """End with ``code``; under --json the error is JSON on stdout, as the result would be:
    ``{"error": {"message": ..., "kind": "error" | "usage", "exit_code": code}}``."""
    if wants_json(sys.argv):
        print(json.dumps({"error": {"message": message, "kind": kind, "exit_code": code}}),
              flush=True)
    sys.exit(code)


def main() -> None:
    """Entry point: run the Typer app; project errors print without a traceback and exit 2
    (as JSON on stdout when --json was given)."""
    try:
        app(standalone_mode=False)
    except XmodalError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        _fail(str(exc), 2, "error")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # usage errors arrive here in non-standalone mode
        # Click's exceptions, or the copy of them that recent Typer versions vendor
        # (typer._click): both have show() and exit_code.
        show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            fmt = getattr(exc, "format_message", None)
            _fail(fmt() if callable(fmt) else str(exc), code, "usage")
        if type(exc).__name__ == "Abort":
            sys.exit(1)
        raise
