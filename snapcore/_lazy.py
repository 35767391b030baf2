"""Public names of a package loaded on first use (PEP 562).

A package lists its public names once, as imports under ``if TYPE_CHECKING:`` (which
the type checker reads and the interpreter skips), and ends with::

    __getattr__, __dir__ = attach(__name__, __file__)

The first time one of those names (or ``__all__``) is asked for, the package's own
source is read to find where each name lives, and only that module is imported.  So
importing a package runs none of its modules, as with ``lazy_loader``'s stubs
(Scientific Python SPEC 1), without a second file to keep in step.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any


@functools.cache
def _public_names(package: str, path: str) -> dict[str, tuple[str, str | None]]:
    """Name -> (module, attribute) from the ``if TYPE_CHECKING:`` imports of ``path``;
    attribute None for a sub-module of ``package`` imported by name."""
    import ast  # here: importing a package reads no source

    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    names: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:  # type: ignore[attr-defined]
            if not isinstance(stmt, ast.ImportFrom) or stmt.level or stmt.module is None:
                raise ImportError(f"{path}: only absolute from-imports may list public names")
            for alias in stmt.names:
                public = alias.asname or alias.name
                if stmt.module == package:
                    names[public] = (f"{package}.{alias.name}", None)
                else:
                    names[public] = (stmt.module, alias.name)
    return names


def attach(package: str, path: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``__init__`` is ``path``.

    Parameters
    ----------
    package
        The package's ``__name__``.
    path
        The package's ``__file__``: its ``if TYPE_CHECKING:`` imports name the public
        names (``from module import Name as Name``; ``from package import sub as sub``
        for a sub-module).

    Returns
    -------
    tuple
        The module-level ``__getattr__`` (which also answers ``__all__``) and ``__dir__``.
    """

    def __getattr__(name: str) -> Any:
        names = _public_names(package, path)
        value: Any
        if name == "__all__":  # the names, not the sub-packages (a star import loads none)
            value = sorted(n for n, (_, attribute) in names.items() if attribute is not None)
        elif name in names:
            module, attribute = names[name]
            value = importlib.import_module(module)
            if attribute is not None:
                value = getattr(value, attribute)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # Set on the package, so that the next lookup finds it without this function.
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        dunders = {n for n in vars(sys.modules[package]) if n.startswith("__")}
        return sorted(dunders | set(_public_names(package, path)))

    return __getattr__, __dir__
