"""``xmodal train dual``: help text and a clear error for a missing dataset."""

from __future__ import annotations

from typer.testing import CliRunner

from xmodal.cli import app
from xmodal.errors import XmodalError


def test_train_dual_help():
    result = CliRunner().invoke(app, ["train", "dual", "--help"])
    assert result.exit_code == 0
    assert "xmodal train dual --data" in result.output and "--out" in result.output


def test_train_dual_missing_data(tmp_path):
    result = CliRunner().invoke(
        app, ["train", "dual", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m")]
    )
    assert isinstance(result.exception, XmodalError)
    assert "flickr8k" in str(result.exception)
    assert not (tmp_path / "m").exists()
