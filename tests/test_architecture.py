"""The shape of the source tree (api/, operator/, workers/, analysis/ and callscope/, as the callscope.* modules
they become), read with ast, never imported:

- no import cycles, counting imports inside functions and modules named in strings (importlib, Ray);
- shared code (callscope.*) never imports the layers (callscope.api, .operator, .workers, .analysis), and those
  never import the composition root (callscope.runtime, callscope.cli and its modules), which is the one place
  that wires them all;
- between the layers, imports go one way (ALLOWED): the API and the workers use the analysis, the controller starts
  the workers; the analysis imports no other layer, and the API, the controller and the workers none that is not
  theirs (the API does not reach into the workers; they meet in the catalog and the services);
- inside the analysis, models use neither stages nor the runtime, stages do not use the runtime, and the result's
  modules at the top of the package (result, stored, read-outs) use neither (ANALYSIS_PARTS);
- an import inside a function says why it is there in a comment (an optional or heavy dependency, start-up
  time), on its line or just above its group of imports; no `__import__`;
- ruff sorts callscope.* as first-party.
"""

from __future__ import annotations

import ast
import re
import tokenize
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parent.parent
FOLDERS = {"callscope": "callscope", "api": "callscope.api", "operator": "callscope.operator",
           "workers": "callscope.workers", "analysis": "callscope.analysis"}
LAYERS = ("callscope.api", "callscope.operator", "callscope.workers", "callscope.analysis")
# which other layers each layer may import
ALLOWED = {"callscope.api": {"callscope.analysis"}, "callscope.operator": {"callscope.workers"},
           "callscope.workers": {"callscope.analysis"}, "callscope.analysis": set()}
# inside callscope.analysis: which parts each part may import (a part is a subpackage, or "" for the modules at the
# top: the result, its stored form and read-outs)
ANALYSIS_PARTS = {"models": {"", "models"}, "stages": {"", "models", "stages"}, "": {"", "models", "stages"},
                  "runtime": {"", "models", "stages", "runtime"}}
NAMED = re.compile(r"^(callscope(?:\.\w+)+)(?::\w+)?$")  # "callscope.analysis.stages.asr:transcriber_from_settings"
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@cache
def modules() -> dict[str, Path]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(modules()[module].read_text(), filename=str(modules()[module]))


def in_composition_root(module: str) -> bool:
    return module == "callscope.runtime" or re.fullmatch(r"callscope\.cli(\.\w+)?", module) is not None


def layer(module: str) -> str | None:
    return next((name for name in LAYERS if module == name or module.startswith(name + ".")), None)


def known(name: str) -> str | None:
    """The source module `name` is, or is inside of (`callscope.resources.KINDS` -> callscope.resources)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the importing package up
        package = module.split(".") if modules()[module].name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base for alias in node.names]


def walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below `node`, and whether it runs inside a function."""
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        yield from walk(child, in_function or isinstance(child, FUNCTIONS))


@cache
def imports() -> list[tuple[str, str, int, bool]]:
    """(importer, imported source module, line, inside a function) for every import in the source tree."""
    found = []
    for module in modules():
        for node, in_function in walk(tree(module)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = targets(module, node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.match(node.value):
                names = [NAMED.match(node.value).group(1)]
            else:
                continue
            found += [(module, target, node.lineno, in_function) for target in map(known, names)
                      if target is not None and target != module]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    if len(component) > 1:
                        found.append(sorted(component))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph.get(step, ())))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


