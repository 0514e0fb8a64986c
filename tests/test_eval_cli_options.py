"""``xmodal eval`` options of issue 44: a partial benchmark copy is labelled in the table title and
refused by ``--strict`` (single runs and sweeps), protocol notes are printed, ``--language`` for
XM3600, and ``--device cuda`` refused with a reason where torch sees no GPU."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import tests.benchmark_layouts as bl
from xmodal.cli import app

HASH = "python:tests.sweep_models:HashModel"


@pytest.fixture()
def coco(tmp_path, flickr8k_root, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    return bl.coco_karpathy(tmp_path / "coco", bl.flickr8k_photos(flickr8k_root, 3),
                            [1, 2, 3], [[11, 12], [21, 22], [31, 32]])


def test_a_partial_copy_is_labelled_in_the_table_and_refused_by_strict(coco, tmp_path):
    r = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--data", str(coco), "-m", HASH])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "coco5k · python:tests.sweep_models:HashModel · partial (3 of 5,000 images)" in flat
    assert "3 of 5,000 images; 6 of 25,000 captions" in flat
    assert "COCO (local copy): 3 images x 6 captions" in flat  # the protocol's note
    j = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--data", str(coco), "-m", HASH,
                                 "--json"])
    assert json.loads(j.stdout)["coverage"]["label"] == "partial (3 of 5,000 images)"
    s = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--data", str(coco), "-m", HASH,
                                 "--strict"])
    assert s.exit_code != 0 and "--strict refuses it" in str(s.exception)
    out = tmp_path / "runs"
    sw = CliRunner().invoke(app, ["eval", "-p", "coco5k", "-p", "coco1k", "--data", str(coco),
                                  "-m", HASH, "--out", str(out), "--strict", "--json"])
    assert sw.exit_code == 0, sw.output
    errors = json.loads(sw.stdout)["errors"]
    assert len(errors) == 2 and all("is partial" in e["error"] for e in errors)
    loose = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--data", str(coco), "-m", HASH,
                                     "--out", str(tmp_path / "loose"), "--json"])
    assert loose.exit_code == 0, loose.output
    md = (tmp_path / "loose" / "results.md").read_text()
    assert "- coco5k: partial (3 of 5,000 images)" in md
    shown = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--data", str(coco), "-m", HASH,
                                     "--out", str(tmp_path / "loose")])  # resumed: the table
    assert shown.exit_code == 0 and "- coco5k: partial (3 of 5,000 images)" in shown.stdout


def test_xm3600_language_flag(tmp_path, flickr8k_root, monkeypatch):
    monkeypatch.setenv("XMODAL_CACHE", str(tmp_path / "cache"))
    xm, _ = bl.xm3600(tmp_path / "xm", bl.flickr8k_photos(flickr8k_root, 3))
    r = CliRunner().invoke(app, ["eval", "-p", "xm3600", "--data", str(xm), "-m", HASH,
                                 "--language", "de", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["n_queries"]["t2i"] == 3  # one German caption per image (six in English)
    assert "Crossmodal-3600 (de)" in report["notes"]
    bad = CliRunner().invoke(app, ["eval", "-p", "coco5k", "--language", "de"])
    assert bad.exit_code != 0 and "--language is for" in str(bad.exception)
    sweep = CliRunner().invoke(app, ["eval", "-p", "xm3600", "--data", str(xm), "-m", HASH,
                                     "-m", "random", "--language", "de", "--out",
                                     str(tmp_path / "runs"), "--json"])
    assert sweep.exit_code == 0, sweep.output
    cell = json.loads(next((tmp_path / "runs" / "cells").glob("xm3600__random*.json")).read_text())
    assert cell["n_queries"]["t2i"] == 3 and "Crossmodal-3600 (de)" in cell["notes"]


def test_device_cuda_without_a_gpu_is_refused(monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    r = CliRunner().invoke(app, ["eval", "-p", "wikipedia", "-m", "random", "--device", "cuda"])
    assert r.exit_code != 0 and "torch sees no CUDA GPU" in str(r.exception)
