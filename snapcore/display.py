"""Exact numbers shown as short decimals for people; the exact value stays available.

Accounting is exact (:class:`fractions.Fraction`).  A float ε such as ``0.4`` is
charged at its exact binary value, which is what the mechanism is calibrated for
(2⁻⁵⁴ more than 2/5, so the charge is never below the privacy loss).  For display,
:func:`short` prints a number that is exactly a double by its shortest round-trip
repr (``0.4``), integers as integers, and anything else to 15 significant digits
marked ``≈``.

>>> from fractions import Fraction
>>> short(Fraction(0.4)), short(Fraction(3, 1)), short(Fraction(1, 3))
('0.4', '3', '≈0.333333333333333')
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

__all__ = ["short"]


def short(q: Any) -> str:
    """``q`` (a Fraction, int or float) as a short decimal; ``≈`` marks a rounding."""
    if isinstance(q, float) and not math.isfinite(q):
        return repr(q)
    x = Fraction(q)
    if x.denominator == 1:
        return str(x.numerator)
    f = float(x)
    if math.isfinite(f) and Fraction(f) == x:
        return repr(f)
    return "≈" + format(f, ".15g")
