"""Mironov's attack: the NumPy replay is exact, preimages are complete, the attack
wins against NumPy's Laplace and not against snapcore."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from snapcore import SeededSource, SnappingMechanism
from snapcore.analysis._attack import (
    K_MAX,
    find_witness,
    naive_likelihood,
    naive_preimage,
    numpy_laplace,
    run_numpy_attack,
    run_snapcore_attack,
)


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.0, 1.0), (-3.25, 0.125), (7.0, 1024.0)])
def test_numpy_laplace_replay_is_bit_exact(loc, scale):
    n = 20_000
    us = np.random.Generator(np.random.PCG64(11)).random(n)  # next_double stream
    want = np.random.Generator(np.random.PCG64(11)).laplace(loc, scale, n)
    ks = (us * 2.0**53).astype(np.int64)
    assert (ks.astype(np.float64) == us * 2.0**53).all()
    got = np.array([numpy_laplace(loc, scale, int(k)) for k in ks])
    assert np.array_equal(got, want)


def test_naive_map_is_monotone_on_sorted_draws():
    rng = random.Random(3)
    ks = sorted({rng.randrange(1, K_MAX + 1) for _ in range(5000)} | {1, K_MAX, 1 << 52})
    for loc, scale in ((0.0, 1.0), (1.0, 10.0)):
        ys = [numpy_laplace(loc, scale, k) for k in ks]
        assert ys == sorted(ys)


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.0, 1.0), (0.5, 1e-3)])
def test_preimage_is_complete_against_enumeration(loc, scale):
    rng = random.Random(5)
    for _ in range(30):
        k = rng.choice([rng.randrange(1, K_MAX), (1 << 52) + rng.randrange(-50, 50)])
        y = numpy_laplace(loc, scale, k)
        start, stop = naive_preimage(loc, scale, y)
        assert start <= k < stop
        # Independent check: enumerate a window around the interval.
        window = range(max(1, start - 300), min(K_MAX, stop + 300) + 1)
        hits = [j for j in window if numpy_laplace(loc, scale, j) == y]
        assert hits == list(range(start, stop))
        assert naive_likelihood(loc, scale, y) == Fraction(stop - start, K_MAX)


def test_witness_rechecks_independently():
    w = find_witness(0.0, 1.0, 1.0, seed=2)
    # Recompute with the textbook formula written out here.
    u = w.k / 2.0**53
    assert u == w.u
    y = 0.0 + 1.0 * math.log(u + u) if u < 0.5 else 0.0 - 1.0 * math.log(2.0 - u - u)
    assert y == w.output
    assert w.below < w.output < w.above
    assert numpy_laplace(1.0, 1.0, w.k_above - 1) == w.below
    assert numpy_laplace(1.0, 1.0, w.k_above) == w.above
    assert naive_likelihood(1.0, 1.0, w.output) == 0
    assert w.probability > 0
    assert "P(y | loc=1.0) = 0" in "\n".join(w.lines())


def test_attack_wins_against_numpy():
    r = run_numpy_attack(1.0, (0.0, 1.0), trials=2000, seed=1)
    # e**1/(1+e**1) = 0.731 is the most epsilon-DP allows; the attack does far better.
    assert r.bound == pytest.approx(math.e / (1 + math.e))
    assert r.rate > 0.85 and r.certain_rate > 0.7


@pytest.mark.parametrize("eps", [1.0, 0.25])
def test_attack_no_better_than_dp_allows_against_snapcore(eps):
    m = SnappingMechanism(epsilon=eps, clamp_bound=8.0 / eps, source=SeededSource(4))
    r, exact = run_snapcore_attack(m, (0.0, 1.0), trials=2000, seed=2)
    assert exact <= r.bound
    assert r.certain == 0
    sigma = math.sqrt(exact * (1 - exact) / r.trials)
    assert abs(r.rate - exact) < 5 * sigma
    # and far below what the attack achieves on numpy at the same epsilon
    assert r.rate < r.bound + 5 * sigma


@pytest.mark.slow
def test_attack_numpy_many_trials(slow_size):
    for eps in slow_size((0.1, 0.5, 1.0), (0.5,)):
        r = run_numpy_attack(eps, (0.0, 1.0), trials=slow_size(50_000, 2_000), seed=9)
        assert r.rate > r.bound + 0.1
