"""An independent exact reference of the snapping mechanism (docs/semantics.md [S1]–[S9]).

Written from the specification, not from snapcore's code: it imports nothing from
``snapcore``.  Every quantity is an exact :class:`fractions.Fraction`; rounding to
``p`` bits is this module's own :func:`round_p` (Fraction comparisons and
``math.floor``, no bit tricks shared with the core), and ``ln`` is evaluated with
MPFR (gmpy2) at ``p + 64`` bits or more, rounded down and rounded up in separate,
per-call contexts; the two exact endpoints are rounded to ``p`` bits here and the
precision is raised until they agree (Ziv's strategy), so the result is the
correctly rounded ``RN_p(ln u)`` with certainty.

The reference is slow and simple on purpose.  Use :func:`reference_calibration`
then :func:`reference_transform`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import gmpy2

__all__ = [
    "RefCalibration",
    "RefInvalid",
    "ceil_log2",
    "ln_rn",
    "reference_calibration",
    "reference_stages",
    "reference_transform",
    "round_double",
    "round_p",
]

RN, RZ, RU, RD = "RN", "RZ", "RU", "RD"


class RefInvalid(Exception):
    """The reference's own verdict that parameters violate the specification."""


def ceil_log2(q: Fraction) -> int:
    """Least integer k with 2**k >= q (q > 0), by exact comparisons."""
    q = Fraction(q)
    if q <= 0:
        raise ValueError(q)
    k = q.numerator.bit_length() - q.denominator.bit_length()  # a guess within 1
    while Fraction(2) ** k < q:
        k += 1
    while Fraction(2) ** (k - 1) >= q:
        k -= 1
    return k


def _binade(q: Fraction) -> int:
    """The integer E with 2**E <= q < 2**(E+1), for q > 0."""
    k = ceil_log2(q)  # 2**(k-1) < q <= 2**k
    return k if Fraction(2) ** k == q else k - 1


def round_p(q: Fraction, p: int, mode: str = RN) -> Fraction:
    """Round the exact rational ``q`` to a p-bit binary float (unbounded exponent).

    ``mode``: "RN" nearest, ties to even; "RZ" toward zero; "RU" toward +inf;
    "RD" toward -inf.
    """
    q = Fraction(q)
    if q == 0:
        return Fraction(0)
    neg = q < 0
    a = -q if neg else q
    ulp = Fraction(2) ** (_binade(a) - (p - 1))  # spacing of p-bit floats in a's binade
    t = a / ulp  # in [2**(p-1), 2**p)
    lo = math.floor(t)
    frac = t - lo
    if frac == 0:
        n = lo
    elif mode == RN:
        half = Fraction(1, 2)
        n = lo + 1 if frac > half or (frac == half and lo % 2 == 1) else lo
    elif mode == RZ:
        n = lo
    elif mode == RU:
        n = lo if neg else lo + 1
    elif mode == RD:
        n = lo + 1 if neg else lo
    else:
        raise ValueError(mode)
    r = n * ulp  # n == 2**p is fine: it is the next binade's first float
    return -r if neg else r


def is_p_bit(q: Fraction, p: int) -> bool:
    """Whether q is a p-bit binary float."""
    return round_p(q, p, RZ) == q and q.denominator & (q.denominator - 1) == 0


_EMAX = 1 << 40


def _mpfr_exact(q: Fraction, ctx: object) -> object:
    """A dyadic q as an MPFR number, exactly (the context has enough precision)."""
    num, den = q.numerator, q.denominator
    shift = den.bit_length() - 1
    assert den == 1 << shift
    return ctx.mul_2exp(gmpy2.mpz(num), -shift)  # type: ignore[attr-defined]


def _to_fraction(x: object) -> Fraction:
    """An MPFR number as an exact Fraction of Python ints."""
    n, d = x.as_integer_ratio()  # type: ignore[attr-defined]
    return Fraction(int(n), int(d))


def ln_rn(u: Fraction, p: int) -> Fraction:
    """``RN_p(ln u)`` for a dyadic ``u`` in (0, 1), proved by a Ziv loop on MPFR brackets."""
    if not 0 < u < 1:
        raise ValueError(u)
    width = u.numerator.bit_length()
    work = max(p, width) + 64
    while True:
        down = gmpy2.context(precision=work, round=gmpy2.RoundDown, emin=-_EMAX, emax=_EMAX)
        up = gmpy2.context(precision=work, round=gmpy2.RoundUp, emin=-_EMAX, emax=_EMAX)
        lo = _to_fraction(down.log(_mpfr_exact(u, down)))
        hi = _to_fraction(up.log(_mpfr_exact(u, up)))
        assert lo < hi  # ln u is irrational for dyadic u != 1
        a, b = round_p(lo, p, RN), round_p(hi, p, RN)
        if a == b:
            return a
        work *= 2


