"""Approximate-DP accounting of the snapping mechanism as it runs (docs/budgets.md).

Two kinds of curves:

* **Exact pair curves** (:func:`pair_loss`, :func:`pair_curve`, :func:`phase_scan`):
  the privacy-loss distribution of one pair of inputs, from the exact output
  distributions the audit computes (:mod:`snapcore.analysis._audit`).  Exact, but for
  that pair only: the worst pair depends on the input's phase relative to the output
  grid and on the number of releases, so a pair curve is a *lower* reference for the
  worst case, never a charge.
* **Certified release curves** (:class:`ReleaseCurve`): upper bounds that hold for
  every neighbouring pair at once and for any number of releases.  ``"snapping"``:
  the output is a fixed monotone function of the exact sum ``x + N``
  (docs/semantics.md [S6]–[S9]), so the mechanism is a post-processing of binning
  ``x + N``; the bin masses of the implemented noise ``N`` are within a factor
  ``exp(±r)`` of those of an exact Laplace(λ) (:func:`rounding_slack`), and binned
  exact Laplace is a post-processing of the Laplace mechanism, whose pair
  ``(Lap(0, 1/ε), Lap(1, 1/ε))`` dominates it as ``λ >= 1/ε``.  ``"pure"``: the
  randomized-response pair, which dominates every ε-DP mechanism (Kairouz, Oh and
  Viswanath 2015).

:func:`compose` composes release curves into an ``(ε, δ)`` upper bound with
``dp-accounting``'s pessimistic privacy-loss distributions (``"pld"``) or with Rényi
divergences (``"rdp"``); ``dp-accounting`` is needed for ``"pld"``
(``pip install "snapcore[accounting]"``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs
import mpmath

from snapcore.calibration._params import Calibration, ceil_log2, check_real
from snapcore.errors import BackendUnavailableError, ParameterError
from snapcore.exact._ieee754 import round_down_double, round_up_double

if TYPE_CHECKING:
    from snapcore.analysis._audit import Auditable, ExactOutputDistribution

__all__ = [
    "ACCOUNTANTS",
    "CURVE_KINDS",
    "RDP_ORDERS",
    "RELEASE_SLACK",
    "ComposedGuarantee",
    "PairLoss",
    "ReleaseCurve",
    "compose",
    "pair_curve",
    "pair_loss",
    "phase_scan",
    "rounding_slack",
]

#: The accountants :func:`compose` knows.
ACCOUNTANTS = ("pld", "rdp")
#: The kinds of release curves.
CURVE_KINDS = ("snapping", "pure")
#: Rényi orders used by the ``"rdp"`` accountant.
RDP_ORDERS: tuple[float, ...] = (
    tuple(1 + x / 20 for x in range(1, 20))
    + tuple(2 + x / 4 for x in range(0, 40))
    + tuple(float(a) for a in range(12, 65, 2))
    + (96.0, 128.0, 192.0, 256.0, 512.0, 1024.0)
)
#: A bound on :func:`rounding_slack` for every calibration snapcore accepts
#: (``p >= 118`` and ``b <= 2**52·Λ``); proof in docs/budgets.md.
RELEASE_SLACK = Fraction(1, 1 << 60)
#: Discretisation of the pessimistic privacy-loss distributions.
DISCRETISATION = 1e-3
#: Relative and absolute margins added to floating-point results (they are rounded up).
_MARGIN = 2.0**-30


def _up(x: float) -> float:
    """``x`` raised by a margin that covers the floating-point error of its computation."""
    return x + abs(x) * _MARGIN + _MARGIN


def _up_mp(x: Any) -> float:
    """An mpmath number computed to 113 bits, as a double above it."""
    f = float(x)
    return math.nextafter(math.nextafter(f, math.inf), math.inf)


def rounding_slack(cal: Calibration) -> Fraction:
    """``r`` such that each output's probability is within ``exp(±r)`` of the ideal one.

    The ideal mechanism bins ``x + Ñ``, ``Ñ`` an exact Laplace(λ), into the same
    intervals as the implemented mechanism bins ``x + N`` (docs/budgets.md, "Why the
    snapping curve is sound").  With ``η = 2**-p`` and ``T = 2b + Λ`` (the largest
    distance between an input and a finite bin edge), ``ρ = 3ηT/λ + 4η`` bounds
    ``|ln P(N >= t) − ln(exp(−t/λ)/2)|`` for ``0 <= t <= T``; a bin at least ``0.9·λ``
    wide then has its mass within a relative ``3(e**ρ − 1)`` of the ideal one, so
    ``r = −ln(1 − 3(e**ρ − 1))``, rounded up.

    Raises
    ------
    ParameterError
        If the calibration is so coarse (tiny precision) that the bound does not apply.
    """
    eta = Fraction(1, 1 << cal.precision)
    b, lam, gran = cal.unit_clamp_bound, cal.scale, cal.granularity
    # Each finite bin edge is a threshold (k - 1/2)·Λ moved by at most half a unit in
    # the last place of p bits (its rounding midpoint), so widths shrink by at most
    # 2**(1-p)·(b + Λ); the check allows twice that.
    if gran - 2 * eta * 2 * (b + gran) < Fraction(9, 10) * lam:
        raise ParameterError("rounding_slack needs bins at least 0.9·lambda wide")
    rho = 3 * eta * (2 * b + gran) / lam + 4 * eta
    # e**rho - 1 <= rho + rho**2 for rho <= 1; -ln(1 - z) <= z + z**2 for z <= 1/2
    y = rho + rho * rho
    z = 3 * y
    if z > Fraction(1, 2):
        raise ParameterError("rounding_slack: the precision is too small for the bound")
    return Fraction(2) ** ceil_log2(z + z * z)  # a power of two above the bound


# ---------------------------------------------------------------------------------
# Certified release curves
# ---------------------------------------------------------------------------------


def _check_kind(instance: Any, attribute: Any, value: str) -> None:
    if value not in CURVE_KINDS:
        raise ParameterError(f"curve kind must be one of {CURVE_KINDS}, got {value!r}")


def _epsilon(value: Any) -> Fraction:
    return check_real("epsilon", value, positive=True)


def _dp_accounting() -> Any:
    try:
        from dp_accounting.pld import (  # type: ignore[import-untyped,unused-ignore]
            privacy_loss_distribution,
        )
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise BackendUnavailableError(
            "the 'pld' accountant needs dp-accounting: pip install 'snapcore[accounting]'"
        ) from None
    return privacy_loss_distribution


@attrs.frozen
class ReleaseCurve:
    """The certified privacy curve of one release, as a dominating pair.

    Parameters
    ----------
    kind : {"snapping", "pure"}
        ``"snapping"``: one snapping mechanism calibrated for ``epsilon`` (any clamp
        bound, sensitivity and precision snapcore accepts); dominated by the Laplace
        pair of scale ``1/epsilon`` up to ``RELEASE_SLACK``.  ``"pure"``: any
        ``epsilon``-DP release; dominated by randomized response.
    epsilon : Fraction
        The release's ε.
    """

    kind: str = attrs.field(validator=_check_kind)
    epsilon: Fraction = attrs.field(converter=_epsilon)

    @property
    def slack(self) -> Fraction:
        """``r``: probabilities are within ``exp(±r)`` of the dominating pair's post-processing."""
        return RELEASE_SLACK if self.kind == "snapping" else Fraction(0)

    def to_text(self) -> str:
        """``"kind:p/q"``, the form the ledger stores."""
        return f"{self.kind}:{self.epsilon.numerator}/{self.epsilon.denominator}"

    @classmethod
    def from_text(cls, text: str) -> ReleaseCurve:
        """The inverse of :meth:`to_text`; ParameterError on anything else."""
        kind, sep, eps = text.partition(":")
        num, sep2, den = eps.partition("/")
        if not (sep and sep2 and num.isdigit() and den.isdigit() and den != "0"):
            raise ParameterError(f"not a release curve 'kind:p/q': {text!r}")
        curve = cls(kind, Fraction(int(num), int(den)))
        if curve.to_text() != text:
            raise ParameterError(f"release curve {text!r} is not in canonical form")
        return curve

    def pld(self, *, value_discretization_interval: float = DISCRETISATION) -> Any:
        """The dominating pair as a pessimistic ``dp_accounting`` PrivacyLossDistribution.

        The slack ``r`` is not in it: :func:`compose` adds it (``ε + 2R`` at
        ``δ·(1 − 2R)`` for the total ``R``).
        """
        pld = _dp_accounting()
        if self.kind == "snapping":
            return pld.from_laplace_mechanism(
                round_down_double(1 / self.epsilon),
                sensitivity=1,
                pessimistic_estimate=True,
                value_discretization_interval=value_discretization_interval,
            )
        from dp_accounting.pld import common  # type: ignore[import-untyped,unused-ignore]

        params = common.DifferentialPrivacyParameters(round_up_double(self.epsilon), 0.0)
        return pld.from_privacy_parameters(
            params, value_discretization_interval=value_discretization_interval
        )

    def delta(self, epsilon: Any) -> float:
        """An upper bound on ``δ(ε)``, the hockey-stick divergence of one release.

        ``"snapping"``: ``e**r·(1 − exp((ε − 2r − ε_r)/2))`` with ``ε_r`` this curve's
        ε (the Laplace profile, then the slack), and 0 from ``ε_r`` on (the release
        is ``ε_r``-DP); ``"pure"``: randomized response's
        ``(e**ε_r − e**ε)/(1 + e**ε_r)``.  Rounded up.
        """
        e = check_real("epsilon", epsilon)
        if e < 0:
            raise ParameterError(f"epsilon must be >= 0, got {epsilon!r}", parameter="epsilon")
        if e >= self.epsilon:
            return 0.0
        ctx = mpmath.MPContext()
        ctx.prec = 113
        er = ctx.mpf(self.epsilon.numerator) / self.epsilon.denominator
        x = ctx.mpf(e.numerator) / e.denominator
        r = ctx.mpf(self.slack.numerator) / self.slack.denominator
        if self.kind == "snapping":
            d = ctx.exp(r) * max(ctx.mpf(0), 1 - ctx.exp((x - 2 * r - er) / 2))
        else:
            d = (ctx.exp(er) - ctx.exp(x)) / (1 + ctx.exp(er))
        return min(1.0, _up_mp(d))

    def epsilon_for_delta(self, delta: Any) -> float:
        """The least ε with :meth:`delta` ``(ε) <= delta`` for one release, rounded up.

        ``"snapping"``: ``ε_r + 2r + 2·ln(1 − δ·e**−r)``; ``"pure"``:
        ``ln(e**ε_r − δ(1 + e**ε_r))``; never below 0 nor above ``ε_r``.
        """
        d = _check_delta(delta)
        ctx = mpmath.MPContext()
        ctx.prec = 113
        er = ctx.mpf(self.epsilon.numerator) / self.epsilon.denominator
        r = ctx.mpf(self.slack.numerator) / self.slack.denominator
        dd = ctx.mpf(d)
        if self.kind == "snapping":
            e = er + 2 * r + 2 * ctx.log(1 - dd * ctx.exp(-r))
        else:
            inner = ctx.exp(er) - dd * (1 + ctx.exp(er))
            e = ctx.log(inner) if inner > 1 else ctx.mpf(0)
        return min(round_up_double(self.epsilon), max(0.0, _up_mp(e)))

    def renyi(self, orders: Sequence[float] = RDP_ORDERS) -> tuple[float, ...]:
        """Upper bounds on the Rényi divergence ``D_α`` of any neighbouring pair.

        ``"snapping"``: the Laplace divergence (Mironov 2017, ``1/λ = ε``) plus
        ``r(2α − 1)/(α − 1)``; ``"pure"``: randomized response's, capped by ε.
        """
        ctx = mpmath.MPContext()
        ctx.prec = 113
        e = ctx.mpf(self.epsilon.numerator) / self.epsilon.denominator
        r = ctx.mpf(self.slack.numerator) / self.slack.denominator
        out = []
        for a in orders:
            if not a > 1:
                raise ParameterError(f"Rényi orders must be > 1, got {a!r}")
            al = ctx.mpf(a)
            if self.kind == "snapping":
                s = al / (2 * al - 1) * ctx.exp((al - 1) * e) + (al - 1) / (2 * al - 1) * ctx.exp(
                    -al * e
                )
                d = ctx.log(s) / (al - 1) + r * (2 * al - 1) / (al - 1)
            else:
                p = ctx.exp(e) / (1 + ctx.exp(e))
                q = 1 - p
                s = p**al * q ** (1 - al) + q**al * p ** (1 - al)
                d = min(ctx.log(s) / (al - 1), e)
            out.append(_up(float(d)))
        return tuple(out)


