"""Parameter validation and the exact calibration of the mechanism (docs/semantics.md [S1]–[S3]).

Everything here is exact rational arithmetic plus the core's own p-bit rounding
(:mod:`snapcore.exact._dyadic`): the calibration does not depend on the backend, so every
backend starts from the same bits.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from snapcore._display import DOUBLE_DIGITS, short
from snapcore.data._values import (
    read_double,
    read_double_pair,
    read_real,
    type_name,
)
from snapcore.errors import ParameterError, parameter_name, show
from snapcore.exact._dyadic import Rounding, round_fraction, round_ratio, to_fraction

__all__ = [
    "MAX_GRID_POINTS_LOG2",
    "MAX_PRECISION",
    "MIN_PRECISION",
    "Calibration",
    "PrivacyAnalysis",
    "ReleaseParameters",
    "calibrate",
    "ceil_log2",
    "check_real",
    "derive_calibration",
    "parse_epsilon",
    "record_calibration",
    "required_precision",
]

#: The precision floor (docs/semantics.md [S0]).
MIN_PRECISION = 118
#: The largest working precision supported (the backends' exponent range is 2**30).
MAX_PRECISION = 1 << 20
#: Upper condition: the clamp bound may hold at most 2**52 grid steps (b <= 2**52 * Λ).
MAX_GRID_POINTS_LOG2 = 52


def check_real(name: str, value: Any, *, positive: bool = False) -> Fraction:
    """``value`` as an exact Fraction, or a ParameterError naming ``name``.

    The rule of :func:`snapcore.data.read_real` (docs/semantics.md, "Values that
    enter"): int, float, Fraction, Decimal, NumPy and gmpy2 numbers, read exactly;
    bool, NaN, ±inf, strings and anything else refused.
    """
    return read_real(name, value, positive=positive)


def ceil_log2(q: Fraction) -> int:
    """The least integer ``k`` with ``2**k >= q`` (``q > 0``), exactly."""
    n, d = q.numerator, q.denominator
    k = n.bit_length() - d.bit_length()
    # 2**(k-1) < n/d < 2**(k+1)
    if k >= 0:
        return k if n <= d << k else k + 1
    return k if n << -k <= d else k + 1


def required_precision(epsilon: Fraction, half_width_over_sensitivity: Fraction) -> int:
    """The precision docs/semantics.md [S0] requires: ``max(118, m + 2, ceil(log2 b) + 52)``.

    ``2**-m`` is the smallest power of two ``>= epsilon`` (so ``epsilon > 2η``), and the
    last term makes ``b·η <= 2**-52``.
    """
    m = -ceil_log2(epsilon)
    return max(MIN_PRECISION, m + 2, ceil_log2(half_width_over_sensitivity) + 52)


@attrs.frozen(kw_only=True, repr=False)
class PrivacyAnalysis:
    """The privacy claim a mechanism relies on, with its exact numbers.

    Its repr shows short decimals (the bound with the exact margin below ε); the
    attributes stay exact Fractions.

    Attributes
    ----------
    theorem : str
        The analysis used.
    epsilon : Fraction
        The ε the user asked for.
    bound : Fraction
        Mironov's bound ``ε′(1 + 12·b·η) + 2η`` evaluated exactly; ``bound <= epsilon``
        holds by construction.
    liu_bound : Fraction
        For comparison, the bound of Liu (2020) for its semantics,
        ``ε + 23·b·ε·η``.
    conditions : tuple of str
        The theorem's conditions and how they hold for these parameters.
    """

    theorem: str
    epsilon: Fraction
    bound: Fraction
    liu_bound: Fraction
    conditions: tuple[str, ...]

    def __repr__(self) -> str:
        margin = self.epsilon - self.bound
        return (
            f"PrivacyAnalysis(epsilon={short(self.epsilon)}, bound={short(self.bound)} "
            f"(epsilon - bound = {float(margin):.3g}), liu_bound={short(self.liu_bound)}, "
            f"theorem={self.theorem!r}, conditions={self.conditions!r})"
        )


@attrs.frozen(kw_only=True, cache_hash=True)
class Calibration:
    """The exact constants of one mechanism (all in sensitivity units unless noted).

    Attributes
    ----------
    precision : int
        ``p``; ``η = 2**-p``.
    lower, upper : Fraction
        The user's interval (exact doubles).
    centre : Fraction
        ``c = (lower + upper) / 2``.
    half_width : Fraction
        ``B = (upper - lower) / 2`` in the user's units.
    sensitivity : Fraction
        ``Δ``.
    epsilon : Fraction
        The requested ε.
    unit_clamp_bound_dyadic : tuple of int
        ``b = RN(B/Δ)`` as the dyadic pair ``(m, e)``, ``b = m·2**e``.
    epsilon_prime_dyadic : tuple of int
        ``ε′ = RZ((ε − 2η)/(1 + 12·b·η))`` as ``(m, e)``.
    scale_dyadic : tuple of int
        ``λ = RU(1/ε′)`` as ``(m, e)``.
    granularity_log2 : int
        ``L`` with ``Λ = 2**L`` the smallest power of two ``>= λ``.

    The properties :attr:`unit_clamp_bound`, :attr:`epsilon_prime`, :attr:`scale` and
    :attr:`granularity` give the same numbers as Fractions, under the names
    :class:`~snapcore.SnappingMechanism` uses.
    """

    precision: int
    lower: Fraction
    upper: Fraction
    centre: Fraction
    half_width: Fraction
    sensitivity: Fraction
    epsilon: Fraction
    unit_clamp_bound_dyadic: tuple[int, int]
    epsilon_prime_dyadic: tuple[int, int]
    scale_dyadic: tuple[int, int]
    granularity_log2: int

    @property
    def unit_clamp_bound(self) -> Fraction:
        """``b = RN(B/Δ)``, the clamp bound in sensitivity units."""
        return to_fraction(*self.unit_clamp_bound_dyadic)

    @property
    def epsilon_prime(self) -> Fraction:
        """``ε′``, the Laplace parameter actually used."""
        return to_fraction(*self.epsilon_prime_dyadic)

    @property
    def scale(self) -> Fraction:
        """``λ = RU(1/ε′)``, the noise scale in sensitivity units."""
        return to_fraction(*self.scale_dyadic)

    @property
    def granularity(self) -> Fraction:
        """``Λ`` (sensitivity units)."""
        return to_fraction(1, self.granularity_log2)

    def privacy(self) -> PrivacyAnalysis:
        """The privacy analysis these constants satisfy."""
        eta = Fraction(1, 1 << self.precision)
        eps_p = self.epsilon_prime
        b = self.unit_clamp_bound
        bound = eps_p * (1 + 12 * b * eta) + 2 * eta
        lam = self.scale
        return PrivacyAnalysis(
            theorem=(
                "Mironov (2012), Theorem 1 (snapping mechanism), with machine epsilon "
                f"eta = 2**-{self.precision} and every operation correctly rounded at "
                f"p = {self.precision} bits"
            ),
            epsilon=self.epsilon,
            bound=bound,
            liu_bound=self.epsilon + 23 * b * self.epsilon * eta,
            # short decimals for people (snapcore._display); the fields above are exact
            conditions=(
                f"epsilon > 2*eta: epsilon = {short(self.epsilon)} > 2**-{self.precision - 1}",
                f"b*eta <= 2**-52: b = {short(b)}, eta = 2**-{self.precision}",
                f"b <= 2**{MAX_GRID_POINTS_LOG2} * Lambda (every grid point an exact double; "
                f"implies Mironov's b < 2**(p-7) * lambda): b / Lambda = "
                f"{short(b / self.granularity)}",
                f"lambda = RU(1/epsilon') = {short(lam)}; b <= lambda is allowed "
                "(the mechanism stays private, mostly clamped)",
            ),
        )


def _exact_double(name: str, value: Any) -> Fraction:
    return read_double(name, value)


def derive_calibration(
    *,
    epsilon: Fraction,
    lower: Fraction,
    upper: Fraction,
    sensitivity: Fraction,
    precision: int,
) -> Calibration:
    """docs/semantics.md [S1]–[S3] for already validated exact parameters at ``precision``.

    ``b = RN(B/Δ)``, ``ε′ = RZ((ε − 2η)/(1 + 12·b·η))``, ``λ = RU(1/ε′)`` and
    ``Λ = 2**L``, the smallest power of two ``>= λ``.  No checks: :func:`calibrate`
    validates, chooses the precision and enforces the upper condition around it.
    """
    p = precision
    eta = Fraction(1, 1 << p)
    half = (upper - lower) / 2
    q = half / sensitivity
    b = round_ratio(q.numerator, q.denominator, p)
    bq = to_fraction(*b)
    eps_p = round_fraction((epsilon - 2 * eta) / (1 + 12 * bq * eta), p, Rounding.TOWARD_ZERO)
    m, e = lam = round_fraction(1 / to_fraction(*eps_p), p, Rounding.UP)
    return Calibration(
        precision=p,
        lower=lower,
        upper=upper,
        centre=(lower + upper) / 2,
        half_width=half,
        sensitivity=sensitivity,
        epsilon=epsilon,
        unit_clamp_bound_dyadic=b,
        epsilon_prime_dyadic=eps_p,
        scale_dyadic=lam,
        granularity_log2=e + m.bit_length() - (1 if m & (m - 1) == 0 else 0),
    )


def calibrate(
    *,
    epsilon: Any,
    sensitivity: Any = 1,
    clamp_bounds: Any = None,
    clamp_bound: Any = None,
    precision: Any = None,
) -> Calibration:
    """Validate the parameters and compute the exact calibration.

    Parameters
    ----------
    epsilon : real
        ε > 0, finite.
    sensitivity : real
        Δ > 0, finite.
    clamp_bounds : (lower, upper), optional
        Finite doubles with ``lower < upper``.  Exactly one of ``clamp_bounds`` and
        ``clamp_bound``.
    clamp_bound : real, optional
        A finite double ``B > 0``: the interval ``[-B, B]``.
    precision : int, optional
        Ask for at least this many bits; never fewer than required.

    Raises
    ------
    ParameterError
        On any invalid parameter; the message names it, its value and the valid range.
    """
    eps = check_real("epsilon", epsilon, positive=True)
    delta = check_real("sensitivity", sensitivity, positive=True)
    if (clamp_bounds is None) == (clamp_bound is None):
        raise ParameterError(
            "give exactly one of clamp_bounds=(lower, upper) and clamp_bound=B, got "
            f"clamp_bounds={show(clamp_bounds)}, clamp_bound={show(clamp_bound)}"
        )
    if clamp_bound is not None:
        bq = _exact_double("clamp_bound", clamp_bound)
        if bq <= 0:
            raise ParameterError(
                f"clamp_bound must be a finite number > 0, got {show(clamp_bound)}"
            )
        lower, upper = -bq, bq
    else:
        lower, upper = read_double_pair("clamp_bounds", clamp_bounds)
    half = (upper - lower) / 2
    need = required_precision(eps, half / delta)
    if need > MAX_PRECISION:
        ratio = short(half / delta, digits=DOUBLE_DIGITS)
        raise ParameterError(
            f"epsilon = {show(epsilon)} with B/sensitivity = {ratio} "
            f"needs a working precision of {need} bits; at most {MAX_PRECISION} is supported "
            "(epsilon must be > 2**-(2**20 - 2) and B/sensitivity < 2**(2**20 - 52))",
            parameter="epsilon",
        )
    if precision is None:
        p = need
    else:
        if isinstance(precision, bool | np.bool_) or not isinstance(precision, int | np.integer):
            raise ParameterError(
                f"precision must be an int >= {need}, got {type_name(precision)} {show(precision)}"
            )
        p = int(precision)
        if p < need:
            raise ParameterError(
                f"precision must be an int >= {need} for these parameters, got {show(p)}"
            )
        if p > MAX_PRECISION:
            raise ParameterError(f"precision must be an int <= {MAX_PRECISION}, got {show(p)}")
    eta = Fraction(1, 1 << p)
    if not eps > 2 * eta:  # guaranteed by the precision choice; kept as an invariant
        raise ParameterError(
            f"epsilon must be > 2**-{p - 1} at precision {p}, got {show(epsilon)}"
        )
    cal = derive_calibration(epsilon=eps, lower=lower, upper=upper, sensitivity=delta, precision=p)
    L = cal.granularity_log2
    if cal.unit_clamp_bound > Fraction(2) ** (MAX_GRID_POINTS_LOG2 + L):
        raise ParameterError(
            f"the clamp interval is too wide for epsilon = {show(epsilon)}: the half-width "
            "over the sensitivity, "
            f"B/sensitivity = {short(half / delta, digits=DOUBLE_DIGITS)}, must be <= "
            f"2**{MAX_GRID_POINTS_LOG2} * Lambda = 2**{MAX_GRID_POINTS_LOG2 + L} (Lambda = "
            f"2**{L}, the granularity for this epsilon), so that every output grid point is "
            "an exact double; narrow the clamp interval or lower epsilon",
            parameter="clamp_bounds",
        )
    return cal


@runtime_checkable
class ReleaseParameters(Protocol):
    """The public parameters of one released value, never its data: what a release
    record (:class:`~snapcore.Release`) carries and :func:`record_calibration` reads."""

    @property
    def clamp_bounds(self) -> tuple[float, float] | None:
        """The clamp interval ``(lower, upper)``; None when nothing was noised."""

    @property
    def epsilon_per_value(self) -> Fraction:
        """ε of the one value's release."""

    @property
    def sensitivity(self) -> Fraction:
        """Δ."""

    @property
    def precision(self) -> int | None:
        """The working precision p in bits; None for the default."""


def record_calibration(record: ReleaseParameters) -> Calibration:
    """The :class:`Calibration` of a release record, recomputed exactly from its public
    parameters (:class:`ReleaseParameters`), never its data.

    Raises
    ------
    ParameterError
        If the record has no clamp interval (nothing was noised).
    """
    if record.clamp_bounds is None:
        raise ParameterError(
            "this release record has no clamp interval (clamp_bounds is None), so it "
            "has no snapping accuracy"
        )
    return calibrate(
        epsilon=record.epsilon_per_value,
        sensitivity=record.sensitivity,
        clamp_bounds=tuple(record.clamp_bounds),
        precision=record.precision,
    )


def parse_epsilon(text: str) -> Fraction:
    """Read ``text`` (a decimal such as ``"0.2"`` or a fraction ``"1/5"``) exactly.

    ``"0.2"`` is 1/5, not the double nearest to it, so five spends of ``0.2`` fit a
    ledger of ε = 1.  The reader of ``--epsilon`` on the command line and of a
    ledger's ε.

    Raises
    ------
    ParameterError
        If ``text`` is not a finite decimal or fraction > 0.
    """
    try:
        q = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise ParameterError(
            f"{parameter_name('epsilon')} must be a decimal number or a fraction p/q, "
            f"got {text!r}",
            parameter="epsilon",
        ) from None
    if q <= 0:
        raise ParameterError(
            f"{parameter_name('epsilon')} must be > 0, got {text!r}", parameter="epsilon"
        )
    return q
