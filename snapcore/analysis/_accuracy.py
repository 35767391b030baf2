"""Utility of the snapping mechanism: accuracy, ε from accuracy, bias, Laplace comparison.

docs/accuracy.md explains every formula.  Everything is in the user's units unless a name
says otherwise; internally the mechanism works in sensitivity units (values divided by Δ
and centred on the interval's midpoint ``c``).

Two kinds of numbers live here:

* **Guarantees** — :func:`accuracy`, :func:`plan_accuracy` and
  :func:`epsilon_for_accuracy`.  They never look at data, so they may be published, and
  they are *rigorous upper bounds* for the implemented mechanism, not only for its real
  number idealisation: every step is exact rational arithmetic except one logarithm,
  which MPFR rounds upward, and the last step rounds upward to a double.  The bound also
  covers the p-bit roundings of the pipeline and the final rounding of the output to a
  double (see :func:`accuracy_details`).

* **Estimates for a guess** — :func:`bias`, :func:`guess_accuracy`,
  :func:`ideal_output_distribution` and :func:`laplace_distance`.  They take a user's *guess*
  of f(D), never the data: the answer depends on f(D), so computing it from the real
  value and publishing it would leak f(D) (asking for it at many candidate values and
  reading off where it changes would recover f(D) outright).  They describe the ideal
  mechanism (real-valued Laplace noise, then exact snapping and clamping) and are
  computed with 256-bit MPFR arithmetic, then rounded to doubles.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import attrs
import gmpy2

from snapcore.calibration._clamp import choose_clamp_bounds, ln_upper, round_up_double
from snapcore.calibration._guarantee import Accuracy, calibration_accuracy, check_probability
from snapcore.calibration._params import Calibration, calibrate, check_real, record_calibration
from snapcore.data._columns import as_dataset
from snapcore.errors import ParameterError, parameter_name
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import check_data_bounds, resolve_relation

__all__ = [
    "Bias",
    "IdealOutputDistribution",
    "LaplaceComparison",
    "LaplaceDistance",
    "StatisticPlan",
    "accuracy",
    "accuracy_details",
    "bias",
    "bound_for_gamma",
    "clamp_probability",
    "compare_with_laplace",
    "epsilon_for_accuracy",
    "guess_accuracy",
    "ideal_output_distribution",
    "laplace_distance",
    "plan_accuracy",
    "plan_calibration",
    "plan_statistic",
]

#: Working precision of the estimates for a guess (bits).
ESTIMATE_PRECISION = 256


# -- small exact helpers -------------------------------------------------------------


def _calibration_of(obj: Any) -> Calibration:
    """The :class:`Calibration` of a mechanism, a calibration, anything carrying one, or
    a release record.

    A release record is anything with ``clamp_bounds`` (lower, upper),
    ``epsilon_per_value``, ``sensitivity`` and ``precision`` attributes (the public
    parameters of one released value, never its data); its calibration is recomputed
    from them exactly.
    """
    if isinstance(obj, Calibration):
        return obj
    cal = getattr(obj, "calibration", None)
    if isinstance(cal, Calibration):
        return cal
    record_fields = ("clamp_bounds", "epsilon_per_value", "sensitivity", "precision")
    if all(hasattr(obj, f) for f in record_fields):
        return record_calibration(obj)
    raise ParameterError(
        "expected a SnappingMechanism, a Calibration, an object with a .calibration "
        f"attribute or a release record, got {type(obj).__name__} {obj!r}"
    )


# -- accuracy (data-independent, the guarantee) ------------------------------------


def accuracy_details(mechanism: Any, alpha: Any) -> Accuracy:
    """The accuracy guarantee of a mechanism at confidence ``alpha``, with its parts.

    Parameters
    ----------
    mechanism : SnappingMechanism, Calibration or release record
        Anything with a :class:`~snapcore.calibration._params.Calibration`.
    alpha : real
        α in (0, 1).

    Returns
    -------
    Accuracy
        ``bound`` is the guarantee; the derivation is in
        :func:`snapcore.calibration._guarantee.calibration_accuracy`.

    Raises
    ------
    ParameterError
        If ``alpha`` is not in (0, 1).

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    >>> acc = accuracy_details(m, 0.05)
    >>> round(acc.bound, 6), round(acc.nominal, 6)
    (3.995732, 3.995732)
    """
    return calibration_accuracy(_calibration_of(mechanism), alpha)


def accuracy(mechanism: Any, alpha: Any) -> float:
    """The accuracy ``a`` of a mechanism at confidence ``alpha`` .

    For every f(D) in the mechanism's interval, ``P(|output - f(D)| > a) <= alpha``.
    ``a = (ln(1/α)/ε′ + Λ/2)·Δ``, capped at the interval's width ``2B``, plus terms of
    relative size about ``2**-53`` that make it a rigorous upper bound for the
    implemented (not only the ideal) mechanism; see :func:`accuracy_details`.  It does
    not depend on data, so it can be published.

    Parameters
    ----------
    mechanism : SnappingMechanism or Calibration
    alpha : real
        α in (0, 1).

    Returns
    -------
    float
        ``a`` in the user's units, rounded upward.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=0.5, clamp_bounds=(0.0, 10.0))
    >>> round(accuracy(m, 0.05), 4)
    7.9915
    """
    return accuracy_details(mechanism, alpha).bound


# -- planning without data --------------------------------------------------------------


def bound_for_gamma(b_prime: Any, *, epsilon: Any, gamma: Any, sensitivity: Any = 1) -> float:
    """The clamp bound B chosen from B′ and γ (docs/bounds-and-gamma.md), in the user's units.

    ``B = B′ + Δ·(k/2)·(1 + 2·ln(1/γ))`` with ``k = (2 + 24·2**-52)/(ε − 2**-117)``, so
    that the clamp binds with probability at most γ when ``|f(D)| <= B′``.  The logarithm
    is rounded upward and the result rounded upward to a double (a larger B only makes
    the clamp bind less often).

    Parameters
    ----------
    b_prime : real
        B′ >= 0: the largest ``|f(D)|`` the data bounds allow (user units).
    epsilon : real
        ε > 2**-117.
    gamma : real
        γ in (0, 1].
    sensitivity : real
        Δ > 0.

    Examples
    --------
    >>> bound_for_gamma(100.0, epsilon=1.0, gamma=0.05) > 100.0 + 6.99
    True
    """
    bp = check_real("b_prime", b_prime)
    if bp < 0:
        raise ParameterError(
            f"{parameter_name('b_prime')} must be a finite number >= 0, got {b_prime!r}",
            parameter="b_prime",
        )
    eps = check_real("epsilon", epsilon, positive=True)
    if eps <= Fraction(1, 1 << 117):
        raise ParameterError(
            f"{parameter_name('epsilon')} must be > 2**-117 to choose B from gamma, got "
            f"{epsilon!r}",
            parameter="epsilon",
        )
    g = check_real("gamma", gamma)
    if not 0 < g <= 1:
        raise ParameterError(
            f"{parameter_name('gamma')} must be a finite number in (0, 1], got {gamma!r}",
            parameter="gamma",
        )
    delta = check_real("sensitivity", sensitivity, positive=True)
    k = (2 + Fraction(24, 1 << 52)) / (eps - Fraction(1, 1 << 117))
    ln_up = ln_upper(1 / g)
    return round_up_double(bp + delta * k / 2 * (1 + 2 * ln_up))


@attrs.frozen(kw_only=True)
class StatisticPlan:
    """What a release of a statistic would use, found without data
    (:func:`plan_statistic`).

    Attributes
    ----------
    epsilon : Fraction
        ε per released value (the release's ε times the statistic's budget share).
    sensitivity : Fraction
        Δ.
    value_range : tuple of Fraction
        ``(lo, hi)``, the range of the statistic's value; B′ is half its width.
    """

    epsilon: Fraction
    sensitivity: Fraction
    value_range: tuple[Fraction, Fraction]


def plan_statistic(
    statistic: Any,
    *,
    epsilon: Any,
    n: Any,
    data_bounds: Any = None,
    relation: Any = None,
    options: dict[str, Any] | None = None,
) -> StatisticPlan:
    """ε per value, Δ and the value range ``snapcore.release`` would use for
    ``statistic``, without data.

    A statistic plugin computes Δ, the range of f and the budget share from the data
    bounds, n and the neighbouring relation only; ``prepare`` is run on ``n``
    *placeholder* records (each at the lower data bound, the first bin edge or the first
    category), which are public, so nothing private is touched.

    >>> p = plan_statistic("mean", epsilon=1, n=442, data_bounds=(0, 100))
    >>> p.sensitivity, p.value_range
    (Fraction(50, 221), (Fraction(0, 1), Fraction(100, 1)))
    """
    options = dict(options or {})
    stat = resolve_statistic(statistic)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ParameterError(
            f"{parameter_name('n')} must be an int >= 1 to plan a release, got {n!r}",
            parameter="n",
        )
    rel = resolve_relation(stat, relation)
    db = check_data_bounds(data_bounds, stat)
    # (empty or invalid categories/bins are left for prepare to refuse, with its message)
    cats = list(options.get("categories") or [])
    edges = list(options.get("bins") or [])
    if cats:
        fill: list[Any] = [cats[0]]
    elif edges:
        fill = [edges[0]]
    elif db is not None:
        fill = [lo for lo, _ in db]
    else:
        fill = [0.0] * max(stat.columns, 1)
    count = int(n)
    rows: Any = [fill[0]] * count if len(fill) == 1 else [list(fill)] * count
    ds = as_dataset(rows, columns=stat.columns)
    prep = stat.prepare(ds, data_bounds=db, n=count, relation=rel, **options)
    if prep.sensitivity == 0:
        raise ParameterError(
            f"statistic {stat.name!r} has sensitivity 0 under {rel.value!r}: it is released "
            "exactly, with no noise and no accuracy loss"
        )
    eps_each = check_real("epsilon", epsilon, positive=True) * prep.epsilon_share
    lo, hi = prep.value_range
    return StatisticPlan(
        epsilon=eps_each,
        sensitivity=Fraction(prep.sensitivity),
        value_range=(Fraction(lo), Fraction(hi)),
    )


def _plan_statistic(
    statistic: Any,
    *,
    epsilon: Any,
    gamma: Any,
    n: Any,
    data_bounds: Any,
    relation: Any,
    options: dict[str, Any],
) -> Calibration:
    """The calibration ``snapcore.release`` would use for ``statistic``, without data:
    :func:`plan_statistic`, then the clamp interval chosen exactly as a release does."""
    plan = plan_statistic(
        statistic,
        epsilon=epsilon,
        n=n,
        data_bounds=data_bounds,
        relation=relation,
        options=options,
    )
    choice = choose_clamp_bounds(plan.value_range, plan.sensitivity, plan.epsilon, gamma)
    return calibrate(
        epsilon=plan.epsilon,
        sensitivity=plan.sensitivity,
        clamp_bounds=(choice.lower, choice.upper),
    )


def plan_calibration(
    *,
    epsilon: Any,
    sensitivity: Any = 1,
    clamp_bounds: Any = None,
    clamp_bound: Any = None,
    b_prime: Any = None,
    value_range: Any = None,
    gamma: Any = None,
    centre: Any = 0,
    statistic: Any = None,
    n: Any = None,
    data_bounds: Any = None,
    relation: Any = None,
    options: dict[str, Any] | None = None,
) -> Calibration:
    """The calibration a planned release would use, without any data.

    Give exactly one way to fix the clamp interval: ``clamp_bounds=(lower, upper)``,
    ``clamp_bound=B``, ``b_prime=B′`` with ``gamma`` (interval ``centre ± B`` with B from
    :func:`bound_for_gamma`), ``value_range=(lo, hi)`` with ``gamma`` (the statistic's
    range widened by the margin ``M = Δ·(k/2)(1 + 2 ln(1/γ))`` on each side,
    rounded outward; same clamp guarantee, never wider than the ``b_prime`` form), or
    ``statistic`` with ``n``, ``gamma`` and (for bounded statistics) ``data_bounds``,
    optionally ``relation`` and the statistic's ``options`` (a dict): then Δ, the
    value range, the budget share and the clamp interval are exactly those
    ``snapcore.release`` would use, found without data (see ``docs/accuracy.md``), and
    ``epsilon`` is the release's total ε.

    Examples
    --------
    >>> cal = plan_calibration(epsilon=1.0, value_range=(0.0, 100.0), gamma=0.05)
    >>> float(cal.lower) < 0.0 and float(cal.upper) > 100.0
    True

    Raises
    ------
    ParameterError
        On invalid or conflicting parameters.
    """
    ways = sum(x is not None for x in (clamp_bounds, clamp_bound, b_prime, value_range, statistic))
    if ways != 1:
        raise ParameterError(
            "give exactly one of clamp_bounds=(lower, upper), clamp_bound=B, b_prime=B' or "
            "value_range=(lo, hi) (with gamma), and statistic= (with n, data_bounds, "
            f"gamma); got clamp_bounds={clamp_bounds!r}, clamp_bound={clamp_bound!r}, "
            f"b_prime={b_prime!r}, "
            f"value_range={value_range!r}, statistic={statistic!r}"
        )
    if value_range is not None:
        if gamma is None:
            raise ParameterError("value_range= needs gamma= (the probability the clamp binds)")
        if isinstance(value_range, str | bytes) or len(value_range) != 2:
            raise ParameterError(f"value_range must be a pair (lo, hi), got {value_range!r}")
        lo_q = check_real("value_range[0]", value_range[0])
        hi_q = check_real("value_range[1]", value_range[1])
        if not lo_q <= hi_q:
            raise ParameterError(f"value_range must satisfy lo <= hi, got {value_range!r}")
        # The margin M = Δ·(k/2)(1 + 2 ln(1/γ)) on each side: bound_for_gamma(0) = M.
        margin = Fraction(
            bound_for_gamma(0, epsilon=epsilon, gamma=gamma, sensitivity=sensitivity)
        )
        lo_d, hi_d = -round_up_double(margin - lo_q), round_up_double(hi_q + margin)
        return calibrate(epsilon=epsilon, sensitivity=sensitivity, clamp_bounds=(lo_d, hi_d))
    if statistic is not None:
        if gamma is None or n is None:
            raise ParameterError(
                "statistic= needs n= (the public number of records) and gamma=; and "
                "data_bounds= when the statistic reads bounded values"
            )
        return _plan_statistic(
            statistic,
            epsilon=epsilon,
            gamma=gamma,
            n=n,
            data_bounds=data_bounds,
            relation=relation,
            options=dict(options or {}),
        )
    if b_prime is not None:
        if gamma is None:
            raise ParameterError("b_prime= needs gamma= (the probability that the clamp binds)")
        big_b = bound_for_gamma(b_prime, epsilon=epsilon, gamma=gamma, sensitivity=sensitivity)
        c = float(check_real("centre", centre))
        if c == 0:
            return calibrate(epsilon=epsilon, sensitivity=sensitivity, clamp_bound=big_b)
        lo, hi = c - big_b, c + big_b
        if Fraction(hi) - Fraction(c) < Fraction(big_b):  # keep at least B on each side
            hi = math.nextafter(hi, math.inf)
        if Fraction(c) - Fraction(lo) < Fraction(big_b):
            lo = math.nextafter(lo, -math.inf)
        return calibrate(epsilon=epsilon, sensitivity=sensitivity, clamp_bounds=(lo, hi))
    if gamma is not None:
        raise ParameterError("gamma= applies only with b_prime=, value_range= or statistic=")
    return calibrate(
        epsilon=epsilon,
        sensitivity=sensitivity,
        clamp_bounds=clamp_bounds,
        clamp_bound=clamp_bound,
    )


def plan_accuracy(alpha: Any, **plan: Any) -> float:
    """The accuracy a planned release would have, before any data is touched.

    Parameters
    ----------
    alpha : real
        α in (0, 1).
    **plan
        Keyword arguments of :func:`plan_calibration` (``epsilon``, ``sensitivity`` and
        one way to fix the interval).

    Examples
    --------
    >>> round(plan_accuracy(0.05, epsilon=1.0, clamp_bounds=(0.0, 100.0)), 4)
    3.9957
    """
    return accuracy(plan_calibration(**plan), alpha)


# -- ε from accuracy -------------------------------------------------------------------


def _bits(x: float) -> int:
    import struct

    (i,) = struct.unpack("<q", struct.pack("<d", x))
    return int(i)


def _from_bits(i: int) -> float:
    import struct

    (x,) = struct.unpack("<d", struct.pack("<q", i))
    return float(x)


def epsilon_for_accuracy(target: Any, alpha: Any, **plan: Any) -> float:
    """The smallest ε (a double) whose accuracy at ``alpha`` is at most ``target``.

    Λ depends on ε, so a closed form for ε is circular; instead this searches ε
    exactly.  At the default precision the accuracy is a non-increasing step function of
    ε (ε′ is rounded toward zero, λ upward, Λ is the next power of two: each step is
    monotone), with a downward jump wherever λ crosses a power of two.  So bisection
    over the ordered doubles finds the least ε with ``accuracy(ε) <= target``; the result
    is checked: its accuracy is ``<= target`` and the next smaller double's is not.

    Only below ``ε = 2**-(p₀-1)`` (p₀ the precision at ε = 1) does the precision grow
    with 1/ε, which can make the *uncapped* formula jump upward; there the accuracy is
    always capped at ``2B`` (``Λ/2 >= 2**(p₀-2) > 2b``), so the capped accuracy stays
    monotone and the search is exact.

    Parameters
    ----------
    target : real
        The accuracy wanted, ``a > 0`` (user units).
    alpha : real
        α in (0, 1).
    **plan
        ``sensitivity`` and one way to fix the interval (:func:`plan_calibration`),
        without ``epsilon``.  With ``b_prime``/``gamma`` or ``statistic``, B grows as ε
        shrinks; the search accounts for it.

    Returns
    -------
    float
        The least double ε achieving the target.

    Raises
    ------
    ParameterError
        If ``target >= 2B`` (every ε achieves it: the output always lies in the
        interval, so no budget needs spending on accuracy), or if ``target`` is below
        the best accuracy any admissible ε reaches (the message gives that floor: Λ
        cannot shrink below ``B/(Δ·2**52)``, because every output grid point must be an
        exact double, and ε is at most the largest double).

    Examples
    --------
    >>> eps = epsilon_for_accuracy(4.0, 0.05, clamp_bounds=(0.0, 100.0))
    >>> round(eps, 6)
    0.998577
    >>> plan_accuracy(0.05, epsilon=eps, clamp_bounds=(0.0, 100.0)) <= 4.0
    True
    """
    if "epsilon" in plan:
        raise ParameterError("epsilon_for_accuracy finds epsilon; do not pass epsilon=")
    a = check_real("target", target, positive=True)
    alpha_q = check_probability("alpha", alpha)

    def acc_at(eps: float) -> Fraction | None:
        """Accuracy at ε as an exact bound, or None when ε is inadmissible."""
        try:
            cal = plan_calibration(epsilon=eps, **plan)
        except ParameterError:
            return None
        return Fraction(accuracy(cal, alpha_q))

    # The smallest ε: any planning error other than "too wide" surfaces here.
    tiny = 2.0**-60
    cal_tiny = plan_calibration(epsilon=tiny, **plan)
    width = cal_tiny.upper - cal_tiny.lower
    gamma_plan = any(plan.get(k) is not None for k in ("b_prime", "value_range", "statistic"))
    if not gamma_plan and a >= width:
        raise ParameterError(
            f"target accuracy {float(a)!r} is at least the interval's width 2B = "
            f"{float(width)!r}: every epsilon > 0 achieves it (the output always lies in "
            "the interval); ask for a smaller target"
        )
    # Admissible ε form an interval (0, eps_max]: find eps_max.
    lo_bits, hi_bits = _bits(tiny), _bits(1.7976931348623157e308)
    if acc_at(_from_bits(hi_bits)) is None:
        while hi_bits - lo_bits > 1:
            mid = (lo_bits + hi_bits) // 2
            if acc_at(_from_bits(mid)) is None:
                hi_bits = mid
            else:
                lo_bits = mid
        eps_max = _from_bits(lo_bits)
    else:
        eps_max = _from_bits(hi_bits)
    floor = acc_at(eps_max)
    assert floor is not None
    if floor > a:
        raise ParameterError(
            f"no epsilon achieves accuracy {float(a)!r} at alpha = {float(alpha_q)!r}: the "
            f"best any admissible epsilon reaches is {float(floor)!r} (at epsilon = "
            f"{eps_max!r}); the granularity cannot shrink below B/(sensitivity*2**52), "
            "because every output grid point must be an exact double"
        )
    # The search needs acc(tiny) > a; for very wide intervals (B/Δ beyond ~2**60) the
    # answer can lie below 2**-60: step down until it does not.
    acc_tiny = acc_at(tiny)
    while acc_tiny is not None and acc_tiny <= a and tiny > 2.0**-900:
        tiny *= 2.0**-64
        acc_tiny = acc_at(tiny)
    if acc_tiny is None or acc_tiny <= a:  # pragma: no cover - needs B/Δ near 2**900
        raise ParameterError(
            f"target accuracy {float(a)!r} is reached even at epsilon = {tiny!r}: the "
            "interval's width bounds the error; ask for a smaller target"
        )
    lo_bits, hi_bits = _bits(tiny), _bits(eps_max)  # acc(lo) > a >= acc(hi)
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        am = acc_at(_from_bits(mid))
        if am is not None and am <= a:
            hi_bits = mid
        else:
            lo_bits = mid
    eps = _from_bits(hi_bits)
    below = acc_at(_from_bits(hi_bits - 1))
    got = acc_at(eps)
    if got is None or got > a or (below is not None and below <= a):  # pragma: no cover
        raise AssertionError("accuracy is not monotone in epsilon here; please report")
    return eps


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
        self._lam = _mp(ctx, cal.scale)

    def half_exp(self, u_q: Fraction) -> Any:
        """``½·e^{−|u|/λ}``: the Laplace tail beyond distance ``|u|``."""
        ctx = self.ctx
        return ctx.mul(0.5, ctx.exp(ctx.div(-abs(_mp(ctx, u_q)), self._lam)))

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
        r = ctx.exp(ctx.div(-_mp(ctx, g), self._lam))  # e^{-Λ/λ} <= 1/e
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
    mechanism: Any, guess: Any, *, window: int = 40
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
    cal = _calibration_of(mechanism)
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


def clamp_probability(mechanism: Any, guess: Any) -> float:
    """The probability that the output clamp binds, for a *guess* of f(D).

    ``P(|⌊x + Y⌉_Λ| > b)`` for the ideal mechanism: the snapped value falls outside the
    interval and is moved to an end.  With B chosen by :func:`bound_for_gamma` and
    ``|guess| <= B′`` it is at most γ (docs/bounds-and-gamma.md).  Takes a guess, never data.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> big_b = bound_for_gamma(10.0, epsilon=1.0, gamma=0.1)
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bound=big_b)
    >>> clamp_probability(m, 10.0) <= 0.1
    True
    """
    cal = _calibration_of(mechanism)
    ideal = _Ideal(cal, _guess_in_sensitivity_units(cal, guess))
    half = Fraction(1, 2)
    low = ideal.below((ideal.k1 - half) * ideal.grid)
    high = ideal.survival((ideal.k2 + half) * ideal.grid)
    return float(ideal.ctx.add(low, high))


# -- bias for a guess (docs/accuracy.md) --------------------------------------------------------


def _clamped_laplace_mean(cal: Calibration, x: Fraction, shift: Fraction) -> Any:
    """``E[clamp_b(x + Y)]``, ``Y ~ Laplace(shift, λ)``: ``−b + ∫_{−b}^{b} P(x+Y >= s) ds``."""
    ideal = _Ideal(cal, x, shift)
    ctx, lam = ideal.ctx, ideal._lam
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


def bias(mechanism: Any, guess: Any) -> Bias:
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
    cal = _calibration_of(mechanism)
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


def guess_accuracy(mechanism: Any, guess: Any, alpha: Any) -> float:
    """The data-dependent accuracy (docs/accuracy.md) for a *guess* of f(D).

    The least ``a`` with ``P(|output − guess| > a) <= alpha`` when f(D) equals the guess,
    for the ideal mechanism (real-valued Laplace noise, exact snapping and clamping),
    plus the rounding term of :func:`accuracy_details`.  Tighter than :func:`accuracy`
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
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> round(guess_accuracy(m, 5.0, 0.05), 6), round(accuracy(m, 0.05), 6)
    (2.0, 3.995732)
    >>> round(guess_accuracy(m, 10.0, 0.05), 6)
    3.0
    """
    cal = _calibration_of(mechanism)
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


# -- comparison with the Laplace mechanism (docs/accuracy.md) -------------------------


@attrs.frozen(kw_only=True)
class LaplaceComparison:
    """Accuracy of snapping and of the plain Laplace mechanism at the same nominal ε.

    Attributes
    ----------
    laplace : float
        ``Δ·ln(1/α)/ε``: the Laplace mechanism's accuracy (no clamp).
    snapping : float
        The snapping guarantee, :func:`accuracy`.
    factor : Fraction
        ``ε(1 + 12bη)/(ε − 2η)``: the noise inflation from redefining ε, exactly.
    formula : float
        The identity ``factor·laplace + Δ·Λ/2`` (uncapped, rounded to nearest).
    ratio : float
        ``snapping / laplace``.
    """

    laplace: float
    snapping: float
    factor: Fraction
    formula: float
    ratio: float


def compare_with_laplace(mechanism: Any, alpha: Any) -> LaplaceComparison:
    """Compare the snapping guarantee with the Laplace mechanism's at the same ε.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> c = compare_with_laplace(SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0)), 0.05)
    >>> round(c.laplace, 4), round(c.snapping, 4), round(c.ratio, 3)
    (2.9957, 3.9957, 1.334)
    """
    cal = _calibration_of(mechanism)
    al = check_probability("alpha", alpha)
    eta = Fraction(1, 1 << cal.precision)
    eps = cal.epsilon
    ln = math.log(1 / float(al))
    lap = float(cal.sensitivity) * ln / float(eps)
    factor = eps * (1 + 12 * cal.unit_clamp_bound * eta) / (eps - 2 * eta)
    snap = accuracy(cal, al)
    formula = float(factor) * lap + float(cal.sensitivity * cal.granularity / 2)
    return LaplaceComparison(
        laplace=lap,
        snapping=snap,
        factor=factor,
        formula=formula,
        ratio=snap / lap,
    )


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


def laplace_distance(mechanism: Any, guess: Any, noise: Any) -> LaplaceDistance:
    """The distance cases for one coupled draw, for a *guess* of f(D).

    Couples the two mechanisms through the same noise ``Y`` (user units):
    ``M_L = f + Y`` and ``M_S = c + Δ·clamp_b(⌊clamp_b(t) + Y/Δ⌉_Λ)``, in exact real
    arithmetic.  (At the same nominal ε the Laplace scale differs from λ by the factor of
    :class:`LaplaceComparison` and the rounding of λ, relatively about 1e-35.)

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    >>> laplace_distance(m, 4.0, 0.3)
    LaplaceDistance(case=1, distance=0.7, bound=1.0)
    """
    cal = _calibration_of(mechanism)
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