@attrs.frozen(kw_only=True)
class ComposedGuarantee:
    """An ``(ε, δ)`` guarantee of several releases together.

    Attributes
    ----------
    epsilon : float
        An upper bound on the ε of the composition at ``delta`` (rounded up).
    delta : float
    accountant : str
        ``"pld"`` or ``"rdp"``.
    releases : int
        How many releases were composed.
    pure_epsilon : Fraction
        The sum of their ε (basic composition), exactly.
    """

    epsilon: float
    delta: float
    accountant: str
    releases: int
    pure_epsilon: Fraction


def check_accountant(accountant: Any) -> str:
    """``accountant`` if it is one of :data:`ACCOUNTANTS`; ParameterError otherwise."""
    if accountant not in ACCOUNTANTS:
        raise ParameterError(
            f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}", parameter="accountant"
        )
    return str(accountant)


def check_curve_kind(curve: Any) -> str:
    """``curve`` if it is one of :data:`CURVE_KINDS`; ParameterError otherwise."""
    if curve not in CURVE_KINDS:
        raise ParameterError(
            f"curve must be one of {CURVE_KINDS}, got {curve!r}", parameter="curve"
        )
    return str(curve)


def _check_delta(delta: Any) -> float:
    d = check_real("delta", delta)
    if not 0 < d < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}", parameter="delta")
    return round_down_double(d)


