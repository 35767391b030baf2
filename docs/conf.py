"""Sphinx configuration for the snapcore documentation site.

Build: ``tox -e docs`` or ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
(run with ``PYTHONSAFEPATH=1`` from the checkout, or from an installed snapcore).

Pages are MyST Markdown files ``docs/*.md``; each has one H1.  The table of contents
is assembled here from the pages that exist (a glob over ``docs/*.md``): known pages
go into their section in a fixed order, any other page lands in "More", and a page
that is not written yet is simply absent, so a new page never needs an edit here and
a missing one never breaks the build.  The API reference (``api.md`` and one page per
package in ``api/``) is generated from the packages' ``__all__``: see below.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import sys
import types
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The checkout's root must never be on sys.path: its statistics/ folder would shadow
# the standard library.  snapcore is imported from the installed (editable) package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]

import snapcore  # noqa: E402

project = "snapcore"
author = "the snapcore authors"
copyright = "the snapcore authors"
release = snapcore.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_api", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_theme = "furo"
html_title = f"snapcore {release}"
html_static_path = ["_static"]

myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# Every cross-reference to a snapcore name must resolve: an unresolved one is a warning,
# so with -W an error.  Two kinds of references are not checked: other libraries' names
# (no inventory is fetched: the build needs no network) and the fields of attrs
# classes, which their class's "Attributes" section describes rather than a target.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(?!snapcore\b)[a-z_][a-z0-9_]*\..+"),
    (r"py:attr", r"[a-z_][a-z0-9_]*"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
# No network: never fetch intersphinx inventories.
intersphinx_mapping: dict[str, Any] = {}

#: Table of contents: (caption, [page, ...]) in reading order.
SECTIONS: list[tuple[str, list[str]]] = [
    ("Start here", ["why-snapping", "quickstart", "semantics"]),
    (
        "Using snapcore",
        [
            "statistics",
            "scaling",
            "bounds-and-gamma",
            "accuracy",
            "budgets",
            "backends",
            "fastpath",
            "timing",
        ],
    ),
    ("Extending snapcore", ["architecture", "plugins", "sources", "embedding"]),
    ("How it is checked", ["audit", "ieee754", "testing", "benchmarks"]),
    ("Reference", ["api"]),
]


def _pages() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.md") if p.stem != "index")


def _toctrees() -> str:
    pages = _pages()
    placed: set[str] = set()
    out = []
    for caption, wanted in SECTIONS:
        have = [p for p in wanted if p in pages]
        placed.update(have)
        if have:
            out.append(_toctree(caption, have))
    rest = [p for p in pages if p not in placed]
    if rest:
        out.append(_toctree("More", rest))
    return "\n".join(out)


def _toctree(caption: str, pages: list[str]) -> str:
    body = "\n".join(pages)
    return f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 2\n\n{body}\n```\n"


# -- API reference -------------------------------------------------------------------
#
# One page per public package or module (docs/api/<package>.md: a heading and a
# placeholder), generated from its ``__all__`` and those of its public modules.  A
# name exported in several places is documented once, under its shortest public path
# that leads to where it is defined (``snapcore.release``, not
# ``snapcore.releases.release``); the other places give it an entry that links there.
# Private (underscored) modules get no section.

API = HERE / "api"
#: Reading order of the API pages: the front door, then the layers top down; a page
#: not listed here comes last.
API_ORDER = [
    "snapcore",
    "snapcore.releases",
    "snapcore.analysis",
    "snapcore.mechanism",
    "snapcore.statistics",
    "snapcore.backends",
    "snapcore.plugins",
    "snapcore.pipeline",
    "snapcore.padding",
    "snapcore.randomness",
    "snapcore.calibration",
    "snapcore.data",
    "snapcore.exact",
    "snapcore.errors",
    "snapcore.testing",
    "snapcore.adapters",
    "snapcore.plots",
    "snapcore.cli",
]
#: The front door's names by topic, in reading order; a name ``snapcore`` exports
#: that is not listed here lands in "More".
ROOT_SECTIONS: list[tuple[str, list[str]]] = [
    ("Releasing", ["release", "Release", "GroupedRelease", "partial", "merge", "Partial"]),
    ("The mechanism", ["SnappingMechanism", "Calibration", "PrivacyAnalysis", "Neighbouring"]),
    ("Budgets", ["Budget", "LedgerBudget", "Ledger"]),
    (
        "Randomness sources",
        [
            "ChaCha20Source",
            "SystemSource",
            "SeededSource",
            "ReplaySource",
            "RandomSource",
            "ByteSource",
            "Draw",
        ],
    ),
    ("Audit", ["audit", "AuditResult"]),
    ("Plugin contracts", ["Statistic", "Prepared", "Backend", "Arithmetic", "hookimpl"]),
    (
        "Errors",
        [
            "SnapcoreError",
            "ParameterError",
            "DataError",
            "BudgetExceededError",
            "LedgerError",
            "BackendUnavailableError",
            "PlotDependencyError",
            "PluginError",
            "SourceExhaustedError",
            "SnapOverflowError",
            "WorkerError",
            "AuditError",
            "AuditLimitError",
        ],
    ),
]
#: Packages whose public modules get no section (command-line glue, described in
#: the quickstart and by ``snapcore --help``).
API_NO_SUBMODULES = {"snapcore.cli"}
#: Kinds of names, in the order a section shows them: (heading, directive).
KINDS = [
    ("Functions", "autofunction"),
    ("Classes", "autoclass"),
    ("Exceptions", "autoexception"),
    ("Constants and types", "data"),
]


def _in_api_order(names: set[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(API_ORDER)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def api_pages() -> list[str]:
    """The packages with a page in docs/api/, in reading order."""
    return _in_api_order({p.stem for p in API.glob("*.md")})


def _public_modules(package: str) -> list[str]:
    """The public modules of a package (its sections), sorted; none for a module."""
    mod = importlib.import_module(package)
    if package in API_NO_SUBMODULES or not hasattr(mod, "__path__"):
        return []
    return [
        info.name
        for info in pkgutil.iter_modules(mod.__path__, package + ".")
        if not info.ispkg and not info.name.rpartition(".")[2].startswith("_")
    ]


def _imported_from(module: str) -> dict[str, str]:
    """name -> the module it is imported from, read from the module's source (the
    lazy packages name their sources only in their ``if TYPE_CHECKING:`` block)."""
    mod = importlib.import_module(module)
    tree = ast.parse(Path(mod.__file__ or "").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
        for alias in node.names
    }


def _kind(obj: Any) -> str:
    if isinstance(obj, type):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if isinstance(obj, types.FunctionType | types.BuiltinFunctionType):
        return "autofunction"
    return "data"


class _Exports:
    """Every public name of every API page and section, with where it is defined,
    and for each the one path it is documented under."""

    def __init__(self, pages: list[str]) -> None:
        self.modules = [m for page in pages for m in (page, *_public_modules(page))]
        self.names: dict[str, list[str]] = {}
        self.key: dict[tuple[str, str], tuple[str, str]] = {}
        exporters: dict[tuple[str, str], list[str]] = {}
        for module in self.modules:
            mod = importlib.import_module(module)
            origin = _imported_from(module)
            self.names[module] = list(getattr(mod, "__all__", []))
            for name in self.names[module]:
                obj = getattr(mod, name)
                defined = getattr(obj, "__module__", None) if _kind(obj) != "data" else None
                key = (defined or origin.get(name, module), name)
                self.key[module, name] = key
                exporters.setdefault(key, []).append(module)
        self.home: dict[tuple[str, str], str] = {}
        for key, where in exporters.items():
            leads = [m for m in where if key[0] == m or key[0].startswith(m + ".")]
            self.home[key] = min(leads, key=len) if leads else where[0]

    def home_of(self, module: str, name: str) -> str:
        return self.home[self.key[module, name]]


def _data_directive(module: str, name: str, obj: Any, defined: str) -> str:
    """A ``py:data`` entry with the ``#:`` comment of its definition (autodoc would
    show the docstring of the value's type for a re-exported constant)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(defined).find_attr_docs()
    except Exception:  # no source to read: the entry has no description
        docs = {}
    lines = [f".. py:data:: {name}"]
    value = repr(obj)
    if len(value) <= 60 and not value.startswith("<"):  # a readable value, not <object>
        lines.append(f"   :value: {value}")
    lines.append("")
    lines.extend(f"   {line}" if line else "" for line in docs.get(("", name), []))
    return "\n".join(lines) + "\n"


