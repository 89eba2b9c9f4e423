"""The package's shape, as ARCHITECTURE.md draws it: packages by concern, imports one way.

Each rule reads the source with :mod:`ast`, so an import inside a function or
under ``TYPE_CHECKING`` counts as much as one at the top of a module.
"""

import ast
import collections
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "jaxcapture_nb"

# Lowest first: a package imports only from the packages before it.
LAYERS = (
    "core",
    "upstream",
    "stats",
    "backends",
    "capturing",
    "modes",
    "runs",
    "interventions",
    "jupyter",
    "views",
)


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str:
    """The top-level package a module belongs to under jaxcapture_nb ("" for the root's __init__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports(module: str) -> list[tuple[str, str, int]]:
    """(imported module, imported name or "", line) of each import of this package in ``module``."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxcapture_nb"):
            for alias in node.names:
                whole = f"{node.module}.{alias.name}"
                if whole in MODULES:  # `from package import module`
                    found.append((whole, "", node.lineno))
                else:
                    found.append((node.module, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, "", node.lineno) for a in node.names if a.name.startswith("jaxcapture_nb")]
    return found


def test_the_root_holds_the_public_api_and_the_packages_only():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert loose == []
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert packages == sorted(LAYERS)


@pytest.mark.parametrize("module", [m for m in MODULES if package_of(m)])
def test_each_package_imports_only_from_the_packages_below_it(module):
    mine = LAYERS.index(package_of(module))
    upward = [
        f"line {line}: {target}"
        for target, _, line in imports(module)
        if package_of(target) != package_of(module) and LAYERS.index(package_of(target)) > mine
    ]
    assert upward == [], f"{module} imports from above its layer"


def test_no_module_imports_itself_back_through_others():
    graph = {m: {t for t, _, _ in imports(m) if t in MODULES and t != m} for m in MODULES}

    # Every cycle passes through a module that can reach itself.
    def reaches(start):
        seen, todo = set(), list(graph[start])
        while todo:
            here = todo.pop()
            if here == start:
                return True
            if here not in seen:
                seen.add(here)
                todo += graph[here]
        return False

    assert [m for m in graph if reaches(m)] == []


def test_model_side_code_never_imports_a_view():
    into_views = [
        (module, target)
        for module in MODULES
        if package_of(module) not in ("", "views")
        for target, _, _ in imports(module)
        if package_of(target) == "views"
    ]
    assert into_views == []


# How a run's rows are kept and filled: only runs/ knows; a view reads a Run.
RUN_INSIDES = {"history", "stream", "settling", "arrivals", "publishing", "loop_input"}


def test_only_runs_knows_how_a_run_keeps_its_rows():
    reaching_in = [
        f"{module}: {target}"
        for module in MODULES
        if package_of(module) not in ("", "runs")
        for target, _, _ in imports(module)
        if package_of(target) == "runs" and target.split(".")[2] in RUN_INSIDES
    ]
    assert reaching_in == []
    # A view reads a run through Run; LiveView.stream only hands the first run's rows to its user.
    stream_reads = [
        f"{module}: {ast.unparse(node)}"
        for module in MODULES
        if package_of(module) == "views"
        for node in ast.walk(ast.parse(MODULES[module].read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "stream" and isinstance(node.ctx, ast.Load)
    ]
    assert stream_reads == ["jaxcapture_nb.views.live_view: self.runs[0].stream"]


def test_no_private_name_crosses_a_package():
    crossing = [
        f"{module}: {target}.{name}"
        for module in MODULES
        for target, name, _ in imports(module)
        if name.startswith("_") and package_of(target) != package_of(module)
    ]
    assert crossing == []


def test_the_layers_are_what_the_code_does():
    # Each layer but the lowest is used by one above it: the order is not a guess.
    used_by = collections.defaultdict(set)
    for module in MODULES:
        for target, _, _ in imports(module):
            if package_of(target) != package_of(module):
                used_by[package_of(target)].add(package_of(module))
    assert all(used_by[layer] for layer in LAYERS if layer != "views")


# Sizes a reader can hold in mind: lines of a module, and of a class or
# function without its docstring.
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 450, 300, 80


def code_lines(node: ast.AST) -> int:
    """A class's or function's lines, without its docstring."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_modules_classes_and_functions_stay_small_enough_to_read():
    over = set()
    for module, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            over.add(module)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and code_lines(node) > CLASS_LINES:
                over.add(f"{module}.{node.name}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and code_lines(node) > FUNCTION_LINES:
                over.add(f"{module}.{node.name}()")
    assert over == set()
