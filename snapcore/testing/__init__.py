"""The conformance suites, shipped with snapcore for every backend and statistic author.

* :mod:`snapcore.testing.reference` — independent exact references (integer
  rounding; MPFR at far higher precision with a Ziv check for LN);
* :mod:`snapcore.testing.checks` — the checks as plain functions, the hard-to-round
  LN cases (``data/hard_ln.json``) and :func:`run_conformance` (no pytest needed);
* :mod:`snapcore.testing.conformance` — the pytest suite: :class:`BackendConformance`,
  :class:`RegisteredBackendsConformance`, :func:`conformance_suite` (needs pytest and
  hypothesis).

* :mod:`snapcore.testing.statistic_checks` — the statistic checks as plain functions
  (exact sensitivity, ε split, value range and data independence on generated
  neighbours) and :func:`run_statistic_conformance` (no pytest needed);
* :mod:`snapcore.testing.statistic_suite` — the pytest suite for statistics:
  :class:`StatisticConformance`, :class:`RegisteredStatisticsConformance`,
  :func:`statistic_suite`.

Run a suite with one line in a test module::

    TestMyBackend = snapcore.testing.conformance_suite(MyBackend)
    TestMyStatistic = snapcore.testing.statistic_suite(MyStatistic)
"""

from __future__ import annotations

from typing import Any

from snapcore.errors import ConformanceError
from snapcore.testing.checks import (
    PRECISIONS,
    ConformanceReport,
    hard_ln_cases,
    run_conformance,
)
from snapcore.testing.statistic_checks import (
    Setting,
    StatisticConformanceError,
    StatisticReport,
    run_statistic_conformance,
)

__all__ = [
    "PRECISIONS",
    "BackendConformance",
    "ConformanceError",
    "ConformanceReport",
    "RegisteredBackendsConformance",
    "RegisteredStatisticsConformance",
    "Setting",
    "StatisticConformance",
    "StatisticConformanceError",
    "StatisticReport",
    "conformance_suite",
    "hard_ln_cases",
    "registered_backend_params",
    "run_conformance",
    "run_statistic_conformance",
    "statistic_suite",
]

_PYTEST_NAMES = {
    "BackendConformance",
    "RegisteredBackendsConformance",
    "conformance_suite",
    "registered_backend_params",
}
_STATISTIC_PYTEST_NAMES = {
    "RegisteredStatisticsConformance",
    "StatisticConformance",
    "registered_statistic_params",
    "statistic_suite",
}


def __getattr__(name: str) -> Any:
    # The pytest suite is imported on first use, so that snapcore.testing.checks
    # (used by `snapcore compare`) works without pytest and hypothesis installed.
    if name in _PYTEST_NAMES:
        from snapcore.testing import conformance

        return getattr(conformance, name)
    if name in _STATISTIC_PYTEST_NAMES:
        import importlib

        # Not `from snapcore.testing import statistic_suite`: the module and its
        # factory share the name, and that form would ask this very function.
        suite_module = importlib.import_module("snapcore.testing.statistic_suite")
        return getattr(suite_module, name)
    raise AttributeError(f"module 'snapcore.testing' has no attribute {name!r}")