def _directive(module: str, name: str, exports: _Exports) -> str:
    obj = getattr(importlib.import_module(module), name)
    kind = _kind(obj)
    if kind == "data":
        return _data_directive(module, name, obj, exports.key[module, name][0])
    options = "   :members:\n" if kind == "autoclass" else ""
    if kind == "autoexception":
        options = "   :members:\n   :show-inheritance:\n"
    return f".. {kind}:: {module}.{name}\n{options}"


def _pointer(module: str, name: str, home: str) -> str:
    """An entry for a name documented under another path: a target of its own (so a
    docstring naming it from here resolves) that links to the full description."""
    kind = _kind(getattr(importlib.import_module(module), name))
    directive, role = {
        "autofunction": ("function", "func"),
        "autoclass": ("class", "class"),
        "autoexception": ("exception", "exc"),
        "data": ("data", "data"),
    }[kind]
    return (
        f".. py:{directive}:: {name}\n   :module: {module}\n\n"
        f"   Documented as :{role}:`{home}.{name}`.\n"
    )


def _section(module: str, names: list[str], exports: _Exports) -> str:
    """The docstring of ``module`` and an entry for each of ``names``, grouped by kind:
    in full where this is its home, else as a link to it."""
    rst = [f".. automodule:: {module}\n"]
    objects = {n: getattr(importlib.import_module(module), n) for n in names}
    for heading, directive in KINDS:
        entries = []
        for name in (n for n in names if _kind(objects[n]) == directive):
            home = exports.home_of(module, name)
            if home == module:
                entries.append(_directive(module, name, exports))
            else:
                entries.append(_pointer(module, name, home))
        if entries:
            rst.append(f".. rubric:: {heading}\n")
            rst.extend(entries)
    return "```{eval-rst}\n" + "\n".join(rst) + "```\n"


