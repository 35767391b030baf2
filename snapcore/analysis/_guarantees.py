"""Accuracy guarantees and planning: data-independent numbers that may be published.

:func:`accuracy` (with its parts, :func:`accuracy_details`), :func:`plan_accuracy`,
:func:`epsilon_for_accuracy`, :func:`compare_with_laplace` and the planning functions
(:func:`plan_calibration`, :func:`plan_statistic`, :func:`bound_for_gamma`) never look
at data: they depend only on the public parameters of a release (ε, Δ, the clamp
interval, the precision, or what a statistic derives from its data bounds and ``n``),
so their answers may be published with the release.

The accuracy is a *rigorous upper bound* for the implemented mechanism, not only for
its real-number idealisation: every step is exact rational arithmetic except one
logarithm, which MPFR rounds upward, and the last step rounds upward to a double.  The
bound also covers the p-bit roundings of the pipeline and the final rounding of the
output to a double (see :func:`accuracy_details`).

Numbers that depend on f(D), and so must only ever be computed from a *guess*, are in
:mod:`snapcore.analysis._estimates`.  docs/accuracy.md explains every formula.
Everything is in the user's units unless a name says otherwise; internally the
mechanism works in sensitivity units (values divided by Δ and centred on the
interval's midpoint ``c``).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any, TypeAlias

import attrs

from snapcore.analysis._audit import Auditable
from snapcore.calibration._clamp import choose_clamp_bounds, ln_upper
from snapcore.calibration._guarantee import Accuracy, calibration_accuracy, check_probability
from snapcore.calibration._params import (
    Calibration,
    ReleaseParameters,
    calibrate,
    check_real,
    record_calibration,
)
from snapcore.data._columns import as_dataset
from snapcore.errors import ParameterError, parameter_name
from snapcore.exact._ieee754 import double_bits, double_from_bits, round_up_double
from snapcore.mechanism._mechanism import SnappingMechanism
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import check_data_bounds, resolve_relation

__all__ = [
    "LaplaceComparison",
    "StatisticPlan",
    "accuracy",
    "accuracy_details",
    "bound_for_gamma",
    "calibration_of",
    "compare_with_laplace",
    "epsilon_for_accuracy",
    "plan_accuracy",
    "plan_calibration",
    "plan_statistic",
]


# -- the mechanism's calibration -------------------------------------------------------


#: What the accuracy functions take: a mechanism (or a stand-in the audit accepts, such
#: as one at a tiny precision), its calibration, or the public parameters of one
#: release (a :class:`~snapcore.Release`).
Calibrated: TypeAlias = SnappingMechanism | Auditable | Calibration | ReleaseParameters


def calibration_of(obj: Calibrated) -> Calibration:
    """The :class:`Calibration` of a mechanism, a calibration, or a release record.

    A release record's calibration is recomputed exactly from its public parameters
    (:class:`~snapcore.calibration._params.ReleaseParameters`), never its data.
    """
    if isinstance(obj, Calibration):
        return obj
    if isinstance(obj, SnappingMechanism | Auditable):
        return obj.calibration
    if isinstance(obj, ReleaseParameters):
        return record_calibration(obj)
    raise ParameterError(
        "expected a SnappingMechanism, a Calibration or a release record, "
        f"got {type(obj).__name__} {obj!r}"
    )


# -- accuracy (data-independent, the guarantee) ------------------------------------


def accuracy_details(mechanism: Calibrated, alpha: Any) -> Accuracy:
    """The accuracy guarantee of a mechanism at confidence ``alpha``, with its parts.

    Parameters
    ----------
    mechanism : SnappingMechanism, Calibration or Release
        The mechanism, its calibration, or a release record.
    alpha : real
        α in (0, 1).

    Returns
    -------
    Accuracy
        ``bound`` is the guarantee; the derivation is in
        :func:`snapcore.calibration.calibration_accuracy`.

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
    return calibration_accuracy(calibration_of(mechanism), alpha)


def accuracy(mechanism: Calibrated, alpha: Any) -> float:
    """The accuracy ``a`` of a mechanism at confidence ``alpha`` .

    For every f(D) in the mechanism's interval, ``P(|output - f(D)| > a) <= alpha``.
    ``a = (ln(1/α)/ε′ + Λ/2)·Δ``, capped at the interval's width ``2B``, plus terms of
    relative size about ``2**-53`` that make it a rigorous upper bound for the
    implemented (not only the ideal) mechanism; see :func:`accuracy_details`.  It does
    not depend on data, so it can be published.

    Parameters
    ----------
    mechanism : SnappingMechanism, Calibration or Release
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
    integer_valued : bool
        Whether the statistic's values are whole numbers (the clamp interval is then put
        on the output grid, :func:`snapcore.calibration.choose_clamp_bounds`).
    """

    epsilon: Fraction
    sensitivity: Fraction
    value_range: tuple[Fraction, Fraction]
    integer_valued: bool = False


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
        integer_valued=stat.integer_valued,
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
    return calibration_of_plan(plan, plan.epsilon, gamma)


def calibration_of_plan(plan: StatisticPlan, epsilon: Any, gamma: Any) -> Calibration:
    """The calibration a release of ``plan``'s statistic would use with ``epsilon`` per
    value: the clamp interval chosen from γ at that ε, exactly as a release does (the
    interval's margin, hence the accuracy, depends on ε)."""
    eps = check_real("epsilon", epsilon, positive=True)
    choice = choose_clamp_bounds(
        plan.value_range, plan.sensitivity, eps, gamma, integral=plan.integer_valued
    )
    return calibrate(
        epsilon=eps,
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
    lo_bits, hi_bits = double_bits(tiny), double_bits(1.7976931348623157e308)
    if acc_at(double_from_bits(hi_bits)) is None:
        while hi_bits - lo_bits > 1:
            mid = (lo_bits + hi_bits) // 2
            if acc_at(double_from_bits(mid)) is None:
                hi_bits = mid
            else:
                lo_bits = mid
        eps_max = double_from_bits(lo_bits)
    else:
        eps_max = double_from_bits(hi_bits)
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
    lo_bits, hi_bits = double_bits(tiny), double_bits(eps_max)  # acc(lo) > a >= acc(hi)
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        am = acc_at(double_from_bits(mid))
        if am is not None and am <= a:
            hi_bits = mid
        else:
            lo_bits = mid
    eps = double_from_bits(hi_bits)
    below = acc_at(double_from_bits(hi_bits - 1))
    got = acc_at(eps)
    if got is None or got > a or (below is not None and below <= a):  # pragma: no cover
        raise AssertionError("accuracy is not monotone in epsilon here; please report")
    return eps


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


def compare_with_laplace(mechanism: Calibrated, alpha: Any) -> LaplaceComparison:
    """Compare the snapping guarantee with the Laplace mechanism's at the same ε.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> c = compare_with_laplace(SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0)), 0.05)
    >>> round(c.laplace, 4), round(c.snapping, 4), round(c.ratio, 3)
    (2.9957, 3.9957, 1.334)
    """
    cal = calibration_of(mechanism)
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
