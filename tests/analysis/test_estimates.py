"""The estimates from a guess (snapcore.analysis._estimates, docs/accuracy.md) checked
against independent references and simulation.

References used here never call snapcore.analysis's own machinery
(tests/helpers/ideal_mechanism.py):
- ideal output distribution and bias: brute-force sums over the grid cells of a real
  Laplace with mpmath (no geometric-series closed forms), and mpmath quadrature;
- simulation: many releases of the real pipeline with a SeededSource, judged with
  binomial tail bounds and normal standard errors.
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
    ideal_cells,
    mech,
    mpq,
)

from snapcore.analysis import _estimates as estimates
from snapcore.errors import ParameterError

# -- the ideal output distribution ------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "bounds", "value"),
    [(1.0, (0.0, 10.0), 7.0), (1.0, (0.0, 10.0), 9.7), (0.7, (-3.0, 5.0), -2.5)],
)
def test_output_distribution_matches_brute_force_and_simulation(epsilon, bounds, value):
    m = mech(epsilon, bounds, seed=5)
    d = estimates.ideal_output_distribution(m, value, window=1000)
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
    d = estimates.ideal_output_distribution(m, 50.0, window=2)
    assert d.values == (0.0, 46.0, 48.0, 50.0, 52.0, 54.0, 100.0)
    assert d.clamped == (True, False, False, False, False, False, True)
    assert 0 < d.omitted < 0.2
    assert abs(sum(d.probabilities) + d.omitted - 1) < 1e-12
    with pytest.raises(ParameterError, match="window"):
        estimates.ideal_output_distribution(m, 50.0, window=-1)


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
    r = estimates.bias(m, guess)
    assert r.ideal == pytest.approx(brute_bias(m, guess), abs=1e-13)
    half = m.granularity / 2
    assert r.lower == pytest.approx(quad_clamped_mean(m, guess, -mpq(half)), abs=1e-12)
    assert r.upper == pytest.approx(quad_clamped_mean(m, guess, mpq(half)), abs=1e-12)
    assert r.lower <= r.ideal <= r.upper
    centred = (guess - 5.0) if 0 <= guess <= 10 else math.copysign(5.0, guess - 5.0)
    assert r.bias_plus == (r.lower if centred >= 0 else r.upper)


def _check_bias_sim(epsilon, bounds, sens, guess, n, seed):
    m = mech(epsilon, bounds, sens, seed=seed)
    r = estimates.bias(m, guess)
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
            estimates.bias(m, bad)


# -- data-dependent accuracy for a guess -------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_guess_accuracy_is_least_valid_for_the_ideal_mechanism(epsilon, alpha):
    m = mech(epsilon, (0.0, 10.0))
    for guess in np.linspace(0.0, 10.0, 23):
        a = estimates.guess_accuracy(m, float(guess), alpha)
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
    assert estimates.guess_accuracy(m, 10.0, 0.05) < m.accuracy(0.05)


# -- the coupled Laplace mechanism --------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    guess=st.floats(min_value=-30.0, max_value=30.0),
    noise=st.floats(min_value=-50.0, max_value=50.0),
)
def test_laplace_distance_cases(guess, noise):
    m = mech(1.0, (-10.0, 10.0))
    r = estimates.laplace_distance(m, guess, noise)
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
    r = estimates.laplace_distance(m, 14.0, 0.2)
    # inner clamp: x = b = 5 (centred), 5.2 snaps to 6 -> outer clamp to 5 (case 4)
    assert r.case == 4 and r.bound is None
    r = estimates.laplace_distance(m, 11.0, -2.9)
    # t = 6 > b = 5; x = 5, 5 - 2.9 = 2.1 -> snaps to 2 -> output 7; Laplace 8.1
    assert r.case == 2 and r.distance == pytest.approx(1.1) and r.bound == 2.0