def _rdp_epsilon(total: Sequence[float], orders: Sequence[float], delta: float) -> float:
    # Canonne, Kamath and Steinke (2020), Prop. 12 (also Asoodeh et al. 2021).
    best = math.inf
    for d, a in zip(total, orders, strict=True):
        eps = d + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)
        best = min(best, eps)
    return max(0.0, best)


def compose(
    curves: Iterable[ReleaseCurve],
    delta: Any,
    *,
    accountant: str = "pld",
    value_discretization_interval: float = DISCRETISATION,
) -> ComposedGuarantee:
    """An upper bound on the ε at ``delta`` of all ``curves`` composed.

    Parameters
    ----------
    curves : iterable of ReleaseCurve
    delta : real in (0, 1)
    accountant : {"pld", "rdp"}
        ``"pld"``: ``dp-accounting``'s pessimistic privacy-loss distributions
        (Meiser and Mohammadi 2018; Doroshenko et al. 2022), composed by FFT;
        ``"rdp"``: the sum of Rényi divergences at ``RDP_ORDERS``, converted by
        Canonne, Kamath and Steinke (2020).
    value_discretization_interval : float
        The PLD's grid of privacy losses (coarser is faster and looser, never unsound).

    Returns
    -------
    ComposedGuarantee
        Never more than the pure sum: ``epsilon`` is capped by it (basic composition
        holds with δ = 0).

    Examples
    --------
    >>> from snapcore.analysis._accounting import ReleaseCurve, compose
    >>> g = compose([ReleaseCurve("snapping", 1)] * 100, 1e-6)
    >>> 70 < g.epsilon < 75 < 100 == g.pure_epsilon
    True
    """
    accountant = check_accountant(accountant)
    d = _check_delta(delta)
    counts = Counter(curves)
    for c in counts:
        if not isinstance(c, ReleaseCurve):
            raise ParameterError(f"curves must be ReleaseCurve objects, got {type(c).__name__}")
    n = sum(counts.values())
    pure = sum((c.epsilon * k for c, k in counts.items()), Fraction(0))
    slack = sum((c.slack * k for c, k in counts.items()), Fraction(0))
    if n == 0:
        return ComposedGuarantee(
            epsilon=0.0, delta=d, accountant=accountant, releases=0, pure_epsilon=pure
        )
    if accountant == "pld":
        total = None
        for c, k in sorted(counts.items(), key=lambda ck: (ck[0].kind, ck[0].epsilon)):
            one = c.pld(value_discretization_interval=value_discretization_interval)
            part = one.self_compose(k) if k > 1 else one
            total = part if total is None else total.compose(part)
        assert total is not None
        # Probabilities within exp(±R) of a pair dominated by the composed PLD:
        # delta(eps) <= e**R · delta_PLD(eps − 2R) (docs/budgets.md).
        d_in = d * (1 - 2 * float(slack) - 2**-40)
        eps = _up(float(total.get_epsilon_for_delta(d_in))) + round_up_double(2 * slack)
    else:
        orders = RDP_ORDERS
        sums = [0.0] * len(orders)
        for c, k in counts.items():
            for i, v in enumerate(c.renyi(orders)):
                sums[i] += k * v
        eps = _up(_rdp_epsilon([_up(s) for s in sums], orders, d))
    return ComposedGuarantee(
        epsilon=min(eps, round_up_double(pure)),
        delta=d,
        accountant=accountant,
        releases=n,
        pure_epsilon=pure,
    )


