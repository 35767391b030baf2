"""Independent references for the conformance suite.

Nothing here shares code with a backend or with :mod:`snapcore.exact`:

* :func:`round_nearest` rounds an exact rational ``num/den * 2**e`` to ``p`` bits,
  ties to even, by its own integer search;
* add, sub, mul and div are exact integer arithmetic on ``(m, e)`` pairs followed by
  :func:`round_nearest`;
* :func:`ln_nearest` encloses ``ln(u)`` with MPFR (gmpy2) at far higher precision —
  ``2p + 64`` bits first — rounded down and rounded up (MPFR guarantees both
  directions), and accepts only when both ends round to the same p-bit value; else
  it doubles the precision (a Ziv check).

:class:`ReferenceBackend` packages them as a :class:`~snapcore.Backend`
(not registered) so that whole pipelines can be run on the reference.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import gmpy2

from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend

__all__ = [
    "ReferenceArithmetic",
    "ReferenceBackend",
    "ln_enclosure",
    "ln_midpoint_distance",
    "ln_nearest",
    "ref_add",
    "ref_div",
    "ref_mul",
    "round_nearest",
    "value",
]

Dyadic = tuple[int, int]

#: MPFR's widest exponent range, far wider than any value the suite uses.
_EMIN, _EMAX = gmpy2.get_emin_min(), gmpy2.get_emax_max()


def round_nearest(num: int, den: int, p: int, e: int = 0) -> Dyadic:
    """``num/den * 2**e`` rounded to ``p`` bits, nearest, ties to even.

    Returns ``(m, k)`` with ``2**(p-1) <= |m| < 2**p`` (or ``(0, 0)``).
    """
    if den <= 0:
        raise ValueError("den must be > 0")
    if num == 0:
        return (0, 0)
    sign = -1 if num < 0 else 1
    num = abs(num)
    # Find s with 2**(p-1) <= num * 2**s / den < 2**p by an estimate and correction.
    s = p - num.bit_length() + den.bit_length()
    while True:
        top = num << s if s >= 0 else num
        bot = den if s >= 0 else den << -s
        if top >= bot << p:
            s -= 1
        elif top < bot << (p - 1):
            s += 1
        else:
            break
    q, r = divmod(top, bot)
    if 2 * r > bot or (2 * r == bot and q % 2 == 1):
        q += 1
    if q == 1 << p:
        q >>= 1
        s -= 1
    return (sign * q, e - s)


def value(a: Dyadic) -> Fraction:
    """``a`` as an exact Fraction (only for moderate exponents)."""
    m, e = a
    return Fraction(m) * Fraction(2) ** e


def ref_mul(a: Dyadic, b: Dyadic, p: int) -> Dyadic:
    """Nearest p-bit float to ``a * b``."""
    return round_nearest(a[0] * b[0], 1, p, a[1] + b[1])


def ref_div(a: Dyadic, b: Dyadic, p: int) -> Dyadic:
    """Nearest p-bit float to ``a / b``."""
    if b[0] == 0:
        raise ZeroDivisionError
    if b[0] < 0:
        return round_nearest(-a[0], -b[0], p, a[1] - b[1])
    return round_nearest(a[0], b[0], p, a[1] - b[1])


def ref_add(a: Dyadic, b: Dyadic, p: int) -> Dyadic:
    """Nearest p-bit float to ``a + b`` (both p-bit).

    When the exponents are so far apart that the exact sum would be enormous, the
    smaller operand is replaced by one of the same sign far below a quarter ulp of
    the larger one: both sums then lie strictly inside the same rounding interval
    (next to the larger operand, which is a p-bit float), so they round alike.
    """
    (ma, ea), (mb, eb) = a, b
    if ma == 0 or mb == 0:
        m, e = (ma, ea) if mb == 0 else (mb, eb)
        return round_nearest(m, 1, p, e) if m else (0, 0)
    top_a, top_b = ea + abs(ma).bit_length(), eb + abs(mb).bit_length()
    if top_a < top_b:
        (ma, ea, top_a), (mb, eb, top_b) = (mb, eb, top_b), (ma, ea, top_a)
    floor = top_a - p - 8  # 2**floor is far below a quarter ulp of the larger operand
    if top_b < floor:
        mb, eb = (1 if mb > 0 else -1), floor - 8
    e = min(ea, eb)
    return round_nearest((ma << (ea - e)) + (mb << (eb - e)), 1, p, e)


def _mpfr(ctx: Any, m: int, e: int) -> Any:
    return ctx.mul_2exp(gmpy2.mpz(m), e)


def ln_enclosure(m: int, e: int, w: int) -> tuple[Dyadic, Dyadic]:
    """``[lo, hi]`` containing ``ln(m * 2**e)``: MPFR at ``w`` bits rounded down and up."""
    down = gmpy2.context(precision=w, round=gmpy2.RoundDown, emin=_EMIN, emax=_EMAX)
    up = gmpy2.context(precision=w, round=gmpy2.RoundUp, emin=_EMIN, emax=_EMAX)
    if m.bit_length() > w:
        raise ValueError("input wider than the working precision")
    x = _mpfr(down, m, e)
    out = []
    for ctx in (down, up):
        y = ctx.log(x)
        if not y:
            out.append((0, 0))
        else:
            ym, ye = y.as_mantissa_exp()
            out.append((int(ym), int(ye)))
    return (out[0], out[1])


def ln_nearest(m: int, e: int, p: int) -> Dyadic:
    """``ln(m * 2**e)`` (``m > 0``) rounded to nearest-even at ``p`` bits, by a Ziv check."""
    if m <= 0:
        raise ValueError("ln of a non-positive number")
    w = 2 * p + 64
    while True:
        lo, hi = ln_enclosure(m, e, w)
        r_lo = round_nearest(lo[0], 1, p, lo[1])
        if r_lo == round_nearest(hi[0], 1, p, hi[1]):
            return r_lo
        w *= 2


def ln_midpoint_distance(m: int, e: int, p: int) -> float:
    """How close ``ln(m * 2**e)`` lies to a p-bit rounding midpoint, in ulps (an upper bound).

    The ulp is that of the p-bit value nearest ``ln(m * 2**e)``; the distance is to the
    nearest of the two midpoints around it.
    """
    y = ln_nearest(m, e, p)
    ym, ye = y
    if ym == 0:
        return 0.5
    w = 4 * p + 128
    while True:
        lo, hi = ln_enclosure(m, e, w)
        dists = []
        for zm, ze in (lo, hi):
            # (z - y) / 2**ye exactly, as a Fraction of moderate size
            f = ze - ye
            delta = Fraction(zm << f) if f >= 0 else Fraction(zm, 1 << -f)
            delta -= ym
            lower_half = Fraction(1, 4) if abs(ym) == 1 << (p - 1) else Fraction(1, 2)
            # Below a power of two the lower neighbour is half an ulp away.
            if (delta < 0) == (ym > 0):
                dists.append((lower_half - abs(delta)) / (2 * lower_half))
            else:
                dists.append(Fraction(1, 2) - abs(delta))
        d_max = max(dists)
        width = abs(dists[0] - dists[1])
        if d_max > 0 and width * 1024 < d_max:
            return float(d_max)
        w *= 2


class ReferenceArithmetic(Arithmetic):
    """The reference as an :class:`~snapcore.Arithmetic` on ``(m, e)`` pairs."""

    def __init__(self, precision: int) -> None:
        self.precision = precision

    def from_dyadic(self, m: int, e: int) -> Dyadic:
        if m == 0:
            return (0, 0)
        r = round_nearest(m, 1, self.precision, e)
        if Fraction(r[0]) * Fraction(2) ** (r[1] - e) != m:
            raise ValueError(f"{m}*2**{e} needs more than {self.precision} bits")
        return r

    def convert(self, q: Fraction | int | float) -> Dyadic:
        f = Fraction(q)
        return round_nearest(f.numerator, f.denominator, self.precision)

    def add(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return ref_add(a, b, self.precision)

    def sub(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return ref_add(a, (-b[0], b[1]), self.precision)

    def mul(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return ref_mul(a, b, self.precision)

    def div(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return ref_div(a, b, self.precision)

    def ln(self, a: Dyadic) -> Dyadic:
        return ln_nearest(a[0], a[1], self.precision)

    def neg(self, a: Dyadic) -> Dyadic:
        return (-a[0], a[1])

    def to_dyadic(self, a: Dyadic) -> tuple[int, int]:
        return a


class ReferenceBackend(Backend):
    """The reference arithmetic as a backend object (not registered; for tests)."""

    name = "reference"
    library = "gmpy2 (MPFR) + exact integers"
    install_hint = "pip install gmpy2"

    @classmethod
    def is_available(cls) -> bool:
        return True

    def version(self) -> str:
        return f"reference (gmpy2 {gmpy2.version()})"

    def arithmetic(self, precision: int) -> ReferenceArithmetic:
        return ReferenceArithmetic(precision)
