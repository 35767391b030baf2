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
    )
    from snapcore.plugins._hookspecs import (
        hookspec as hookspec,
    )
    from snapcore.plugins._manager import (
        Registries as Registries,
    )
    from snapcore.plugins._manager import (
        get_registries as get_registries,
    )
    from snapcore.plugins._manager import (
        make_plugin_manager as make_plugin_manager,
    )
    from snapcore.plugins._registries import (
        BackendRegistry as BackendRegistry,
    )
    from snapcore.plugins._registries import (
        SourceRegistry as SourceRegistry,
    )
    from snapcore.plugins._registries import (
        StatisticRegistry as StatisticRegistry,
    )
    from snapcore.plugins._statistic import (
        Prepared as Prepared,
    )
    from snapcore.plugins._statistic import (
        Statistic as Statistic,
    )
    from snapcore.plugins._statistic import (
        accumulate as accumulate,
    )
    from snapcore.plugins._statistic import (
        check_n as check_n,
    )
    from snapcore.plugins._statistic import (
        clamp_fraction as clamp_fraction,
    )
    from snapcore.plugins._statistic import (
        one_column_bounds as one_column_bounds,
    )
    from snapcore.plugins._statistic import (
        resolve_n as resolve_n,
    )

__getattr__, __dir__ = attach(__name__, __file__)
