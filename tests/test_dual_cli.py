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


def test_train_dual_missing_cc_names_the_way_out(tmp_path, monkeypatch, flickr8k_root):
    """The shipped recipe needs Conceptual Captions too: without it the error says where to get
    it and how to train without it, and nothing is written."""
    monkeypatch.setenv("XMODAL_CC_DATA", str(tmp_path / "no-cc"))
    result = CliRunner().invoke(app, ["train", "dual", "--data", str(flickr8k_root.parent),
                                      "--out", str(tmp_path / "m")])
    assert isinstance(result.exception, XmodalError)
    assert "--no-cc" in str(result.exception) and "XMODAL_CC_DATA" in str(result.exception)
    assert not (tmp_path / "m").exists()
