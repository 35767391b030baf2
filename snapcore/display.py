"""Exact numbers shown as short decimals for people; the exact value stays available.

Accounting is exact (:class:`fractions.Fraction`).  A float ε such as ``0.4`` is
charged at its exact binary value, which is what the mechanism is calibrated for
(2⁻⁵⁴ more than 2/5, so the charge is never below the privacy loss).  For display,
:func:`short` prints a number that is exactly a double by its shortest round-trip
repr (``0.4``), a short terminating decimal exactly (``1/5`` is ``0.2``), integers as
integers, and anything else to 15 significant digits marked ``≈``.

>>> from fractions import Fraction
>>> short(Fraction(0.4)), short(Fraction(3, 1)), short(Fraction(1, 3))
('0.4', '3', '≈0.333333333333333')
>>> short(Fraction(1, 5)), short(Fraction(0.1) + Fraction(0.2))
('0.2', '≈0.3')
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
    exact = _terminating(x)
    if exact is not None:
        return exact
    f = float(x)
    if math.isfinite(f) and Fraction(f) == x:
        return repr(f)
    return "≈" + format(f, ".15g")


def _terminating(x: Fraction, digits: int = 17) -> str | None:
    """``x`` as an exact decimal of at most ``digits`` significant digits, if it has one."""
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return None
    places = max(twos, fives)
    scaled = abs(x.numerator) * 10**places // x.denominator
    text = str(scaled).rjust(places + 1, "0")
    if len(text.lstrip("0")) > digits:
        return None
    whole, frac = text[:-places], text[-places:]
    return ("-" if x < 0 else "") + whole + "." + frac
