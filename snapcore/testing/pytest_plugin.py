"""The pytest plugin snapcore installs (entry point ``pytest11``): it registers the
markers the shipped conformance suites use, so that a plugin author's test run with
``--strict-markers`` (or without) has no unknown-marker warning or error.

It imports nothing from snapcore: loading it costs a pytest run nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MARKERS", "pytest_configure"]

#: The markers of :mod:`snapcore.testing.conformance` and
#: :mod:`snapcore.testing.statistic_conformance`, with their descriptions.
MARKERS = {
    "slow": "long statistical or exhaustive runs of a snapcore conformance suite "
    "(select with -m slow, leave out with -m 'not slow')",
    "slow_sample": "a slow test run at a reduced size by the test suite's own sampling",
}


def pytest_configure(config: Any) -> None:
    """Register :data:`MARKERS` (``config.addinivalue_line("markers", ...)``)."""
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
