"""snapcore: ε-differentially private releases with Mironov's snapping mechanism,
exact at every step.

>>> import snapcore
>>> src = snapcore.SeededSource(1)
>>> m = snapcore.SnappingMechanism(epsilon=0.5, clamp_bounds=(0, 10), source=src)
>>> m.granularity
Fraction(4, 1)
"""

from __future__ import annotations

from snapcore.api import Release, release
from snapcore.auditing import AuditResult, audit
from snapcore.backend import Arithmetic, Backend
from snapcore.budget import Budget
from snapcore.errors import (
    AuditError,
    AuditLimitError,
    BackendUnavailableError,
    BudgetExceededError,
    ParameterError,
    PlotDependencyError,
    PluginError,
    SnapcoreError,
    SnapOverflowError,
    SourceExhaustedError,
)
from snapcore.hookspecs import hookimpl
from snapcore.mechanism import SnappingMechanism
from snapcore.params import Calibration, PrivacyAnalysis
from snapcore.sources import RandomSource, ReplaySource, SeededSource, SystemSource
from snapcore.statistic import Neighbouring, Prepared, Statistic

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
    "Neighbouring",
    "ParameterError",
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
    "__version__",
    "audit",
    "hookimpl",
    "release",
]
