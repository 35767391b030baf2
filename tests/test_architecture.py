"""The package's structure (docs/architecture.md), checked from its source with :mod:`ast`.

- Every module lives in the package of one layer (or is one of the few top-level
  modules), and imports go only to its own layer or below: module-level imports, those
  inside functions, ``importlib.import_module("snapcore....")`` and
  ``sys.modules["snapcore...."]`` with a constant name, and those under
  ``if TYPE_CHECKING:`` alike.  A module name computed at run time hides an import:
  only the plugin manager and the lazy exports import that way.
- No cycle among those imports, annotation-only ones included.
- No module of the package imports the package root (the users' front door).
- No module writes another object's private attribute (``obj._x = ...`` where ``obj``
  is not ``self`` or ``cls``, or the same through ``setattr``, ``__setattr__``,
  ``__dict__`` or as a loop or ``with`` target), nor reads one or calls another
  object's private method (``other._m()``), but for the few reads allowed by name.
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
    ("errors", ["snapcore.errors", "snapcore._display", "snapcore._lazy", "snapcore._version"]),
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
    "snapcore._version",
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
        #: lines that import a module, or look one up in ``sys.modules``, by a computed name
        self.dynamic: list[int] = []
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

    def _by_name(self, name: ast.AST | None, node: ast.AST) -> None:
        """An import (or a lookup among the imported modules) of the module ``name``."""
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            self._add(name.value, node)
        else:
            self.dynamic.append(node.lineno)  # type: ignore[attr-defined]

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        by_name = name in ("import_module", "__import__") or (
            name == "get" and _is_sys_modules(f.value)  # type: ignore[attr-defined]
        )  # sys.modules.get("snapcore....") looks the module up as sys.modules[...] does
        if by_name:
            self._by_name(node.args[0] if node.args else None, node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _is_sys_modules(node.value):  # sys.modules["snapcore...."]
            self._by_name(node.slice, node)
        self.generic_visit(node)


def _is_sys_modules(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "modules"
        and (isinstance(node.value, ast.Name) and node.value.id == "sys")
    )


def _visited(module: str) -> Imports:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    v = Imports(module, path.name == "__init__.py")
    v.visit(tree)
    return v


def imports_of(module: str) -> list[tuple[str, int, bool, bool]]:
    return _visited(module).found


#: Modules allowed to import by a computed name, and why.
ALLOWED_DYNAMIC_IMPORTS = {
    # Plugins are loaded by the module name their entry point (or the built-in table)
    # declares: the one place a module's name is data.
    "snapcore.plugins._manager": "plugins loaded by their declared module name",
    # attach() loads a package's export from the module its mapping names, on first use.
    "snapcore._lazy": "lazy exports loaded from their defining module",
}


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


def test_no_hidden_import():
    bad = [
        f"{m}:{line} imports a module, or looks one up in sys.modules, by a computed "
        "name: the layers cannot be checked"
        for m in MODULES
        if m not in ALLOWED_DYNAMIC_IMPORTS
        for line in _visited(m).dynamic
    ]
    assert not bad, "\n".join(bad)


def test_checker_catches_a_hidden_import(tmp_path, monkeypatch):
    src = "import importlib\n\ndef f(name):\n    return importlib.import_module(name)\n"
    monkeypatch.setitem(MODULES, "snapcore.padding._quanta", tmp_path / "planted.py")
    (tmp_path / "planted.py").write_text(src)
    with pytest.raises(AssertionError, match=r"snapcore\.padding\._quanta:4 .*computed"):
        test_no_hidden_import()


@pytest.mark.parametrize(
    "source",
    [
        "import sys\n\ndef f():\n    return sys.modules['snapcore'].__version__\n",
        "import sys\n\ndef f():\n    return sys.modules.get('snapcore')\n",
    ],
    ids=["subscript", "get"],
)
def test_checker_catches_a_sys_modules_lookup_of_the_root(source, tmp_path, monkeypatch):
    bad = _check_source("snapcore.padding._quanta", source, tmp_path, monkeypatch)
    assert any("snapcore.padding._quanta:4" in b and "package root" in b for b in bad), bad


#: The built-in plugins' packages: found by the plugin manager through their entry
#: points like any third-party plugin, so no module outside one of them imports it
#: by name (their layer is the mechanism's only so that they may use it).
PLUGIN_PACKAGES = ("snapcore.backends", "snapcore.statistics")


def plugin_imports(module: str) -> list[str]:
    """Imports of a built-in plugin's module by ``module``, outside that plugin's package."""
    bad = []
    for target, line, _, _ in imports_of(module):
        for pkg in PLUGIN_PACKAGES:
            if not (target == pkg or target.startswith(pkg + ".")):
                continue
            if module == pkg or module.startswith(pkg + "."):
                continue  # within the plugin's own package (fast uses mpfr)
            if module == "snapcore" and target == pkg:
                continue  # the front door makes the package an attribute, loaded lazily
            bad.append(f"{module}:{line} imports the built-in plugin {target} by name")
    return bad


def test_no_module_imports_a_built_in_plugin_by_name():
    bad = [b for m in MODULES for b in plugin_imports(m)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("snapcore.releases._api", "from snapcore.backends.mpfr import MPFRBackend\n"),
        ("snapcore.analysis._audit", "def f():\n    import snapcore.statistics.moments\n"),
        ("snapcore.statistics.counting", "from snapcore.backends import mpfr\n"),
        ("snapcore", "from snapcore.backends.mpfr import MPFRBackend\n"),
    ],
    ids=["backend", "statistic-inside-function", "other-plugin", "front-door-module"],
)
def test_checker_catches_an_import_of_a_built_in_plugin(module, source, tmp_path, monkeypatch):
    path = tmp_path / "planted.py"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setitem(MODULES, module, path)
    assert plugin_imports(module), source


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
    """``self``, ``cls``, ``type(self)`` and ``super()``: the object's own attributes."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "super":
            return True
        return node.func.id == "type" and len(node.args) == 1 and _owner_ok(node.args[0])
    return False


