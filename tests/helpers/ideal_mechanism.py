"""References for the accuracy tests (tests/analysis/test_guarantees.py and
test_estimates.py) that never call snapcore.analysis's own machinery: the ideal
mechanism's output distribution by brute force over its grid cells (mpmath at 300
bits), and binomial checks of simulated releases (Chernoff bounds; the false-failure
probability of each check is stated)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

import snapcore

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
