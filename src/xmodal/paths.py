"""Where data and caches live: arguments first, then environment variables, then defaults."""

from __future__ import annotations

import os
from pathlib import Path

from xmodal.errors import XmodalError

_REPO_ROOT = Path(__file__).resolve().parents[2]


def data_root(path: str | os.PathLike | None = None) -> Path:
    """The folder holding ``flickr8k/``, ``wikipedia/`` and ``corel5k/``.

    Order: the given path, ``$XMODAL_DATA``, then ``../shared/data`` beside the repository.
    """
    if path is not None:
        root = Path(path)
    elif os.environ.get("XMODAL_DATA"):
        root = Path(os.environ["XMODAL_DATA"])
    else:
        root = _REPO_ROOT.parent / "shared" / "data"
    return root.expanduser()


def dataset_dir(name: str, path: str | os.PathLike | None = None) -> Path:
    """The folder of one dataset, accepting either the data root or the dataset folder itself."""
    root = data_root(path)
    candidate = root / name
    if candidate.is_dir():
        return candidate
    if root.is_dir() and root.name == name:
        return root
    if path is not None and Path(path).is_dir():
        return Path(path)
    raise XmodalError(
        f"dataset '{name}' not found under {root}; pass --data DIR or set XMODAL_DATA"
    )


def cache_dir() -> Path:
    """Disk cache for features and kernels: ``$XMODAL_CACHE`` or ``~/.cache/xmodal``."""
    root = Path(os.environ.get("XMODAL_CACHE", Path.home() / ".cache" / "xmodal")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def results_dir() -> Path:
    """Where reproductions and benchmarks write their result JSON: ``$XMODAL_RESULTS``, else
    ``benchmarks/results`` under the current directory (never found from the package's location).
    Commands take ``--out`` before this."""
    return Path(os.environ.get("XMODAL_RESULTS") or Path("benchmarks") / "results").expanduser()


def reports_dir() -> Path:
    """Where reproductions write their Markdown reports: ``$XMODAL_REPORTS``, else ``reports``
    under the current directory. Commands take ``--report`` before this."""
    return Path(os.environ.get("XMODAL_REPORTS") or "reports").expanduser()


def figures_dir() -> Path:
    """Where reproductions draw their figures: ``figures`` inside :func:`reports_dir`."""
    return reports_dir() / "figures"


def models_dir() -> Path:
    """Files derived from installed weights (unpacked models, their ONNX exports):
    ``$XMODAL_MODELS`` or ``cache_dir()/models``. Kept apart from the feature cache so that a
    fresh feature cache (tests, benchmarks) does not unpack and export them again."""
    env = os.environ.get("XMODAL_MODELS")
    root = Path(env).expanduser() if env else cache_dir() / "models"
    root.mkdir(parents=True, exist_ok=True)
    return root
