"""The backend conformance suite, shipped with snapcore for every backend author.

* :mod:`snapcore.testing.reference` — independent exact references (integer
  rounding; MPFR at far higher precision with a Ziv check for LN);
* :mod:`snapcore.testing.checks` — the checks as plain functions, the hard-to-round
  LN cases (``data/hard_ln.json``) and :func:`run_conformance` (no pytest needed);
* :mod:`snapcore.testing.conformance` — the pytest suite: :class:`BackendConformance`,
  :class:`RegisteredBackendsConformance`, :func:`conformance_suite` (needs pytest and
  hypothesis).

Run the suite on a backend with one line in a test module::

    TestMyBackend = snapcore.testing.conformance_suite(MyBackend)
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

__all__ = [
    "PRECISIONS",
    "BackendConformance",
    "ConformanceError",
    "ConformanceReport",
    "RegisteredBackendsConformance",
    "conformance_suite",
    "hard_ln_cases",
    "registered_backend_params",
    "run_conformance",
]

_PYTEST_NAMES = {
    "BackendConformance",
    "RegisteredBackendsConformance",
    "conformance_suite",
    "registered_backend_params",
}


def __getattr__(name: str) -> Any:
    # The pytest suite is imported on first use, so that snapcore.testing.checks
    # (used by `snapcore compare`) works without pytest and hypothesis installed.
    if name in _PYTEST_NAMES:
        from snapcore.testing import conformance

        return getattr(conformance, name)
    raise AttributeError(f"module 'snapcore.testing' has no attribute {name!r}")