# ---------------------------------------------------------------------------------
# Exact pair curves, from the audit
# ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PairLoss:
    """The exact privacy-loss distributions of one pair of inputs, both ways.

    Attributes
    ----------
    outputs : tuple of float
        Every output possible under either input.
    p, q : tuple of Fraction
        ``P(o | value)`` and ``P(o | neighbour)`` for each output, exactly.
    """

    outputs: tuple[float, ...]
    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]

    def losses(self) -> tuple[tuple[Fraction, Fraction], ...]:
        """``(P/Q, P)``: the privacy-loss distribution of value against neighbour,
        with each loss ``ln(P/Q)`` kept as its exact ratio (None ratios excluded)."""
        return tuple((a / b, a) for a, b in zip(self.p, self.q, strict=True) if a and b)

    def hockey_stick(self, epsilon: Any) -> float:
        """``max`` over both orders of ``Σ_o (P(o) − e**ε Q(o))⁺``, to 300 bits (the
        worst loss is within about ``2**-110`` of ε, so fewer bits could not tell)."""
        ctx = mpmath.MPContext()
        ctx.prec = 300
        e = check_real("epsilon", epsilon)
        w = ctx.exp(ctx.mpf(e.numerator) / e.denominator)
        best = ctx.mpf(0)
        for a, b in ((self.p, self.q), (self.q, self.p)):
            s = ctx.fsum(
                max(ctx.mpf(0), ctx.mpf(x.numerator) / x.denominator - w * y)
                for x, y in zip(a, b, strict=True)
            )
            best = max(best, s)
        return float(best)

    def renyi(self, orders: Sequence[float] = RDP_ORDERS) -> tuple[float, ...]:
        """``max`` over both orders of ``D_α(P‖Q)`` at each order, to 100 bits."""
        ctx = mpmath.MPContext()
        ctx.prec = 100
        ps = [ctx.mpf(x.numerator) / x.denominator for x in self.p]
        qs = [ctx.mpf(x.numerator) / x.denominator for x in self.q]
        out = []
        for a in orders:
            al = ctx.mpf(a)
            best = -ctx.inf
            for u, v in ((ps, qs), (qs, ps)):
                s = ctx.fsum(x**al * y ** (1 - al) for x, y in zip(u, v, strict=True) if x)
                best = max(best, ctx.log(s) / (al - 1))
            out.append(float(best))
        return tuple(out)

    def pld(self, *, pessimistic: bool = True, value_discretization_interval: float = 1e-4) -> Any:
        """Both directions as a ``dp_accounting`` PrivacyLossDistribution, from the two
        exact pmfs (``from_two_probability_mass_functions``)."""
        pld = _dp_accounting()
        lp = {o: _ln(x) for o, x in zip(self.outputs, self.p, strict=True) if x}
        lq = {o: _ln(x) for o, x in zip(self.outputs, self.q, strict=True) if x}
        return pld.from_two_probability_mass_functions(
            lq,
            lp,
            pessimistic_estimate=pessimistic,
            value_discretization_interval=value_discretization_interval,
            symmetric=False,
        )


