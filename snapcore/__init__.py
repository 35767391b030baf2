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
from snapcore.plugins._hookspecs import hookimpl

if TYPE_CHECKING:
    from snapcore import adapters as adapters
    from snapcore import analysis as analysis
    from snapcore import calibration as calibration
    from snapcore import cli as cli
    from snapcore import data as data
    from snapcore import exact as exact
    from snapcore import mechanism as mechanism
    from snapcore import padding as padding
    from snapcore import pipeline as pipeline
    from snapcore import plots as plots
    from snapcore import plugins as plugins
    from snapcore import randomness as randomness
    from snapcore import releases as releases
    from snapcore import testing as testing
    from snapcore.analysis._audit import AuditResult, audit
    from snapcore.calibration._params import Calibration, PrivacyAnalysis
    from snapcore.data._neighbouring import Neighbouring
    from snapcore.mechanism._mechanism import SnappingMechanism
    from snapcore.pipeline._arithmetic import Arithmetic
    from snapcore.pipeline._backend import Backend
    from snapcore.plugins._statistic import Prepared, Statistic
    from snapcore.randomness._chacha import ChaCha20Source
    from snapcore.randomness._draw import Draw
    from snapcore.randomness._sources import (
        ByteSource,
        RandomSource,
        ReplaySource,
        SeededSource,
        SystemSource,
    )
    from snapcore.releases._api import release
    from snapcore.releases._budget import Budget, LedgerBudget
    from snapcore.releases._grouped import GroupedRelease
    from snapcore.releases._ledger import Ledger
    from snapcore.releases._partials import Partial, merge, partial
    from snapcore.releases._record import Release

#: Public names imported on first use (PEP 562), so ``import snapcore`` stays cheap:
#: the modules behind them (numpy, gmpy2, the audit) load only when needed.
_LAZY: dict[str, str] = {
    "Release": "snapcore.releases._record",
    "release": "snapcore.releases._api",
    "GroupedRelease": "snapcore.releases._grouped",
    "Partial": "snapcore.releases._partials",
    "merge": "snapcore.releases._partials",
    "partial": "snapcore.releases._partials",
    "Budget": "snapcore.releases._budget",
    "LedgerBudget": "snapcore.releases._budget",
    "Ledger": "snapcore.releases._ledger",
    "AuditResult": "snapcore.analysis._audit",
    "audit": "snapcore.analysis._audit",
    "SnappingMechanism": "snapcore.mechanism._mechanism",
    "Arithmetic": "snapcore.pipeline._arithmetic",
    "Backend": "snapcore.pipeline._backend",
    "Calibration": "snapcore.calibration._params",
    "PrivacyAnalysis": "snapcore.calibration._params",
    "ByteSource": "snapcore.randomness._sources",
    "Draw": "snapcore.randomness._draw",
    "RandomSource": "snapcore.randomness._sources",
    "ReplaySource": "snapcore.randomness._sources",
    "SeededSource": "snapcore.randomness._sources",
    "SystemSource": "snapcore.randomness._sources",
    "ChaCha20Source": "snapcore.randomness._chacha",
    "Neighbouring": "snapcore.data._neighbouring",
    "Prepared": "snapcore.plugins._statistic",
    "Statistic": "snapcore.plugins._statistic",
}
#: The sub-packages, one per layer of docs/architecture.md, reachable as attributes.
_SUBPACKAGES = frozenset(
    {
        "adapters",
        "analysis",
        "calibration",
        "cli",
        "data",
        "exact",
        "mechanism",
        "padding",
        "pipeline",
        "plots",
        "plugins",
        "randomness",
        "releases",
        "testing",
    }
)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"snapcore.{name}")
    modname = _LAZY.get(name)
    if modname is None:
        raise AttributeError(f"module 'snapcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(modname), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _SUBPACKAGES)


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
    "ByteSource",
    "Calibration",
    "ChaCha20Source",
    "DataError",
    "Draw",
    "GroupedRelease",
    "Ledger",
    "LedgerBudget",
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
