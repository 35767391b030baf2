"""Estimates from a *guess* of f(D): never compute them from the real value.

:func:`bias`, :func:`guess_accuracy`, :func:`ideal_output_distribution`,
:func:`clamp_probability` and :func:`laplace_distance` take a user's *guess* of the
statistic's value f(D), never the data.  Their answers depend on f(D), so computing one
from the real value and publishing it would leak f(D) (asking at many candidate values
and reading off where the answer changes would recover f(D) outright).  They are for
planning and explaining, with guesses that are themselves public.

They describe the ideal mechanism (real-valued Laplace noise, then exact snapping and
clamping) and are computed with 256-bit MPFR arithmetic, then rounded to doubles.  The
publishable, data-independent guarantees are in :mod:`snapcore.analysis._guarantees`.
docs/accuracy.md explains every formula.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import attrs
import gmpy2

from snapcore.analysis._guarantees import Calibrated, accuracy_details, calibration_of
from snapcore.calibration._guarantee import check_probability
from snapcore.calibration._params import Calibration, check_real
from snapcore.errors import ParameterError, parameter_name
from snapcore.exact._ieee754 import round_up_double

__all__ = [
    "ESTIMATE_PRECISION",
    "Bias",
    "IdealOutputDistribution",
    "LaplaceDistance",
    "bias",
    "clamp_probability",
    "guess_accuracy",
    "ideal_output_distribution",
    "laplace_distance",
]

#: Working precision of the estimates for a guess (bits).
ESTIMATE_PRECISION = 256


# -- the ideal output distribution (for a guess) ---------------------------------------


def _ctx() -> Any:
    return gmpy2.context(precision=ESTIMATE_PRECISION)


def _mp(ctx: Any, q: Fraction) -> Any:
    return ctx.div(gmpy2.mpz(q.numerator), gmpy2.mpz(q.denominator))


class _Ideal:
    """The ideal snapped Laplace in sensitivity units: ``z′ = clamp_b(⌊x + Y⌉_Λ)``,
    ``Y ~ Laplace(shift, λ)`` real-valued, ``x = clamp_b(t)``.

    ``z′ = g(W)`` for ``W = x + Y`` and the staircase ``g``: ``−b`` below
    ``(k₁ − ½)Λ``, ``kΛ`` on ``[(k − ½)Λ, (k + ½)Λ)`` for ``k₁ <= k <= k₂``
    (``k₁ = ⌈−b/Λ⌉ <= 0 <= k₂ = ⌊b/Λ⌋``), ``b`` from ``(k₂ + ½)Λ`` on.
    """

    def __init__(self, cal: Calibration, t: Fraction, shift: Fraction = Fraction(0)) -> None:
        self.ctx = ctx = _ctx()
        self.b = b = cal.unit_clamp_bound
        self.grid = g = cal.granularity
        self.x = max(-b, min(b, t))
        self.m = self.x + shift  # the Laplace centre
        self.k1 = math.ceil(-b / g)
        self.k2 = math.floor(b / g)
        self.lam = _mp(ctx, cal.scale)  # λ at the context's precision

    def half_exp(self, u_q: Fraction) -> Any:
        """``½·e^{−|u|/λ}``: the Laplace tail beyond distance ``|u|``."""
        ctx = self.ctx
        return ctx.mul(0.5, ctx.exp(ctx.div(-abs(_mp(ctx, u_q)), self.lam)))

    def survival(self, w: Fraction) -> Any:
        """``P(W >= w)``."""
        u = w - self.m
        return self.half_exp(u) if u >= 0 else self.ctx.sub(1, self.half_exp(u))

    def below(self, w: Fraction) -> Any:
        """``P(W < w)``, without cancellation."""
        u = w - self.m
        return self.half_exp(u) if u <= 0 else self.ctx.sub(1, self.half_exp(u))

    def cell(self, k: int) -> Any:
        """``P(⌊W⌉_Λ = kΛ)``."""
        half = Fraction(1, 2)
        return self.ctx.sub(self.below((k + half) * self.grid), self.below((k - half) * self.grid))

    def survival_sum(self, j1: int, j2: int) -> Any:
        """``Σ_{k=j1..j2} P(W >= (k − ½)Λ)`` in closed form (two geometric series)."""
        ctx = self.ctx
        total = ctx.mul(0, 1)
        if j2 < j1:
            return total
        g, m, half = self.grid, self.m, Fraction(1, 2)
        split = math.ceil(m / g + half)  # first index whose threshold is >= m
        r = ctx.exp(ctx.div(-_mp(ctx, g), self.lam))  # e^{-Λ/λ} <= 1/e
        one_minus_r = ctx.sub(1, r)
        a1, a2 = max(j1, split), j2
        if a1 <= a2:  # thresholds >= m: ½e^{-(t-m)/λ}, decreasing by r
            first = self.half_exp((a1 - half) * g - m)
            geo = ctx.div(ctx.mul(first, ctx.sub(1, ctx.pow(r, a2 - a1 + 1))), one_minus_r)
            total = ctx.add(total, geo)
        b1, b2 = j1, min(j2, split - 1)
        if b1 <= b2:  # thresholds < m: 1 − ½e^{(t-m)/λ}; from the top down, ratio r
            cnt = b2 - b1 + 1
            top = self.half_exp((b2 - half) * g - m)
            geo = ctx.div(ctx.mul(top, ctx.sub(1, ctx.pow(r, cnt))), one_minus_r)
            total = ctx.add(total, ctx.sub(cnt, geo))
        return total

    def mean(self) -> Any:
        """``E[z′] = −b + Σ jump·P(W >= threshold)`` over the staircase's jumps."""
        ctx = self.ctx
        b, g, k1, k2, half = self.b, self.grid, self.k1, self.k2, Fraction(1, 2)
        total = _mp(ctx, -b)
        total = ctx.add(total, ctx.mul(_mp(ctx, k1 * g + b), self.survival((k1 - half) * g)))
        total = ctx.add(total, ctx.mul(_mp(ctx, g), self.survival_sum(k1 + 1, k2)))
        return ctx.add(total, ctx.mul(_mp(ctx, b - k2 * g), self.survival((k2 + half) * g)))

    def prob_above(self, s: Fraction) -> Any:
        """``P(z′ > s)``."""
        b, g, half = self.b, self.grid, Fraction(1, 2)
        if s >= b:
            return self.ctx.mul(0, 1)
        if s < -b:
            return self.ctx.add(0, 1)
        k = max(math.floor(s / g) + 1, self.k1)  # least grid index with kΛ > s
        if k <= self.k2:
            return self.survival((k - half) * g)
        return self.survival((self.k2 + half) * g)  # only the end b lies above s

    def prob_below(self, s: Fraction) -> Any:
        """``P(z′ < s)``."""
        b, g, half = self.b, self.grid, Fraction(1, 2)
        if s <= -b:
            return self.ctx.mul(0, 1)
        if s > b:
            return self.ctx.add(0, 1)
        k = min(math.ceil(s / g) - 1, self.k2)  # greatest grid index with kΛ < s
        if k >= self.k1:
            return self.below((k + half) * g)
        return self.below((self.k1 - half) * g)  # only the end −b lies below s


