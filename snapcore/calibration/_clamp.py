"""Choosing the clamp interval B from B′ and γ (docs/bounds-and-gamma.md).

The rule sets ``B = B′ + (k/2)(1 + 2 ln(1/γ))`` in sensitivity units, with
``k = (2 + 24·2**-52)/(ε − 2**-117)`` an upper bound on the granularity Λ′ that holds
whenever ``B·η <= 2**-52`` and ``η <= 2**-118`` (the precision rule, docs/semantics.md [S0],
guarantees both).  Then, for any f(D) in ``[−B′, B′]``, the clamp binds with
probability at most γ.

snapcore applies the same argument to the statistic's range ``[lo, hi]`` (B′ is
``max(|lo|, |hi|)``): centred at ``(lo + hi)/2`` the statistic lies within the
half-width ``(hi − lo)/2``, so the interval
``[lo − M, hi + M]`` with margin ``M = Δ·(k/2)(1 + 2 ln(1/γ))`` has the same
guarantee, and is never wider than the symmetric ``[−B, B]`` (equal when
``lo = −hi``).  ``ln(1/γ)`` is bounded above with MPFR (directed rounding), the
rest is exact, and the endpoints are rounded outward to doubles: the chosen B is a
double never below the formula.  (The margin is first rounded up to 8 significant
bits, so that for ordinary ranges both ends are exact doubles and the interval stays
centred on the range: at most 1/128 more margin, for a readable output grid.)

For an integer-valued statistic (a count, a histogram) the centre is moved to the
nearest multiple of ``u``, the least common multiple of 1 and ``Δ·2**⌈log2(1/ε)⌉``, and
both ends to multiples of ``u`` outside ``[lo − M, hi + M]``.  The output grid is
``c + Δ·Λ·ℤ`` with ``Λ >= λ >= 1/ε`` a power of two (docs/semantics.md [S2]), so ``Δ·Λ``
is a multiple of ``Δ·2**⌈log2(1/ε)⌉``: with ``c`` and both ends on that grid every output
is a multiple of it, and a whole number whenever the grid step is one (``Δ`` an integer,
``ε <= 1``).  The interval only grows (by less than ``2u``), so γ still bounds the
probability that the clamp binds.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs

from snapcore._display import DOUBLE_DIGITS, short
from snapcore.calibration._params import check_real
from snapcore.data._values import read_double_pair
from snapcore.errors import ParameterError, parameter_name, show
from snapcore.exact._ieee754 import round_down_double, round_up_double

__all__ = [
    "DEFAULT_GAMMA",
    "ClampChoice",
    "check_gamma",
    "choose_clamp_bounds",
    "given_clamp_bounds",
    "granularity_bound",
    "ln_upper",
]

#: γ used when neither ``gamma`` nor clamp bounds are given.
DEFAULT_GAMMA = 0.05

_TWO_POW_M117 = Fraction(1, 1 << 117)


@attrs.frozen(kw_only=True)
class ClampChoice:
    """The clamp interval of a release and why it was chosen.

    Attributes
    ----------
    lower, upper : float
        The clamp interval (exact doubles); outputs lie in it.
    half_width : Fraction
        ``B = (upper − lower)/2`` in the data's units.
    gamma : Fraction or None
        The γ used, or None when the interval was given directly.
    margin : Fraction or None
        ``M >= Δ·(k/2)(1 + 2 ln(1/γ))`` added to each side of the statistic's range.
    k : Fraction or None
        The bound on Λ′, ``(2 + 24·2**-52)/(ε − 2**-117)``.
    reason : str
        One or two sentences for people.
    """

    lower: float
    upper: float
    half_width: Fraction
    gamma: Fraction | None = None
    margin: Fraction | None = None
    k: Fraction | None = None
    reason: str


def ln_upper(q: Fraction) -> Fraction:
    """An upper bound on ``ln(q)`` for rational ``q >= 1``, within ``2**-120`` relative.

    MPFR rounds upward twice (``q``, then ``ln``); ``ln`` is increasing, so the result
    is ``>= ln(q)``.  ``ln(1)`` is exactly 0.
    """
    if q == 1:
        return Fraction(0)
    import gmpy2

    ctx = gmpy2.context(precision=128, round=gmpy2.RoundUp)
    x = ctx.log(ctx.div(gmpy2.mpz(q.numerator), gmpy2.mpz(q.denominator)))
    num, den = x.as_integer_ratio()
    return Fraction(int(num), int(den))


def granularity_bound(epsilon: Fraction) -> Fraction:
    """``k = (2 + 24·2**-52)/(ε − 2**-117)``, exactly (ε > 2**-117)."""
    if not epsilon > _TWO_POW_M117:
        raise ParameterError(
            f"epsilon must be > 2**-117 to choose the clamp interval from gamma, got "
            f"{short(epsilon, digits=DOUBLE_DIGITS)}; give the clamp bounds directly"
        )
    return (2 + 24 * Fraction(1, 1 << 52)) / (epsilon - _TWO_POW_M117)


def _round_up_bits(q: Fraction, bits: int) -> Fraction:
    """The least number ``>= q > 0`` with at most ``bits`` significant bits."""
    s = q.numerator.bit_length() - q.denominator.bit_length() - bits
    unit = Fraction(2) ** s
    return -((-q) // unit) * unit


def _exact_doubles(a: Fraction, b: Fraction) -> tuple[float, float] | None:
    """``(float(a), float(b))`` when both are exact doubles, else None."""
    try:
        if Fraction(float(a)) == a and Fraction(float(b)) == b:
            return float(a), float(b)
    except OverflowError:
        pass
    return None


def _outward(lo: Fraction, hi: Fraction, margin: Fraction) -> tuple[float, float]:
    """Doubles ``lower <= lo − margin`` and ``upper >= hi + margin``.

    The margin is first rounded up to 8 significant bits; when ``lo − M`` and
    ``hi + M`` are then exact doubles they are used as they are, which keeps the
    centre of the clamp interval at the centre of ``[lo, hi]`` (so outputs sit on a
    readable grid).  Otherwise each end is rounded outward on its own.
    """
    if margin > 0:
        m = _round_up_bits(margin, 8)
        pair = _exact_doubles(lo - m, hi + m)
        if pair is not None:
            return pair
    return round_down_double(lo - margin), round_up_double(hi + margin)


def _integral_unit(sensitivity: Fraction, epsilon: Fraction) -> Fraction:
    """``u``: the least common multiple of 1 and ``Δ·2**⌈log2(1/ε)⌉`` (a rational ``a/b``
    in lowest terms has ``lcm(a/b, 1) = a``, and 1 when the multiple is below 1 and
    dyadic)."""
    inv = 1 / epsilon
    e = inv.numerator.bit_length() - inv.denominator.bit_length()
    if Fraction(2) ** e < inv:  # then ⌈log2(1/ε)⌉ = e + 1
        e += 1
    u = sensitivity * Fraction(2) ** e
    return Fraction(u.numerator) if u.numerator != 0 else Fraction(1)


def _on_grid(lo: Fraction, hi: Fraction, margin: Fraction, unit: Fraction) -> tuple[float, float]:
    """Doubles ``lower <= lo − margin`` and ``upper >= hi + margin``, both multiples of
    ``unit`` with a centre that is one too; the outward rounding of :func:`_outward`
    when they are not exact doubles."""
    centre = ((lo + hi) / (2 * unit) + Fraction(1, 2)).__floor__() * unit
    reach = max(centre - (lo - margin), (hi + margin) - centre)
    half = -((-reach) // unit) * unit
    pair = _exact_doubles(centre - half, centre + half)
    return pair if pair is not None else _outward(lo, hi, margin)


def check_gamma(gamma: Any) -> Fraction:
    """γ as an exact Fraction in (0, 1], else a ParameterError."""
    g = check_real("gamma", gamma)
    if not 0 < g <= 1:
        raise ParameterError(
            f"{parameter_name('gamma')} must be a number in (0, 1], got {show(gamma)}",
            parameter="gamma",
        )
    return g


def choose_clamp_bounds(
    value_range: tuple[Fraction, Fraction],
    sensitivity: Fraction,
    epsilon: Fraction,
    gamma: Any,
    *,
    integral: bool = False,
) -> ClampChoice:
    """The clamp interval from the statistic's range and γ (docs/bounds-and-gamma.md).

    Parameters
    ----------
    value_range : (Fraction, Fraction)
        ``[lo, hi]`` containing every possible f(D).
    sensitivity : Fraction
        Δ > 0.
    epsilon : Fraction
        The ε of the mechanism that releases this value.
    gamma : real
        γ in (0, 1]: the clamp binds with probability at most γ.
    integral : bool
        Whether f(D) is always an integer: the centre and both ends are then put on
        the output grid (the module docstring), so outputs come out whole.

    Returns
    -------
    ClampChoice
        ``lower <= lo − M``, ``upper >= hi + M`` as doubles.

    Raises
    ------
    ParameterError
        On an invalid γ or ε, or if the interval does not fit in doubles.
    """
    g = check_gamma(gamma)
    k = granularity_bound(epsilon)
    units = k / 2 * (1 + 2 * ln_upper(1 / g))
    margin = sensitivity * units
    lo, hi = value_range
    if integral:
        lower, upper = _on_grid(lo, hi, margin, _integral_unit(sensitivity, epsilon))
    else:
        lower, upper = _outward(lo, hi, margin)
    if math.isinf(lower) or math.isinf(upper):
        raise ParameterError(
            "the clamp interval chosen from gamma does not fit in doubles; narrow the "
            "data bounds or raise epsilon or gamma"
        )
    b_prime = max(abs(lo), abs(hi))
    used = min(lo - Fraction(lower), Fraction(upper) - hi)
    reason = (
        f"chosen from gamma = {float(g)!r}: the statistic lies in [{float(lo)!r}, "
        f"{float(hi)!r}] (B′ = {float(b_prime)!r}); each side gets the margin "
        f"Δ·(k/2)(1 + 2 ln(1/γ)) = {float(margin)!r} with k = (2 + 24·2**-52)/(ε − 2**-117) "
        f"= {float(k)!r} (docs/bounds-and-gamma.md), rounded up (margin used: "
        f"{float(used)!r}), so the "
        f"clamp binds with probability at most {float(g)!r}"
    )
    if integral:
        reason += (
            f"; the centre {float((Fraction(lower) + Fraction(upper)) / 2)!r} and both ends "
            "are on the output grid, so the statistic's integer values come out whole"
        )
    return ClampChoice(
        lower=lower,
        upper=upper,
        half_width=(Fraction(upper) - Fraction(lower)) / 2,
        gamma=g,
        margin=margin,
        k=k,
        reason=reason,
    )


def given_clamp_bounds(clamp_bounds: Any) -> ClampChoice:
    """A clamp interval given directly: finite exact doubles, ``lower < upper``
    (:func:`snapcore.data.read_double_pair`)."""
    lo, hi = read_double_pair("clamp_bounds", clamp_bounds)
    return ClampChoice(
        lower=float(lo),
        upper=float(hi),
        half_width=(hi - lo) / 2,
        reason="given directly (clamp_bounds); not derived from gamma",
    )
