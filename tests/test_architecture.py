"""Imports go one way (docs/architecture.md).

Every module of the package is parsed with :mod:`ast`; its imports, including those
inside functions and ``importlib.import_module("snapcore....")`` calls with a constant
name, must go to the same or a lower layer, and the runtime imports must have no cycle.
Imports under ``if TYPE_CHECKING:`` never run: they may not go up a layer either, but
they are left out of the cycle check.  Third-party libraries outside the core
dependencies may only be imported lazily (inside a function), and each such library is
listed in docs/architecture.md.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package name -> folder (the editable install maps the plugin folders the same way)
PACKAGES = {
    "snapcore": ROOT / "snapcore",
    "snapcore.backends": ROOT / "backends",
    "snapcore.statistics": ROOT / "statistics",
}

#: The layers, bottom up; a module belongs to the first entry whose name is a prefix
#: of the module's (``"snapcore.cli"`` covers ``snapcore.cli.release``).
LAYERS: list[tuple[str, list[str]]] = [
    ("errors", ["snapcore.errors"]),
    (
        "exact arithmetic helpers",
        [
            "snapcore.dyadic",
            "snapcore.exact",
            "snapcore.ieee754",
            "snapcore.backends._intround",
            "snapcore.display",
            "snapcore.values",
        ],
    ),
    ("calibration", ["snapcore.params", "snapcore.bounds", "snapcore.guarantee"]),
    (
        "pipeline, backends, sources",
        [
            "snapcore.backend",
            "snapcore.pipeline",
            "snapcore.fastpath",
            "snapcore.backends",
            "snapcore.sources",
            "snapcore.chacha",
            "snapcore.hookspecs",
            "snapcore.plugins",
            "snapcore.statistic",
            "snapcore.dataset",
            "snapcore.missing",
            "snapcore.frames",
            "snapcore.timing",
        ],
    ),
    ("mechanism", ["snapcore.mechanism"]),
    (
        "statistics, release API, accuracy, audit",
        [
            "snapcore.statistics",
            "snapcore.api",
            "snapcore.grouped",
            "snapcore.partials",
            "snapcore.budget",
            "snapcore.ledger",
            "snapcore.accuracy",
            "snapcore.auditing",
            "snapcore.attack",
        ],
    ),
    (
        "cli, plots, compare, testing",
        [
            "snapcore.cli",
            "snapcore.plots",
            "snapcore.compare",
            "snapcore.testing",
            "snapcore.data",
            "snapcore.opendp",
            "snapcore.diffprivlib",
        ],
    ),
]
#: The package itself re-exports the front door (mechanism, release, audit, errors).
ROOT_LAYER = 5

#: Third-party libraries every install has (pyproject's dependencies) and those the
#: shipped conformance suite (snapcore.testing) needs by design.
CORE = {
    "attrs", "pluggy", "gmpy2", "numpy", "click", "mpmath", "flint",
    "numba", "llvmlite", "cryptography", "narwhals",
}  # fmt: skip
TESTING_ONLY = {"pytest", "hypothesis"}
#: Adapter modules: each exists to embed snapcore in one optional library, subclasses
#: or wraps that library's classes, and so imports it (only it) at module level.  No
#: module of the package imports an adapter, so the library stays optional.
ADAPTERS = {"snapcore.opendp": "opendp", "snapcore.diffprivlib": "diffprivlib"}


def module_files() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


MODULES = module_files()


def layer_of(name: str) -> int:
    if name == "snapcore":
        return ROOT_LAYER
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best_len:
                best, best_len = index, len(p)
    if best is None:
        raise AssertionError(f"module {name} has no layer: add it to LAYERS and the doc")
    return best


class Imports(ast.NodeVisitor):
    """Collect (target, lineno, type_only, lazy) for one module."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, int, bool, bool]] = []
        self._type_only = 0
        self._depth = 0

    def _add(self, name: str, node: ast.AST) -> None:
        self.found.append((name, node.lineno, self._type_only > 0, self._depth > 0))  # type: ignore[attr-defined]

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        is_tc = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )
        if is_tc:
            self._type_only += 1
            for child in node.body:
                self.visit(child)
            self._type_only -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        for alias in node.names:
            sub = f"{mod}.{alias.name}"
            self._add(sub if sub in MODULES else mod, node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if (
            name in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            self._add(node.args[0].value, node)
        self.generic_visit(node)


def imports_of(module: str) -> list[tuple[str, int, bool, bool]]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    v = Imports(module, path.name == "__init__.py")
    v.visit(tree)
    return v.found


def own(target: str) -> str | None:
    """The package module an import names (the longest known prefix), or None."""
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in MODULES:
            return cand
    return None


def graph() -> tuple[dict[str, set[str]], list[str]]:
    """Runtime import edges between package modules, and the up-layer violations."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    bad: list[str] = []
    for m in MODULES:
        for target, line, type_only, _ in imports_of(m):
            if not (target == "snapcore" or target.startswith("snapcore.")):
                continue
            dep = own(target)
            if dep is None:
                bad.append(f"{m}:{line} imports {target}, which is not a module of the package")
                continue
            if dep == m:
                continue
            if layer_of(dep) > layer_of(m):
                up = LAYERS[layer_of(dep)][0] if dep != "snapcore" else "the package root"
                bad.append(
                    f"{m}:{line} (layer {LAYERS[layer_of(m)][0]!r}) imports {dep} "
                    f"(layer {up!r}): imports must not go up a layer"
                )
            if not type_only:
                edges[m].add(dep)
    return edges, bad


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(edges, WHITE)
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        colour[u] = GREY
        stack.append(u)
        for w in sorted(edges[u]):
            if colour[w] == GREY:
                return [*stack[stack.index(w) :], w]
            if colour[w] == WHITE:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        colour[u] = BLACK
        return None

    for u in sorted(edges):
        if colour[u] == WHITE:
            found = visit(u)
            if found:
                return found
    return None


def test_every_module_has_a_layer():
    assert len(MODULES) > 30
    for m in MODULES:
        layer_of(m)


def test_no_import_goes_up_a_layer():
    _, bad = graph()
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_third_party_optional_libraries_are_lazy_and_documented():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([a-z_0-9]+)`", doc))
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    problems = []
    for m in MODULES:
        for target, line, type_only, lazy in imports_of(m):
            top = target.split(".")[0]
            if top in stdlib or top == "snapcore" or top in CORE or type_only:
                continue
            if top in TESTING_ONLY and m.startswith("snapcore.testing"):
                continue
            if ADAPTERS.get(m) == top:
                continue
            if not lazy:
                problems.append(f"{m}:{line} imports the optional library {top} at import time")
            if top not in listed:
                problems.append(f"{m}:{line}: optional library {top} is not listed in the doc")
    assert not problems, "\n".join(problems)


def test_no_module_imports_an_adapter():
    problems = [
        f"{m}:{line} imports the adapter {target}"
        for m in MODULES
        for target, line, type_only, _ in imports_of(m)
        if not type_only and any(target == a or target.startswith(a + ".") for a in ADAPTERS)
    ]
    assert not problems, "\n".join(problems)


# -- the checker itself catches what it must ----------------------------------------


def _check_source(module: str, source: str, tmp_path: Path, monkeypatch) -> list[str]:
    path = tmp_path / "planted.py"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setitem(MODULES, module, path)
    _, bad = graph()
    return bad


@pytest.mark.parametrize(
    "source",
    [
        "from snapcore.api import release\n",
        "def f():\n    from snapcore import accuracy\n    return accuracy\n",
        "import importlib\n\ndef f():\n    return importlib.import_module('snapcore.auditing')\n",
    ],
    ids=["top-level", "inside-function", "importlib"],
)
def test_checker_catches_an_upward_import(source, tmp_path, monkeypatch):
    bad = _check_source("snapcore.params", source, tmp_path, monkeypatch)
    assert any("snapcore.params" in b and "up a layer" in b for b in bad), bad


def test_checker_catches_a_cycle(tmp_path, monkeypatch):
    # errors -> dyadic would be upward; within one layer a back edge makes a cycle.
    src = "def f():\n    from snapcore.sources import RandomSource\n"
    path = tmp_path / "planted.py"
    path.write_text(MODULES["snapcore.backend"].read_text(encoding="utf-8") + src)
    monkeypatch.setitem(MODULES, "snapcore.backend", path)
    plant = tmp_path / "planted2.py"
    plant.write_text(
        MODULES["snapcore.sources"].read_text(encoding="utf-8")
        + ("\n\ndef g():\n    from snapcore.backend import Backend\n")
    )
    monkeypatch.setitem(MODULES, "snapcore.sources", plant)
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is not None and {"snapcore.backend", "snapcore.sources"} <= set(cycle)