def _guess_in_sensitivity_units(cal: Calibration, guess: Any) -> Fraction:
    """``t = (guess − c)/Δ`` exactly (neither rounded nor clamped)."""
    v = check_real("guess", guess)
    return (v - cal.centre) / cal.sensitivity


@attrs.frozen(kw_only=True)
class IdealOutputDistribution:
    """Part of the ideal output distribution for a guess (user units).

    Attributes
    ----------
    values : tuple of float
        Output values in increasing order: grid points ``c + Δ·kΛ`` and, when the clamp
        can bind, the interval's ends.
    probabilities : tuple of float
        Their probabilities under the ideal mechanism.
    clamped : tuple of bool
        Whether each value is an interval end reached by clamping (its mass includes all
        of ``⌊x + Y⌉_Λ`` beyond it).
    omitted : float
        Total probability of grid points outside the window (not listed).
    """

    values: tuple[float, ...]
    probabilities: tuple[float, ...]
    clamped: tuple[bool, ...]
    omitted: float


def ideal_output_distribution(
    mechanism: Calibrated, guess: Any, *, window: int = 40
) -> IdealOutputDistribution:
    """The ideal output distribution of one release for a *guess* of f(D).

    Real-valued Laplace noise of scale λ, snapped exactly to the grid and clamped: grid
    point ``kΛ`` has probability ``P(x + Y ∈ [(k−½)Λ, (k+½)Λ))`` and the interval's ends
    carry the clamp mass.  Lists the grid points within ``window`` steps of the guess,
    plus both ends.  Takes a guess, never data (the distribution reveals f(D)).

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> d = ideal_output_distribution(m, 3.0, window=3)
    >>> d.values
    (0.0, 1.0, 3.0, 5.0, 7.0, 9.0, 10.0)
    >>> abs(sum(d.probabilities) + d.omitted - 1) < 1e-12
    True
    """
    cal = calibration_of(mechanism)
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 0:
        raise ParameterError(
            f"{parameter_name('window')} must be an int >= 0, got {window!r}", parameter="window"
        )
    ideal = _Ideal(cal, _guess_in_sensitivity_units(cal, guess))
    ctx = ideal.ctx
    g, b, k1, k2, half = ideal.grid, ideal.b, ideal.k1, ideal.k2, Fraction(1, 2)

    def user(z: Fraction) -> float:
        out = float(cal.centre + cal.sensitivity * z)
        return min(max(out, float(cal.lower)), float(cal.upper))

    low_mass = ideal.below((k1 - half) * g)  # ⌊W⌉ below the grid inside: clamps to −b
    high_mass = ideal.survival((k2 + half) * g)
    kc = math.floor(ideal.x / g + half)
    lo_k, hi_k = max(k1, kc - window), min(k2, kc + window)
    entries: list[tuple[Fraction, Any, bool]] = []
    if k1 * g == -b:  # the end is a grid point: it carries the clamp mass too
        entries.append((-b, ctx.add(low_mass, ideal.cell(k1)), True))
        lo_k = max(lo_k, k1 + 1)
    else:
        entries.append((-b, low_mass, True))
    top: tuple[Fraction, Any, bool]
    if k2 * g == b:
        top = (b, ctx.add(high_mass, ideal.cell(k2)), True)
        hi_k = min(hi_k, k2 - 1)
    else:
        top = (b, high_mass, True)
    entries.extend((k * g, ideal.cell(k), False) for k in range(lo_k, hi_k + 1))
    entries.append(top)
    covered = ctx.mul(0, 1)
    for _, p, _ in entries:
        covered = ctx.add(covered, p)
    return IdealOutputDistribution(
        values=tuple(user(z) for z, _, _ in entries),
        probabilities=tuple(float(p) for _, p, _ in entries),
        clamped=tuple(c for _, _, c in entries),
        omitted=max(0.0, float(ctx.sub(1, covered))),
    )


