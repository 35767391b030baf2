"""The hook specifications (``snapcore.plugins._hookspecs``): each documented with a
one-line summary, its parameters and how to register, implemented by a built-in
plugin; every built-in hook implementation has a specification."""

from __future__ import annotations

import importlib
import inspect

import pytest

from snapcore.plugins import _hookspecs as hookspecs
from snapcore.plugins._manager import BUILTIN_PLUGINS, make_plugin_manager

HOOKSPECS = sorted(
    name
    for name, obj in vars(hookspecs).items()
    if name.startswith("snapcore_") and hasattr(obj, "snapcore_spec")
)


def test_hookspecs_found():
    assert HOOKSPECS == [
        "snapcore_register_backends",
        "snapcore_register_sources",
        "snapcore_register_statistics",
    ]


@pytest.mark.parametrize("hook", HOOKSPECS)
def test_hookspec_is_documented(hook):
    fn = getattr(hookspecs, hook)
    doc = inspect.getdoc(fn) or ""
    summary = doc.splitlines()[0] if doc else ""
    assert summary.endswith("."), f"{hook} needs a one-line summary"
    for param in inspect.signature(fn).parameters:
        assert f":param {param}:" in doc, f"{hook} does not document {param}"
    assert "registry.add(" in doc, f"{hook} must say how to register"


def test_module_doc_says_how_a_plugin_is_found_and_registers():
    doc = hookspecs.__doc__ or ""
    assert "[project.entry-points.snapcore]" in doc and "registry.add(...)" in doc


def _builtin_impls() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, modname in BUILTIN_PLUGINS.items():
        mod = importlib.import_module(modname)
        for attr, obj in vars(mod).items():
            if attr.startswith("snapcore_") and hasattr(obj, "snapcore_impl"):
                out.setdefault(attr, []).append(name)
    return out


@pytest.mark.parametrize("hook", HOOKSPECS)
def test_hookspec_is_implemented_by_a_builtin(hook):
    assert hook in _builtin_impls()


def test_every_builtin_hookimpl_has_a_spec():
    make_plugin_manager(entry_points=False)  # runs check_pending
    for hook, _ in _builtin_impls().items():
        assert hook in HOOKSPECS
