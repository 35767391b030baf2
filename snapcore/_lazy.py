"""Public names of a package loaded on first use (PEP 562), so that importing a
package runs none of its modules until one of its names is asked for."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def attach(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    Parameters
    ----------
    package
        The package's ``__name__``.
    modules
        For each module of the package (its name relative to the package), the public
        names it defines that the package exports.

    Returns
    -------
    tuple
        The module-level ``__getattr__`` and ``__dir__``.
    """
    where = {name: f"{package}.{module}" for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        modname = where.get(name)
        if modname is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(modname), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(where))

    return __getattr__, __dir__