def clamp_probability(mechanism: Calibrated, guess: Any) -> float:
    """The probability that the output clamp binds, for a *guess* of f(D).

    ``P(|⌊x + Y⌉_Λ| > b)`` for the ideal mechanism: the snapped value falls outside the
    interval and is moved to an end.  With B chosen by
    :func:`~snapcore.analysis.bound_for_gamma` and
    ``|guess| <= B′`` it is at most γ (docs/bounds-and-gamma.md).  Takes a guess, never data.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> from snapcore.analysis._guarantees import bound_for_gamma
    >>> big_b = bound_for_gamma(10.0, epsilon=1.0, gamma=0.1)
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bound=big_b)
    >>> clamp_probability(m, 10.0) <= 0.1
    True
    """
    cal = calibration_of(mechanism)
    ideal = _Ideal(cal, _guess_in_sensitivity_units(cal, guess))
    half = Fraction(1, 2)
    low = ideal.below((ideal.k1 - half) * ideal.grid)
    high = ideal.survival((ideal.k2 + half) * ideal.grid)
    return float(ideal.ctx.add(low, high))


# -- bias for a guess (docs/accuracy.md) --------------------------------------------------------


def _clamped_laplace_mean(cal: Calibration, x: Fraction, shift: Fraction) -> Any:
    """``E[clamp_b(x + Y)]``, ``Y ~ Laplace(shift, λ)``: ``−b + ∫_{−b}^{b} P(x+Y >= s) ds``."""
    ideal = _Ideal(cal, x, shift)
    ctx, lam = ideal.ctx, ideal.lam
    b = ideal.b

    def antiderivative(u_q: Fraction) -> Any:  # ∫_0^u P(L >= s) ds, L ~ Laplace(0, λ)
        u = _mp(ctx, u_q)
        if u >= 0:
            return ctx.mul(ctx.div(lam, 2), ctx.sub(1, ctx.exp(ctx.div(-u, lam))))
        return ctx.sub(u, ctx.mul(ctx.div(lam, 2), ctx.sub(ctx.exp(ctx.div(u, lam)), 1)))

    m = ideal.m
    return ctx.add(_mp(ctx, -b), ctx.sub(antiderivative(b - m), antiderivative(-b - m)))


