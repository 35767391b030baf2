"""Approximate-DP accounting: exact pair curves, certified release curves, composition.

Independent routes: brute-force enumeration of a tiny mechanism (exact Fractions),
the exact Laplace law (mpmath at 200 bits), dp-accounting's own Laplace PLD, and the
pure sum as a ceiling.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from hypothesis import given, settings, strategies as st
from tiny_mechanism import TinyMechanism, brute_force

from snapcore import SnappingMechanism
from snapcore.analysis._accounting import (
    RDP_ORDERS,
    RELEASE_SLACK,
    ReleaseCurve,
    compose,
    pair_curve,
    phase_scan,
    rounding_slack,
)
from snapcore.analysis._audit import exact_output_distribution
from snapcore.errors import ParameterError

# ----------------------------------------------------------------------------------
# Exact pair curves against brute force (tiny precision)
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value, neighbour", [(0, 1), (Fraction(1, 3), Fraction(4, 3)), (8, 7)])
def test_pair_curve_is_the_brute_force_pair(value, neighbour):
    mech = TinyMechanism(epsilon=1, lower=-8, upper=8, precision=8)
    pl = pair_curve(mech, value, neighbour)
    a, b = brute_force(mech, value, 8), brute_force(mech, neighbour, 8)
    assert dict(zip(pl.outputs, pl.p, strict=True)) == a
    assert dict(zip(pl.outputs, pl.q, strict=True)) == b
    # Total variation (the hockey stick at 0) and D_2, exactly from the brute force.
    tv = sum(abs(a[o] - b[o]) for o in a) / 2
    assert pl.hockey_stick(0) == pytest.approx(float(tv), rel=1e-12)
    d2 = max(
        math.log(sum(a[o] ** 2 / b[o] for o in a)), math.log(sum(b[o] ** 2 / a[o] for o in a))
    )
    assert pl.renyi((2.0,))[0] == pytest.approx(d2, rel=1e-12)
    # The worst-case loss is where the hockey stick vanishes: 0 just above it, > 0 below.
    loss = max(math.log(x / y) for x, y in zip(pl.p, pl.q, strict=True))
    loss = max(loss, max(math.log(y / x) for x, y in zip(pl.p, pl.q, strict=True)))
    assert pl.hockey_stick(Fraction(loss) * (1 + Fraction(1, 10**9))) == 0
    assert pl.hockey_stick(Fraction(loss) * (1 - Fraction(1, 10**6))) > 0


# ----------------------------------------------------------------------------------
# The rounding lemma: each output within exp(±r) of binned exact Laplace
# ----------------------------------------------------------------------------------


def _mid_below(t: Fraction, p: int) -> Fraction:
    """The midpoint between the p-bit float t and the p-bit float below it."""
    n, d = abs(t).numerator, abs(t).denominator
    assert d & (d - 1) == 0  # dyadic
    e = n.bit_length() - p - (d.bit_length() - 1)
    m = abs(t) / Fraction(2) ** e
    assert m.denominator == 1 and m.numerator.bit_length() == p
    if t > 0:
        gap = Fraction(2) ** (e - 1) if m.numerator == 1 << (p - 1) else Fraction(2) ** e
    else:
        gap = Fraction(2) ** e
    return t - gap / 2


def _ideal(mech: TinyMechanism, x: Fraction) -> dict[float, mpmath.mpf]:
    """P(output) for x + exact Laplace(λ), binned at the mechanism's own edges."""
    cal = mech.calibration
    p, lam, gran, b = cal.precision, cal.scale, cal.granularity, cal.unit_clamp_bound
    mpmath.mp.prec = 200
    ml = mpmath.mpf(lam.numerator) / lam.denominator

    def surv(t: Fraction) -> mpmath.mpf:  # P(Laplace(λ) > t)
        tt = mpmath.mpf(t.numerator) / t.denominator
        return mpmath.exp(-tt / ml) / 2 if tt >= 0 else 1 - mpmath.exp(tt / ml) / 2

    jb = int(b / gran)
    assert jb * gran == b  # the test uses a clamp bound on the grid

    def up(j: int) -> mpmath.mpf:  # P(snap index >= j) = P(RN(x + N) >= (j - 1/2)Λ)
        return surv(_mid_below((j - Fraction(1, 2)) * gran, p) - x)

    out = {float(-b): 1 - up(-jb + 1), float(b): up(jb)}
    for j in range(-jb + 1, jb):
        out[float(j * gran)] = up(j) - up(j + 1)
    return out


