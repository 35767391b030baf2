"""The package's structure (docs/architecture.md), checked from its source with :mod:`ast`.

- Every module lives in the package of one layer (or is one of the few top-level
  modules), and imports go only to its own layer or below: module-level imports, those
  inside functions, ``importlib.import_module("snapcore....")`` with a constant name,
  and those under ``if TYPE_CHECKING:`` alike.
- No cycle among those imports, annotation-only ones included.
- No module of the package imports the package root (the users' front door).
- No module assigns another object's private attribute (``obj._x = ...`` where ``obj``
  is not ``self`` or ``cls``, or the same through ``setattr``).
- Third-party libraries outside the core dependencies are imported lazily (inside a
  function), and each is listed in docs/architecture.md.
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

#: The layers, bottom up, by package: a module belongs to the entry whose name is the
#: longest prefix of its own (``"snapcore.cli"`` covers ``snapcore.cli._release``).
LAYERS: list[tuple[str, list[str]]] = [
    ("errors", ["snapcore.errors", "snapcore._display", "snapcore._lazy"]),
    ("exact arithmetic", ["snapcore.exact"]),
    ("data", ["snapcore.data"]),
    ("calibration", ["snapcore.calibration"]),
    ("randomness and time quanta", ["snapcore.randomness", "snapcore.padding"]),
    ("pipeline", ["snapcore.pipeline"]),
    ("plugins", ["snapcore.plugins"]),
    ("mechanism and built-in plugins", [
        "snapcore.mechanism", "snapcore.backends", "snapcore.statistics",
    ]),
    ("analysis", ["snapcore.analysis"]),
    ("releases", ["snapcore.releases"]),
    ("interfaces", ["snapcore.cli", "snapcore.plots", "snapcore.testing", "snapcore.adapters"]),
]  # fmt: skip
#: The package itself is the curated front door: it re-exports names of every layer
#: and no module of the package imports it.
ROOT_LAYER = len(LAYERS)
#: The only modules directly in ``snapcore/``; everything else lives in a layer's package.
TOP_LEVEL = {
    "snapcore",
    "snapcore.errors",
    "snapcore._display",
    "snapcore._lazy",
    "snapcore.plots",
}

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
ADAPTERS = {"snapcore.adapters.opendp": "opendp", "snapcore.adapters.diffprivlib": "diffprivlib"}


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
    """Import edges between package modules (those under ``if TYPE_CHECKING:`` too),
    and the up-layer violations."""
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    bad: list[str] = []
    for m in MODULES:
        for target, line, _, _ in imports_of(m):
            if not (target == "snapcore" or target.startswith("snapcore.")):
                continue
            dep = own(target)
            if dep is None:
                bad.append(f"{m}:{line} imports {target}, which is not a module of the package")
                continue
            if dep == m:
                continue
            if dep == "snapcore" and m != "snapcore":
                bad.append(
                    f"{m}:{line} imports the package root, the front door for users: "
                    "import from the module that defines the name"
                )
            elif layer_of(dep) > layer_of(m):
                up = LAYERS[layer_of(dep)][0] if dep != "snapcore" else "the package root"
                bad.append(
                    f"{m}:{line} (layer {LAYERS[layer_of(m)][0]!r}) imports {dep} "
                    f"(layer {up!r}): imports must not go up a layer"
                )
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
        "from snapcore.releases._api import release\n",
        "def f():\n    from snapcore.analysis import _accuracy\n    return _accuracy\n",
        "import importlib\n\ndef f():\n"
        "    return importlib.import_module('snapcore.analysis._audit')\n",
    ],
    ids=["top-level", "inside-function", "importlib"],
)
def test_checker_catches_an_upward_import(source, tmp_path, monkeypatch):
    bad = _check_source("snapcore.calibration._params", source, tmp_path, monkeypatch)
    assert any("snapcore.calibration._params" in b and "up a layer" in b for b in bad), bad


def test_checker_catches_a_cycle(tmp_path, monkeypatch):
    # errors -> dyadic would be upward; within one layer a back edge makes a cycle.
    src = "def f():\n    from snapcore.randomness._sources import RandomSource\n"
    path = tmp_path / "planted.py"
    path.write_text(MODULES["snapcore.pipeline._backend"].read_text(encoding="utf-8") + src)
    monkeypatch.setitem(MODULES, "snapcore.pipeline._backend", path)
    plant = tmp_path / "planted2.py"
    plant.write_text(
        MODULES["snapcore.randomness._sources"].read_text(encoding="utf-8")
        + ("\n\ndef g():\n    from snapcore.pipeline._backend import Backend\n")
    )
    monkeypatch.setitem(MODULES, "snapcore.randomness._sources", plant)
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is not None and {
        "snapcore.pipeline._backend",
        "snapcore.randomness._sources",
    } <= set(cycle)


# -- no module writes another object's private attributes -----------------------------


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _owner_ok(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def private_writes(source: str, module: str) -> list[str]:
    """``module:line`` for each assignment to another object's private attribute."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        flat: list[ast.AST] = []
        while targets:
            tgt = targets.pop()
            if isinstance(tgt, ast.Tuple | ast.List):
                targets.extend(tgt.elts)
            else:
                flat.append(tgt)
        for tgt in flat:
            if (
                isinstance(tgt, ast.Attribute)
                and _is_private(tgt.attr)
                and not _owner_ok(tgt.value)
            ):
                found.append(f"{module}:{tgt.lineno} writes {ast.unparse(tgt)}")
        if isinstance(node, ast.Call):
            f = node.func
            name = ast.unparse(f)
            if name in ("setattr", "object.__setattr__", "delattr") and len(node.args) >= 2:
                owner, attr = node.args[0], node.args[1]
                if (
                    isinstance(attr, ast.Constant)
                    and isinstance(attr.value, str)
                    and _is_private(attr.value)
                    and not _owner_ok(owner)
                ):
                    found.append(
                        f"{module}:{node.lineno} writes {ast.unparse(owner)}.{attr.value}"
                    )
    return found


