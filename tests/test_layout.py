"""Static checks of the package layout named by issue 15: no import cycle between modules, no
private name imported across modules, no ``sys.path`` edits, one writer of saved-model files,
and every report reproduced by an ``xmodal reproduce`` command."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
FOLDERS = ("src", "tests", "benchmarks", "scripts")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path: Path) -> set[str]:
    """xmodal modules imported at module level (not inside functions: those are lazy)."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("xmodal"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("xmodal"))
    return out


def test_no_import_cycle_between_modules():
    files = {_module_name(p): p for p in (SRC / "xmodal").rglob("*.py")}
    graph = {m: {i for i in _top_level_imports(p) if i in files and i != m}
             for m, p in files.items()}
    # a package's __init__ importing its own submodules is not a cycle with them
    for m in graph:
        graph[m] = {i for i in graph[m] if not i.startswith(m + ".")}
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, n]))
            if n not in state:
                visit(n, stack + [m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])


def test_no_private_name_imported_across_modules():
    offenders = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xmodal"):
                    offenders += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                                  for a in node.names
                                  if a.name.startswith("_") and not a.name.endswith("__")]
    assert not offenders, offenders


def test_one_writer_of_saved_model_files():
    """Model directories are written by xmodal.models.modeldir only; the other np.savez calls
    are caches of derived data (features, the ANN structure, the graph state)."""
    caches = {"features/visual_words.py", "features/lexical_similarity.py", "gist/graph.py",
              "index/ann.py", "reproduce/gist.py", "eval/sweep.py"}
    writers = {
        str(p.relative_to(SRC / "xmodal"))
        for p in (SRC / "xmodal").rglob("*.py") if re.search(r"np\.savez", p.read_text())
    }
    assert writers - caches == {"models/modeldir.py"}


def test_no_sys_path_edits():
    """Code imports the installed package; nothing inserts folders into ``sys.path``."""
    offenders = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Attribute) and node.attr == "path"
                        and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def _is_module(dotted: str) -> bool:
    path = SRC.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_private_attribute_of_an_xmodal_module():
    """``import xmodal.x as X`` then ``X._name`` is a private import by another route."""
    offenders = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            aliases = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    aliases |= {a.asname for a in node.names
                                if a.asname and a.name.startswith("xmodal")}
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xmodal"):
                    aliases |= {a.asname or a.name for a in node.names
                                if _is_module(f"{node.module}.{a.name}")}
            offenders += [f"{path.relative_to(ROOT)}:{n.lineno} {n.value.id}.{n.attr}"
                          for n in ast.walk(tree)
                          if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                          and n.value.id in aliases and n.attr.startswith("_")
                          and not n.attr.endswith("__")]
    assert not offenders, offenders


def test_every_report_has_a_reproduce_command():
    from typer.testing import CliRunner

    from xmodal.cli import app

    out = CliRunner().invoke(app, ["reproduce", "--help"]).output
    for name in ("wikipedia", "corel5k", "hodosh", "gist", "dual", "mitl"):
        assert name in out, name
        assert CliRunner().invoke(app, ["reproduce", name, "--help"]).exit_code == 0
    scripts = {p.name for p in (ROOT / "scripts").glob("*.py")}
    moved = {"reproduce_wikipedia.py", "reproduce_relevance.py", "reproduce_hodosh.py",
             "gist_benchmark.py", "corel_nested_cv.py", "flickr_crm_temperature_dev.py",
             "train_dual_experiments.py", "train_dual_ensemble.py", "train_dual_ood.py"}
    assert not scripts & moved, scripts & moved  # their logic lives in xmodal.reproduce
