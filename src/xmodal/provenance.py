"""Where a number or a model came from: the git commit and the package version.

Every result file and every saved model records its provenance through these two functions, so
that there is one rule for "which code produced this".
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def git_commit(short: bool = True) -> str:
    """The commit of the checkout the package runs from, ``"unknown"`` outside a git checkout;
    ``"+dirty"`` is appended when tracked files under ``src/`` differ from it (the code or the
    shipped models that ran are not the commit's)."""
    cmd = ["git", "rev-parse", "--short", "HEAD"] if short else ["git", "rev-parse", "HEAD"]
    try:
        commit = subprocess.run(cmd, cwd=_REPO, capture_output=True, text=True,
                                check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--",
                                  "src"], cwd=_REPO, capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if changed else "")


def files_at(commit: str, path: str, dest: str | Path) -> Path:
    """Extract ``path`` (a folder of this repository) as it was at ``commit`` into ``dest``;
    returns ``dest/path``. Needs the git checkout (e.g. an earlier default model's files)."""
    import io
    import tarfile

    from xmodal.errors import XmodalError

    try:
        blob = subprocess.run(["git", "archive", commit, path], cwd=_REPO, capture_output=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise XmodalError(f"cannot read {path} at commit {commit} (needs the git checkout of "
                          f"xmodal): {exc}") from exc
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")
    return Path(dest) / path


def provenance(**extra) -> dict:
    """``{"xmodal": version, "git_commit": ...}`` plus ``extra`` (e.g. the setting's name)."""
    from xmodal import __version__

    return {"xmodal": __version__, "git_commit": git_commit(), **extra}
