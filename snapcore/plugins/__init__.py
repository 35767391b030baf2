"""Layer 7, plugins: the pluggy hook specifications (``snapcore_*``), the registries
of backends, sources and statistics that entry points fill, and the statistic contract
(:class:`Statistic`, :class:`Prepared`) a statistic plugin implements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.plugins._hookspecs import (
        hookimpl,
        hookspec,
    )
    from snapcore.plugins._manager import (
        Registries,
        get_registries,
    )
    from snapcore.plugins._registries import (
        BackendRegistry,
        SourceRegistry,
        StatisticRegistry,
    )
    from snapcore.plugins._statistic import (
        Prepared,
        Statistic,
        accumulate,
        check_n,
        clamp_fraction,
        one_column_bounds,
        resolve_n,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_hookspecs": ["hookimpl", "hookspec"],
        "_registries": ["BackendRegistry", "SourceRegistry", "StatisticRegistry"],
        "_manager": ["Registries", "get_registries"],
        "_statistic": [
            "Prepared",
            "Statistic",
            "accumulate",
            "check_n",
            "clamp_fraction",
            "one_column_bounds",
            "resolve_n",
        ],
    },
)

__all__ = [
    "BackendRegistry",
    "Prepared",
    "Registries",
    "SourceRegistry",
    "Statistic",
    "StatisticRegistry",
    "accumulate",
    "check_n",
    "clamp_fraction",
    "get_registries",
    "hookimpl",
    "hookspec",
    "one_column_bounds",
    "resolve_n",
]
