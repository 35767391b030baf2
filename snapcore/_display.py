"""Exact numbers shown as short decimals for people; the exact value stays available.

Accounting is exact (:class:`fractions.Fraction`).  A float ε such as ``0.4`` is
charged at its exact binary value, which is what the mechanism is calibrated for
(2⁻⁵⁴ more than 2/5, so the charge is never below the privacy loss).

One rule for every number a person reads (``Budget``, ``PrivacyAnalysis``, the budget
ledger, ``snapcore release`` and ``snapcore budget``, reprs and error messages):
:func:`short` rounds the exact value to :data:`DIGITS` = 12 significant digits (ties
to even) and prints that decimal, marked ``≈`` unless it *is* the value; integers
below 10**15 print whole, and powers of two outside the range of doubles (far from
any number a person reads, and slow to write in decimal) as ``2**k``.  So ``1/5`` is
``0.2``, and the double ``0.4`` (not 2/5) is ``≈0.4``; ``1 − 0.7`` computed exactly
from the double 0.7 is ``≈0.3``, never ``0.30000000000000004``.  The exact value is
always at hand: the attributes are Fractions (``Budget.remaining``), JSON output
carries ``*_exact`` fields as ``"p/q"`` text, and ``short(q, exact=True)`` appends it.

A message that compares a parameter with a limit shows it to :data:`DOUBLE_DIGITS`
= 17 digits, enough to tell any two doubles apart: a value just above 1 must not read
as 1 beside "must be <= 1".

>>> from fractions import Fraction
>>> short(Fraction(1, 5)), short(Fraction(3, 1)), short(Fraction(1, 3))
('0.2', '3', '≈0.333333333333')
>>> short(Fraction(0.4)), short(1 - Fraction(0.7)), short(Fraction(45.25))
('≈0.4', '≈0.3', '45.25')
>>> short(Fraction(1, 3), exact=True)
'≈0.333333333333 (exactly 1/3)'
>>> short(1 + Fraction(2) ** -52), short(1 + Fraction(2) ** -52, digits=DOUBLE_DIGITS)
('≈1', '≈1.0000000000000002')
>>> short(Fraction(2) ** -1074), short(Fraction(2) ** -1100)
('≈4.94065645841e-324', '2**-1100')
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction
from functools import cache
from typing import Any

__all__ = ["DIGITS", "DOUBLE_DIGITS", "short"]

#: Significant digits :func:`short` shows by default: what a person reads at a glance.
DIGITS = 12
#: Significant digits that tell any two doubles apart (a double needs at most 17).
DOUBLE_DIGITS = 17

#: The powers of two that are doubles: 2**-1074 (the least subnormal) to 2**1023.
_MIN_DOUBLE_LOG2, _MAX_DOUBLE_LOG2 = -1074, 1023


@cache
def _context(digits: int) -> Context:
    return Context(prec=digits, rounding=ROUND_HALF_EVEN, Emax=10**8, Emin=-(10**8))


def short(q: Any, *, exact: bool = False, digits: int = DIGITS) -> str:
    """``q`` (a Fraction, int, float or Decimal) as a decimal of at most ``digits``
    significant digits, marked ``≈`` when that rounds it.

    Parameters
    ----------
    q : Fraction, int, float or Decimal
        An exact number (a float is read as the double it is); ``nan`` and ``±inf``
        print as ``repr``.
    exact : bool
        Append the exact value, ``" (exactly p/q)"``, when the decimal rounds it.
    digits : int
        :data:`DIGITS` (12) for numbers people read; :data:`DOUBLE_DIGITS` (17) in
        messages that compare a value with a limit, where two different doubles must
        not print alike.

    Returns
    -------
    str
        Plain notation for magnitudes from 1e-5 to below 1e15, scientific otherwise
        (``1.5e+20``, ``≈2.98023223877e-8``); ``2**k`` for a power of two with
        ``k < -1074`` or ``k > 1023``.
    """
    if isinstance(q, float) and not math.isfinite(q):
        return repr(q)
    x = Fraction(q)
    n, d = abs(x.numerator), x.denominator
    if d == 1 and n < 10**15:
        return str(x.numerator)  # integers in plain notation are shown whole
    if n & (n - 1) == 0 and d & (d - 1) == 0:  # in lowest terms: 2**k or 2**-k
        k = n.bit_length() - d.bit_length()
        if not _MIN_DOUBLE_LOG2 <= k <= _MAX_DOUBLE_LOG2:
            return f"{'-' if x < 0 else ''}2**{k}"
    context = _context(digits)
    # Decimal division is correctly rounded to the context's precision.
    rounded = context.divide(Decimal(x.numerator), Decimal(x.denominator))
    text = _plain(rounded, context)
    if Fraction(rounded) == x:
        return text
    text = "≈" + text
    return f"{text} (exactly {x})" if exact else text


def _plain(d: Decimal, context: Context) -> str:
    d = d.normalize(context)
    if -5 <= d.adjusted() < 15:
        return format(d, "f")
    mant, _, exp = format(d, "e").partition("e")
    e = int(exp)
    return f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
