"""The data-independent accuracy guarantee of a calibrated mechanism.

It depends on the :class:`~snapcore.Calibration` only (never on data), so the
mechanism, a release record and the planning functions of :mod:`snapcore.analysis._guarantees`
all compute it here.  Every step is exact rational arithmetic except one logarithm,
which MPFR rounds upward (:func:`snapcore.calibration._clamp.ln_upper`), and the result is rounded
upward to a double.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs

from snapcore.calibration._clamp import ln_upper
from snapcore.calibration._params import Calibration, check_real
from snapcore.errors import ParameterError
from snapcore.exact._ieee754 import round_up_double

__all__ = ["Accuracy", "calibration_accuracy", "check_probability"]

_TWO_M53 = Fraction(1, 1 << 53)


def check_probability(name: str, value: Any) -> Fraction:
    """``value`` as an exact Fraction in (0, 1), else a ParameterError naming ``name``."""
    q = check_real(name, value)
    if not 0 < q < 1:
        raise ParameterError(f"{name} must be a finite number in (0, 1), got {value!r}")
    return q


@attrs.frozen(kw_only=True)
class Accuracy:
    """A data-independent accuracy guarantee and its parts (user units).

    With probability at least ``1 - alpha``, ``|output - f(D)| <= bound`` for every
    f(D) inside the mechanism's interval.

    Attributes
    ----------
    alpha : Fraction
        The confidence parameter α.
    bound : float
        The guarantee ``a``: an upper bound, rounded upward to a double.
    nominal : float
        The textbook formula ``(ln(1/α)/ε′ + Λ/2)·Δ`` capped at ``2B``, rounded to nearest;
        ``bound`` exceeds it only by the rounding terms below.
    noise_term : Fraction
        ``Δ·(1+η)³·λ·(ln(1/α) + 2η)`` with ``ln`` rounded upward: the Laplace tail.
    snap_term : Fraction
        ``Δ·Λ/2``: the largest snapping error.
    rounding_term : Fraction
        ``Δ·η·(b + 3·B/Δ) + 2**-53·(max(|lower|, |upper|) + Δ·η·B/Δ)``: the p-bit
        roundings of centring, adding and clamping, and the output's rounding to a double.
    width : Fraction
        ``upper - lower = 2B``: the cap (output and f(D) both lie in the interval).
    capped : bool
        Whether the cap applied.
    """

    alpha: Fraction
    bound: float
    nominal: float
    noise_term: Fraction
    snap_term: Fraction
    rounding_term: Fraction
    width: Fraction
    capped: bool


def calibration_accuracy(cal: Calibration, alpha: Any) -> Accuracy:
    """The accuracy guarantee of a mechanism at confidence ``alpha``, with its parts.

    Parameters
    ----------
    cal : Calibration
        The mechanism's exact constants.
    alpha : real
        α in (0, 1).

    Returns
    -------
    Accuracy
        ``bound`` is the guarantee.

    Raises
    ------
    ParameterError
        If ``alpha`` is not in (0, 1).

    Notes
    -----
    Let ``t = (f(D) - c)/Δ`` with ``|t| <= β = B/Δ``.  The pipeline computes
    ``x = clamp_b(t)`` exactly (the bound also allows a rounded input
    ``x = clamp_b(RN(t))``, ``|x - t| <= η·β``), ``N = ±RN(λ·RN(ln U*))``
    (``|N| <= (1+η)²·λ·|ln U*|``), ``y = RN(x + N)`` (error ``<= η·(b + |N|)``),
    ``z = ⌊y⌉_Λ`` (error ``<= Λ/2``), ``z′ = clamp_b(z)`` (adds at most ``η·β``: clamping
    is 1-Lipschitz and ``|b - β| <= η·β``), then ``RN₅₃(c + Δ·z′)`` clamped to
    ``[lower, upper]`` (error ``<= 2**-53·|c + Δ·z′|``).  So
    ``|out - f(D)| <= Δ·(1+η)³·λ·|ln U*| + K`` with ``K`` the snap and rounding terms,
    and since ``P(U* <= u) = u + ulp_p(u) <= u·(1 + 2η)``,
    ``P(|out - f(D)| > a) <= α`` once ``a >= Δ·(1+η)³·λ·(ln(1/α) + 2η) + K``.

    Examples
    --------
    >>> from snapcore.calibration._params import calibrate
    >>> acc = calibration_accuracy(calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0)), 0.05)
    >>> round(acc.bound, 6), round(acc.nominal, 6)
    (3.995732, 3.995732)
    >>> acc.bound >= acc.nominal
    True
    """
    a = check_probability("alpha", alpha)
    eta = Fraction(1, 1 << cal.precision)
    delta = cal.sensitivity
    lam = cal.scale
    beta = cal.half_width / delta
    b = cal.unit_clamp_bound
    ln_up = ln_upper(1 / a)
    noise = delta * (1 + eta) ** 3 * lam * (ln_up + 2 * eta)
    snap = delta * cal.granularity / 2
    biggest = max(abs(cal.lower), abs(cal.upper))
    rounding = delta * eta * (b + 3 * beta) + _TWO_M53 * (biggest + delta * eta * beta)
    width = cal.upper - cal.lower
    total = noise + snap + rounding
    capped = total >= width
    eps_p = cal.epsilon_prime
    nominal = (math.log(1 / float(a)) / float(eps_p) + float(cal.granularity) / 2) * float(delta)
    return Accuracy(
        alpha=a,
        bound=round_up_double(width if capped else total),
        nominal=min(nominal, float(width)),
        noise_term=noise,
        snap_term=snap,
        rounding_term=rounding,
        width=width,
        capped=capped,
    )