_SETATTR = {"setattr", "builtins.setattr", "delattr", "builtins.delattr"}


def _dict_of(node: ast.AST) -> ast.AST | None:
    """The object whose ``__dict__`` ``node`` is (``o.__dict__`` or ``vars(o)``), or None."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
    ):
        return node.args[0]
    return None


def _name_write(owner: ast.AST, name: ast.AST | None, module: str, line: int) -> list[str]:
    """A write of attribute ``name`` (an expression) on ``owner``: a problem when the
    owner is another object and the name is private or computed (unchecked)."""
    if _owner_ok(owner) or name is None:
        return []
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        if _is_private(name.value):
            return [f"{module}:{line} writes {ast.unparse(owner)}.{name.value}"]
        return []
    return [
        f"{module}:{line} writes a computed attribute {ast.unparse(name)} of "
        f"{ast.unparse(owner)}: whether the name is private cannot be checked"
    ]


def _target_writes(tgt: ast.AST, module: str) -> list[str]:
    if isinstance(tgt, ast.Tuple | ast.List):
        return [w for e in tgt.elts for w in _target_writes(e, module)]
    if isinstance(tgt, ast.Starred):
        return _target_writes(tgt.value, module)
    if isinstance(tgt, ast.Attribute) and _is_private(tgt.attr) and not _owner_ok(tgt.value):
        return [f"{module}:{tgt.lineno} writes {ast.unparse(tgt)}"]
    if isinstance(tgt, ast.Subscript):  # vars(o)['_x'] = v, o.__dict__['_x'] = v
        owner = _dict_of(tgt.value)
        if owner is not None:
            return _name_write(owner, tgt.slice, module, tgt.lineno)
    return []


def _call_writes(node: ast.Call, module: str) -> list[str]:
    f, args = node.func, node.args
    name = ast.unparse(f)
    if name in _SETATTR and len(args) >= 2:  # setattr(o, '_x', v), builtins.setattr
        return _name_write(args[0], args[1], module, node.lineno)
    if isinstance(f, ast.Attribute) and f.attr in ("__setattr__", "__delattr__"):
        bound = 2 if f.attr == "__setattr__" else 1
        if _owner_ok(f.value):  # super().__setattr__('_x', v) inside the class
            return []
        if len(args) > bound:  # object.__setattr__(o, '_x', v), type(o).__setattr__(...)
            return _name_write(args[0], args[1], module, node.lineno)
        if args:  # o.__setattr__('_x', v)
            return _name_write(f.value, args[0], module, node.lineno)
    if isinstance(f, ast.Attribute) and f.attr in ("update", "setdefault"):
        owner = _dict_of(f.value)  # o.__dict__.update(_x=...), vars(o).update({...})
        if owner is not None and not _owner_ok(owner):
            out = [
                w
                for kw in node.keywords
                for w in _name_write(
                    owner, ast.Constant(kw.arg) if kw.arg else kw.value, module, node.lineno
                )
            ]
            if args:
                out.extend(_name_write(owner, args[0], module, node.lineno))
            return out
    return []


def private_writes(source: str, module: str) -> list[str]:
    """``module:line`` for each write of another object's private attribute, in every
    form the language has: assignment (plain, augmented, annotated, unpacked, as a
    ``for`` or comprehension target, ``with ... as``), ``del``, ``setattr`` and
    ``delattr`` (also through ``builtins``), ``__setattr__`` bound or unbound, and the
    object's ``__dict__`` (``vars(o)[...] = v``, ``o.__dict__.update(...)``).  A write
    whose attribute name is computed cannot be checked, so it is reported too."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(
            node, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor | ast.comprehension
        ):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        for tgt in targets:
            found.extend(_target_writes(tgt, module))
        if isinstance(node, ast.Call):
            found.extend(_call_writes(node, module))
    return found


