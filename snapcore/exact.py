"""Exact accumulation of doubles, for statistic plugins.

Casacuberta et al. (2022) showed that a floating-point sum of clamped values can
move by more than its declared sensitivity when one record changes: rounding errors
depend on every other record.  The functions here never round.  A finite double is
the integer ``m * 2**e`` (``|m| < 2**53``), so a column of doubles is a column of
integers ``X_i`` times one common power of two ``2**e0``; sums and dot products of
those integers are Python integers, exact at any size, and the result is an exact
:class:`fractions.Fraction`.

>>> from snapcore.exact import exact_sum
>>> exact_sum([1e16, 1.0, -1e16])
Fraction(1, 1)
>>> sum([1e16, 1.0, -1e16])
0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["ScaledIntegers", "exact_dot", "exact_sum", "scaled_integers"]


class ScaledIntegers:
    """A finite float64 column as exact integers: ``x[i] == ints[i] * 2**exponent``.

    Attributes
    ----------
    ints : numpy.ndarray
        int64 array when every integer fits in 62 bits (the common case: sums and
        products are then done in int64 whenever they provably cannot overflow),
        otherwise an object array of Python ints.
    exponent : int
        The common binary exponent ``e0``.
    """

    __slots__ = ("exponent", "ints")

    def __init__(self, ints: np.ndarray, exponent: int) -> None:
        self.ints = ints
        self.exponent = exponent

    def _small(self) -> int | None:
        """A bound ``2**k > max|ints|`` if the ints are an int64 array, else None."""
        if self.ints.dtype != np.int64 or not len(self.ints):
            return None
        return int(np.max(np.abs(self.ints))).bit_length()

    def total(self) -> Fraction:
        """``sum(x)``, exactly."""
        k = self._small()
        if k is not None and k + len(self.ints).bit_length() <= 62:
            s = int(self.ints.sum())  # |sum| < 2**62: no int64 overflow
        else:
            s = int(self.ints.astype(object).sum()) if len(self.ints) else 0
        return _scaled(s, self.exponent)

    def dot(self, other: ScaledIntegers) -> Fraction:
        """``sum(x[i] * y[i])``, exactly."""
        if len(self.ints) != len(other.ints):
            raise ValueError("dot: columns have different lengths")
        k1, k2 = self._small(), other._small()
        if k1 is not None and k2 is not None and k1 + k2 + len(self.ints).bit_length() <= 62:
            s = int(np.dot(self.ints, other.ints))  # every partial sum < 2**62
        elif len(self.ints):
            s = int(np.dot(self.ints.astype(object), other.ints.astype(object)))
        else:
            s = 0
        return _scaled(s, self.exponent + other.exponent)


def _scaled(m: int, e: int) -> Fraction:
    return Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)


def scaled_integers(values: Sequence[float] | np.ndarray) -> ScaledIntegers:
    """Write a column of finite doubles as exact integers times a common power of two.

    Parameters
    ----------
    values : sequence of float or numpy.ndarray
        Finite doubles (a ValueError otherwise).

    Returns
    -------
    ScaledIntegers
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(x).all():
        raise ValueError("scaled_integers: values must be finite")
    mant, exp = np.frexp(x)  # x = mant * 2**exp, 0.5 <= |mant| < 1 (or 0)
    m = np.ldexp(mant, 53).astype(np.int64)  # exact: a double has 53 significant bits
    e = exp.astype(np.int64) - 53
    nonzero = m != 0
    if not nonzero.any():
        return ScaledIntegers(np.zeros(len(x), dtype=np.int64), 0)
    # Strip trailing zeros so the integers stay small for ordinary data (exact:
    # the shifted-out bits are zero).
    tz = np.zeros(len(m), dtype=np.int64)
    tz[nonzero] = _trailing_zeros(m[nonzero])
    m = m >> tz
    e = e + tz
    e0 = int(e[nonzero].min())
    shifts = np.where(nonzero, e - e0, 0)
    if int(shifts.max()) + 53 <= 62:
        ints = m << shifts  # |ints| < 2**62: still int64
    else:
        ints = m.astype(object) << shifts.astype(object)
    return ScaledIntegers(ints, e0)


def _trailing_zeros(m: np.ndarray) -> np.ndarray:
    a = np.abs(m)
    low = a & -a  # lowest set bit, a power of two <= 2**52
    out: np.ndarray = np.log2(low.astype(np.float64)).astype(np.int64)  # exact: powers of 2
    return out


def exact_sum(values: Sequence[float] | np.ndarray | Any) -> Fraction:
    """The exact sum of finite doubles, as a Fraction (no rounding at any step)."""
    return scaled_integers(values).total()


def exact_dot(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> Fraction:
    """The exact ``sum(x[i] * y[i])`` of finite doubles, as a Fraction."""
    return scaled_integers(x).dot(scaled_integers(y))
