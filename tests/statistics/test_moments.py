"""The sum's Δ, range and cap, and the variance/covariance range bound, by hand.

``Sum.finalize`` is checked on a small dataset whose clamped sum, Δ and range are
derived by hand for both relations (docs/statistics.md): under replace Δ = b − a and
the range is ``[n·a, n·b]``; under add-remove Δ = max(|a|, |b|), the range is
``[N·min(a, 0), N·max(b, 0)]`` and the sum is clamped into it.  ``variance_range_bound``
is compared with the maximum over every vertex of the box, computed with exact
``Fraction`` arithmetic from the definition of the sample variance and covariance.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from snapcore.statistics.moments import Sum, variance_range_bound

from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE
#: clamped to [-1, 4]: 1, 3, 4, -1 (sum 7)
XS = [1.0, 3.0, 5.0, -2.0]


@pytest.mark.parametrize(
    ("relation", "n", "value", "delta", "rng"),
    [
        (REPLACE, None, 7, 5, (-4, 16)),  # Δ = b − a; [n·a, n·b] with n = 4
        (ADD_REMOVE, 9, 7, 4, (-9, 36)),  # Δ = max(|a|, |b|); [N·min(a,0), N·max(b,0)]
        (ADD_REMOVE, 1, 4, 4, (-1, 4)),  # the sum 7 is clamped into [-1, 4]
    ],
)
def test_sum_by_hand(relation, n, value, delta, rng):
    p = Sum().prepare(
        as_dataset(XS, columns=1), data_bounds=((-1.0, 4.0),), n=n, relation=relation
    )
    assert p.values == (value,) and p.sensitivity == delta and p.value_range == rng
    assert p.statistic == "sum" and p.n == (len(XS) if n is None else n)
    assert p.labels == ("sum",) and len(p.notes) == 1
    assert p.derivation == DERIVATION[relation]


DERIVATION = {
    REPLACE: "replacing one record x by x' in [a, b] changes the sum by x' - x, so Δ = b − a; "
    "n values in [a, b] sum to [n·a, n·b]",
    ADD_REMOVE: "adding or removing a record x in [a, b] changes the sum by |x| <= max(|a|, |b|) "
    "= Δ; at most N records sum to [N·min(a,0), N·max(b,0)] (the computed sum is clamped "
    "there, which keeps Δ)",
}


@pytest.mark.parametrize(
    ("lo", "hi", "n", "rng"),
    [
        (2.0, 5.0, 3, (0, 15)),  # a > 0: the range still starts at 0 (no records)
        (-5.0, -2.0, 3, (-15, 0)),  # b < 0: it still ends at 0
    ],
)
def test_sum_add_remove_range_contains_the_empty_sum(lo, hi, n, rng):
    p = Sum().prepare(
        as_dataset([3.0], columns=1), data_bounds=((lo, hi),), n=n, relation=ADD_REMOVE
    )
    assert p.value_range == rng and p.sensitivity == max(abs(lo), abs(hi))


def _sample_cov(xs: list[Fraction], ys: list[Fraction]) -> Fraction:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (n - 1)


@pytest.mark.parametrize("w", [Fraction(1), Fraction(3, 2), Fraction(1, 8), Fraction(7)])
@pytest.mark.parametrize("n", range(2, 9))
def test_variance_range_bound_is_the_largest_vertex_variance(n, w):
    """The sample variance is convex, so its maximum over ``[0, w]^n`` is at a vertex;
    the largest ``|covariance|`` of widths ``w`` and ``v`` is reached by ``y = x·v/w``
    (Cauchy–Schwarz)."""
    best = max(_sample_cov(list(x), list(x)) for x in itertools.product((0, w), repeat=n))
    assert variance_range_bound(n, w) == best
    v = Fraction(5, 3)
    best_cov = max(
        abs(_sample_cov(list(x), [xi * v / w for xi in x]))
        for x in itertools.product((0, w), repeat=n)
    )
    assert variance_range_bound(n, w, v) == best_cov


def test_sum_finalize_names_itself_when_bounds_are_missing():
    """``finalize`` runs on merged states from elsewhere too (Dask), so it checks the
    bounds itself and says which statistic needs them."""
    msg = r"^statistic 'sum' needs data_bounds=\(lower, upper\) on the data values$"
    with pytest.raises(ParameterError, match=msg):
        Sum().finalize((1, 0), data_bounds=None, n=None, relation=REPLACE)
