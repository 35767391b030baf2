"""The publishable guarantees and planning (snapcore.analysis._guarantees, docs/accuracy.md)
checked against independent references and simulation.

References used here never call snapcore.analysis's own machinery
(tests/helpers/ideal_mechanism.py):
- accuracy: mpmath at 300 bits from the mechanism's ε′, λ and Λ;
- the clamp's probability: brute-force sums over the grid cells of a real Laplace;
- simulation: many releases of the real pipeline with a SeededSource, judged with exact
  binomial tail bounds (the false-failure probability of each check is stated).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from ideal_mechanism import (
    MP,
    binom_two_sided_ok,
    binom_upper_critical,
    ideal_cells,
    mech,
    mpq,
)

import snapcore
from snapcore.analysis import _estimates as estimates, _guarantees as guarantees
from snapcore.errors import ParameterError

# -- accuracy: formula ----------------------------------------------------------------


PARAMS = [
    (1.0, (0.0, 100.0), 1),
    (0.5, (0.0, 10.0), 1),
    (0.1, (-50.0, 50.0), 2),
    (2.0, (1000.0, 1010.0), 0.25),
    (1e-3, (0.0, 1e6), 3),
    (7.3, (-1.0, 3.0), 1),
    (0.9999, (0.0, 1.0), 1),
]


@pytest.mark.parametrize(("epsilon", "bounds", "sens"), PARAMS)
@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-6])
def test_accuracy_is_the_seed_formula_rounded_up(epsilon, bounds, sens, alpha):
    m = mech(epsilon, bounds, sens)
    eps_p = MP.mpf(m.epsilon_prime.numerator) / m.epsilon_prime.denominator
    # Λ independently: the least power of two >= λ = RU(1/ε′) >= 1/ε′.
    lam = MP.mpf(m.scale.numerator) / m.scale.denominator
    assert lam >= 1 / eps_p and lam <= (1 / eps_p) * (1 + MP.mpf(2) ** (1 - m.precision))
    big_l = MP.mpf(2) ** int(MP.ceil(MP.log(lam, 2)))
    assert big_l == MP.mpf(m.granularity.numerator) / m.granularity.denominator
    delta = MP.mpf(float(sens))
    seed_formula = (MP.log(1 / MP.mpf(alpha)) / eps_p + big_l / 2) * delta
    width = MP.mpf(bounds[1]) - MP.mpf(bounds[0])
    expected = min(seed_formula, width)
    got = m.accuracy(alpha)
    assert got >= expected  # an upper bound, never below the textbook value
    # ... and above it only by the η terms and the output's double rounding.
    slack = expected * MP.mpf(2) ** -100 + MP.mpf(2) ** -52 * max(abs(b) for b in bounds)
    assert got <= expected + slack + MP.mpf(got) * 2**-52
    d = guarantees.accuracy_details(m, alpha)
    assert d.bound == got and d.capped == (seed_formula >= width)
    assert abs(d.nominal - float(expected)) <= 1e-12 * float(expected)


def test_accuracy_uses_scale_lambda_not_one_over_epsilon_prime():
    # ln(1/α)·λ >= ln(1/α)/ε′: the pipeline's noise has scale λ = RU(1/ε′).
    m = mech(1.0, (0.0, 100.0))
    d = guarantees.accuracy_details(m, 0.05)
    assert d.noise_term >= Fraction(math.log(20)) * m.scale * Fraction(1 - 2**-50)
    assert d.snap_term == m.granularity / 2
    assert 0 < d.rounding_term < Fraction(1, 2**40)


def test_accuracy_is_capped_at_the_width():
    m = mech(1e-3, (0.0, 10.0))
    d = guarantees.accuracy_details(m, 0.05)
    assert d.capped and d.bound == 10.0 and m.accuracy(0.05) == 10.0


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), float("inf"), True, "0.1", None])
def test_accuracy_refuses_bad_alpha(bad):
    with pytest.raises(ParameterError, match="alpha"):
        guarantees.accuracy(mech(1.0, (0.0, 1.0)), bad)


def test_accuracy_refuses_non_mechanism():
    with pytest.raises(ParameterError, match="SnappingMechanism"):
        guarantees.accuracy(3.0, 0.05)


def test_accuracy_output_rounding_term_counts_for_far_intervals():
    # Outputs near 1e15 are doubles with ulp 0.125: the bound must include that.
    m = mech(2.0, (1e15, 1e15 + 8))
    d = guarantees.accuracy_details(m, 0.05)
    assert d.rounding_term >= Fraction(1e15) / 2**53


# -- accuracy: simulation -------------------------------------------------------------


def simulate_exceed(m, value, a, n):
    out = m.release(np.full(n, value))
    return int(np.count_nonzero(np.abs(out - value) > a)), out


SIM_CASES = [
    # epsilon, bounds, sensitivity, value, alpha
    (1.0, (0.0, 100.0), 1, 42.0, 0.05),
    (1.0, (0.0, 100.0), 1, 43.0, 0.05),  # on a half-grid point: the snap error is Λ/2
    (0.5, (-20.0, 20.0), 2, -19.5, 0.1),  # near the lower end: the clamp helps
    (3.0, (0.0, 10.0), 0.5, 5.0625, 0.2),
    (1.0, (0.0, 6.0), 1, 6.0, 0.3),  # at the end, much clamping
]


def _check_sim(epsilon, bounds, sens, value, alpha, n, seed):
    m = mech(epsilon, bounds, sens, seed=seed)
    a = m.accuracy(alpha)
    count, _ = simulate_exceed(m, value, a, n)
    crit = binom_upper_critical(n, alpha)
    assert count < crit, (
        f"P(|out - f| > a) looks > alpha: {count}/{n} exceed a = {a} "
        f"(critical {crit}); repro: mech({epsilon}, {bounds}, {sens}, seed={seed})"
    )
    # Sharper: the exceedance frequency matches the ideal model's exact probability.
    cells, _ = ideal_cells(m, value)
    t = (Fraction(value) - m.calibration.centre) / m.sensitivity
    tm = MP.mpf(t.numerator) / t.denominator
    a_s = MP.mpf(a) / MP.mpf(float(sens))
    p_exceed = MP.fsum(p for v, p in cells.items() if abs(v - tm) > a_s)
    assert p_exceed <= alpha
    assert binom_two_sided_ok(count, n, float(p_exceed)), (count, n, p_exceed)
    # The data-dependent accuracy for a guess equal to the true value, same releases.
    a_guess = estimates.guess_accuracy(m, value, alpha)
    m2 = mech(epsilon, bounds, sens, seed=seed)
    count_g, _ = simulate_exceed(m2, value, a_guess, n)
    assert count_g < crit, (count_g, n, a_guess)
    return count


@pytest.mark.parametrize(("epsilon", "bounds", "sens", "value", "alpha"), SIM_CASES)
def test_accuracy_holds_in_simulation(epsilon, bounds, sens, value, alpha):
    _check_sim(epsilon, bounds, sens, value, alpha, n=20_000, seed=11)


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "bounds", "sens", "value", "alpha"), SIM_CASES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_accuracy_holds_in_simulation_slow(epsilon, bounds, sens, value, alpha, seed, slow_size):
    _check_sim(epsilon, bounds, sens, value, alpha, n=slow_size(400_000, 20_000), seed=seed)


# -- ε from accuracy --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "alpha", "plan"),
    [
        (4.0, 0.05, {"clamp_bounds": (0.0, 100.0)}),
        (0.5, 0.05, {"clamp_bounds": (0.0, 1.0)}),
        (10.0, 0.01, {"clamp_bounds": (-100.0, 100.0), "sensitivity": 3}),
        (3.0, 0.1, {"clamp_bound": 1000.0}),
        (2.5, 0.05, {"b_prime": 50.0, "gamma": 0.05}),
        (1e-6, 0.05, {"clamp_bounds": (0.0, 1.0)}),
    ],
)
def test_epsilon_for_accuracy_is_the_least_double(target, alpha, plan):
    eps = guarantees.epsilon_for_accuracy(target, alpha, **plan)
    assert guarantees.plan_accuracy(alpha, epsilon=eps, **plan) <= target
    smaller = math.nextafter(eps, 0)
    assert guarantees.plan_accuracy(alpha, epsilon=smaller, **plan) > target
    # a few doubles further down are also insufficient (monotone neighbourhood)
    for k in (2, 17, 1000):
        e = eps * (1 - k * 2**-52)
        assert guarantees.plan_accuracy(alpha, epsilon=e, **plan) > target


def test_epsilon_for_accuracy_matches_hand_derivation():
    # bounds (0, 100), α = 0.05, a = 4: with Λ = 2 (1 < λ <= 2), λ·ln 20 + 1 <= 4 needs
    # λ <= 3/ln 20; with Λ = 1 it needs ε >= 1.  So ε ≈ ln(20)/3 · (1 + tiny terms).
    eps = guarantees.epsilon_for_accuracy(4.0, 0.05, clamp_bounds=(0.0, 100.0))
    assert abs(eps - math.log(20) / 3) < 1e-12


def test_epsilon_for_accuracy_reports_impossible_targets():
    with pytest.raises(ParameterError, match="every epsilon > 0 achieves it"):
        guarantees.epsilon_for_accuracy(2.0, 0.05, clamp_bounds=(0.0, 1.0))
    with pytest.raises(ParameterError, match="no epsilon achieves accuracy"):
        guarantees.epsilon_for_accuracy(1e-13, 0.05, clamp_bounds=(0.0, 1000.0))
    with pytest.raises(ParameterError, match="target"):
        guarantees.epsilon_for_accuracy(-1.0, 0.05, clamp_bounds=(0.0, 1.0))
    with pytest.raises(ParameterError, match="do not pass epsilon"):
        guarantees.epsilon_for_accuracy(1.0, 0.05, clamp_bounds=(0.0, 10.0), epsilon=1.0)


def test_epsilon_for_accuracy_floor_is_granularity_limit():
    # The best accuracy: Λ cannot go below B·2**-52 (outputs on exact doubles).
    with pytest.raises(ParameterError) as info:
        guarantees.epsilon_for_accuracy(1e-13, 0.05, clamp_bounds=(0.0, 1000.0))
    msg = str(info.value)
    floor = float(msg.split("reaches is ")[1].split(" ")[0])
    assert 500 * 2**-52 <= floor <= 20 * 1000 * 2**-52


def test_epsilon_for_accuracy_verified_by_simulation():
    alpha, target, bounds = 0.1, 3.0, (0.0, 50.0)
    eps = guarantees.epsilon_for_accuracy(target, alpha, clamp_bounds=bounds)
    m = mech(eps, bounds, seed=3)
    n = 20_000
    count, _ = simulate_exceed(m, 25.0, target, n)
    assert count < binom_upper_critical(n, alpha)


@settings(max_examples=150, deadline=None)
@given(
    e1=st.floats(min_value=2.0**-125, max_value=1e6),
    e2=st.floats(min_value=2.0**-125, max_value=1e6),
    half=st.sampled_from([1.0, 37.5, 2.0**40]),
)
def test_accuracy_is_monotone_in_epsilon(e1, e2, half):
    lo, hi = sorted((e1, e2))
    try:
        a_hi = guarantees.plan_accuracy(0.05, epsilon=hi, clamp_bound=half)
    except ParameterError:
        return  # ε too large for these bounds: inadmissible, not a counterexample
    a_lo = guarantees.plan_accuracy(0.05, epsilon=lo, clamp_bound=half)
    assert a_lo >= a_hi, (
        f"repro: plan_accuracy(0.05, epsilon={lo!r} vs {hi!r}, clamp_bound={half})"
    )


def test_accuracy_below_two_eta_region_is_the_cap():
    # Where the precision grows with 1/ε (ε <= 2**-117 at p0 = 118) the cap binds.
    for e in (2.0**-117, 2.0**-117 * 1.5, 2.0**-130, 2.0**-200):
        assert guarantees.plan_accuracy(0.05, epsilon=e, clamp_bound=10.0) == 20.0


# -- planning -----------------------------------------------------------------------------


def test_plan_accuracy_equals_mechanism_accuracy():
    m = mech(0.8, (-5.0, 15.0), 2)
    planned = guarantees.plan_accuracy(0.05, epsilon=0.8, clamp_bounds=(-5.0, 15.0), sensitivity=2)
    assert planned == m.accuracy(0.05)


def test_bound_for_gamma_formula_and_clamp_probability():
    eps, gamma, bp = 0.5, 0.05, 20.0
    big_b = guarantees.bound_for_gamma(bp, epsilon=eps, gamma=gamma)
    k = (2 + 24 * MP.mpf(2) ** -52) / (eps - MP.mpf(2) ** -117)
    exact = bp + k / 2 * (1 + 2 * MP.log(1 / MP.mpf(gamma)))
    assert exact <= big_b <= exact * (1 + 2**-52)
    # The clamp binds with probability <= γ at the worst f(D) = ±B′ (ideal model).
    m = mech(eps, (-big_b, big_b))
    cells, _ = ideal_cells(m, bp)
    b = (
        MP.mpf(m.calibration.unit_clamp_bound.numerator)
        / m.calibration.unit_clamp_bound.denominator
    )
    g = MP.mpf(m.granularity.numerator) / m.granularity.denominator
    # ⌊W⌉ beyond ±b carries its mass to ±b; grid points strictly inside never clamp.
    p_clamp = sum(p for v, p in cells.items() if abs(v) == b and (b / g) % 1 != 0)
    assert p_clamp <= gamma
    with pytest.raises(ParameterError, match="gamma"):
        guarantees.bound_for_gamma(bp, epsilon=eps, gamma=0)
    with pytest.raises(ParameterError, match="b_prime"):
        guarantees.bound_for_gamma(-1, epsilon=eps, gamma=0.5)


def test_plan_calibration_argument_errors():
    with pytest.raises(ParameterError, match="exactly one"):
        guarantees.plan_calibration(epsilon=1.0)
    with pytest.raises(ParameterError, match="exactly one"):
        guarantees.plan_calibration(epsilon=1.0, clamp_bound=1.0, b_prime=1.0, gamma=0.5)
    with pytest.raises(ParameterError, match="needs gamma"):
        guarantees.plan_calibration(epsilon=1.0, b_prime=1.0)
    with pytest.raises(ParameterError, match="gamma= applies"):
        guarantees.plan_calibration(epsilon=1.0, clamp_bound=1.0, gamma=0.5)
    cal = guarantees.plan_calibration(epsilon=1.0, b_prime=10.0, gamma=0.5, centre=100.0)
    assert cal.centre == 100 and cal.half_width >= Fraction(
        guarantees.bound_for_gamma(10.0, epsilon=1.0, gamma=0.5)
    )


# -- comparison with Laplace -----------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "bounds", "sens"), PARAMS[:4])
def test_compare_with_laplace(epsilon, bounds, sens):
    m = mech(epsilon, bounds, sens)
    c = guarantees.compare_with_laplace(m, 0.05)
    assert c.laplace == pytest.approx(float(sens) * math.log(20) / epsilon, rel=1e-15)
    assert 1 < c.factor < 1 + Fraction(1, 10**25)
    if not guarantees.accuracy_details(m, 0.05).capped:
        # seed identity: a_snap = factor·a_Laplace + Λ/2 (up to λ = RU(1/ε′))
        assert c.snapping == pytest.approx(c.formula, rel=1e-14)
        g = float(m.granularity) * float(sens)
        assert c.snapping - c.laplace == pytest.approx(
            g / 2 + float(sens) * math.log(20) * (float(m.scale) - 1 / epsilon), rel=1e-9
        )
    assert c.ratio == pytest.approx(c.snapping / c.laplace)


# -- planning with a statistic's range, and release records ------------------------------


def test_value_range_plan_widens_the_range_by_the_seed_margin():
    eps, gamma, lo, hi, sens = 0.7, 0.01, 20.0, 80.0, 0.5
    cal = guarantees.plan_calibration(
        epsilon=eps, sensitivity=sens, value_range=(lo, hi), gamma=gamma
    )
    k = (2 + 24 * MP.mpf(2) ** -52) / (eps - MP.mpf(2) ** -117)
    margin = sens * k / 2 * (1 + 2 * MP.log(1 / MP.mpf(gamma)))
    assert mpq(cal.lower) <= lo - margin and mpq(cal.upper) >= hi + margin
    assert mpq(cal.upper) - (hi + margin) < 1e-12 and (lo - margin) - mpq(cal.lower) < 1e-12
    m = snapcore.SnappingMechanism(
        epsilon=eps, sensitivity=sens, clamp_bounds=(float(cal.lower), float(cal.upper))
    )
    for f in (lo, hi, (lo + hi) / 2):
        assert estimates.clamp_probability(m, f) <= gamma
    eps_needed = guarantees.epsilon_for_accuracy(
        3.0, 0.05, sensitivity=sens, value_range=(lo, hi), gamma=gamma
    )
    assert (
        guarantees.plan_accuracy(
            0.05, epsilon=eps_needed, sensitivity=sens, value_range=(lo, hi), gamma=gamma
        )
        <= 3.0
    )


def test_accuracy_of_a_release_record():
    import attrs

    @attrs.frozen
    class Record:  # the public fields of a release record
        clamp_bounds: tuple[float, float] | None
        epsilon_per_value: Fraction
        sensitivity: Fraction
        precision: int

    rec = Record((0.0, 100.0), Fraction(1), Fraction(1), 118)
    assert guarantees.accuracy(rec, 0.05) == mech(1.0, (0.0, 100.0)).accuracy(0.05)
    with pytest.raises(ParameterError, match="no clamp interval"):
        guarantees.accuracy(Record(None, Fraction(1), Fraction(1), 118), 0.05)


def test_epsilon_for_accuracy_below_two_to_minus_sixty():
    # A very wide interval: the answer is far below the search's first floor 2**-60.
    eps = guarantees.epsilon_for_accuracy(1e20, 0.05, clamp_bound=1e25)
    assert eps < 2.0**-60
    assert guarantees.plan_accuracy(0.05, epsilon=eps, clamp_bound=1e25) <= 1e20
    assert guarantees.plan_accuracy(0.05, epsilon=math.nextafter(eps, 0), clamp_bound=1e25) > 1e20
    # by hand: λ·ln 20 + Λ/2 <= 1e20 with λ ≈ 1/ε and λ/2 <= Λ/2 < λ
    assert (math.log(20) + 0.5) * 1e-20 * (1 - 1e-12) <= eps
    assert eps <= (math.log(20) + 1) * 1e-20 * (1 + 1e-12)
