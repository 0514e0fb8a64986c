"""Saved evaluation reports: the JSON files ``xmodal eval --json`` writes, found under a folder.

A report is a JSON object with at least ``"directions": {"i2t": {metric: value}, "t2i": {...}}``
(plus ``protocol``, ``model``, ``n_queries``, ``seed``, ``elapsed_s``; optionally ``curves``).
Other JSON files in the folder are ignored. A report's name is its path relative to the folder,
without ``.json``; names never escape the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from xmodal.errors import XmodalError

MAX_REPORT_BYTES = 20 * 1024 * 1024
MAX_REPORTS = 1000


def _is_report(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("directions"), dict)


class ReportStore:
    """List and read evaluation reports under ``root`` (parsed files cached by modification time)."""

    def __init__(self, root: str | os.PathLike | None) -> None:
        self.root = Path(root).resolve() if root is not None else None
        self._cache: dict[Path, tuple[int, Any]] = {}

    def _load(self, path: Path) -> Any:
        st = path.stat()
        cached = self._cache.get(path)
        if cached and cached[0] == st.st_mtime_ns:
            return cached[1]
        obj = None
        if st.st_size <= MAX_REPORT_BYTES:
            try:
                obj = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError):
                obj = None
        self._cache[path] = (st.st_mtime_ns, obj)
        return obj

    def list(self) -> list[dict[str, Any]]:
        """A summary of every report: name, protocol, model, directions, metrics, n_queries."""
        if self.root is None or not self.root.is_dir():
            return []
        out = []
        for path in sorted(self.root.rglob("*.json"))[:MAX_REPORTS]:
            if not path.is_file():
                continue
            obj = self._load(path)
            if not _is_report(obj):
                continue
            directions = obj["directions"]
            out.append(
                {
                    "name": path.relative_to(self.root).with_suffix("").as_posix(),
                    "protocol": obj.get("protocol"),
                    "model": obj.get("model"),
                    "directions": sorted(directions),
                    "metrics": sorted({m for d in directions.values() if isinstance(d, dict)
                                       for m in d}),
                    "n_queries": obj.get("n_queries"),
                    "has_curves": isinstance(obj.get("curves"), dict),
                    "modified": int(path.stat().st_mtime),
                }
            )
        return out

    def get(self, name: str) -> dict[str, Any]:
        """The full report called ``name``; XmodalError when it does not exist."""
        if self.root is None:
            raise XmodalError("no reports folder configured: start the server with --reports DIR")
        if "\x00" in name:  # no file has such a name (and the OS refuses to look it up)
            raise FileNotFoundError(name)
        path = (self.root / f"{name}.json").resolve()
        if self.root not in path.parents or not path.is_file():
            raise FileNotFoundError(name)
        obj = self._load(path)
        if not _is_report(obj):
            raise FileNotFoundError(name)
        return {"name": name, **obj}
