"""Schemathesis against the OpenAPI schema: generated requests never get a 500, every error is JSON.

Runs on the fake-model app (no real model), a bounded number of examples per operation.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from test_server_fakes import fake_backends  # noqa: E402

from xmodal.server import create_app  # noqa: E402


def _app():
    root = Path(tempfile.mkdtemp(prefix="xmodal-fuzz-"))
    db, parts = fake_backends(root)
    (root / "reports").mkdir()
    return create_app(db, reports_dir=root / "reports", thumbnail_dir=root / "thumbs", **parts)


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors_and_json_errors(case):
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.text[:300])
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"} and body["error"]["message"], body
