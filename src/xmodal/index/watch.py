"""Keep a photo index current: watch a folder and index what changes, within seconds.

File-system events (``watchfiles``: inotify on Linux, FSEvents on macOS, polling elsewhere) are
debounced, then the folder is brought up to date by the ordinary incremental
:meth:`PhotoIndex.update`: new and changed photos are embedded, deleted ones removed, moved or
renamed ones keep their vector (same SHA-1, no re-embedding). Every update commits in
transactions, so killing the watcher at any moment loses nothing that was committed, and the
next run (watching or not) finishes the job.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from xmodal.data.folder import IMAGE_EXTENSIONS
from xmodal.errors import XmodalError

DEBOUNCE_MS = 1000  # changes are gathered this long after the last one before indexing
TICK_S = 1.0  # the watch wakes up this often when nothing happens (retries, the first run)


def photo_filter(db_path: Path) -> Callable[[Any, str], bool]:
    """Events worth an update: image files and folders (a folder moved or deleted takes its
    photos with it), never the index's own files or hidden ones."""
    own = str(Path(db_path).resolve())

    def wanted(change: Any, path: str) -> bool:
        name = os.path.basename(path)
        if name.startswith(".") or path.startswith(own):
            return False
        suffix = Path(name).suffix.lower()
        return suffix in IMAGE_EXTENSIONS or suffix == ""

    return wanted


def watch(index: Any, folder: str | os.PathLike, *, debounce_ms: int = DEBOUNCE_MS,
          stop_event: Any = None, force_polling: bool | None = None, progress: bool = False,
          captions: dict[str, list[str]] | None = None) -> Iterator[Any]:
    """Index ``folder`` now, then again after every burst of changes; yields each update's
    :class:`UpdateStats`. Ends when ``stop_event`` is set or on Ctrl-C."""
    import watchfiles

    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise XmodalError(f"not a folder: {folder}")
    # the watch starts before the first update, so nothing that changes meanwhile is missed
    changes = watchfiles.watch(
        root, watch_filter=photo_filter(index.db_path), debounce=debounce_ms, step=50,
        stop_event=stop_event, force_polling=force_polling, raise_interrupt=False,
        yield_on_timeout=True, rust_timeout=int(TICK_S * 1000))
    pending, first = True, True
    for batch in changes:
        pending = pending or bool(batch)
        if not pending:
            continue  # a quiet period: nothing to do
        if not root.is_dir():
            raise XmodalError(f"the watched folder {root} is gone: 'xmodal forget {root}' "
                              "removes its photos from the index")
        stats = _update(index, root, progress and first, captions if first else None)
        if stats is not None:  # None: another writer holds the index; retried next tick
            pending, first = False, False
            yield stats


def _update(index: Any, root: Path, progress: bool = False, captions=None) -> Any:
    """One update; None when another writer holds the index (the next event or the next quiet
    period retries)."""
    try:
        return index.update(root, captions=captions, progress=progress)
    except XmodalError as exc:
        if "another 'xmodal index'" in str(exc):
            time.sleep(0.2)
            return None
        raise
