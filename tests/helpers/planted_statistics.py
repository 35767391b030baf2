"""Deliberately broken statistics: the statistic conformance suite must fail each.

Each one is a correct built-in with one planted bug of the kind the suite exists to
catch (tests/testing/test_statistic_conformance.py runs the packaged suite on them):

- :class:`HalvedSensitivitySum` declares half the true Δ of the sum;
- :class:`ShortRangeCount` declares a value range (B′) one record too small;
- :class:`DataClampMean` derives its value range, hence the clamp interval chosen
  from it, from the data;
- :class:`OneTypeReaderSum` reads every record as float32 as soon as one record is a
  float32, so one record changes how the others are read.

And two statistics that compute in float64, the bug of Casacuberta et al. (CCS 2022):

- :class:`FloatSum` sums the clamped values with ``np.sum``;
- :class:`FloatSquaresVariance` computes ``(Σx² − (Σx)²/n)/(n − 1)`` in float64.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
from snapcore.statistics.counting import Count
from snapcore.statistics.moments import Mean, Sum, Variance

from snapcore import ParameterError
from snapcore.exact._sums import scaled_integers

__all__ = [
    "FLOAT_PLANTED",
    "PLANTED",
    "DataClampMean",
    "FloatSquaresVariance",
    "FloatSum",
    "HalvedSensitivitySum",
    "OneTypeReaderSum",
    "ShortRangeCount",
]


class HalvedSensitivitySum(Sum):
    """The sum, declaring Δ/2."""

    name = "halved_sum"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        return attrs.evolve(p, sensitivity=p.sensitivity / 2)


class ShortRangeCount(Count):
    """The capped count under add-remove, declaring the range [0, N − 1]."""

    name = "short_count"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        lo, hi = p.value_range
        return attrs.evolve(p, value_range=(lo, max(lo, hi - 1)))


class DataClampMean(Mean):
    """The mean, declaring its range as [min, max] of the clamped data: always true,
    but the clamp interval chosen from it then depends on the data."""

    name = "data_clamp_mean"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        (lo, hi) = kwargs["data_bounds"][0]
        x = np.clip(data.numeric(0), lo, hi)
        return attrs.evolve(p, value_range=(Fraction(x.min()), Fraction(x.max())))


class OneTypeReaderSum(Sum):
    """The sum, reading the column as float32 when any record is a float32."""

    name = "one_type_sum"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        vals = list(data.columns_as_given[0])  # as given: a list keeps each record's type
        for v in vals:
            if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.number):
                raise ParameterError("column 'data' must contain only real numbers")
        dtype = np.float32 if any(isinstance(v, np.float32) for v in vals) else np.float64
        try:
            if any(not np.isfinite(float(v)) for v in vals):
                raise ParameterError("column 'data' contains non-finite values")
            with np.errstate(all="ignore"):
                x = np.array([float(v) for v in vals], dtype=dtype).astype(np.float64)
        except OverflowError:
            raise ParameterError("column 'data' must contain only doubles") from None
        (lo, hi) = kwargs["data_bounds"][0]
        total = scaled_integers(np.clip(x, lo, hi)).total()
        return attrs.evolve(p, values=(total,))


PLANTED = (HalvedSensitivitySum, ShortRangeCount, DataClampMean, OneTypeReaderSum)


class FloatSum(Sum):
    """The sum of the clamped values in float64 (``np.sum``): declares the exact Δ."""

    name = "float_sum"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        (lo, hi) = kwargs["data_bounds"][0]
        return attrs.evolve(p, values=(float(np.sum(np.clip(data.numeric(0), lo, hi))),))


class FloatSquaresVariance(Variance):
    """The sample variance from float64 sums of values and squares (one pass)."""

    name = "float_squares_variance"

    def prepare(self, data, **kwargs):
        p = super().prepare(data, **kwargs)
        (lo, hi) = kwargs["data_bounds"][0]
        x = np.clip(data.numeric(0), lo, hi)
        n = len(x)
        s, q = 0.0, 0.0
        for v in x.tolist():
            s += v
            q += v * v
        return attrs.evolve(p, values=((q - s * s / n) / (n - 1),))


FLOAT_PLANTED = (FloatSum, FloatSquaresVariance)