@attrs.frozen(kw_only=True)
class Bias:
    """Bias of one release for a guess of f(D), ``E[output] − guess`` (user units).

    Attributes
    ----------
    guess : float
        The guess.
    bias_plus : float
        The Bias⁺ bound: the clamped, unsnapped Laplace shifted by Λ/2 toward
        zero, so the bound in the direction the clamp pulls (toward the centre).
    lower, upper : float
        ``E[clamp_b(x + Y ∓ Λ/2)] − x``: since ``w − Λ/2 < ⌊w⌉_Λ <= w + Λ/2`` and the
        clamp is monotone, ``lower <= ideal <= upper``.
    ideal : float
        The exact bias of the ideal snapped mechanism (real-valued noise).
    """

    guess: float
    bias_plus: float
    lower: float
    upper: float
    ideal: float


def bias(mechanism: Calibrated, guess: Any) -> Bias:
    """Bias bounds for a user's *guess* of f(D) (Bias⁺, docs/accuracy.md).

    Never pass the real f(D): the bias depends on it, so publishing it would leak it.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> r = bias(m, 9.0)
    >>> r.lower <= r.ideal <= r.upper and r.bias_plus == r.lower < 0
    True
    """
    cal = calibration_of(mechanism)
    t = _guess_in_sensitivity_units(cal, guess)
    x = max(-cal.unit_clamp_bound, min(cal.unit_clamp_bound, t))
    half = cal.granularity / 2
    ctx = _ctx()
    d = _mp(ctx, cal.sensitivity)
    # The error relative to the guess: out − guess = Δ·(z′ − t)  (outputs are c + Δ·z′).
    t_mp = _mp(ctx, t)
    low = ctx.mul(d, ctx.sub(_clamped_laplace_mean(cal, x, -half), t_mp))
    high = ctx.mul(d, ctx.sub(_clamped_laplace_mean(cal, x, half), t_mp))
    ideal = ctx.mul(d, ctx.sub(_Ideal(cal, t).mean(), t_mp))
    return Bias(
        guess=float(check_real("guess", guess)),
        bias_plus=float(low if x >= 0 else high),
        lower=float(low),
        upper=float(high),
        ideal=float(ideal),
    )


# -- data-dependent accuracy for a guess ------------------------------------------------