#: Modules allowed to write attributes by a computed name, and why.
ALLOWED_COMPUTED_WRITES = {
    # attach()'s module __getattr__ caches each lazily loaded export on its package:
    # the name is one of the package's public names, looked up in its mapping first.
    "snapcore._lazy": "caches a public export on its package",
}


def test_no_module_writes_another_objects_private_attributes():
    problems = [
        w
        for m, path in MODULES.items()
        for w in private_writes(path.read_text("utf-8"), m)
        if not (m in ALLOWED_COMPUTED_WRITES and "computed attribute" in w)
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
        "def f(o):\n    vars(o)['_x'] = 1\n",
        "def f(o):\n    o.__dict__['_x'] = 1\n",
        "def f(o):\n    o.__dict__.update(_x=1)\n",
        "def f(o):\n    o.__setattr__('_x', 1)\n",
        "def f(o):\n    type(o).__setattr__(o, '_x', 1)\n",
        "import builtins\n\ndef f(o):\n    builtins.setattr(o, '_x', 1)\n",
        "def f(o, name):\n    setattr(o, name, 1)\n",
        "def f(o):\n    for o._x in range(3):\n        pass\n",
        "def f(o, cm):\n    with cm as o._x:\n        pass\n",
        "def f(o):\n    del o._x\n",
        "def f(o):\n    delattr(o, '_x')\n",
        "def f(o, xs):\n    return [0 for o._x in xs]\n",
    ],
    ids=[
        "assign", "tuple", "setattr", "object-setattr", "augmented", "vars-item",
        "dict-item", "dict-update", "bound-setattr", "type-setattr", "builtins-setattr",
        "computed-name", "for-target", "with-target", "del", "delattr", "comprehension",
    ],
)  # fmt: skip
def test_checker_catches_a_private_write(source):
    assert private_writes(source, "planted"), source