@pytest.mark.parametrize("p", [10, 12])
@pytest.mark.parametrize("x", [0, Fraction(1, 3), Fraction(-7, 5), 2, 4, -4])
def test_output_masses_within_the_slack_of_binned_laplace(p, x):
    mech = TinyMechanism(epsilon=1, lower=-4, upper=4, precision=p)
    r = rounding_slack(mech.calibration)
    assert r < Fraction(1, 2)
    exact = exact_output_distribution(mech, x).as_dict()  # = brute force (test_audit)
    ideal = _ideal(mech, Fraction(x))
    assert set(exact) == set(ideal)
    worst = max(
        abs(mpmath.log(mpmath.mpf(q.numerator) / q.denominator / ideal[o]))
        for o, q in exact.items()
    )
    assert worst <= mpmath.mpf(r.numerator) / r.denominator
    assert worst > 0  # the rounding is visible at this precision: the check is not empty


def test_release_slack_covers_every_accepted_calibration():
    for eps in (2.0**-30, 0.01, 0.1, 1.0, 7.0, 2.0**20):
        for bound in (1e-3, 1.0, 1e6, 2.0**60):
            for sens in (1.0, 3.0):
                try:
                    mech = SnappingMechanism(epsilon=eps, clamp_bound=bound, sensitivity=sens)
                except ParameterError:
                    continue  # beyond the upper condition: not a calibration snapcore runs
                assert rounding_slack(mech.calibration) <= RELEASE_SLACK, (eps, bound, sens)


# ----------------------------------------------------------------------------------
# The certified curve dominates every audited pair
# ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def eps1_pairs():
    mech = SnappingMechanism(epsilon=1.0, clamp_bound=16.0)
    pairs = [pl for _, pl in phase_scan(mech, [Fraction(i, 8) for i in range(16)])]
    b = 16
    # at the clamp edges, beyond them, and inputs less than one sensitivity apart
    for v, w in ((b - 1, b), (-b, -b + 1), (b, b + 5), (Fraction(1, 3), Fraction(5, 6))):
        pairs.append(pair_curve(mech, v, w))
    return mech, pairs


def test_certified_profile_above_every_pair(eps1_pairs):
    _, pairs = eps1_pairs
    curve = ReleaseCurve("snapping", 1)
    for e in (0, Fraction(1, 10), Fraction(1, 2), Fraction(9, 10), Fraction(99, 100)):
        bound = curve.delta(e)
        worst = max(pl.hockey_stick(e) for pl in pairs)
        assert worst <= bound
        assert worst > 0.5 * bound  # and not far above the worst audited pair
    assert curve.delta(1) == 0 and all(pl.hockey_stick(1) == 0 for pl in pairs)


def test_certified_renyi_above_every_pair(eps1_pairs):
    _, pairs = eps1_pairs
    orders = RDP_ORDERS[::7]
    bound = ReleaseCurve("snapping", 1).renyi(orders)
    for pl in pairs:
        assert all(d <= u for d, u in zip(pl.renyi(orders), bound, strict=True))


def test_composition_of_certified_curve_above_worst_phase(eps1_pairs):
    _, pairs = eps1_pairs
    k, delta = 100, 1e-6
    lower = max(
        pl.pld(pessimistic=False, value_discretization_interval=1e-3)
        .self_compose(k)
        .get_epsilon_for_delta(delta)
        for pl in pairs
    )
    upper = compose([ReleaseCurve("snapping", 1)] * k, delta).epsilon
    rdp = compose([ReleaseCurve("snapping", 1)] * k, delta, accountant="rdp").epsilon
    assert lower <= upper <= rdp <= k
    assert upper < 1.1 * lower  # the worst phase is within 10% of the bound


