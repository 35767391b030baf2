"""Built-in statistics: exact values, declared sensitivity, range (B′), extremal datasets.

Every value is compared with an exact two-pass Fraction reference
(tests/helpers/snapstat_helpers.py); every sensitivity is checked on hypothesis-made
neighbouring datasets (huge and tiny magnitudes mixed, values at and beyond the
bounds, many records), on the values the code actually hands to the mechanism.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import snapstat_helpers as H
from hypothesis import HealthCheck, given, settings, strategies as st
from slow_sample import slow_examples
from snapcore.statistics.counting import Count, Histogram
from snapcore.statistics.moments import Covariance, Mean, Sum, Variance, variance_range_bound

from snapcore.data._columns import as_dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import ParameterError

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def prep(stat, xs, data_bounds=None, relation=REPLACE, n=None, columns=1, **opts):
    ds = as_dataset(xs, columns=columns)
    return stat.prepare(ds, data_bounds=data_bounds, n=n, relation=relation, **opts)


def check_pair(p, q, stat_name):
    """The declared Δ holds between the two computed values, and both lie in the range."""
    assert p.sensitivity == q.sensitivity
    for u, v in zip(p.values, q.values, strict=True):
        assert isinstance(u, Fraction | int) and isinstance(v, Fraction | int), stat_name
        assert abs(Fraction(u) - Fraction(v)) <= p.sensitivity, (
            f"{stat_name}: |f(D) - f(D')| = {float(abs(u - v))!r} > Δ = {float(p.sensitivity)!r}"
        )
    for r in (p, q):
        lo, hi = r.value_range
        for v in r.values:
            assert lo <= v <= hi
            assert abs(v) <= r.b_prime


# -- exact values ------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_sum_mean_variance_exact(data):
    a, b = data.draw(H.data_bounds())
    xs = data.draw(H.values_for((a, b)).filter(lambda v: len(v) >= 2))
    assert prep(Sum(), xs, ((a, b),)).values == (H.ref_sum(xs, a, b),)
    assert prep(Mean(), xs, ((a, b),)).values == (H.ref_mean(xs, a, b),)
    assert prep(Variance(), xs, ((a, b),)).values == (H.ref_variance(xs, a, b),)


@SETTINGS
@given(st.data())
def test_covariance_exact(data):
    bx = data.draw(H.data_bounds())
    by = data.draw(H.data_bounds())
    k = data.draw(st.integers(2, 40))
    xs = data.draw(st.lists(H.finite_floats(), min_size=k, max_size=k))
    ys = data.draw(st.lists(H.finite_floats(), min_size=k, max_size=k))
    p = prep(Covariance(), list(zip(xs, ys, strict=True)), (bx, by), columns=2)
    assert p.values == (H.ref_covariance(xs, ys, bx, by),)


def test_exact_where_floats_fail():
    # 1e16 + 1 - 1e16 in doubles is 0 or 2; the exact sum is 1.
    p = prep(Sum(), [1e16, 1.0, -1e16], ((-1e16, 1e16),))
    assert p.values == (Fraction(1),)
    p = prep(Mean(), [0.1] * 10, ((0.0, 1.0),))
    assert p.values == (Fraction(0.1),)  # sum([0.1]*10)/10 in floats is 0.09999999999999999


def test_naive_float_sum_breaks_sensitivity_exact_sum_does_not():
    """Casacuberta et al. (2022): a float sum of values in [2**52, 2**52 + 1] (Δ = 1)
    can move by 8 when one record changes by 1; the exact sum moves by exactly 1."""
    lo, hi = 2.0**52, 2.0**52 + 1
    d = [hi, hi, lo, hi, lo, lo, lo, hi, lo, lo, lo]
    d2 = list(d)
    d2[3] = lo
    assert abs(sum(d) - sum(d2)) == 8.0  # the naive computation: 8 > Δ = 1
    p, q = prep(Sum(), d, ((lo, hi),)), prep(Sum(), d2, ((lo, hi),))
    assert p.sensitivity == 1 and abs(p.values[0] - q.values[0]) == 1
    check_pair(p, q, "sum")


# -- sensitivity on neighbouring datasets -----------------------------------------------


@SETTINGS
@given(st.data())
def test_replace_sensitivity_sum_mean_variance(data):
    a, b = data.draw(H.data_bounds())
    elem = st.one_of(H.finite_floats(), st.just(a), st.just(b))
    xs = data.draw(H.values_for((a, b)).filter(lambda v: len(v) >= 2))
    ys = data.draw(H.replace_neighbour(xs, elem))
    for stat in (Sum(), Mean(), Variance()):
        check_pair(prep(stat, xs, ((a, b),)), prep(stat, ys, ((a, b),)), stat.name)


@SETTINGS
@given(st.data())
def test_replace_sensitivity_covariance(data):
    bx, by = data.draw(H.data_bounds()), data.draw(H.data_bounds())
    ex = st.one_of(H.finite_floats(), st.sampled_from(bx))
    ey = st.one_of(H.finite_floats(), st.sampled_from(by))
    pair = st.tuples(ex, ey)
    rows = data.draw(st.lists(pair, min_size=2, max_size=40))
    other = data.draw(H.replace_neighbour(rows, pair))
    p = prep(Covariance(), rows, (bx, by), columns=2)
    q = prep(Covariance(), other, (bx, by), columns=2)
    check_pair(p, q, "covariance")


@SETTINGS
@given(st.data())
def test_add_remove_sensitivity_sum_count(data):
    a, b = data.draw(H.data_bounds())
    elem = st.one_of(H.finite_floats(), st.just(a), st.just(b))
    xs = data.draw(H.values_for((a, b)))
    ys = data.draw(H.add_remove_neighbour(xs, elem))
    cap = data.draw(st.integers(0, 70))
    check_pair(
        prep(Sum(), xs, ((a, b),), ADD_REMOVE, n=cap),
        prep(Sum(), ys, ((a, b),), ADD_REMOVE, n=cap),
        "sum",
    )
    check_pair(
        prep(Count(), xs, None, ADD_REMOVE, n=cap, columns=0),
        prep(Count(), ys, None, ADD_REMOVE, n=cap, columns=0),
        "count",
    )


@SETTINGS
@given(st.data())
def test_histogram_sensitivity_both_relations(data):
    edges = sorted(set(data.draw(st.lists(H.finite_floats(), min_size=2, max_size=6))))
    if len(edges) < 2:
        edges = [0.0, 1.0]
    elem = st.one_of(H.finite_floats(), st.sampled_from(edges))
    xs = data.draw(st.lists(elem, max_size=50))
    for rel, neighbour in ((REPLACE, H.replace_neighbour), (ADD_REMOVE, H.add_remove_neighbour)):
        if rel is REPLACE and not xs:
            continue
        ys = data.draw(neighbour(xs, elem))
        n = None if rel is REPLACE else data.draw(st.integers(0, 60))
        p = prep(Histogram(), xs, None, rel, n=n, bins=edges)
        q = prep(Histogram(), ys, None, rel, n=n, bins=edges)
        check_pair(p, q, "histogram")
        changed = sum(u != v for u, v in zip(p.values, q.values, strict=True))
        # The budget split is justified by how many bins one neighbour changes.
        assert changed <= (2 if rel is REPLACE else 1)
        assert p.epsilon_share == (Fraction(1, 2) if rel is REPLACE else 1)
        if rel is REPLACE:
            assert list(p.values) == H.ref_histogram(xs, edges)


def test_many_records_mixed_magnitudes():
    rng = np.random.default_rng(2026)
    m = 20000
    mags = 10.0 ** rng.integers(-300, 300, size=m)
    xs = (rng.uniform(-1, 1, size=m) * mags).tolist()
    xs[::97] = [1e300] * len(xs[::97])
    xs[1::89] = [-1e-300] * len(xs[1::89])
    for a, b in ((-1e300, 1e300), (-1.0, 1.0), (0.0, 1e-300), (-5e-324, 5e-324)):
        ys = list(xs)
        ys[12345] = b if xs[12345] != b else a
        for stat in (Sum(), Mean(), Variance()):
            p, q = prep(stat, xs, ((a, b),)), prep(stat, ys, ((a, b),))
            check_pair(p, q, stat.name)
        assert prep(Mean(), xs, ((a, b),)).values == (H.ref_mean(xs, a, b),)
        assert prep(Variance(), xs, ((a, b),)).values == (H.ref_variance(xs, a, b),)


# -- sensitivities are tight: the extremal neighbours reach Δ ------------------------


@pytest.mark.parametrize("n", [2, 3, 10, 11])
def test_sensitivity_reached(n):
    a, b, c, d = -3.0, 5.0, 1.0, 2.5
    xs = [a] * (n - 1) + [b]
    ys = [a] * n
    for stat in (Mean(), Variance(), Sum()):
        p, q = prep(stat, xs, ((a, b),)), prep(stat, ys, ((a, b),))
        assert abs(p.values[0] - q.values[0]) == p.sensitivity
    rows = [(a, c)] * (n - 1) + [(b, d)]
    rows2 = [(a, c)] * n
    p = prep(Covariance(), rows, ((a, b), (c, d)), columns=2)
    q = prep(Covariance(), rows2, ((a, b), (c, d)), columns=2)
    assert abs(p.values[0] - q.values[0]) == p.sensitivity == Fraction(8 * 1.5) / n


# -- B′: the formulas and the extremal datasets ----------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 100, 101])
def test_variance_extremal_datasets_reach_b_prime(n):
    a, b = -2.0, 6.0
    w = Fraction(8)
    p = prep(Variance(), [a] * n, ((a, b),))
    if n % 2 == 0:
        even_b = Fraction(n, n - 1) * w * w / 4
        assert p.b_prime == even_b
        xs = [a] * (n // 2) + [b] * (n // 2)  # the extremal dataset
        assert prep(Variance(), xs, ((a, b),)).values[0] == even_b
    else:
        naive_odd = w * w / 4
        seed_xs = [a] * ((n - 1) // 2) + [b] * ((n - 1) // 2) + [(a + b) / 2]
        assert prep(Variance(), seed_xs, ((a, b),)).values[0] == naive_odd
        xs = [a] * ((n - 1) // 2) + [b] * ((n + 1) // 2)
        v = prep(Variance(), xs, ((a, b),)).values[0]
        assert v == Fraction(n + 1, n) * w * w / 4 == p.b_prime > naive_odd


def test_variance_b_prime_is_the_maximum_by_enumeration():
    # S is convex, so the max over [a,b]^n is at a vertex: enumerate all vertices.
    import itertools

    a, b = 0.0, 1.0
    for n in range(2, 9):
        best = max(
            prep(Variance(), list(v), ((a, b),)).values[0]
            for v in itertools.product((a, b), repeat=n)
        )
        assert best == variance_range_bound(n, Fraction(1))


@pytest.mark.parametrize("n", [2, 3, 6, 7])
def test_covariance_extremal_datasets_reach_b_prime(n):
    bx, by = (0.0, 4.0), (-1.0, 1.0)
    k = n // 2 if n % 2 == 0 else (n + 1) // 2
    rows = [(4.0, 1.0)] * k + [(0.0, -1.0)] * (n - k)
    p = prep(Covariance(), rows, (bx, by), columns=2)
    assert p.values[0] == p.b_prime == p.value_range[1]
    if n % 2 == 0:
        assert p.b_prime == Fraction(n, n - 1) * 8 / 4
    else:
        assert p.b_prime == Fraction(n + 1, n) * 8 / 4
    rows = [(4.0, -1.0)] * k + [(0.0, 1.0)] * (n - k)
    assert prep(Covariance(), rows, (bx, by), columns=2).values[0] == -p.b_prime


def test_mean_sum_count_histogram_extremes():
    for a, b in ((-7.0, 3.0), (2.0, 9.0)):
        p = prep(Mean(), [a if abs(a) > abs(b) else b] * 5, ((a, b),))
        assert abs(p.values[0]) == p.b_prime == max(abs(a), abs(b))
        s = prep(Sum(), [b] * 5, ((a, b),))
        assert s.value_range == (5 * Fraction(a), 5 * Fraction(b))
        assert prep(Sum(), [a] * 5, ((a, b),)).values[0] == s.value_range[0]
    h = prep(Histogram(), [1.5] * 9, None, bins=[0, 1, 2, 3])
    assert h.values == (0, 9, 0) and h.b_prime == 9
    c = prep(Count(), list(range(12)), None, ADD_REMOVE, n=12, columns=0)
    assert c.values == (12,) and c.b_prime == 12
    capped = prep(Count(), list(range(30)), None, ADD_REMOVE, n=12, columns=0)
    assert capped.values == (12,)


def test_count_replace_is_public():
    p = prep(Count(), [1.0, 2.0, 3.0], None, REPLACE, columns=0)
    assert p.values == (3,) and p.sensitivity == 0


def test_histogram_bins_and_categories():
    h = prep(Histogram(), [-5.0, 0.0, 0.99, 1.0, 2.0, 3.0, 99.0], None, bins=[0, 1, 3])
    # clamped into the edge bins, and the labels say so
    assert h.values == (3, 4) and h.labels == ("< 1", "≥ 1")
    h = prep(Histogram(), [-5.0, 0.0, 0.99, 1.0, 2.0, 3.0, 99.0], None, bins=[0, 1, 2, 3])
    assert h.values == (3, 1, 3) and h.labels == ("< 1", "[1, 2)", "≥ 2")
    h = prep(
        Histogram(),
        [-5.0, 0.0, 0.99, 1.0, 2.0, 3.0, 99.0],
        None,
        bins=[0, 1, 3],
        out_of_range="drop",
    )
    assert h.values == (2, 3) and h.labels == ("[0, 1)", "[1, 3]")
    col = ["a", "b", "a", "zz", "c"]
    h = prep(Histogram(), col, None, categories=["a", "b", "c"])
    assert h.values == (2, 1, 1) and h.labels == ("a", "b", "c")
    h = prep(Histogram(), col, None, categories=["a", "b"], other=True)
    assert h.values == (2, 1, 2) and h.labels == ("a", "b", "other")
    assert "counts in 'other'" in h.derivation
    h = prep(Histogram(), col, None, categories=["a", "b"])
    assert "not counted" in h.derivation
    with pytest.raises(ParameterError, match="other=True is for categories"):
        prep(Histogram(), [1.0], None, bins=[0, 1], other=True)
    with pytest.raises(ParameterError, match="out_of_range must be"):
        prep(Histogram(), [1.0], None, bins=[0, 1], out_of_range="ignore")
    with pytest.raises(ParameterError, match="distinct"):
        prep(Histogram(), col, None, categories=["a", "a"])
    with pytest.raises(ParameterError, match="exactly one of bins"):
        prep(Histogram(), col, None)
    with pytest.raises(ParameterError, match="strictly increasing"):
        prep(Histogram(), [1.0], None, bins=[0, 0])
    with pytest.raises(ParameterError, match="contains missing values"):
        prep(Histogram(), ["a", None], None, categories=["a"])


def test_relations_are_documented():
    for stat in (Count(), Sum(), Mean(), Variance(), Covariance(), Histogram()):
        doc = " ".join((type(stat).__doc__ or "").split())
        for rel in stat.relations:
            assert rel.value in doc, (stat.name, rel)
            assert rel.description.split(": ")[1] in doc, (stat.name, rel)
    assert {r for s in (Count(), Sum(), Histogram()) for r in s.relations} == set(Neighbouring)


def test_small_n_refused():
    with pytest.raises(ParameterError, match="n >= 2"):
        prep(Variance(), [1.0], ((0.0, 1.0),))
    with pytest.raises(ParameterError, match="n >= 1"):
        prep(Mean(), [], ((0.0, 1.0),))
    with pytest.raises(ParameterError, match="n must equal"):
        prep(Mean(), [1.0, 2.0], ((0.0, 1.0),), n=3)
    with pytest.raises(ParameterError, match="public upper"):
        prep(Sum(), [1.0], ((0.0, 1.0),), ADD_REMOVE)


@pytest.mark.slow
@settings(max_examples=slow_examples(1500), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_replace_sensitivity_large_slow(data):
    """The default-size sensitivity test, with many more examples and records."""
    a, b = data.draw(H.data_bounds())
    elem = st.one_of(H.finite_floats(), st.just(a), st.just(b))
    xs = data.draw(H.values_for((a, b), max_size=1500).filter(lambda v: len(v) >= 2))
    ys = data.draw(H.replace_neighbour(xs, elem))
    for stat in (Sum(), Mean(), Variance()):
        check_pair(prep(stat, xs, ((a, b),)), prep(stat, ys, ((a, b),)), stat.name)