def _root_section(exports: _Exports) -> str:
    names = exports.names["snapcore"]
    placed = {n for _, ns in ROOT_SECTIONS for n in ns}
    unknown = sorted(placed - set(names))
    if unknown:
        raise RuntimeError(
            f"docs/conf.py ROOT_SECTIONS names what snapcore does not export: {unknown}"
        )
    out = ["```{eval-rst}\n.. automodule:: snapcore\n```\n"]
    more = [n for n in names if n not in placed]
    for heading, wanted in [*ROOT_SECTIONS, ("More", more)]:
        if wanted:
            rst = "\n".join(_directive("snapcore", n, exports) for n in wanted)
            out.append(f"## {heading}\n\n```{{eval-rst}}\n{rst}```\n")
    return "\n".join(out)


def _api_page(package: str, exports: _Exports) -> str:
    if package == "snapcore":
        return _root_section(exports)
    out = [_section(package, exports.names[package], exports)]
    for module in _public_modules(package):
        body = _section(module, exports.names[module], exports)
        out.append(f"## `{module}`\n\n{body}")
    return "\n".join(out)


_ROLE = re.compile(r":[\w:]+:`(~?)([^`]+)`")


def _as_code(match: re.Match[str]) -> str:
    """A reST role as Markdown code: ``:class:`~a.B``` -> ```B```."""
    tilde, target = match.groups()
    return f"`{target.rpartition('.')[2] if tilde else target}`"


def _api_index() -> str:
    """The API pages as a table (package, first line of its docstring) and a toctree."""
    rows = ["| Package | What it holds |", "|---------|---------------|"]
    for package in api_pages():
        doc = (importlib.import_module(package).__doc__ or "").strip()
        first = _ROLE.sub(_as_code, " ".join(doc.split("\n\n")[0].split()))
        rows.append(f"| {{doc}}`{package} <api/{package}>` | {first} |")
    body = "\n".join(f"api/{p}" for p in api_pages())
    toc = f"```{{toctree}}\n:hidden:\n:maxdepth: 1\n\n{body}\n```\n"
    return "\n".join(rows) + "\n\n" + toc


@functools.cache
def _exports() -> _Exports:
    return _Exports(api_pages())


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if docname == "index":
        source[0] = source[0].replace("<!-- snapcore-toctree -->", _toctrees())
    elif docname == "api":
        source[0] = source[0].replace("<!-- snapcore-api-pages -->", _api_index())
    elif docname.startswith("api/"):
        page = _api_page(docname.removeprefix("api/"), _exports())
        source[0] = source[0].replace("<!-- snapcore-api -->", page)


def _optdoc_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Any,
    options: Any = None,
    content: Any = None,
) -> tuple[list[nodes.Node], list[Any]]:
    """``{optdoc}`Title <page>```: a link to ``page`` if it exists, else the title in
    italics with "(not written yet)"; for pages another part of the project provides."""
    title, _, target = text.partition("<")
    title, target = title.strip(), target.rstrip(">").strip() or title.strip()
    env = inliner.document.settings.env
    if target in env.found_docs:
        ref = addnodes.pending_xref(
            rawtext,
            refdomain="std",
            reftype="doc",
            reftarget=target,
            refexplicit=True,
            refdoc=env.docname,
        )
        ref += nodes.inline(title, title, classes=["doc"])
        return [ref], []
    return [nodes.emphasis(rawtext, f"{title} (not written yet)")], []


def _always_reread(
    app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages whose tables of contents list the other pages: read them again on
    every build, so an incremental build sees a page added or removed."""
    return ["index", "api"]


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_reread)
    app.add_role("optdoc", _optdoc_role)
    return {"parallel_read_safe": True}