def _ln(x: Fraction) -> float:
    return math.log(x.numerator) - math.log(x.denominator)


def pair_loss(p: ExactOutputDistribution, q: ExactOutputDistribution) -> PairLoss:
    """The :class:`PairLoss` of two exact output distributions (from the audit)."""
    dp, dq = p.as_dict(), q.as_dict()
    outs = tuple(sorted(set(dp) | set(dq)))
    zero = Fraction(0)
    return PairLoss(
        outputs=outs,
        p=tuple(dp.get(o, zero) for o in outs),
        q=tuple(dq.get(o, zero) for o in outs),
    )


def pair_curve(mechanism: Auditable, value: Any, neighbour: Any, **kwargs: Any) -> PairLoss:
    """Audit ``value`` and ``neighbour`` (the machinery of :func:`snapcore.audit`) and
    return their exact :class:`PairLoss`."""
    from snapcore.analysis._audit import exact_output_distribution

    return pair_loss(
        exact_output_distribution(mechanism, value, **kwargs),
        exact_output_distribution(mechanism, neighbour, **kwargs),
    )


def phase_scan(
    mechanism: Auditable, phases: Iterable[Any], *, centre: Any = 0, **kwargs: Any
) -> tuple[tuple[Fraction, PairLoss], ...]:
    """The exact pair curves of ``(c + φ·Δ, c + (φ + 1)·Δ)`` for each phase ``φ``.

    ``φ`` is in sensitivity units relative to the grid point ``centre`` (user units);
    phases between 0 and ``Λ`` cover the positions relative to the output grid.  Each
    curve is exact for its pair, so the worst of them is a *lower* bound on the worst
    case (docs/budgets.md).
    """
    cal = mechanism.calibration
    c = check_real("centre", centre)
    out = []
    for ph in phases:
        f = check_real("phase", ph)
        v = c + f * cal.sensitivity
        out.append((f, pair_curve(mechanism, v, v + cal.sensitivity, **kwargs)))
    return tuple(out)
