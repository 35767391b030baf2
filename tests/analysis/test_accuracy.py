"""Utility math (docs/accuracy.md) checked against independent references and simulation.

References used here never call snapcore.analysis._accuracy's own machinery:
- accuracy: mpmath at 300 bits from the mechanism's ε′, λ and Λ;
- ideal output distribution and bias: brute-force sums over the grid cells of a real
  Laplace with mpmath (no geometric-series closed forms), and mpmath quadrature;
- simulation: many releases of the real pipeline with a SeededSource, judged with exact
  binomial tail bounds (the false-failure probability of each check is stated).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import snapcore
from snapcore.analysis import _accuracy as accuracy
from snapcore.errors import ParameterError

MP = mpmath.MPContext()
MP.prec = 300

#: Probability that one binomial check fails although the claim holds.
FALSE_ALARM = 1e-9


def mech(epsilon, bounds, sensitivity=1, seed=0):
    return snapcore.SnappingMechanism(
        epsilon=epsilon,
        clamp_bounds=bounds,
        sensitivity=sensitivity,
        source=snapcore.SeededSource(seed),
    )


def _kl(q: float, p: float) -> float:
    """Kullback-Leibler divergence KL(Bern(q) || Bern(p))."""
    out = 0.0
    if q > 0:
        out += q * math.log(q / p)
    if q < 1:
        out += (1 - q) * math.log((1 - q) / (1 - p))
    return out


def chernoff_tail(count: int, n: int, p: float) -> float:
    """Chernoff bound on P(X >= count) (count > np) or P(X <= count) (count < np),
    X ~ Bin(n, p): exp(-n·KL(count/n || p)); 1 when count is on the mean."""
    return math.exp(-n * _kl(count / n, p))


def binom_upper_critical(n: int, p: float, tail: float = FALSE_ALARM) -> int:
    """A k with P(Bin(n, p) >= k) <= tail (by the Chernoff bound; conservative)."""
    k = math.ceil(n * p)
    while k <= n and chernoff_tail(k, n, p) > tail:
        k += 1
    return k


def binom_two_sided_ok(count: int, n: int, p: float, tail: float = FALSE_ALARM) -> bool:
    """Whether ``count`` is consistent with Bin(n, p): False only where the Chernoff
    bound puts the observed tail below ``tail / 2``."""
    if p == 0:
        return count == 0
    return chernoff_tail(count, n, p) > tail / 2


def mpq(q) -> mpmath.mpf:
    q = Fraction(q)
    return MP.mpf(q.numerator) / q.denominator


def ideal_cells(m, guess):
    """Brute force: {output (sensitivity units, centred): probability} of the ideal
    mechanism, summing Laplace CDF differences cell by cell (needs a small grid)."""
    cal = m.calibration
    b = MP.mpf(cal.unit_clamp_bound.numerator) / cal.unit_clamp_bound.denominator
    lam = MP.mpf(m.scale.numerator) / m.scale.denominator
    g = MP.mpf(m.granularity.numerator) / m.granularity.denominator
    t = (Fraction(guess) - cal.centre) / cal.sensitivity
    x = max(-b, min(b, MP.mpf(t.numerator) / t.denominator))

    def cdf(w):  # P(x + Y < w)
        u = w - x
        return MP.exp(u / lam) / 2 if u < 0 else 1 - MP.exp(-u / lam) / 2

    k1 = int(MP.ceil(-b / g))
    k2 = int(MP.floor(b / g))
    assert k2 - k1 < 5000, "grid too large for brute force"
    out: dict = {}

    def put(v, p):
        out[v] = out.get(v, 0) + p

    put(-b, cdf((k1 - 0.5) * g))
    for k in range(k1, k2 + 1):
        put(k * g, cdf((k + 0.5) * g) - cdf((k - 0.5) * g))
    put(b, 1 - cdf((k2 + 0.5) * g))
    return out, x


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
    d = accuracy.accuracy_details(m, alpha)
    assert d.bound == got and d.capped == (seed_formula >= width)
    assert abs(d.nominal - float(expected)) <= 1e-12 * float(expected)


def test_accuracy_uses_scale_lambda_not_one_over_epsilon_prime():
    # ln(1/α)·λ >= ln(1/α)/ε′: the pipeline's noise has scale λ = RU(1/ε′).
    m = mech(1.0, (0.0, 100.0))
    d = accuracy.accuracy_details(m, 0.05)
    assert d.noise_term >= Fraction(math.log(20)) * m.scale * Fraction(1 - 2**-50)
    assert d.snap_term == m.granularity / 2
    assert 0 < d.rounding_term < Fraction(1, 2**40)


def test_accuracy_is_capped_at_the_width():
    m = mech(1e-3, (0.0, 10.0))
    d = accuracy.accuracy_details(m, 0.05)
    assert d.capped and d.bound == 10.0 and m.accuracy(0.05) == 10.0


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, float("nan"), float("inf"), True, "0.1", None])
def test_accuracy_refuses_bad_alpha(bad):
    with pytest.raises(ParameterError, match="alpha"):
        accuracy.accuracy(mech(1.0, (0.0, 1.0)), bad)


def test_accuracy_refuses_non_mechanism():
    with pytest.raises(ParameterError, match="SnappingMechanism"):
        accuracy.accuracy(3.0, 0.05)


def test_accuracy_output_rounding_term_counts_for_far_intervals():
    # Outputs near 1e15 are doubles with ulp 0.125: the bound must include that.
    m = mech(2.0, (1e15, 1e15 + 8))
    d = accuracy.accuracy_details(m, 0.05)
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
    a_guess = accuracy.guess_accuracy(m, value, alpha)
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


@pytest.mark.parametrize(
    ("epsilon", "bounds", "value"),
    [(1.0, (0.0, 10.0), 7.0), (1.0, (0.0, 10.0), 9.7), (0.7, (-3.0, 5.0), -2.5)],
)
def test_output_distribution_matches_brute_force_and_simulation(epsilon, bounds, value):
    m = mech(epsilon, bounds, seed=5)
    d = accuracy.ideal_output_distribution(m, value, window=1000)
    assert d.omitted < 1e-12
    cells, _ = ideal_cells(m, value)
    cal = m.calibration
    ref = {}
    for v, p in cells.items():
        user = float(MP.mpf(float(cal.centre)) + MP.mpf(float(cal.sensitivity)) * v)
        ref[user] = ref.get(user, 0) + p
    ref = {v: float(p) for v, p in ref.items() if p > 0}
    got = dict(zip(d.values, d.probabilities, strict=True))
    assert set(ref) == {v for v, p in got.items() if p > 0}
    for v, p in ref.items():
        assert abs(got[v] - p) <= 1e-14 + 1e-12 * p
    n = 20_000
    out = m.release(np.full(n, value))
    vals, counts = np.unique(out, return_counts=True)
    assert set(vals.tolist()) <= set(ref)
    for v, p in ref.items():
        c = int(counts[vals == v][0]) if v in vals else 0
        assert binom_two_sided_ok(c, n, p), (v, c, n, p)


def test_output_distribution_window_and_ends():
    m = mech(1.0, (0.0, 100.0))
    d = accuracy.ideal_output_distribution(m, 50.0, window=2)
    assert d.values == (0.0, 46.0, 48.0, 50.0, 52.0, 54.0, 100.0)
    assert d.clamped == (True, False, False, False, False, False, True)
    assert 0 < d.omitted < 0.2
    assert abs(sum(d.probabilities) + d.omitted - 1) < 1e-12
    with pytest.raises(ParameterError, match="window"):
        accuracy.ideal_output_distribution(m, 50.0, window=-1)


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
    eps = accuracy.epsilon_for_accuracy(target, alpha, **plan)
    assert accuracy.plan_accuracy(alpha, epsilon=eps, **plan) <= target
    smaller = math.nextafter(eps, 0)
    assert accuracy.plan_accuracy(alpha, epsilon=smaller, **plan) > target
    # a few doubles further down are also insufficient (monotone neighbourhood)
    for k in (2, 17, 1000):
        e = eps * (1 - k * 2**-52)
        assert accuracy.plan_accuracy(alpha, epsilon=e, **plan) > target


def test_epsilon_for_accuracy_matches_hand_derivation():
    # bounds (0, 100), α = 0.05, a = 4: with Λ = 2 (1 < λ <= 2), λ·ln 20 + 1 <= 4 needs
    # λ <= 3/ln 20; with Λ = 1 it needs ε >= 1.  So ε ≈ ln(20)/3 · (1 + tiny terms).
    eps = accuracy.epsilon_for_accuracy(4.0, 0.05, clamp_bounds=(0.0, 100.0))
    assert abs(eps - math.log(20) / 3) < 1e-12


def test_epsilon_for_accuracy_reports_impossible_targets():
    with pytest.raises(ParameterError, match="every epsilon > 0 achieves it"):
        accuracy.epsilon_for_accuracy(2.0, 0.05, clamp_bounds=(0.0, 1.0))
    with pytest.raises(ParameterError, match="no epsilon achieves accuracy"):
        accuracy.epsilon_for_accuracy(1e-13, 0.05, clamp_bounds=(0.0, 1000.0))
    with pytest.raises(ParameterError, match="target"):
        accuracy.epsilon_for_accuracy(-1.0, 0.05, clamp_bounds=(0.0, 1.0))
    with pytest.raises(ParameterError, match="do not pass epsilon"):
        accuracy.epsilon_for_accuracy(1.0, 0.05, clamp_bounds=(0.0, 10.0), epsilon=1.0)


def test_epsilon_for_accuracy_floor_is_granularity_limit():
    # The best accuracy: Λ cannot go below B·2**-52 (outputs on exact doubles).
    with pytest.raises(ParameterError) as info:
        accuracy.epsilon_for_accuracy(1e-13, 0.05, clamp_bounds=(0.0, 1000.0))
    msg = str(info.value)
    floor = float(msg.split("reaches is ")[1].split(" ")[0])
    assert 500 * 2**-52 <= floor <= 20 * 1000 * 2**-52


def test_epsilon_for_accuracy_verified_by_simulation():
    alpha, target, bounds = 0.1, 3.0, (0.0, 50.0)
    eps = accuracy.epsilon_for_accuracy(target, alpha, clamp_bounds=bounds)
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
        a_hi = accuracy.plan_accuracy(0.05, epsilon=hi, clamp_bound=half)
    except ParameterError:
        return  # ε too large for these bounds: inadmissible, not a counterexample
    a_lo = accuracy.plan_accuracy(0.05, epsilon=lo, clamp_bound=half)
    assert a_lo >= a_hi, (
        f"repro: plan_accuracy(0.05, epsilon={lo!r} vs {hi!r}, clamp_bound={half})"
    )


def test_accuracy_below_two_eta_region_is_the_cap():
    # Where the precision grows with 1/ε (ε <= 2**-117 at p0 = 118) the cap binds.
    for e in (2.0**-117, 2.0**-117 * 1.5, 2.0**-130, 2.0**-200):
        assert accuracy.plan_accuracy(0.05, epsilon=e, clamp_bound=10.0) == 20.0


# -- planning -----------------------------------------------------------------------------


def test_plan_accuracy_equals_mechanism_accuracy():
    m = mech(0.8, (-5.0, 15.0), 2)
    assert accuracy.plan_accuracy(0.05, epsilon=0.8, clamp_bounds=(-5.0, 15.0), sensitivity=2) == (
        m.accuracy(0.05)
    )


def test_bound_for_gamma_formula_and_clamp_probability():
    eps, gamma, bp = 0.5, 0.05, 20.0
    big_b = accuracy.bound_for_gamma(bp, epsilon=eps, gamma=gamma)
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
        accuracy.bound_for_gamma(bp, epsilon=eps, gamma=0)
    with pytest.raises(ParameterError, match="b_prime"):
        accuracy.bound_for_gamma(-1, epsilon=eps, gamma=0.5)


def test_plan_calibration_argument_errors():
    with pytest.raises(ParameterError, match="exactly one"):
        accuracy.plan_calibration(epsilon=1.0)
    with pytest.raises(ParameterError, match="exactly one"):
        accuracy.plan_calibration(epsilon=1.0, clamp_bound=1.0, b_prime=1.0, gamma=0.5)
    with pytest.raises(ParameterError, match="needs gamma"):
        accuracy.plan_calibration(epsilon=1.0, b_prime=1.0)
    with pytest.raises(ParameterError, match="gamma= applies"):
        accuracy.plan_calibration(epsilon=1.0, clamp_bound=1.0, gamma=0.5)
    cal = accuracy.plan_calibration(epsilon=1.0, b_prime=10.0, gamma=0.5, centre=100.0)
    assert cal.centre == 100 and cal.half_width >= Fraction(
        accuracy.bound_for_gamma(10.0, epsilon=1.0, gamma=0.5)
    )


# -- bias for a guess ----------------------------------------------------------------------


def brute_bias(m, guess):
    cells, _ = ideal_cells(m, guess)
    cal = m.calibration
    t = (Fraction(guess) - cal.centre) / cal.sensitivity
    tm = MP.mpf(t.numerator) / t.denominator
    return float(MP.fsum(p * (v - tm) for v, p in cells.items()) * MP.mpf(float(cal.sensitivity)))


def quad_clamped_mean(m, guess, shift):
    cal = m.calibration
    b = MP.mpf(cal.unit_clamp_bound.numerator) / cal.unit_clamp_bound.denominator
    lam = MP.mpf(m.scale.numerator) / m.scale.denominator
    t = (Fraction(guess) - cal.centre) / cal.sensitivity
    tm = MP.mpf(t.numerator) / t.denominator
    x = max(-b, min(b, tm))
    mu = x + shift

    def pdf(w):
        return MP.exp(-abs(w - mu) / lam) / (2 * lam)

    def cdf(w):
        return MP.exp((w - mu) / lam) / 2 if w < mu else 1 - MP.exp(-(w - mu) / lam) / 2

    inner = MP.quad(lambda w: w * pdf(w), sorted({-b, min(max(mu, -b), b), b}))
    mean = -b * cdf(-b) + b * (1 - cdf(b)) + inner
    return float((mean - tm) * MP.mpf(float(cal.sensitivity)))


@pytest.mark.parametrize("guess", [0.0, 0.3, 2.0, 5.0, 7.77, 9.0, 9.9, 10.0, -3.0, 14.0])
def test_bias_matches_brute_force_and_brackets(guess):
    m = mech(1.0, (0.0, 10.0))
    r = accuracy.bias(m, guess)
    assert r.ideal == pytest.approx(brute_bias(m, guess), abs=1e-13)
    half = m.granularity / 2
    assert r.lower == pytest.approx(quad_clamped_mean(m, guess, -mpq(half)), abs=1e-12)
    assert r.upper == pytest.approx(quad_clamped_mean(m, guess, mpq(half)), abs=1e-12)
    assert r.lower <= r.ideal <= r.upper
    centred = (guess - 5.0) if 0 <= guess <= 10 else math.copysign(5.0, guess - 5.0)
    assert r.bias_plus == (r.lower if centred >= 0 else r.upper)


def _check_bias_sim(epsilon, bounds, sens, guess, n, seed):
    m = mech(epsilon, bounds, sens, seed=seed)
    r = accuracy.bias(m, guess)
    out = m.release(np.full(n, guess))
    err = out - guess
    se = float(np.std(err)) / math.sqrt(n)
    # 6.1 standard errors: two-sided normal tail ~1e-9 (n is large enough for the CLT).
    assert abs(float(np.mean(err)) - r.ideal) <= 6.1 * se + 1e-12, (np.mean(err), r, se)
    assert float(np.mean(err)) >= r.lower - 6.1 * se
    assert float(np.mean(err)) <= r.upper + 6.1 * se


BIAS_CASES = [
    (1.0, (0.0, 10.0), 1, 9.5),
    (1.0, (0.0, 10.0), 1, 0.25),
    (0.3, (-40.0, 40.0), 4, 30.0),
    (2.0, (0.0, 3.0), 0.5, 2.9),
]


@pytest.mark.parametrize(("epsilon", "bounds", "sens", "guess"), BIAS_CASES)
def test_bias_matches_simulation(epsilon, bounds, sens, guess):
    _check_bias_sim(epsilon, bounds, sens, guess, n=20_000, seed=21)


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "bounds", "sens", "guess"), BIAS_CASES)
def test_bias_matches_simulation_slow(epsilon, bounds, sens, guess, slow_size):
    _check_bias_sim(epsilon, bounds, sens, guess, n=slow_size(1_000_000, 20_000), seed=22)


def test_bias_refuses_bad_guess():
    m = mech(1.0, (0.0, 10.0))
    for bad in (float("nan"), float("inf"), "3", None):
        with pytest.raises(ParameterError, match="guess"):
            accuracy.bias(m, bad)


# -- data-dependent accuracy for a guess -------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_guess_accuracy_is_least_valid_for_the_ideal_mechanism(epsilon, alpha):
    m = mech(epsilon, (0.0, 10.0))
    for guess in np.linspace(0.0, 10.0, 23):
        a = accuracy.guess_accuracy(m, float(guess), alpha)
        assert a <= m.accuracy(alpha)
        cells, x = ideal_cells(m, float(guess))

        def tail(r, cells=cells, x=x):
            return MP.fsum(pr for v, pr in cells.items() if abs(v - x) > r)

        assert tail(MP.mpf(a)) <= alpha, (guess, a)
        # least: the next smaller attainable distance no longer suffices
        smaller = [abs(v - x) for v in cells if abs(v - x) < MP.mpf(a) - 1e-9]
        if smaller:
            assert tail(max(smaller)) > alpha, (guess, a)


def closed_form_accuracy(cal, f: Fraction, alpha: Fraction) -> Fraction:
    """A closed-form case analysis of the accuracy at a centred guess ``f >= 0``
    (sensitivity units), from the Laplace CDF.  Kept here to document a finding: it is
    **not** a valid bound near the interval's ends (docs/accuracy.md), because for
    ``x >= B − f`` it counts the upper half of ``|Y′|`` although those errors were
    already moved to the clamp."""
    b, lam_q = cal.unit_clamp_bound, cal.scale
    lam, al = mpq(lam_q), mpq(alpha)

    def laplace_cdf(q):
        u = mpq(q)
        return 0.5 * MP.exp(u / lam) if u < 0 else 1 - 0.5 * MP.exp(-u / lam)

    p_l = laplace_cdf(-b - f + lam_q)
    p_u = 1 - laplace_cdf(b - f - lam_q)
    fz_minus = 1 - MP.exp(1 - mpq(b - f) / lam)
    one_plus = 1 + p_l - al
    if p_l >= al:
        a = mpq(b + f)
    elif fz_minus >= one_plus:
        a = lam * (1 - MP.log(al - p_l))
    elif fz_minus + p_u >= one_plus:
        a = mpq(b - f)
    else:
        a = lam * (1 - MP.log(al - p_l + p_u))
    man, exp = MP.mpf(a).man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def test_closed_form_accuracy_undercounts_at_the_ends():
    # The documented finding: the closed-form accuracy is not an upper bound at f = B.
    m = mech(1.0, (0.0, 10.0))
    a_cf = closed_form_accuracy(m.calibration, Fraction(5), Fraction(1, 20))
    cells, x = ideal_cells(m, 10.0)
    p = MP.fsum(pr for v, pr in cells.items() if abs(v - x) > mpq(a_cf))
    assert float(a_cf) == pytest.approx(1.1439, abs=1e-4)
    assert p > 0.05  # so the closed form fails its own α


def test_guess_accuracy_tighter_near_the_ends():
    m = mech(0.3, (0.0, 10.0))
    assert accuracy.guess_accuracy(m, 10.0, 0.05) < m.accuracy(0.05)


# -- comparison with Laplace -----------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "bounds", "sens"), PARAMS[:4])
def test_compare_with_laplace(epsilon, bounds, sens):
    m = mech(epsilon, bounds, sens)
    c = accuracy.compare_with_laplace(m, 0.05)
    assert c.laplace == pytest.approx(float(sens) * math.log(20) / epsilon, rel=1e-15)
    assert 1 < c.factor < 1 + Fraction(1, 10**25)
    if not accuracy.accuracy_details(m, 0.05).capped:
        # seed identity: a_snap = factor·a_Laplace + Λ/2 (up to λ = RU(1/ε′))
        assert c.snapping == pytest.approx(c.formula, rel=1e-14)
        g = float(m.granularity) * float(sens)
        assert c.snapping - c.laplace == pytest.approx(
            g / 2 + float(sens) * math.log(20) * (float(m.scale) - 1 / epsilon), rel=1e-9
        )
    assert c.ratio == pytest.approx(c.snapping / c.laplace)


@settings(max_examples=300, deadline=None)
@given(
    guess=st.floats(min_value=-30.0, max_value=30.0),
    noise=st.floats(min_value=-50.0, max_value=50.0),
)
def test_laplace_distance_cases(guess, noise):
    m = mech(1.0, (-10.0, 10.0))
    r = accuracy.laplace_distance(m, guess, noise)
    inner = abs(guess) > 10
    assert r.case in ((2, 4) if inner else (1, 3))
    exact = Fraction(guess) + Fraction(noise)  # Laplace output
    if r.case in (1, 2):
        assert r.bound is not None and r.distance <= r.bound, (guess, noise, r)
    else:
        assert r.bound is None
        # the snapping output is an end of the interval
        assert r.distance == pytest.approx(min(abs(exact - 10), abs(exact + 10)), abs=1e-12) or (
            r.distance == pytest.approx(max(abs(exact - 10), abs(exact + 10)), abs=1e-12)
        )


def test_laplace_distance_example():
    m = mech(1.0, (0.0, 10.0))
    r = accuracy.laplace_distance(m, 14.0, 0.2)
    # inner clamp: x = b = 5 (centred), 5.2 snaps to 6 -> outer clamp to 5 (case 4)
    assert r.case == 4 and r.bound is None
    r = accuracy.laplace_distance(m, 11.0, -2.9)
    # t = 6 > b = 5; x = 5, 5 - 2.9 = 2.1 -> snaps to 2 -> output 7; Laplace 8.1
    assert r.case == 2 and r.distance == pytest.approx(1.1) and r.bound == 2.0


# -- planning with a statistic's range, and release records ------------------------------


def test_value_range_plan_widens_the_range_by_the_seed_margin():
    eps, gamma, lo, hi, sens = 0.7, 0.01, 20.0, 80.0, 0.5
    cal = accuracy.plan_calibration(
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
        assert accuracy.clamp_probability(m, f) <= gamma
    eps_needed = accuracy.epsilon_for_accuracy(
        3.0, 0.05, sensitivity=sens, value_range=(lo, hi), gamma=gamma
    )
    assert (
        accuracy.plan_accuracy(
            0.05, epsilon=eps_needed, sensitivity=sens, value_range=(lo, hi), gamma=gamma
        )
        <= 3.0
    )


def test_accuracy_of_a_release_record():
    import attrs

    @attrs.frozen
    class Record:  # the public fields of a release record (issue 4's Release has them)
        clamp_bounds: tuple[float, float] | None
        epsilon_per_value: Fraction
        sensitivity: Fraction
        precision: int

    rec = Record((0.0, 100.0), Fraction(1), Fraction(1), 118)
    assert accuracy.accuracy(rec, 0.05) == mech(1.0, (0.0, 100.0)).accuracy(0.05)
    with pytest.raises(ParameterError, match="no clamp interval"):
        accuracy.accuracy(Record(None, Fraction(1), Fraction(1), 118), 0.05)


def test_epsilon_for_accuracy_below_two_to_minus_sixty():
    # A very wide interval: the answer is far below the search's first floor 2**-60.
    eps = accuracy.epsilon_for_accuracy(1e20, 0.05, clamp_bound=1e25)
    assert eps < 2.0**-60
    assert accuracy.plan_accuracy(0.05, epsilon=eps, clamp_bound=1e25) <= 1e20
    assert accuracy.plan_accuracy(0.05, epsilon=math.nextafter(eps, 0), clamp_bound=1e25) > 1e20
    # by hand: λ·ln 20 + Λ/2 <= 1e20 with λ ≈ 1/ε and λ/2 <= Λ/2 < λ
    assert (math.log(20) + 0.5) * 1e-20 * (1 - 1e-12) <= eps
    assert eps <= (math.log(20) + 1) * 1e-20 * (1 + 1e-12)