def test_no_module_writes_another_objects_private_attributes():
    problems = [
        w for m, path in MODULES.items() for w in private_writes(path.read_text("utf-8"), m)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        "def f(mech, s):\n    mech._source = s\n",
        "def f(mech, s):\n    sib = copy(mech)\n    sib._source, sib._timing = s, None\n",
        "def f(mech, s):\n    setattr(mech, '_scalar', s)\n",
        "def f(r):\n    object.__setattr__(r, '_cache', 1)\n",
        "def f(mech):\n    mech._count += 1\n",
    ],
    ids=["assign", "tuple", "setattr", "object-setattr", "augmented"],
)
def test_checker_catches_a_private_write(source):
    assert private_writes(source, "planted"), source


def test_checker_allows_own_private_attributes():
    src = (
        "class A:\n    def __init__(self):\n        self._x = 1\n"
        "        object.__setattr__(self, '_y', 2)\n"
        "    @classmethod\n    def make(cls):\n        cls._count = 0\n"
        "def g(a):\n    a.public = 1\n    a.__dict__ = {}\n"
    )
    assert private_writes(src, "planted") == []


# -- the layout: ls snapcore shows the layers ---------------------------------------


def test_every_module_lives_in_a_layer_package():
    loose = sorted(
        m
        for m in MODULES
        if m.count(".") == 1 and m not in TOP_LEVEL and MODULES[m].name != "__init__.py"
    )
    assert not loose, f"modules outside a layer's package: {loose}"
    packages = {m for m, path in MODULES.items() if path.name == "__init__.py"}
    for pkg in packages - {"snapcore"}:
        doc = ast.get_docstring(ast.parse(MODULES[pkg].read_text("utf-8")))
        assert doc, f"{pkg} has no docstring saying what the layer is for"


def test_checker_catches_an_annotation_cycle(tmp_path, monkeypatch):
    # The release API and the group-by release naming each other's types only for
    # the type checker is still a cycle.
    api = tmp_path / "api.py"
    api.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from snapcore.releases._grouped import GroupedRelease\n"
    )
    grouped = tmp_path / "grouped.py"
    grouped.write_text("from snapcore.releases._api import Release\n")
    monkeypatch.setitem(MODULES, "snapcore.releases._api", api)
    monkeypatch.setitem(MODULES, "snapcore.releases._grouped", grouped)
    edges, _ = graph()
    cycle = find_cycle(edges)
    assert cycle is not None
    assert {"snapcore.releases._api", "snapcore.releases._grouped"} <= set(cycle)


def test_checker_catches_an_import_of_the_root(tmp_path, monkeypatch):
    bad = _check_source("snapcore.cli._plot", "import snapcore\n", tmp_path, monkeypatch)
    assert any("package root" in b for b in bad), bad


def test_checker_catches_a_loose_module(tmp_path, monkeypatch):
    path = tmp_path / "timing.py"
    path.write_text("X = 1\n")
    monkeypatch.setitem(MODULES, "snapcore.timing", path)
    with pytest.raises(AssertionError, match=r"snapcore\.timing"):
        test_every_module_lives_in_a_layer_package()
