"""Layer 6, plugins: the pluggy hook specifications (``snapcore_*``), the registries
of backends, sources and statistics that entry points fill, and the statistic contract
(:class:`Statistic`, :class:`Prepared`) a statistic plugin implements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.plugins._hookspecs import (
        hookimpl as hookimpl,
        hookspec as hookspec,
    )
    from snapcore.plugins._manager import (
        Registries as Registries,
        get_registries as get_registries,
        make_plugin_manager as make_plugin_manager,
    )
    from snapcore.plugins._registries import (
        BackendRegistry as BackendRegistry,
        SourceRegistry as SourceRegistry,
        StatisticRegistry as StatisticRegistry,
    )
    from snapcore.plugins._statistic import (
        OutputDomain as OutputDomain,
        Prepared as Prepared,
        Statistic as Statistic,
        accumulate as accumulate,
        check_n as check_n,
        clamp_fraction as clamp_fraction,
        one_column_bounds as one_column_bounds,
        resolve_n as resolve_n,
    )

__getattr__, __dir__ = attach(__name__, __file__)
