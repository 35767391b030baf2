"""Sphinx configuration for the snapcore documentation site.

Build: ``tox -e docs`` or ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
(run with ``PYTHONSAFEPATH=1`` from the checkout, or from an installed snapcore).

Pages are MyST Markdown files ``docs/*.md``; each has one H1.  The table of contents
is assembled here from the pages that exist (a glob over ``docs/*.md``): known pages
go into their section in a fixed order, any other page lands in "More", and a page
that is not written yet is simply absent, so a new page never needs an edit here and
a missing one never breaks the build.  The API reference is generated the same way
from the modules of the ``snapcore`` package.
"""

from __future__ import annotations

import importlib
import pkgutil
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
            "backends",
            "fastpath",
            "timing",
        ],
    ),
    ("Extending snapcore", ["architecture", "plugins", "sources", "embedding"]),
    ("How it is checked", ["audit", "ieee754", "testing", "benchmarks"]),
    ("Reference", ["api"]),
]

#: Modules left out of the generated API reference (command-line glue).
API_EXCLUDE_PREFIXES = ("snapcore.cli",)


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


def api_modules() -> list[str]:
    """Every importable module of the snapcore package, sorted, minus the CLI."""
    import snapcore.backends
    import snapcore.statistics

    names = {"snapcore"}
    # The plugin packages are walked on their own: an editable install maps them from
    # other folders, so walking snapcore.__path__ alone would miss them.
    for pkg in (snapcore, snapcore.backends, snapcore.statistics):
        names.add(pkg.__name__)
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not info.name.startswith(API_EXCLUDE_PREFIXES):
                names.add(info.name)
    return sorted(names)


def _api_blocks() -> str:
    out = []
    for name in api_modules():
        importlib.import_module(name)  # fail loudly, not as an empty section
        # The package itself only re-exports: its docstring, not its members again.
        members = "" if name == "snapcore" else "   :members:\n"
        out.append(f"## `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n{members}```\n")
    return "\n".join(out)


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    if docname == "index":
        source[0] = source[0].replace("<!-- snapcore-toctree -->", _toctrees())
    elif docname == "api":
        source[0] = source[0].replace("<!-- snapcore-api -->", _api_blocks())


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


def _skip_type_aliases(
    app: Any, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """Leave module-level type aliases (``X = tuple[...]``) out of the API pages: autodoc
    cannot format a generic alias's signature, and they document nothing new."""
    if what == "module" and isinstance(obj, types.GenericAlias | types.UnionType):
        return True
    return None


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("autodoc-skip-member", _skip_type_aliases)
    app.add_role("optdoc", _optdoc_role)
    return {"parallel_read_safe": True}