def shortest_cycle(graph: dict[str, set[str]], component: list[str]) -> str:
    """One cycle through the component's first module, as `a -> b -> a`, found breadth first."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    for node in queue:
        for step in sorted(graph.get(node, set()) & members):
            if step == start:
                return " -> ".join([*paths[node], start])
            if step not in paths:
                paths[step] = [*paths[node], step]
                queue.append(step)
    raise AssertionError(f"{component} is not a cycle")


def test_there_are_no_import_cycles():
    graph: dict[str, set[str]] = {}
    for importer, imported, _, _ in imports():
        graph.setdefault(importer, set()).add(imported)
    assert [shortest_cycle(graph, component) for component in cycles(graph)] == []


def test_shared_code_never_imports_the_layers_and_the_layers_never_import_the_composition_root():
    wrong = []
    for importer, imported, line, _ in imports():
        if in_composition_root(importer):
            continue
        if layer(importer) is None and layer(imported) is not None:
            wrong.append(f"{importer}:{line} (shared) imports {imported}")
        if layer(importer) is not None and in_composition_root(imported):
            wrong.append(f"{importer}:{line} imports the composition root {imported}")
    assert wrong == []


def test_the_layers_import_each_other_one_way():
    wrong = [f"{importer}:{line} ({layer(importer)}) imports {imported}"
             for importer, imported, line, _ in imports()
             if layer(importer) is not None and layer(imported) not in (None, layer(importer))
             and layer(imported) not in ALLOWED[layer(importer)]]
    assert wrong == []


def analysis_part(module: str) -> str | None:
    """stages, models or runtime for a module in that subpackage of the analysis, "" for one at its top."""
    if layer(module) != "callscope.analysis":
        return None
    rest = module.removeprefix("callscope.analysis").lstrip(".").split(".")
    return rest[0] if len(rest) > 1 or rest[0] in ANALYSIS_PARTS else ""


def test_inside_the_analysis_models_stages_and_runtime_import_one_way():
    wrong = [f"{importer}:{line} ({analysis_part(importer) or 'top'}) imports {imported}"
             for importer, imported, line, _ in imports()
             if analysis_part(importer) is not None and analysis_part(imported) is not None
             and analysis_part(imported) not in ANALYSIS_PARTS[analysis_part(importer)]]
    assert wrong == []


def test_every_analysis_module_is_in_a_part():
    assert {analysis_part(m) for m in modules() if analysis_part(m) is not None} == set(ANALYSIS_PARTS)


def justified_lines(module: str) -> set[int]:
    """Lines of the module that carry a comment, and the lines just below a line that is only a comment."""
    path = modules()[module]
    with path.open("rb") as handle:
        comments = [token for token in tokenize.tokenize(handle.readline) if token.type == tokenize.COMMENT]
    lines = path.read_text().splitlines()
    alone = {t.start[0] + 1 for t in comments if not lines[t.start[0] - 1][: t.start[1]].strip()}
    return {t.start[0] for t in comments} | alone


def import_groups(module: str) -> Iterator[list[ast.stmt]]:
    """Runs of consecutive import statements inside functions."""
    for node, in_function in walk(tree(module)):
        if not (in_function or isinstance(node, FUNCTIONS)):
            continue
        for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
            group: list[ast.stmt] = []
            for statement in body if isinstance(body, list) else ():
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    group.append(statement)
                    continue
                if group:
                    yield group
                group = []
            if group:
                yield group


def test_every_import_inside_a_function_says_why():
    unjustified = []
    for module in modules():
        commented = justified_lines(module)
        for group in import_groups(module):
            lines = range(group[0].lineno, group[-1].end_lineno + 1)
            if not commented.intersection(lines):
                unjustified += [f"{module}:{statement.lineno}" for statement in group]
    assert unjustified == [], "imports inside functions need a comment saying why (optional or heavy dependency?)"


def test_no_dynamic_imports_the_graph_cannot_see():
    hidden = [f"{module}:{node.lineno}" for module in modules() for node, _ in walk(tree(module))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"]
    assert hidden == []


def test_every_package_is_listed_for_the_wheel():
    """setuptools' `packages` is a list: a package left out of it is left out of every built wheel (an editable
    install, which reads the folders, still has it)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: ROOT / folder for name, folder in setuptools["package-dir"].items()}
    found = {name + "." + ".".join(init.parent.relative_to(folder).parts) if init.parent != folder else name
             for name, folder in folders.items() for init in folder.rglob("__init__.py")
             if not any(part.startswith((".", "__pycache__")) for part in init.relative_to(folder).parts)}
    assert sorted(found - set(setuptools["packages"])) == []


def test_ruff_sorts_callscope_as_first_party():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "callscope" in config["tool"]["ruff"]["lint"]["isort"]["known-first-party"]