def guess_accuracy(mechanism: Calibrated, guess: Any, alpha: Any) -> float:
    """The data-dependent accuracy (docs/accuracy.md) for a *guess* of f(D).

    The least ``a`` with ``P(|output − guess| > a) <= alpha`` when f(D) equals the guess,
    for the ideal mechanism (real-valued Laplace noise, exact snapping and clamping),
    plus the rounding term of :func:`~snapcore.analysis.accuracy_details`.
    Tighter than the guarantee :func:`~snapcore.analysis.accuracy`
    near the interval's ends, where the clamp removes error.  Computed exactly from the
    output distribution: the tail probability is a step function of ``a`` that jumps at
    the distances from the guess to the grid points and to the ends, so a bisection
    followed by snapping down to the nearest such distance gives the least ``a``.

    Never pass the real f(D): the answer changes with it, so publishing it would leak
    f(D) (a list of answers at candidate values gives f(D) away).

    A closed-form case analysis is *not* used: it undercounts the error near
    the ends (for ε = 1, bounds (0, 10), f(D) = 0, α = 0.05 it returns 1.14, but the
    error exceeds 1.14 with probability 0.068); ``docs/accuracy.md`` explains why.

    Parameters
    ----------
    mechanism : SnappingMechanism or Calibration
    guess : real
        A guess of f(D), in the user's units.
    alpha : real
        α in (0, 1).

    Returns
    -------
    float
        ``a`` in the user's units (for the guess), rounded upward.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> from snapcore.analysis._guarantees import accuracy
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> round(guess_accuracy(m, 5.0, 0.05), 6), round(accuracy(m, 0.05), 6)
    (2.0, 3.995732)
    >>> round(guess_accuracy(m, 10.0, 0.05), 6)
    3.0
    """
    cal = calibration_of(mechanism)
    al = check_probability("alpha", alpha)
    t = _guess_in_sensitivity_units(cal, guess)
    ideal = _Ideal(cal, t)
    alpha_mp = _mp(ideal.ctx, al)

    def tail(a: Fraction) -> Any:
        return ideal.ctx.add(ideal.prob_below(t - a), ideal.prob_above(t + a))

    # Support: −b, kΛ (k1 <= k <= k2), b.  The largest error is max(|t − b|, |t + b|).
    b, g = ideal.b, ideal.grid
    hi = max(abs(t - b), abs(t + b))
    lo = Fraction(0)
    if tail(lo) <= alpha_mp:
        best = lo
    else:
        for _ in range(200):  # tail(lo) > α >= tail(hi)
            mid = (lo + hi) / 2
            if tail(mid) <= alpha_mp:
                hi = mid
            else:
                lo = mid
            if hi - lo <= g * Fraction(1, 1 << 64):
                break
        # The least distance d in the support's distance set with d <= hi and tail(d) <= α.
        cands = [hi]
        for side in (1, -1):
            edge = t + side * hi
            k = math.floor(edge / g) if side > 0 else math.ceil(edge / g)
            k = max(ideal.k1, min(ideal.k2, k))
            for v in (k * g, b, -b):
                d = abs(v - t)
                if d <= hi and (side > 0) == (v >= t):
                    cands.append(d)
        best = min(d for d in cands if tail(d) <= alpha_mp)
    rounding = accuracy_details(cal, al).rounding_term
    v = check_real("guess", guess)
    farthest = max(abs(v - cal.lower), abs(v - cal.upper))  # outputs lie in the interval
    return round_up_double(min(cal.sensitivity * best + rounding, farthest))


# -- the coupled Laplace mechanism (docs/accuracy.md) ----------------------------------


@attrs.frozen(kw_only=True)
class LaplaceDistance:
    """Distance between coupled Laplace and snapping outputs (docs/accuracy.md), user units.

    Attributes
    ----------
    case : int
        1: no clamp binds; 2: only the inner clamp (the guess is outside the interval);
        3: only the outer clamp; 4: both.
    distance : float
        ``|M_L − M_S|`` for the given noise.
    bound : float or None
        The bound for the case: ``Δ·Λ/2`` (case 1), ``|f − B| + Δ·Λ/2`` (case 2);
        ``None`` for cases 3 and 4, which are unbounded.
    """

    case: int
    distance: float
    bound: float | None


def laplace_distance(mechanism: Calibrated, guess: Any, noise: Any) -> LaplaceDistance:
    """The distance cases for one coupled draw, for a *guess* of f(D).

    Couples the two mechanisms through the same noise ``Y`` (user units):
    ``M_L = f + Y`` and ``M_S = c + Δ·clamp_b(⌊clamp_b(t) + Y/Δ⌉_Λ)``, in exact real
    arithmetic.  (At the same nominal ε the Laplace scale differs from λ by the factor of
    :class:`~snapcore.analysis.LaplaceComparison` and the rounding of λ,
    relatively about 1e-35.)

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> laplace_distance(m, 4.0, 0.3)
    LaplaceDistance(case=1, distance=0.7, bound=1.0)
    """
    cal = calibration_of(mechanism)
    f = check_real("guess", guess)
    y = check_real("noise", noise)
    delta, c, b, g = cal.sensitivity, cal.centre, cal.unit_clamp_bound, cal.granularity
    t = (f - c) / delta
    inner = abs(t) > b
    x = max(-b, min(b, t))
    w = x + y / delta
    k = math.floor(w / g + Fraction(1, 2))
    z = k * g
    outer = abs(z) > b
    z = max(-b, min(b, z))
    m_s = c + delta * z
    m_l = f + y
    dist = abs(m_l - m_s)
    case = 1 + int(inner) + 2 * int(outer)
    bound: Fraction | None
    if case == 1:
        bound = delta * g / 2
    elif case == 2:
        bound = delta * (abs(t) - b) + delta * g / 2
    else:
        bound = None
    return LaplaceDistance(
        case=case,
        distance=float(dist),
        bound=None if bound is None else round_up_double(bound),
    )