def test_checker_allows_own_private_attributes():
    src = (
        "class A:\n    def __init__(self):\n        self._x = 1\n"
        "        object.__setattr__(self, '_y', 2)\n"
        "    @classmethod\n    def make(cls):\n        cls._count = 0\n"
        "def g(a):\n    a.public = 1\n    a.__dict__ = {}\n    setattr(a, 'x', 1)\n"
        "class B(A):\n    def __init__(self, name):\n        super().__setattr__('_z', 1)\n"
        "        setattr(self, name, 2)\n"
    )
    assert private_writes(src, "planted") == []


# -- no module reads another object's private attributes or calls its private methods --

#: Reads of a private attribute of an object that is not ``self``/``cls``, allowed by
#: (module, attribute): each names why the read cannot be avoided.  A module may only
#: read the privates of a class it defines itself.
ALLOWED_PRIVATE_READS: dict[tuple[str, str], str] = {
    # Equality of two values of the class compares their private state.
    ("snapcore.statistics.counting", "_clamped"): "BinLabels.__eq__",
    ("snapcore.statistics.counting", "_edges"): "BinLabels.__eq__",
    # The exact dot product of two ScaledIntegers asks both for their magnitude bound.
    ("snapcore.exact._sums", "_small"): "ScaledIntegers.dot",
    # The fork hook is a module-level function (os.register_at_fork takes no method):
    # it walks the class's live instances and resets each one's private stream state.
    ("snapcore.randomness._chacha", "_instances"): "fork hook",
    ("snapcore.randomness._chacha", "_after_fork"): "fork hook",
    ("snapcore.randomness._sources", "_instances"): "fork hook",
    ("snapcore.randomness._sources", "_after_fork"): "fork hook",
}
#: Private-looking names that are another library's documented interface: mpmath's
#: raw ``mpf`` tuple ``_mpf_`` (read by the mpmath backend's correctly rounded ops).
FOREIGN_INTERFACE = {"_mpf_"}


def private_reads(source: str, module: str) -> list[str]:
    """``module:line`` for each read of another object's private attribute, and each
    call of another object's private method (``other._m()``)."""
    tree = ast.parse(source)
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and _is_private(node.attr)
            and node.attr not in FOREIGN_INTERFACE
            and not _owner_ok(node.value)
            and (module, node.attr) not in ALLOWED_PRIVATE_READS
        ):
            what = "calls the private method" if id(node) in calls else "reads"
            found.append(f"{module}:{node.lineno} {what} {ast.unparse(node)}")
    return found


def test_no_module_reads_another_objects_private_attributes():
    problems = [
        r for m, path in MODULES.items() for r in private_reads(path.read_text("utf-8"), m)
    ]
    assert not problems, "\n".join(problems)


def test_allowed_private_reads_are_still_needed():
    stale = []
    for module, attr in ALLOWED_PRIVATE_READS:
        tree = ast.parse(MODULES[module].read_text("utf-8"))
        if not any(
            isinstance(n, ast.Attribute) and n.attr == attr and not _owner_ok(n.value)
            for n in ast.walk(tree)
        ):
            stale.append(f"{module}: {attr}")
    assert not stale, f"allowed private reads no longer made: {stale}"


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("def f(p):\n    return p._lam\n", "reads p._lam"),
        ("def f(m):\n    return m._pipeline.arith\n", "reads m._pipeline"),
        ("import copy\n\ndef f(m, s):\n    t = copy.copy(m)\n    t._unpad(s)\n",
         "calls the private method t._unpad"),
        ("from snapcore import plots\n\ndef f():\n    return plots._geomspace(1, 2, 3)\n",
         "calls the private method plots._geomspace"),
    ],
    ids=["attribute", "chained", "private-method", "module-private"],
)  # fmt: skip
def test_checker_catches_a_private_read(source, what):
    assert any(what in r for r in private_reads(source, "planted")), source


def test_checker_allows_own_private_reads():
    src = (
        "class A:\n    def f(self):\n        return self._x + type(self)._y\n"
        "    @classmethod\n    def g(cls):\n        return cls._y\n"
        "class B(A):\n    def f(self):\n        return super()._f()\n"
        "def h(a):\n    return a.__dict__, a.x\n"
    )
    assert private_reads(src, "planted") == []


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