def test_laplace_pld_is_an_upper_reference_far_from_the_clamp():
    # A wide clamp and phases of one grid step, far from its edges.
    mech = SnappingMechanism(epsilon=0.5, clamp_bound=64.0)
    lam = float(mech.calibration.scale)
    lap = dp_pld.from_laplace_mechanism(lam, sensitivity=1, value_discretization_interval=1e-3)
    lap10 = lap.self_compose(10)
    for _, pl in phase_scan(mech, [Fraction(i, 4) for i in range(0, 8)]):
        pair10 = pl.pld(pessimistic=False, value_discretization_interval=1e-3).self_compose(10)
        for delta in (1e-3, 1e-6):
            assert pair10.get_epsilon_for_delta(delta) <= lap10.get_epsilon_for_delta(delta)


def test_no_phase_is_worst_at_every_epsilon(eps1_pairs):
    # Phase 1/2 is worse than phase 0 at small epsilon and better near the top: which
    # pair is worst depends on where the composition is read (hence on k).
    mech, _ = eps1_pairs
    (_, pa), (_, pb) = phase_scan(mech, [0, Fraction(1, 2)])
    assert pb.hockey_stick(Fraction(1, 10)) > 1.1 * pa.hockey_stick(Fraction(1, 10))
    assert pa.hockey_stick(Fraction(8, 10)) > 2 * pb.hockey_stick(Fraction(8, 10))


# ----------------------------------------------------------------------------------
# Composition: the pure sum is a ceiling, the references agree
# ----------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["snapping", "pure"]), st.fractions(Fraction(1, 50), 3)),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([1e-3, 1e-6, 1e-9]),
    st.sampled_from(["pld", "rdp"]),
)
def test_composition_never_exceeds_the_pure_sum(items, delta, accountant):
    curves = [ReleaseCurve(k, e) for k, e in items]
    g = compose(curves, delta, accountant=accountant)
    total = sum(e for _, e in items)
    assert g.pure_epsilon == total and g.releases == len(items)
    assert 0 <= g.epsilon <= float(total) * (1 + 2**-50)


def test_single_release_matches_the_closed_form_profile():
    for kind in ("snapping", "pure"):
        curve = ReleaseCurve(kind, Fraction(1, 2))
        for d in (1e-2, 1e-6):
            e = curve.epsilon_for_delta(d)
            assert curve.delta(e) <= d * (1 + 1e-9)
            assert curve.delta(e * (1 - 1e-6)) > d
            assert compose([curve], d).epsilon >= e * (1 - 1e-3)  # the PLD agrees


def test_pld_composition_matches_dp_accounting_laplace():
    # Independent route: dp-accounting's Laplace PLD at scale 1/epsilon, composed by it.
    lap = dp_pld.from_laplace_mechanism(10.0, value_discretization_interval=1e-4)
    ref = lap.self_compose(100).get_epsilon_for_delta(1e-6)
    got = compose([ReleaseCurve("snapping", Fraction(1, 10))] * 100, 1e-6).epsilon
    assert ref <= got <= ref + 0.02


def test_pure_curve_is_randomized_response():
    # Randomized response with e**eps / (1 + e**eps): its hockey stick, exactly.
    eps = Fraction(3, 4)
    p = math.exp(0.75) / (1 + math.exp(0.75))
    for e in (0.0, 0.2, 0.5):
        expected = max(0.0, p - math.exp(e) * (1 - p))
        assert ReleaseCurve("pure", eps).delta(e) == pytest.approx(expected, rel=1e-12)


def test_curve_text_round_trip_and_refusals():
    c = ReleaseCurve("snapping", Fraction(1, 10))
    assert ReleaseCurve.from_text(c.to_text()) == c and c.to_text() == "snapping:1/10"
    for bad in ("snapping:2/20", "laplace:1/10", "snapping:0/1", "snapping:1/0", "pure 1/2", ""):
        with pytest.raises(ParameterError):
            ReleaseCurve.from_text(bad)
    for bad_eps in (0, -1, True, float("nan"), "0.1"):
        with pytest.raises(ParameterError, match="epsilon"):
            ReleaseCurve("snapping", bad_eps)
    with pytest.raises(ParameterError, match="accountant"):
        compose([c], 1e-6, accountant="moments")
    for bad_delta in (0, 1, -0.1, float("nan")):
        with pytest.raises(ParameterError, match="delta"):
            compose([c], bad_delta)
