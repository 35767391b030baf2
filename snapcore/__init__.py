"""snapcore: ε-differentially private releases with Mironov's snapping mechanism,
exact at every step.

>>> import snapcore
>>> src = snapcore.SeededSource(1)
>>> m = snapcore.SnappingMechanism(epsilon=0.5, clamp_bounds=(0, 10), source=src)
>>> m.granularity
Fraction(4, 1)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from snapcore.errors import (
    AuditError,
    AuditLimitError,
    BackendUnavailableError,
    BudgetExceededError,
    DataError,
    LedgerError,
    ParameterError,
    PlotDependencyError,
    PluginError,
    SnapcoreError,
    SnapOverflowError,
    SourceExhaustedError,
    WorkerError,
)
from snapcore.hookspecs import hookimpl

if TYPE_CHECKING:
    from snapcore.api import Release, release
    from snapcore.auditing import AuditResult, audit
    from snapcore.backend import Arithmetic, Backend
    from snapcore.budget import Budget
    from snapcore.grouped import GroupedRelease
    from snapcore.mechanism import SnappingMechanism
    from snapcore.params import Calibration, PrivacyAnalysis
    from snapcore.partials import Partial, merge, partial
    from snapcore.sources import RandomSource, ReplaySource, SeededSource, SystemSource
    from snapcore.statistic import Neighbouring, Prepared, Statistic

#: Public names imported on first use (PEP 562), so ``import snapcore`` stays cheap:
#: the modules behind them (numpy, gmpy2, the audit) load only when needed.
_LAZY: dict[str, str] = {
    "Release": "snapcore.api",
    "release": "snapcore.api",
    "AuditResult": "snapcore.auditing",
    "audit": "snapcore.auditing",
    "Arithmetic": "snapcore.backend",
    "Backend": "snapcore.backend",
    "Budget": "snapcore.budget",
    "GroupedRelease": "snapcore.grouped",
    "SnappingMechanism": "snapcore.mechanism",
    "Calibration": "snapcore.params",
    "PrivacyAnalysis": "snapcore.params",
    "Partial": "snapcore.partials",
    "merge": "snapcore.partials",
    "partial": "snapcore.partials",
    "RandomSource": "snapcore.sources",
    "ReplaySource": "snapcore.sources",
    "SeededSource": "snapcore.sources",
    "SystemSource": "snapcore.sources",
    "Neighbouring": "snapcore.statistic",
    "Prepared": "snapcore.statistic",
    "Statistic": "snapcore.statistic",
}


def __getattr__(name: str) -> Any:
    modname = _LAZY.get(name)
    if modname is None:
        raise AttributeError(f"module 'snapcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(modname), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "Arithmetic",
    "AuditError",
    "AuditLimitError",
    "AuditResult",
    "Backend",
    "BackendUnavailableError",
    "Budget",
    "BudgetExceededError",
    "Calibration",
    "DataError",
    "GroupedRelease",
    "LedgerError",
    "Neighbouring",
    "ParameterError",
    "Partial",
    "PlotDependencyError",
    "PluginError",
    "Prepared",
    "PrivacyAnalysis",
    "RandomSource",
    "Release",
    "ReplaySource",
    "SeededSource",
    "SnapOverflowError",
    "SnapcoreError",
    "SnappingMechanism",
    "SourceExhaustedError",
    "Statistic",
    "SystemSource",
    "WorkerError",
    "__version__",
    "audit",
    "hookimpl",
    "merge",
    "partial",
    "release",
]
