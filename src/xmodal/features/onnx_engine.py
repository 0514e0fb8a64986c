"""ONNX Runtime for the pretrained towers: which engine runs them, and one session per file.

The towers themselves (:mod:`xmodal.features.towers`) are exported once from torch by
``xmodal prepare`` and run by ONNX Runtime: the same numbers as torch fp32 (cosine >= 0.9999,
tested on real photos and captions) at several times the speed on a CPU, and a search never
imports torch. ``XMODAL_ENGINE=torch`` selects the torch path instead (the export extra);
``onnx`` is the default when ``onnxruntime`` is installed.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from xmodal.errors import XmodalError
from xmodal.paths import models_dir

ENGINES = ("onnx", "torch")
_SESSIONS: dict[str, object] = {}
_LOCK = threading.RLock()  # a repair inside a session's creation exports under it
_EXPORTING = False  # whether this process holds export_lock()


def engine() -> str:
    """The inference engine: ``$XMODAL_ENGINE``, else onnx when onnxruntime is importable."""
    chosen = os.environ.get("XMODAL_ENGINE", "").strip().lower()
    if chosen:
        if chosen not in ENGINES:
            raise XmodalError(f"XMODAL_ENGINE must be one of {ENGINES}, not {chosen!r}")
        if chosen == "torch" and importlib.util.find_spec("torch") is None:
            raise XmodalError("the torch engine needs the export extra, which this install "
                              "lacks; install it with: pip install 'xmodal[export]'")
        return chosen
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "torch"
    return "onnx"


def lock() -> threading.RLock:
    """The lock under which sessions are created and towers exported."""
    return _LOCK


@contextmanager
def export_lock() -> Iterator[None]:
    """An exclusive lock on the models folder shared with other processes, held while a tower
    is exported: two processes exporting at once (two first ``xmodal index`` runs, or
    ``xmodal prepare`` beside a search) wrote the same ``.data`` file, which ONNX appends to
    (seen: MPNet's weights twice, 871 MB). Waits for the other export to finish. Re-entrant in
    a process (the int8 tower's export prepares the fp32 one first), under :func:`lock`."""
    global _EXPORTING
    import fcntl

    with _LOCK:
        if _EXPORTING:
            yield
            return
        with open(models_dir() / ".export.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            _EXPORTING = True
            try:
                yield
            finally:
                _EXPORTING = False
                fcntl.flock(handle, fcntl.LOCK_UN)


def file_digest(path: str | Path) -> str:
    """A short content hash of a weights file, computed once per file version: remembered by
    (path, size, mtime) in ``models_dir()/digests.json``, so a cold search does not read the
    420 MB of MPNet's weights again (measured: 0.3-0.6 s of a 1.4 s search)."""
    st = os.stat(path)
    return _digest(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    record = models_dir() / "digests.json"
    key = f"{path}|{size}|{mtime_ns}"
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()[:12]
    known = {k: v for k, v in (known if isinstance(known, dict) else {}).items()
             if not k.startswith(f"{path}|")}
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({**known, key: digest}, indent=0))
        tmp.replace(record)
    except OSError:  # a read-only models folder: hash again next time
        tmp.unlink(missing_ok=True)
    return digest


_THREAD = threading.local()


def set_inference_threads(n: int | None) -> None:
    """Run this thread's inferences on sessions with ``n`` intra-op threads (None: the default).
    The server's background thread (long describes) uses one, so searches keep a core."""
    _THREAD.threads = n


_QUICK_START = False


@contextmanager
def quick_start() -> Iterator[None]:
    """For a one-shot process (``xmodal search``): inside the block, the sentence encoders'
    sessions are created without prepacking their weights. MPNet's session is then created in
    0.04 s instead of 0.30 s, and one query takes 54-63 ms instead of 21 (later ones 22 ms
    against 13-14, which the server would feel): 0.2 s less for a search."""
    global _QUICK_START
    before, _QUICK_START = _QUICK_START, True
    try:
        yield
    finally:
        _QUICK_START = before


def text_session(path: Path, repair: Callable[[Path], object] | None) -> object:
    """A sentence encoder's session (without prepacked weights inside :func:`quick_start`)."""
    return session(path, repair, prepack=not _QUICK_START)


def session(path: Path, repair: Callable[[Path], object] | None,
            prepack: bool = True) -> object:
    """One ONNX Runtime session per model file, thread count, prepacking and process. When the
    file cannot be loaded (a truncated export), ``repair(path)`` writes it again, once.
    ``prepack=False``: ONNX Runtime does not reorder the weights for its matrix kernels (much
    quicker to create, slower to run: :func:`quick_start`)."""
    limit = getattr(_THREAD, "threads", None)
    key = f"{path}|{limit}|{prepack}"
    with _LOCK:
        if key not in _SESSIONS:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if not prepack:
                opts.add_session_config_entry("session.disable_prepacking", "1")
            threads = limit or os.environ.get("XMODAL_THREADS")
            if threads:
                opts.intra_op_num_threads = int(threads)
            opts.inter_op_num_threads = 1
            # idle ORT threads must not spin: torch heads, numpy and the decoding thread share
            # the cores between two runs (measured: spinning made the heads ~10x slower)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")

            def load():
                return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

            try:
                _SESSIONS[key] = load()
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
                if repair is None:
                    raise XmodalError(f"cannot load the exported model {path}: {exc}") from exc
                repair(path)
                try:
                    _SESSIONS[key] = load()
                except Exception as exc:  # noqa: BLE001
                    raise XmodalError(f"cannot load the exported model {path}: {exc}") from exc
    return _SESSIONS[key]
