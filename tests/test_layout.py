"""Static checks of the package layout named by issues 15, 34 and 43: the layer table (which layer
may import which, imports inside functions counted), no import cycle between modules, no private
name imported across modules, no ``sys.path`` edits, one writer of saved-model files, every report
reproduced by an ``xmodal reproduce`` command, and the report renderers within their line
budget."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
FOLDERS = ("src", "tests", "benchmarks", "scripts")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# Import circles that a rewrite under way is breaking (issue 34 item 5). Each entry must still be
# a circle (test_every_allowed_circle_still_closes says when it is not: then delete the entry);
# any other circle fails test_no_import_cycle_between_modules.
CIRCLES_BEING_BROKEN = (
)


def xmodal_imports(source: str, *, in_functions: bool = True) -> set[str]:
    """The xmodal modules (and names) that ``source`` imports, inside function bodies too unless
    ``in_functions`` is False."""
    out = set()
    todo = [ast.parse(source)]
    while todo:
        for node in ast.iter_child_nodes(todo.pop()):
            if not in_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xmodal"):
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name.startswith("xmodal"))
            todo.append(node)
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the xmodal modules it imports anywhere; a CLI command's body (a function in
    ``xmodal.cli``) may import lazily, to keep ``xmodal --help`` fast."""
    files = {_module_name(p): p for p in (SRC / "xmodal").rglob("*.py")}
    graph = {}
    for m, p in files.items():
        cli = m == "xmodal.cli" or m.startswith("xmodal.cli.")
        imported = xmodal_imports(p.read_text(), in_functions=not cli)
        # a package's __init__ importing its own submodules is not a cycle with them
        graph[m] = {i for i in imported if i in files and i != m and not i.startswith(m + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(m: str) -> None:
        order[m] = low[m] = len(order)
        stack.append(m)
        for n in graph[m]:
            if n not in order:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in stack:
                low[m] = min(low[m], order[n])
        if low[m] == order[m]:
            component = set()
            while not component or m not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for m in sorted(graph):
        if m not in order:
            visit(m)
    return found


def _describe(circle: frozenset[str], graph: dict[str, set[str]]) -> str:
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & circle))}" for m in sorted(circle))