# --- the checks check what they should ------------------------------------------------------------------------


def test_cycles_are_found_through_any_path():
    graph = {"a": {"b", "d"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}}
    assert cycles(graph) == [["a", "b", "c", "d"]]
    assert shortest_cycle(graph, ["a", "b", "c", "d"]) == "a -> d -> a"


def test_imports_inside_functions_and_named_modules_are_edges():
    found = {(importer, imported, in_function) for importer, imported, _, in_function in imports()}
    assert ("callscope.analysis.runtime.pipeline", "callscope.analysis.stages.asr", False) in found  # named in MODELS
    assert any(in_function for *_, in_function in found)


# --- one logging style ----------------------------------------------------------------------------------------

# The modules that may use the standard library's logging, and why: each configures it for third-party libraries
# (uvicorn, httpx, kopf, faster-whisper log through it); the project's own log lines go through structlog.
STDLIB_LOGGING = {
    "callscope.logs": "configures the root logger's handler, which third-party libraries write to",
    "callscope.log_scrubbing": "the filter that redacts secrets in the records of those libraries",
    "callscope.cli.root": "quietens faster-whisper's per-chunk INFO lines while `callscope analyze` draws its bar",
}
LOGGING_CALLS = frozenset({"getLogger", "debug", "info", "warning", "warn", "error", "exception", "critical", "fatal",
                           "log"})


def stdlib_logging_calls(module: ast.Module) -> list[int]:
    """Lines that call `logging.getLogger` or a module-level log function (`logging.info`, ...), however imported
    (`import logging as l`, `from logging import getLogger`)."""
    modules_as: set[str] = set()
    functions_as: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            modules_as |= {alias.asname or alias.name for alias in node.names if alias.name == "logging"}
        elif isinstance(node, ast.ImportFrom) and node.module == "logging" and not node.level:
            functions_as |= {alias.asname or alias.name for alias in node.names if alias.name in LOGGING_CALLS}
    return sorted(node.lineno for node in ast.walk(module) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr in LOGGING_CALLS
         and isinstance(node.func.value, ast.Name) and node.func.value.id in modules_as)
        or (isinstance(node.func, ast.Name) and node.func.id in functions_as)))


def test_the_project_logs_through_structlog_only():
    """`log = structlog.get_logger()` and `log.info("event_name", field=value)`: no `logging.getLogger(__name__)`
    or `logging.warning(...)` outside the modules that configure the standard library's logging (STDLIB_LOGGING)."""
    assert set(STDLIB_LOGGING) <= set(modules())
    wrong = [f"{module}:{line}" for module in modules() if module not in STDLIB_LOGGING
             for line in stdlib_logging_calls(tree(module))]
    assert wrong == [], "log through structlog: log = structlog.get_logger(); log.info('event_name', field=value)"


def test_stdlib_logging_calls_are_found_however_logging_is_imported():
    source = ("import logging\nimport logging as stdlog\nfrom logging import getLogger as get, warning\n"
              "log = logging.getLogger(__name__)\nstdlog.info('x')\nget('y')\nwarning('z')\n"
              "level = logging.INFO\nlog.info('not a module-level call')\nstructlog.get_logger().warning('event')\n")
    assert stdlib_logging_calls(ast.parse(source)) == [4, 5, 6, 7]


def test_the_analysis_uses_no_catalog_resource_store_or_service():
    """The analysis hands plain results over (analysis/stored.py's Completion) and the workers store them; it only
    reads a recording's audio from the blob store (analysis/runtime/work.py, on a Ray worker)."""
    shared = ("callscope.services", "callscope.catalog", "callscope.store")
    wrong = [f"{importer}:{line} imports {imported}" for importer, imported, line, _ in imports()
             if layer(importer) == "callscope.analysis" and imported.startswith(shared)]
    assert wrong == []


def test_no_module_imports_another_modules_private_name():
    """A name with a leading underscore is its module's own; a second user makes it public (tests may reach in)."""
    wrong = [f"{module}:{node.lineno} imports {node.module}.{alias.name}"
             for module in modules() for node, _ in walk(tree(module))
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("callscope")
             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert wrong == []
