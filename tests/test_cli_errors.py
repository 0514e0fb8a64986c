"""The installed entry point turns usage errors into a short message and exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "args, message",
    [(["no-such-command"], "No such command"), (["eval", "--protocol"], "requires an argument"),
     (["serve", "--tagger", "/no/such/tagger", "--port", "1"], "not a saved tagging model"),
     (["--engine", "tensorflow", "protocols"], "--engine must be one of")],
)
def test_usage_errors_print_a_message_not_a_traceback(args, message):
    run = subprocess.run(
        [sys.executable, "-c", "from xmodal.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2
    assert message in run.stderr
    assert "Traceback" not in run.stderr + run.stdout
