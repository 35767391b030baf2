"""The example count of a hypothesis test marked ``slow``.

The default run (``-m "not slow"``) runs one case of each slow test at a reduced size
(tests/conftest.py); for a hypothesis test that size is its ``max_examples``, which
hypothesis fixes when the test is decorated.  So a slow hypothesis test declares
``@settings(max_examples=slow_examples(full))``: ``full`` in the slow run, at most the
``max_examples`` of the hypothesis profile ``"slow-sample"`` when tests/conftest.py
has registered it (the default run, which samples the slow tests).
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.errors import InvalidArgument

__all__ = ["slow_examples"]


def slow_examples(full: int) -> int:
    """``full``, capped by the ``"slow-sample"`` profile's ``max_examples`` if one is
    registered."""
    try:
        sample = settings.get_profile("slow-sample")
    except InvalidArgument:  # not registered: this run is not the sampling one
        return full
    return min(full, sample.max_examples)
