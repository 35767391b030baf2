"""Exact p-bit rounding of rationals, on integers only.

A *dyadic* is a pair ``(m, e)`` of Python integers standing for ``m * 2**e``.
Every finite double and every p-bit float is one.  The functions here round an
exact rational to ``p`` significant bits in a named direction; they are the single
place where snapcore's core (not a backend) rounds, so every backend sees the same
bits for the quantities docs/semantics.md marks "rounded once".  The others work on
dyadics exactly: normalise, add, compare, and turn one into a Fraction.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from fractions import Fraction
from typing import Any

__all__ = [
    "Rounding",
    "add_nearest",
    "dyadic_add",
    "dyadic_cmp",
    "dyadic_normalise",
    "is_p_bit",
    "round_fraction",
    "round_ratio",
    "to_fraction",
]


class Rounding(enum.Enum):
    """Rounding directions at p bits."""

    NEAREST = "RN"  #: to nearest, ties to even
    TOWARD_ZERO = "RZ"
    UP = "RU"  #: toward +inf
    DOWN = "RD"  #: toward -inf


def round_ratio(num: int, den: int, p: int, mode: Rounding = Rounding.NEAREST) -> tuple[int, int]:
    """Round the rational ``num/den`` to a p-bit float.

    Parameters
    ----------
    num, den : int
        Numerator and (non-zero) denominator.
    p : int
        Precision in bits, ``p >= 2``.
    mode : Rounding
        Rounding direction.

    Returns
    -------
    tuple of int
        ``(m, e)`` with ``m * 2**e`` the rounded value, ``2**(p-1) <= |m| < 2**p``,
        or ``(0, 0)`` for zero.  The exponent range is unbounded.
    """
    if den == 0:
        raise ZeroDivisionError("round_ratio: den == 0")
    if den < 0:
        num, den = -num, -den
    if num == 0:
        return (0, 0)
    negative = num < 0
    a = -num if negative else num
    # Choose e so that 2**(p-1) <= a / (den * 2**e) < 2**p: a/den lies in
    # (2**(k-1), 2**(k+1)) for k = len(a) - len(den), so start one binade low and
    # correct upward at most once.
    e = a.bit_length() - den.bit_length() - p + 1
    if e >= 0:
        n2, d2 = a, den << e
    else:
        n2, d2 = a << -e, den
    if n2 < (d2 << (p - 1)):
        e -= 1
        if e >= 0:
            d2 = den << e
        else:
            n2 = a << -e
    q, r = divmod(n2, d2)
    if r:
        if mode is Rounding.NEAREST:
            twice = r << 1
            if twice > d2 or (twice == d2 and q & 1):
                q += 1
        elif (mode is Rounding.UP and not negative) or (mode is Rounding.DOWN and negative):
            q += 1
        # TOWARD_ZERO: truncate the magnitude.
    if q >> p:  # carried into a new binade
        q >>= 1
        e += 1
    return (-q if negative else q, e)


def round_dyadic(m: int, e: int, p: int) -> tuple[int, int]:
    """``m * 2**e`` rounded to ``p`` bits, to nearest, ties to even, by shifts only.

    The fast case of :func:`round_ratio` (a power-of-two denominator); ``(0, 0)`` for
    zero.  The result's mantissa has at most ``p`` bits.
    """
    if not m:
        return (0, 0)
    a = -m if m < 0 else m
    s = a.bit_length() - p
    if s <= 0:
        return (m, e)
    q = a >> s
    r = a - (q << s)
    half = 1 << (s - 1)
    if r > half or (r == half and q & 1):
        q += 1
        if q >> p:  # carried into the next binade
            q >>= 1
            s += 1
    return (-q if m < 0 else q, e + s)


def round_fraction(
    q: Fraction | int | float, p: int, mode: Rounding = Rounding.NEAREST
) -> tuple[int, int]:
    """Round an exact rational (a float is one) to p bits; see :func:`round_ratio`."""
    f = Fraction(q)
    return round_ratio(f.numerator, f.denominator, p, mode)


def to_fraction(m: int, e: int) -> Fraction:
    """The exact value ``m * 2**e`` as a Fraction.

    For odd ``m`` (a normalised pair, :func:`dyadic_normalise`) the pair is already in
    lowest terms and the Fraction is built without the gcd ``Fraction(m, 2**-e)``
    computes: about a millisecond at 14,000 bits, where the exact audit's masses are.
    """
    if e >= 0:
        return Fraction(m << e)
    if m & 1:
        return _coprime_fraction(m, 1 << -e)
    return Fraction(m, 1 << -e)


def _coprime_fraction_311(n: int, d: int) -> Fraction:
    f: Any = Fraction
    return f(n, d, _normalize=False)  # type: ignore[no-any-return]


#: ``Fraction(n, d)`` for coprime ``n``, ``d > 0`` without a gcd (Python >= 3.12 has a
#: constructor for it; 3.10 and 3.11 a keyword).
_coprime_fraction: Callable[[int, int], Fraction] = getattr(
    Fraction, "_from_coprime_ints", _coprime_fraction_311
)


def dyadic_normalise(m: int, e: int) -> tuple[int, int]:
    """``m * 2**e`` as the pair with an odd mantissa, or ``(0, 0)`` for zero."""
    if not m:
        return (0, 0)
    tz = (m & -m).bit_length() - 1
    return m >> tz, e + tz


def dyadic_add(m1: int, e1: int, m2: int, e2: int) -> tuple[int, int]:
    """The exact sum ``m1*2**e1 + m2*2**e2``, normalised (:func:`dyadic_normalise`)."""
    e = min(e1, e2)
    return dyadic_normalise((m1 << (e1 - e)) + (m2 << (e2 - e)), e)


def dyadic_cmp(m1: int, e1: int, m2: int, e2: int) -> int:
    """Compare ``m1*2**e1`` with ``m2*2**e2`` exactly: -1, 0 or 1."""
    if e1 > e2:
        a, b = m1 << (e1 - e2), m2
    else:
        a, b = m1, m2 << (e2 - e1)
    return (a > b) - (a < b)


def is_p_bit(m: int, p: int) -> bool:
    """Whether ``m`` fits in ``p`` significant bits (after stripping trailing zeros)."""
    if m == 0:
        return True
    a = abs(m)
    a >>= (a & -a).bit_length() - 1
    return a.bit_length() <= p


def add_nearest(ma: int, ea: int, mb: int, eb: int, p: int) -> tuple[int, int]:
    """``ma*2**ea + mb*2**eb`` rounded to ``p`` bits; both operands have at most ``p`` bits.

    When the smaller operand is below a quarter of the larger one's unit in the last
    place, the sum rounds to the larger one (even when the larger is a power of two,
    whose lower neighbour is only half an ulp away); the exact sum is formed only
    otherwise, so the shifts stay below ``2p + 2`` bits whatever the exponents.
    """
    if not mb:
        return (ma, ea) if ma else (0, 0)
    if not ma:
        return (mb, eb)
    ta = ea + abs(ma).bit_length()  # 2**(ta-1) <= |a| < 2**ta
    tb = eb + abs(mb).bit_length()
    if ta < tb:
        ma, ea, mb, eb, ta, tb = mb, eb, ma, ea, tb, ta
    if tb <= ta - p - 2:  # |b| < 2**(ta-p-2) = ulp_p(a) / 4
        return (ma, ea)
    if ea >= eb:
        return round_dyadic((ma << (ea - eb)) + mb, eb, p)
    return round_dyadic(ma + (mb << (eb - ea)), ea, p)
