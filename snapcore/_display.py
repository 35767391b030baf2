"""Exact numbers shown as short decimals for people; the exact value stays available.

Accounting is exact (:class:`fractions.Fraction`).  A float ε such as ``0.4`` is
charged at its exact binary value, which is what the mechanism is calibrated for
(2⁻⁵⁴ more than 2/5, so the charge is never below the privacy loss).

One rule for every number a person reads (``Budget``, ``PrivacyAnalysis``, the budget
ledger, ``snapcore release`` and ``snapcore budget``): :func:`short` rounds the exact
value to :data:`DIGITS` = 12 significant digits (ties to even) and prints that decimal,
marked ``≈`` unless it *is* the value; integers below 10**15 print whole.  So ``1/5``
is ``0.2``, and the double ``0.4`` (not 2/5) is ``≈0.4``; ``1 − 0.7`` computed exactly
from the double 0.7 is ``≈0.3``, never ``0.30000000000000004``.  The exact value is
always at hand: the attributes are Fractions (``Budget.remaining``), JSON output
carries ``*_exact`` fields as ``"p/q"`` text, and ``short(q, exact=True)`` appends it.

>>> from fractions import Fraction
>>> short(Fraction(1, 5)), short(Fraction(3, 1)), short(Fraction(1, 3))
('0.2', '3', '≈0.333333333333')
>>> short(Fraction(0.4)), short(1 - Fraction(0.7)), short(Fraction(45.25))
('≈0.4', '≈0.3', '45.25')
>>> short(Fraction(1, 3), exact=True)
'≈0.333333333333 (exactly 1/3)'
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction
from typing import Any

__all__ = ["DIGITS", "short"]

#: Significant digits :func:`short` shows.
DIGITS = 12

_CONTEXT = Context(prec=DIGITS, rounding=ROUND_HALF_EVEN, Emax=10**8, Emin=-(10**8))


def short(q: Any, *, exact: bool = False) -> str:
    """``q`` (a Fraction, int, float or Decimal) as a decimal of at most 12 significant
    digits, marked ``≈`` when that rounds it.

    Parameters
    ----------
    q : Fraction, int, float or Decimal
        An exact number (a float is read as the double it is); ``nan`` and ``±inf``
        print as ``repr``.
    exact : bool
        Append the exact value, ``" (exactly p/q)"``, when the decimal rounds it.

    Returns
    -------
    str
        Plain notation for magnitudes from 1e-5 to below 1e15, scientific otherwise
        (``1.5e+20``, ``≈2.98023223877e-8``).
    """
    if isinstance(q, float) and not math.isfinite(q):
        return repr(q)
    x = Fraction(q)
    if x.denominator == 1 and abs(x.numerator) < 10**15:
        return str(x.numerator)  # integers in plain notation are shown whole
    # Decimal division is correctly rounded to the context's precision.
    d = _CONTEXT.divide(Decimal(x.numerator), Decimal(x.denominator))
    text = _plain(d)
    if Fraction(d) == x:
        return text
    text = "≈" + text
    return f"{text} (exactly {x})" if exact else text


def _plain(d: Decimal) -> str:
    d = d.normalize(_CONTEXT)
    if -5 <= d.adjusted() < 15:
        return format(d, "f")
    mant, _, exp = format(d, "e").partition("e")
    e = int(exp)
    return f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
