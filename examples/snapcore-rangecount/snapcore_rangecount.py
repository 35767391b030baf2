"""``range_count``: how many records have a value in [low, high] — a snapcore plugin.

Written as an outside author would: it uses only snapcore's public plugin API and is
found through its entry point (``[project.entry-points.snapcore]`` in its own
``pyproject.toml``).

Relations
---------
- ``replace`` (bounded: n public, one record replaced): one replaced record can enter
  or leave the range, so the count changes by at most 1: Δ = 1.  The count lies in
  ``[0, n]``: B′ = n.
- ``add-remove`` (unbounded: add or remove one record): Δ = 1.  The count is capped at
  the public upper bound N on the number of records (a cap is 1-Lipschitz, so Δ
  holds), so it lies in ``[0, N]``: B′ = N.

The count is an integer, so it is exact; no floating-point rounding can break Δ.
Its partial state ``(records, in range)`` merges by addition, so it is released the
same way from one list, a chunked CSV file or a Dask data frame.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from snapcore import (
    Neighbouring,
    OutputDomain,
    ParameterError,
    Prepared,
    Statistic,
    hookimpl,
)
from snapcore.plugins._statistic import resolve_n


def _endpoint(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParameterError(f"range_count option {name} must be a number, got {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ParameterError(f"range_count option {name} must not be nan")
    return v


class RangeCount(Statistic):
    """Number of records whose value lies in ``[low, high]`` (options ``low``, ``high``)."""

    name = "range_count"
    summary = "number of records with a value in [low, high]"
    relations = (Neighbouring.REPLACE, Neighbouring.ADD_REMOVE)
    needs_data_bounds = False
    options: ClassVar[Mapping[str, str]] = {
        "low": "lower end of the range (inclusive)",
        "high": "upper end (inclusive)",
    }
    # A count is a whole number: the clamp interval is centred on the output grid.
    integer_valued = True
    # The option sets the statistic conformance suite checks it with (tests/).
    conformance_options = ({"low": 18.0, "high": 30.0}, {"low": -1.0, "high": 0.5})

    # Mergeable: partial() maps some records to a state of Python ints, merge() (the
    # base class's element-wise addition) combines states of disjoint chunks, and
    # finalize() turns the merged state into f(D), Δ and the range.  snapcore calls
    # these over chunks of in-memory data, of a CSV file, or of Dask partitions.

    def _range(self, data_bounds, options):
        if data_bounds is not None:
            raise ParameterError("range_count does not use data_bounds; give low= and high=")
        if "low" not in options or "high" not in options:
            raise ParameterError("range_count needs both options low= and high=")
        low = _endpoint("low", options["low"])
        high = _endpoint("high", options["high"])
        if not low <= high:
            raise ParameterError(f"range_count needs low <= high, got {low!r}, {high!r}")
        return low, high

    def partial(self, chunk, *, data_bounds, **options):
        """``(records, records in [low, high])`` of one chunk."""
        low, high = self._range(data_bounds, options)
        x = chunk.numeric(0)  # a clear error on NaN/inf that names no record
        return (chunk.size, int(np.count_nonzero((x >= low) & (x <= high))))

    def finalize(self, state, *, data_bounds, n, relation, **options):
        self._range(data_bounds, options)
        records, count = state
        n_used, note = resolve_n(records, n, relation, self.name)
        if relation is Neighbouring.ADD_REMOVE:
            count = min(count, n_used)
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(count,),
            labels=(self.name,),
            sensitivity=1,
            value_range=(0, n_used),
            derivation="one record enters or leaves [low, high]: Δ = 1; 0 <= count <= n",
            n=n_used,
            notes=(note,),
        )

    def output_domain(self, prepared):
        """Whole numbers in [0, n]: released values are rounded and clamped there
        (post-processing, no privacy cost)."""
        return OutputDomain(
            lower=0, upper=prepared.value_range[1], integral=True, reason="a count in [0, n]"
        )


@hookimpl
def snapcore_register_statistics(registry):
    registry.add(RangeCount())
