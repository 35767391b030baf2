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
from snapcore._version import __version__ as __version__

if TYPE_CHECKING:
    from snapcore import (
        adapters as adapters,
        analysis as analysis,
        backends as backends,
        calibration as calibration,
        cli as cli,
        data as data,
        exact as exact,
        mechanism as mechanism,
        padding as padding,
        pipeline as pipeline,
        plots as plots,
        plugins as plugins,
        randomness as randomness,
        releases as releases,
        statistics as statistics,
        testing as testing,
    )
    from snapcore.analysis._audit import (
        AuditResult as AuditResult,
        audit as audit,
    )
    from snapcore.calibration._params import (
        Calibration as Calibration,
        PrivacyAnalysis as PrivacyAnalysis,
    )
    from snapcore.data._neighbouring import (
        Neighbouring as Neighbouring,
    )
    from snapcore.errors import (
        AuditError as AuditError,
        AuditLimitError as AuditLimitError,
        BackendUnavailableError as BackendUnavailableError,
        BudgetExceededError as BudgetExceededError,
        ConformanceError as ConformanceError,
        DataError as DataError,
        LedgerError as LedgerError,
        MissingValueError as MissingValueError,
        ParameterError as ParameterError,
        PlotDependencyError as PlotDependencyError,
        PluginError as PluginError,
        SnapcoreError as SnapcoreError,
        SnapOverflowError as SnapOverflowError,
        SourceExhaustedError as SourceExhaustedError,
        StatisticConformanceError as StatisticConformanceError,
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
        OutputDomain as OutputDomain,
        Prepared as Prepared,
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
        RandomSource as RandomSource,
        ReplaySource as ReplaySource,
        SeededSource as SeededSource,
        SystemSource as SystemSource,
    )
    from snapcore.releases._api import (
        release as release,
    )
    from snapcore.releases._budget import (
        Budget as Budget,
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
        merge as merge,
        partial as partial,
    )
    from snapcore.releases._record import (
        Release as Release,
    )

#: Every public name (and each layer's package) is imported on first use, so
#: ``import snapcore`` stays cheap.
__getattr__, __dir__ = attach(__name__, __file__)