def test_the_import_reader_sees_function_bodies_and_builds_circles():
    source = ("import xmodal.a\n"
              "def f():\n    from xmodal.b import c\n"
              "class K:\n    def g(self):\n        import xmodal.d\n")
    assert xmodal_imports(source) == {"xmodal.a", "xmodal.b", "xmodal.b.c", "xmodal.d"}
    assert xmodal_imports(source, in_functions=False) == {"xmodal.a"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == [frozenset("abc")]


def test_no_import_cycle_between_modules():
    """No circle between modules, counting imports inside functions (but not inside CLI
    commands), apart from the listed ones being broken."""
    graph = import_graph()
    new = [c for c in circles(graph) if not any(c <= allowed for allowed in CIRCLES_BEING_BROKEN)]
    assert not new, "import circles: " + " | ".join(_describe(c, graph) for c in new)


def test_every_allowed_circle_still_closes():
    found = circles(import_graph())
    gone = [sorted(allowed) for allowed in CIRCLES_BEING_BROKEN
            if not any(c <= allowed for c in found)]
    assert not gone, f"no longer circles: delete them from CIRCLES_BEING_BROKEN: {gone}"


# ----- the layer table (docs/architecture.md draws it; this is the one copy that is checked) -----
# The base: importable from every layer.
BASE = ("xmodal", "xmodal.errors", "xmodal.paths", "xmodal.provenance", "xmodal.describe",
        "xmodal.migrations", "xmodal.progress", "xmodal.quiet")
_BELOW_MODELS = ("features", "data")
# layer -> the layers it may import besides itself and the base ("eval.metrics": one module)
LAYERS: dict[str, tuple[str, ...]] = {
    "base": (),
    "data": (),
    "features": ("data",),
    "models": ("features", "data", "eval.metrics", "eval.stats", "eval.selection"),
    "eval": ("models", *_BELOW_MODELS),
    "index": ("models", *_BELOW_MODELS),
    "gist": ("models", *_BELOW_MODELS),
    "mitl": ("eval", "models", *_BELOW_MODELS),
    "scale": ("index", "models", *_BELOW_MODELS),
    "recipes": ("eval", "index", "gist", "mitl", "scale", "models", *_BELOW_MODELS),
    "reproduce": ("recipes", "eval", "index", "gist", "mitl", "scale", "models", *_BELOW_MODELS),
    "factory": ("recipes", "eval", "index", "models", *_BELOW_MODELS),
    "cli": ("*",),
    "server": ("*",),
    "__main__": ("cli",),
}
# Arrows that still point up, each with why (a test fails when one is gone: delete its entry).
ARROWS_UP = {
    ("xmodal.eval.sweep", "xmodal.factory"): "model specs from the command line",
    ("xmodal.mitl.propose", "xmodal.factory"): "model specs from the command line",
    ("xmodal.scale.embed", "xmodal.factory"): "model specs from the command line",
    ("xmodal.scale.ann_search", "xmodal.factory"): "model specs from the command line",
    ("xmodal.reproduce.dual", "xmodal.factory"): "loads the shipped models by name",
    ("xmodal.recipes.calibration", "xmodal.reproduce.output"): "writes its result JSON",
    ("xmodal.eval.short_queries", "xmodal.index.scan"): "walks a folder of photos",
    ("xmodal.eval.short_queries", "xmodal.index.phrasing"): "puts a query as search does",
}


def layer_of(module: str) -> str:
    """``xmodal.features.towers`` -> ``features``; the base modules -> ``base``."""
    if module in BASE or module.startswith("xmodal.migrations."):
        return "base"
    return module.split(".")[1]


def may_import(module: str, target: str) -> bool:
    own, other = layer_of(module), layer_of(target)
    allowed = LAYERS[own]
    return (other in ("base", own) or "*" in allowed or other in allowed
            or any(target == f"xmodal.{a}" or target.startswith(f"xmodal.{a}.")
                   for a in allowed if "." in a))


def layer_breaches(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, targets in graph.items() for t in targets
                  if not may_import(m, t))


def test_the_layer_reader_sees_an_upward_import_inside_a_function():
    graph = {"xmodal.features.x": xmodal_imports("def f():\n    from xmodal.models import dual\n")
             & {"xmodal.models"},
             "xmodal.models.y": {"xmodal.eval.metrics", "xmodal.features.x"},
             "xmodal.models.z": {"xmodal.eval.runner"}}
    assert layer_breaches(graph) == [("xmodal.features.x", "xmodal.models"),
                                     ("xmodal.models.z", "xmodal.eval.runner")]


def test_every_module_belongs_to_a_layer_of_the_table():
    unknown = {m for m in import_graph() if layer_of(m) != "base" and layer_of(m) not in LAYERS}
    assert not unknown, f"add their layer to LAYERS: {sorted(unknown)}"


def test_imports_follow_the_layer_table():
    """Every import of an xmodal module, inside functions too (but not in CLI commands' bodies),
    goes to its own layer, one the table allows, or the base; ARROWS_UP lists the exceptions."""
    breaches = [b for b in layer_breaches(import_graph()) if b not in ARROWS_UP]
    assert not breaches, "imports against the layer table: " + "; ".join(
        f"{m} -> {t}" for m, t in breaches)


def test_every_listed_upward_arrow_still_exists():
    found = set(layer_breaches(import_graph()))
    gone = [arrow for arrow in ARROWS_UP if arrow not in found]
    assert not gone, f"no longer imported: delete them from ARROWS_UP: {gone}"


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


# The report renderers (issue 34): their files, and the most lines they may hold together.
RENDERERS = ("dual_report", "wikipedia_report", "hodosh_report", "hodosh_summary", "hodosh_tried",
             "relevance_report", "mitl_findings", "gist_report", "render")
RENDERER_LINES = 2200


def test_the_report_renderers_stay_within_their_line_budget():
    lines = {name: len((SRC / "xmodal" / "reproduce" / f"{name}.py").read_text().splitlines())
             for name in RENDERERS}
    assert sum(lines.values()) <= RENDERER_LINES, lines


# The photo index in small steps (issue 43): ingest and the search pipeline are split into
# functions a reader takes in at once; none in xmodal.index may grow past this many lines.
INDEX_FUNCTION_LINES = 50


def test_no_function_in_the_photo_index_exceeds_its_line_budget():
    long = []
    for path in sorted((SRC / "xmodal" / "index").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # the def line to the last one
                if lines > INDEX_FUNCTION_LINES:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long
