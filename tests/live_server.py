"""A real uvicorn server on 127.0.0.1 (free port) in a daemon thread, for browser tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(app, timeout: float = 15.0) -> Iterator[str]:
    """Serve ``app``; yields its base URL and stops the server on exit, even after a failure."""
    import uvicorn

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert srv.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium():
    """Debian's headless Chromium through Playwright; skips the test where either is missing."""
    import pytest

    if not CHROMIUM.exists():
        pytest.skip("Debian Chromium not found at /usr/bin/chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def stop_group(proc, sig=None, timeout: float = 20) -> tuple[str, str]:
    """Stop a ``start_new_session`` child and everything it started (``sig``, default SIGINT,
    then SIGKILL after ``timeout`` s); returns what it wrote to its pipes."""
    import os
    import signal
    import subprocess

    if proc.poll() is None:
        os.killpg(proc.pid, sig or signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=30)
    return out or "", err or ""
