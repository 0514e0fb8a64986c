"""The photo-search path stays clear of research code: ``xmodal --help`` and ``xmodal search``,
run in a fresh interpreter, import none of the research or scale-out libraries and none of the
research packages of xmodal (what the core install lacks, or what only slows a cold search)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
FAKE = "python:tests.fake_models:ColourModel"
# Third-party libraries of the research, scale and training extras, and torch: the encoders run
# on ONNX Runtime, so a search never needs it.
FORBIDDEN_LIBRARIES = ("ray", "spacy", "nltk", "matplotlib", "cv2", "sklearn", "torch")
FORBIDDEN_PACKAGES = ("xmodal.reproduce", "xmodal.recipes", "xmodal.mitl", "xmodal.gist")

# Runs the xmodal command line with the given arguments and writes, at exit, the names of every
# module the process imported to the file named by the first argument.
WRAPPER = """
import atexit, json, sys
out, args = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["xmodal", *args]
from xmodal.cli import main
main()
"""


def run_xmodal(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``xmodal ARGS`` in a fresh interpreter: the finished process and the modules it imported."""
    dump = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    proc = subprocess.run([sys.executable, "-c", WRAPPER, str(dump), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert dump.is_file(), proc.stderr
    return proc, set(json.loads(dump.read_text()))


def research_modules(modules: set[str]) -> list[str]:
    """The modules of ``modules`` that the search path must not import."""
    return sorted(m for m in modules
                  if m.split(".")[0] in FORBIDDEN_LIBRARIES
                  or any(m == p or m.startswith(p + ".") for p in FORBIDDEN_PACKAGES))


def test_research_modules_are_recognised():
    found = research_modules({"sklearn.linear_model", "xmodal.recipes", "xmodal.gist.pipeline",
                              "torch", "xmodal.index", "xmodal.reproducer", "rayon", "numpy"})
    assert found == ["sklearn.linear_model", "torch", "xmodal.gist.pipeline", "xmodal.recipes"]


def test_help_imports_no_research_code(tmp_path):
    proc, modules = run_xmodal(tmp_path, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "search" in proc.stdout
    assert "xmodal.cli.reproduce_cmd" in modules  # every command was registered
    assert research_modules(modules) == []


def test_search_help_imports_no_research_code(tmp_path):
    proc, modules = run_xmodal(tmp_path, "search", "--help")
    assert proc.returncode == 0, proc.stderr
    assert research_modules(modules) == []


def _photos(folder: Path) -> Path:
    folder.mkdir()
    for name, colour in (("red", (240, 20, 20)), ("green", (20, 240, 20)),
                         ("blue", (20, 20, 240))):
        Image.new("RGB", (40, 30), colour).save(folder / f"{name}.png")
    return folder


def index_then_search(tmp_path: Path, photos: Path, query: str,
                      *model: str) -> tuple[str, set[str]]:
    """Index ``photos`` (``xmodal index``, its own process), then search them for ``query`` in a
    fresh interpreter: the best photo's file name and the modules the search imported."""
    db = tmp_path / "photos.db"
    index = subprocess.run([sys.executable, "-m", "xmodal", "index", str(photos), "--db", str(db),
                            *model, "-q", "--json"], cwd=REPO, capture_output=True, text=True,
                           timeout=600)
    assert index.returncode == 0, index.stderr
    proc, modules = run_xmodal(tmp_path, "search", query, "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["results"][0]["path"]).name, modules


def test_search_imports_no_research_code(tmp_path):
    best, modules = index_then_search(tmp_path, _photos(tmp_path / "photos"), "green",
                                      "--model", FAKE)
    assert best == "green.png"
    assert "xmodal.index.photo_index" in modules
    assert research_modules(modules) == []


@pytest.mark.slow
def test_search_with_the_default_model_imports_no_research_code(tmp_path):
    """The shipped model's search path: ONNX encoders and numpy heads, no torch, no research."""
    from xmodal.cli.demo_cmd import sample_photo_dir

    photos = tmp_path / "photos"
    photos.mkdir()
    for name in ("chelsea.png", "coffee.png"):
        (photos / name).write_bytes((sample_photo_dir() / name).read_bytes())
    best, modules = index_then_search(tmp_path, photos, "a cat")
    assert best == "chelsea.png"
    assert "xmodal.models.dual" in modules
    assert research_modules(modules) == []


# ----- research commands in a core install (issue 43 item 5) --------------------------------------
def _core_install(monkeypatch, lacking=("torch", "sklearn", "ray", "pyarrow", "onnx",
                                        "sentence_transformers", "transformers")) -> None:
    """Make the command line see a core install: the extras' modules are not found."""
    import xmodal.cli._app as gate

    real = gate.find_spec
    monkeypatch.setattr(gate, "find_spec", lambda name: None if name in lacking else real(name))


def test_every_gated_command_exits_2_with_its_install_line(monkeypatch):
    from typer.testing import CliRunner

    from xmodal.cli import app
    from xmodal.cli._app import NEEDS_EXTRA

    _core_install(monkeypatch)
    runner = CliRunner()
    for name, extra in NEEDS_EXTRA.items():
        result = runner.invoke(app, [name])
        assert result.exit_code == 2, (name, result.output)
        assert f"`xmodal {name}` needs the {extra} extra" in result.output, result.output
        assert f"pip install 'xmodal[{extra}]'" in result.output, result.output
    # reached before the command parses its arguments, in sub-commands too
    assert runner.invoke(app, ["reproduce", "wikipedia"]).exit_code == 2
    assert runner.invoke(app, ["embed", "photos", "out", "--engine", "ray"]).exit_code == 2
    assert "research extra" in runner.invoke(app, ["gist", "a.jpg", "a dog"]).output


def test_the_gate_is_one_decorator_and_lets_installed_extras_through(monkeypatch):
    import typer

    from xmodal.cli._app import requires_extra

    @requires_extra("research")
    def fit_command(x: int) -> int:
        return x + 1

    @requires_extra("research", upfront=False)
    def eval_command(setting: str) -> str:
        if setting == "scm":
            import sklearn.linear_model  # noqa: F401 - what a research setting needs
        return setting

    assert fit_command(1) == 2 and fit_command.xmodal_extra == "research"
    _core_install(monkeypatch)
    with pytest.raises(typer.Exit) as stop:
        fit_command(1)
    assert stop.value.exit_code == 2
    # eval runs in the core install; a research setting's missing module ends it the same way
    monkeypatch.setitem(sys.modules, "sklearn.linear_model", None)  # import fails
    assert eval_command("dual") == "dual"
    with pytest.raises(typer.Exit) as stop:
        eval_command("scm")
    assert stop.value.exit_code == 2


def test_every_command_sits_in_one_help_panel():
    from typer.testing import CliRunner

    from xmodal.cli import app
    from xmodal.cli._app import MAY_NEED_EXTRA, NEEDS_EXTRA, PANELS

    names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    listed = [n for names_ in PANELS.values() for n in names_]
    assert sorted(names) == sorted(listed), set(names) ^ set(listed)
    assert set(NEEDS_EXTRA) | set(MAY_NEED_EXTRA) <= set(listed)
    out = CliRunner().invoke(app, ["--help"]).output
    assert all(panel in out for panel in PANELS)
