"""snapcore: ε-differentially private releases with Mironov's snapping mechanism,
exact at every step.

>>> import snapcore
>>> src = snapcore.SeededSource(1)
>>> m = snapcore.SnappingMechanism(epsilon=0.5, clamp_bounds=(0, 10), source=src)
>>> m.granularity
Fraction(4, 1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore import (
        adapters as adapters,
    )
    from snapcore import (
        analysis as analysis,
    )
    from snapcore import (
        calibration as calibration,
    )
    from snapcore import (
        cli as cli,
    )
    from snapcore import (
        data as data,
    )
    from snapcore import (
        exact as exact,
    )
    from snapcore import (
        mechanism as mechanism,
    )
    from snapcore import (
        padding as padding,
    )
    from snapcore import (
        pipeline as pipeline,
    )
    from snapcore import (
        plots as plots,
    )
    from snapcore import (
        plugins as plugins,
    )
    from snapcore import (
        randomness as randomness,
    )
    from snapcore import (
        releases as releases,
    )
    from snapcore import (
        testing as testing,
    )
    from snapcore.analysis._audit import (
        AuditResult as AuditResult,
    )
    from snapcore.analysis._audit import (
        audit as audit,
    )
    from snapcore.calibration._params import (
        Calibration as Calibration,
    )
    from snapcore.calibration._params import (
        PrivacyAnalysis as PrivacyAnalysis,
    )
    from snapcore.data._neighbouring import (
        Neighbouring as Neighbouring,
    )
    from snapcore.errors import (
        AuditError as AuditError,
    )
    from snapcore.errors import (
        AuditLimitError as AuditLimitError,
    )
    from snapcore.errors import (
        BackendUnavailableError as BackendUnavailableError,
    )
    from snapcore.errors import (
        BudgetExceededError as BudgetExceededError,
    )
    from snapcore.errors import (
        ConformanceError as ConformanceError,
    )
    from snapcore.errors import (
        DataError as DataError,
    )
    from snapcore.errors import (
        LedgerError as LedgerError,
    )
    from snapcore.errors import (
        MissingValueError as MissingValueError,
    )
    from snapcore.errors import (
        ParameterError as ParameterError,
    )
    from snapcore.errors import (
        PlotDependencyError as PlotDependencyError,
    )
    from snapcore.errors import (
        PluginError as PluginError,
    )
    from snapcore.errors import (
        SnapcoreError as SnapcoreError,
    )
    from snapcore.errors import (
        SnapOverflowError as SnapOverflowError,
    )
    from snapcore.errors import (
        SourceExhaustedError as SourceExhaustedError,
    )
    from snapcore.errors import (
        StatisticConformanceError as StatisticConformanceError,
    )
    from snapcore.errors import (
        WorkerError as WorkerError,
    )
    from snapcore.mechanism._mechanism import (
        SnappingMechanism as SnappingMechanism,
    )
    from snapcore.pipeline._arithmetic import (
        Arithmetic as Arithmetic,
    )
    from snapcore.pipeline._backend import (
        Backend as Backend,
    )
    from snapcore.plugins._hookspecs import (
        hookimpl as hookimpl,
    )
    from snapcore.plugins._statistic import (
        Prepared as Prepared,
    )
    from snapcore.plugins._statistic import (
        Statistic as Statistic,
    )
    from snapcore.randomness._chacha import (
        ChaCha20Source as ChaCha20Source,
    )
    from snapcore.randomness._draw import (
        Draw as Draw,
    )
    from snapcore.randomness._sources import (
        ByteSource as ByteSource,
    )
    from snapcore.randomness._sources import (
        RandomSource as RandomSource,
    )
    from snapcore.randomness._sources import (
        ReplaySource as ReplaySource,
    )
    from snapcore.randomness._sources import (
        SeededSource as SeededSource,
    )
    from snapcore.randomness._sources import (
        SystemSource as SystemSource,
    )
    from snapcore.releases._api import (
        release as release,
    )
    from snapcore.releases._budget import (
        Budget as Budget,
    )
    from snapcore.releases._budget import (
        LedgerBudget as LedgerBudget,
    )
    from snapcore.releases._grouped import (
        GroupedRelease as GroupedRelease,
    )
    from snapcore.releases._ledger import (
        Ledger as Ledger,
    )
    from snapcore.releases._partials import (
        Partial as Partial,
    )
    from snapcore.releases._partials import (
        merge as merge,
    )
    from snapcore.releases._partials import (
        partial as partial,
    )
    from snapcore.releases._record import (
        Release as Release,
    )

#: Every public name (and each layer's package) is imported on first use, so
#: ``import snapcore`` stays cheap.
__getattr__, __dir__ = attach(__name__, __file__)

__version__ = "0.1.0"
