"""The conformance suites, shipped with snapcore for every backend and statistic
author, and test doubles for randomness.

The backend suite:

* :mod:`snapcore.testing.reference` — independent exact references (integer
  rounding; MPFR at far higher precision with a Ziv check for LN);
* :mod:`snapcore.testing.checks` — the checks as plain functions, the hard-to-round
  LN cases (``data/hard_ln.json``) and :func:`run_conformance` (no pytest needed);
* :mod:`snapcore.testing.conformance` — the pytest suite: :class:`BackendConformance`,
  :class:`RegisteredBackendsConformance`, :func:`conformance_suite` (needs pytest and
  hypothesis).

The statistic suite, in the same shape:

* :mod:`snapcore.testing.statistic_settings` — what a statistic is checked with
  (:class:`Setting`);
* :mod:`snapcore.testing.statistic_datasets` — extremal datasets, their neighbours and
  random neighbouring pairs;
* :mod:`snapcore.testing.statistic_containers` — every container snapcore accepts;
* :mod:`snapcore.testing.statistic_evaluation` — a statistic run on one dataset in one
  container, with a one-line reproduction;
* :mod:`snapcore.testing.statistic_checks` — the checks as plain functions (exact
  sensitivity, ε split, value range and data independence) and
  :func:`run_statistic_conformance` (no pytest needed);
* :mod:`snapcore.testing.statistic_conformance` — the pytest suite:
  :class:`StatisticConformance`, :class:`RegisteredStatisticsConformance`,
  :func:`statistic_suite`.

:mod:`snapcore.testing.pytest_plugin` (entry point ``pytest11``) registers the
suites' markers (``slow``) in every pytest run.

:mod:`snapcore.testing.sources` holds test doubles of the randomness layer (a fixed
byte stream, a counting source, a source that must not be drawn from).

Run a suite with one line in a test module::

    TestMyBackend = snapcore.testing.conformance_suite(MyBackend)
    TestMyStatistic = snapcore.testing.statistic_suite(MyStatistic)

Every name is loaded on first use, so that the checks (used by ``snapcore compare``)
work without pytest and hypothesis installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.errors import (
        ConformanceError as ConformanceError,
        StatisticConformanceError as StatisticConformanceError,
    )
    from snapcore.testing._comparison import (
        BackendComparison as BackendComparison,
        StatisticComparison as StatisticComparison,
        compare_backends as compare_backends,
        compare_statistics as compare_statistics,
    )
    from snapcore.testing.checks import (
        PRECISIONS as PRECISIONS,
        ConformanceReport as ConformanceReport,
        hard_ln_cases as hard_ln_cases,
        run_conformance as run_conformance,
    )
    from snapcore.testing.conformance import (
        BackendConformance as BackendConformance,
        RegisteredBackendsConformance as RegisteredBackendsConformance,
        conformance_suite as conformance_suite,
        registered_backend_params as registered_backend_params,
    )
    from snapcore.testing.statistic_checks import (
        StatisticReport as StatisticReport,
        run_statistic_conformance as run_statistic_conformance,
    )
    from snapcore.testing.statistic_conformance import (
        RegisteredStatisticsConformance as RegisteredStatisticsConformance,
        StatisticConformance as StatisticConformance,
        registered_statistic_params as registered_statistic_params,
        statistic_suite as statistic_suite,
    )
    from snapcore.testing.statistic_settings import (
        Setting as Setting,
    )

__getattr__, __dir__ = attach(__name__, __file__)