def round_double(q: Fraction) -> float:
    """``q`` rounded to the nearest IEEE-754 double, ties to even (subnormals and
    overflow to ±inf included), by this module's own arithmetic."""
    q = Fraction(q)
    if q == 0:
        return 0.0
    a = abs(q)
    if a < Fraction(2) ** -1022:  # subnormal range: multiples of 2**-1074
        t = a * 2**1074
        n = math.floor(t)
        f = t - n
        if f > Fraction(1, 2) or (f == Fraction(1, 2) and n % 2 == 1):
            n += 1
        r = Fraction(n, 2**1074)
    else:
        r = round_p(a, 53, RN)
    if r >= Fraction(2) ** 1024:
        out = math.inf
    else:
        out = float(r)  # r is a double: exact
        assert Fraction(out) == r
    return -out if q < 0 else out


@dataclass(frozen=True)
class RefCalibration:
    """The reference's constants (sensitivity units unless noted)."""

    precision: int
    lower: Fraction
    upper: Fraction
    centre: Fraction
    half_width: Fraction
    sensitivity: Fraction
    epsilon: Fraction
    b: Fraction
    epsilon_prime: Fraction
    scale: Fraction  # λ
    granularity: Fraction  # Λ


def required_precision(epsilon: Fraction, b_exact: Fraction) -> int:
    """max(118, m + 2, ceil(log2 b) + 52); 2**-m the smallest power of two >= ε."""
    m = -ceil_log2(epsilon)
    return max(118, m + 2, ceil_log2(b_exact) + 52)


def reference_calibration(
    *,
    epsilon: Fraction | float,
    sensitivity: Fraction | float = 1,
    lower: Fraction | float,
    upper: Fraction | float,
    precision: int | None = None,
) -> RefCalibration:
    """Steps [S1]–[S3] of docs/semantics.md and the precision rule.

    Raises
    ------
    RefInvalid
        If the parameters break a rule of the specification (ε ≤ 0, Δ ≤ 0,
        lower ≥ upper, precision below the required one, or b > 2**52·Λ).
    """
    eps, delta = Fraction(epsilon), Fraction(sensitivity)
    lo, hi = Fraction(lower), Fraction(upper)
    if eps <= 0 or delta <= 0 or not lo < hi:
        raise RefInvalid("epsilon, sensitivity > 0 and lower < upper")
    c = (lo + hi) / 2
    B = (hi - lo) / 2
    need = required_precision(eps, B / delta)
    p = need if precision is None else precision
    if p < need:
        raise RefInvalid(f"precision {p} < {need}")
    eta = Fraction(1, 2**p)
    assert eps > 2 * eta
    b = round_p(B / delta, p, RN)
    eps_prime = round_p((eps - 2 * eta) / (1 + 12 * b * eta), p, RZ)
    lam = round_p(1 / eps_prime, p, RU)
    Lam = Fraction(2) ** ceil_log2(lam)
    if b > 2**52 * Lam:
        raise RefInvalid("b > 2**52 * Lambda")
    return RefCalibration(
        precision=p,
        lower=lo,
        upper=hi,
        centre=c,
        half_width=B,
        sensitivity=delta,
        epsilon=eps,
        b=b,
        epsilon_prime=eps_prime,
        scale=lam,
        granularity=Lam,
    )


def _clamp(q: Fraction, b: Fraction) -> Fraction:
    return max(-b, min(b, q))


def reference_stages(cal: RefCalibration, value: Fraction | float, u: Fraction, sign: int) -> dict:
    """Every intermediate of steps 1 and 5-9, exactly."""
    p = cal.precision
    v = Fraction(value)
    u = Fraction(u)
    assert sign in (1, -1) and 0 < u < 1 and is_p_bit(u, p)
    # x stays exact (snapcore keeps x exact here; see docs/semantics.md).
    x = _clamp((v - cal.centre) / cal.sensitivity, cal.b)
    ln_u = ln_rn(u, p)
    noise = sign * round_p(cal.scale * ln_u, p, RN)
    y = round_p(x + noise, p, RN)
    k = math.floor(y / cal.granularity + Fraction(1, 2))
    z = _clamp(k * cal.granularity, cal.b)
    lo, hi = float(cal.lower), float(cal.upper)
    if abs(z) == cal.b:  # a clamped output is the interval's endpoint (docs/semantics.md)
        out = hi if z > 0 else lo
    else:
        out = min(max(round_double(cal.centre + cal.sensitivity * z), lo), hi)
    return {"x": x, "ln_u": ln_u, "noise": noise, "y": y, "k": k, "z": z, "output": out}


def reference_transform(
    cal: RefCalibration, value: Fraction | float, u: Fraction, sign: int
) -> float:
    """The mechanism's output for value, draw (sign, u): steps 1 and 5-9."""
    return reference_stages(cal, value, u, sign)["output"]
