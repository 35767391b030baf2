"""The exception classes (snapcore.errors): the hierarchy its docstring draws is the real one."""

from __future__ import annotations

import builtins
import inspect
import re

from snapcore import errors
from snapcore.errors import (
    BackendUnavailableError,
    ParameterError,
    PluginError,
    SnapcoreError,
    SourceExhaustedError,
)


def test_error_hierarchy():
    for cls in (ParameterError, PluginError, BackendUnavailableError, SourceExhaustedError):
        assert issubclass(cls, SnapcoreError)
    assert issubclass(ParameterError, ValueError)
    assert issubclass(BackendUnavailableError, ImportError)


def _drawn_tree() -> dict[str, set[str]]:
    """Each class in the docstring's tree -> the names of its bases there: the parent
    in the tree and the classes in parentheses."""
    doc = errors.__doc__ or ""
    tree = doc.split("The hierarchy::", 1)[1].split("\n\n", 2)[1]
    lines = tree.splitlines()
    path = [lines[0].strip()]  # the root, Exception
    bases: dict[str, set[str]] = {}
    for line in lines[1:]:
        # four spaces of the literal block, then one "│   " or "    " per level
        found = re.match(r"^    ((?:[│ ]   )*)[├└]── (\w+)(?: \((\w+)\))?", line)
        if found is None:  # a description continued on its own line
            continue
        depth = len(found[1]) // 4 + 1
        name = found[2]
        del path[depth:]
        bases[name] = {path[-1]} | ({found[3]} if found[3] else set())
        path.append(name)
    return bases


def test_the_docstrings_hierarchy_is_the_real_one():
    drawn = _drawn_tree()
    defined = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == errors.__name__
    }
    drawn_here = {name for name in drawn if not hasattr(builtins, name)}
    assert defined == drawn_here, "a class missing from the docstring or drawn but not defined"
    for name in defined:
        cls = getattr(errors, name)
        want = {getattr(errors, b, None) or getattr(builtins, b) for b in drawn[name]}
        assert set(cls.__bases__) == want, name
