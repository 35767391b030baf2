"""Small, dependency-light statistical tests for the test suite (mpmath, no scipy).

Every test here returns a p-value: the probability, under the hypothesis that the
implementation is right, of a result at least as extreme.  Tests compare it with a
stated false-alarm rate (``ALPHA``) and run at fixed seeds, so they are
deterministic; the rate says how unlucky a seed would have to be for a correct
implementation to fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import mpmath

__all__ = ["ALPHA", "binomial_two_sided", "chi_square", "chi_square_sf"]

#: False-alarm rate of each statistical assertion.
ALPHA = 1e-6

_mp = mpmath.MPContext()
_mp.dps = 30


def _mpf(x: object) -> object:
    """An mpf from a Fraction, int, float or mpf (Fractions exactly to 30 digits)."""
    if isinstance(x, Fraction):
        return _mp.mpf(x.numerator) / x.denominator
    return _mp.mpf(x)


def chi_square_sf(statistic: float, dof: int) -> float:
    """P(X >= statistic) for X ~ chi-square with ``dof`` degrees of freedom."""
    return float(_mp.gammainc(_mp.mpf(dof) / 2, _mp.mpf(statistic) / 2, _mp.inf, regularized=True))


def chi_square(
    observed: Mapping[object, int],
    expected_prob: Mapping[object, object],
    *,
    min_expected: float = 5,
) -> tuple[float, float, int]:
    """Pearson's chi-square of ``observed`` counts against exact cell probabilities.

    Cells with an expected count below ``min_expected`` are pooled into one cell.
    An observation outside ``expected_prob`` is an immediate failure (p-value 0).

    Returns
    -------
    (statistic, p_value, dof)
    """
    n = sum(observed.values())
    unknown = set(observed) - set(expected_prob)
    if unknown:
        return (float("inf"), 0.0, 0)
    total = _mp.fsum(_mpf(p) for p in expected_prob.values())
    assert abs(total - 1) < _mp.mpf(10) ** -20, f"probabilities sum to {total}"
    stat = _mp.mpf(0)
    pooled_o, pooled_e, cells = 0, _mp.mpf(0), 0
    for key, prob in expected_prob.items():
        e = n * _mpf(prob)
        o = observed.get(key, 0)
        if e < min_expected:
            pooled_o += o
            pooled_e += e
            continue
        stat += (o - e) ** 2 / e
        cells += 1
    if pooled_e > 0:
        if pooled_e >= min_expected or cells == 0:
            stat += (pooled_o - pooled_e) ** 2 / pooled_e
            cells += 1
        elif pooled_o > 10 * max(pooled_e, 1):
            return (float("inf"), 0.0, cells)
    dof = cells - 1
    return (float(stat), chi_square_sf(float(stat), dof), dof)


def _binomial_tail(k: int, n: int, p: float, step: int) -> float:
    """Sum of P(X = j) for j = k, k + step, ... while the terms matter (log space)."""
    lp, lq = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    total, j = 0.0, k
    while 0 <= j <= n:
        term = math.exp(base - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)
        total += term
        if term < total * 1e-18 and (j - n * p) * step > 0:
            break
        j += step
    return total


def binomial_two_sided(k: int, n: int, p: object) -> float:
    """Two-sided p-value of ``k`` successes in ``n`` trials of probability ``p``:
    twice the exact tail on ``k``'s side of the mean, capped at 1."""
    q = float(p)  # type: ignore[arg-type]
    if not 0 < q < 1:
        return 1.0 if k == round(q * n) else 0.0
    tail = _binomial_tail(k, n, q, +1) if k >= n * q else _binomial_tail(k, n, q, -1)
    return min(1.0, 2 * tail)


def counts(items: Sequence[object]) -> dict[object, int]:
    """A tally of ``items``."""
    out: dict[object, int] = {}
    for it in items:
        out[it] = out.get(it, 0) + 1
    return out
