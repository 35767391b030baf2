"""Choosing the clamp interval from B′ and γ (docs/bounds-and-gamma.md), checked against mpmath."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

import snapcore
from snapcore.calibration._clamp import (
    choose_clamp_bounds,
    given_clamp_bounds,
    ln_upper,
)
from snapcore.errors import ParameterError

MP = mpmath.MPContext()
MP.prec = 400


def F(q):
    """An exact rational as an mpf (exact at 400 bits for these tests' values)."""
    q = Fraction(q)
    return MP.mpf(q.numerator) / q.denominator


def formula(hi: Fraction, delta: Fraction, eps: Fraction, gamma: Fraction):
    """The rule's B for the upper side, at 400 bits (independent of snapcore)."""
    k = (2 + 24 * MP.mpf(2) ** -52) / (F(eps) - MP.mpf(2) ** -117)
    return F(hi) + F(delta) * k / 2 * (1 + 2 * MP.log(1 / F(gamma)))


@settings(max_examples=100, deadline=None)
@given(
    lo=st.integers(-(10**6), 10**6),
    width=st.integers(0, 10**6),
    delta=st.fractions(min_value=Fraction(1, 10**4), max_value=10**4),
    eps=st.floats(min_value=1e-3, max_value=50),
    gamma=st.one_of(st.floats(min_value=1e-12, max_value=1.0), st.just(1.0)),
)
def test_clamp_interval_never_below_formula(lo, width, delta, eps, gamma):
    lo_q, hi_q = Fraction(lo), Fraction(lo + width)
    c = choose_clamp_bounds((lo_q, hi_q), delta, Fraction(eps), gamma)
    assert isinstance(c.upper, float) and isinstance(c.lower, float)
    upper_formula = formula(hi_q, delta, Fraction(eps), Fraction(gamma))
    lower_formula = F(lo_q) - (upper_formula - F(hi_q))
    assert MP.mpf(c.upper) >= upper_formula
    assert MP.mpf(c.lower) <= lower_formula
    # ... and not much above it: at most 1/128 of the margin plus an ulp.
    margin = upper_formula - F(hi_q)
    assert MP.mpf(c.upper) - upper_formula <= margin / 128 + MP.mpf(math.ulp(c.upper))
    assert c.half_width == (Fraction(c.upper) - Fraction(c.lower)) / 2


def test_symmetric_range_is_the_seeds_b():
    # range [-B', B']: upper = B = B' + (k/2)(1 + 2 ln(1/γ)) (Δ = 1), rounded up.
    c = choose_clamp_bounds((Fraction(-100), Fraction(100)), Fraction(1), Fraction(1), 0.05)
    f = formula(Fraction(100), Fraction(1), Fraction(1), Fraction(0.05))
    assert c.lower == -c.upper and MP.mpf(c.upper) >= f
    assert "gamma" in c.reason and "docs/bounds-and-gamma.md" in c.reason


def test_gamma_one_and_ln_upper():
    assert ln_upper(Fraction(1)) == 0
    for q in (Fraction(2), Fraction(20), Fraction(10**30, 7)):
        up = ln_upper(q)
        assert F(up) >= MP.log(F(q))
        assert F(up) - MP.log(F(q)) < MP.mpf(2) ** -110
    c = choose_clamp_bounds((Fraction(0), Fraction(1)), Fraction(1), Fraction(1), 1)
    assert MP.mpf(c.upper) >= 1 + (2 + 24 * MP.mpf(2) ** -52) / (1 - MP.mpf(2) ** -117) / 2


@pytest.mark.parametrize("gamma", [0, -0.1, 1.5, float("nan"), "0.1", True])
def test_bad_gamma(gamma):
    with pytest.raises(ParameterError, match="gamma"):
        choose_clamp_bounds((Fraction(0), Fraction(1)), Fraction(1), Fraction(1), gamma)


def test_given_clamp_bounds():
    c = given_clamp_bounds((-1.5, 3))
    assert (c.lower, c.upper, c.half_width, c.gamma) == (-1.5, 3.0, Fraction(9, 4), None)
    for bad in ((1, 1), (2, 1), (0, float("inf")), (Fraction(1, 3), 1), "ab", (1,)):
        with pytest.raises(ParameterError, match="clamp_bounds"):
            given_clamp_bounds(bad)


def test_clamp_binds_at_most_gamma_monte_carlo():
    """Worst case f(D) = hi: the clamp binds (output at an end) with probability <= γ."""
    gamma, trials = 0.2, 6000
    for eps in (0.5, 2.0):
        c = choose_clamp_bounds((Fraction(0), Fraction(10)), Fraction(1), Fraction(eps), gamma)
        m = snapcore.SnappingMechanism(
            epsilon=eps,
            clamp_bounds=(c.lower, c.upper),
            source=snapcore.SeededSource(int(eps * 10)),
        )
        for value in (Fraction(10), Fraction(0)):
            outs = [m.release(value) for _ in range(trials)]
            binds = sum(o in (c.lower, c.upper) for o in outs)
            # mean gamma*trials, sd <= sqrt(trials*gamma) ~ 35: allow 4 sd.
            assert binds <= gamma * trials + 4 * math.sqrt(trials * gamma), (eps, binds)


@pytest.mark.parametrize("n", [1, 7, 100, 101, 4097])
@pytest.mark.parametrize("eps", [Fraction(1), Fraction(1, 2), Fraction(1, 10), Fraction(3, 10)])
def test_an_integral_statistic_gets_a_clamp_interval_centred_on_whole_numbers(n, eps):
    from snapcore.calibration._clamp import choose_clamp_bounds

    plain = choose_clamp_bounds((Fraction(0), Fraction(n)), Fraction(1), eps, 0.05)
    whole = choose_clamp_bounds((Fraction(0), Fraction(n)), Fraction(1), eps, 0.05, integral=True)
    lo, hi = Fraction(whole.lower), Fraction(whole.upper)
    # the margin still holds on both sides (γ still bounds the clamp)
    assert lo <= 0 - whole.margin and hi >= n + whole.margin
    # u = 2**ceil(log2(1/ε)) for Δ = 1, ε <= 1 (hand-derived: 1, 2, 16, 4)
    u = {Fraction(1): 1, Fraction(1, 2): 2, Fraction(1, 10): 16, Fraction(3, 10): 4}[eps]
    assert lo % u == 0 and hi % u == 0 and ((lo + hi) / 2) % u == 0
    # it grows by less than 2u over the interval centred on the range
    assert (hi - lo) - (Fraction(plain.upper) - Fraction(plain.lower)) < 4 * u


def test_a_count_released_at_epsilon_one_is_whole_without_rounding():
    import snapcore

    for seed in range(20):
        r = snapcore.release(
            "count", [0] * 101, epsilon=1, n=1001, source=snapcore.SeededSource(seed)
        )
        assert isinstance(r.snapped, int) and 0 <= r.value <= 1001
        assert r.value == min(max(r.snapped, 0), 1001)
