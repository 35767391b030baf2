"""snapcore.exact._sums: sums and dot products of doubles, exactly (against Fractions)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import snapstat_helpers as H
from hypothesis import given, settings, strategies as st

from snapcore.errors import ParameterError
from snapcore.exact._sums import (
    DOT_SCALE,
    SUM_SCALE,
    clamped_cross_moments,
    clamped_moments,
    exact_dot,
    exact_sum,
    scaled_integers,
    sum_scaled,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(H.finite_floats(), max_size=80), st.data())
def test_sum_and_dot_exact(xs, data):
    assert exact_sum(xs) == sum(map(Fraction, xs), Fraction(0))
    ys = data.draw(st.lists(H.finite_floats(), min_size=len(xs), max_size=len(xs)))
    ref = sum((Fraction(a) * Fraction(b) for a, b in zip(xs, ys, strict=True)), Fraction(0))
    assert exact_dot(xs, ys) == ref


def test_int64_and_object_paths_agree():
    rng = np.random.default_rng(5)
    for n in (1, 300, 2000, 20000):  # small n: int64 sums; large n: Python ints
        for x in (
            rng.integers(0, 120, n).astype(np.float64),
            rng.uniform(-1, 1, n),
            rng.uniform(0, 2.0**60, n),
        ):
            ref_sum = sum(map(Fraction, x.tolist()), Fraction(0))
            s = scaled_integers(x)
            assert s.total() == ref_sum
            assert s.dot(s) == sum((Fraction(v) ** 2 for v in x.tolist()), Fraction(0))


def test_edges():
    assert exact_sum([]) == 0 and exact_dot([], []) == 0
    assert exact_sum([0.0, -0.0]) == 0
    assert exact_sum([5e-324, 1.7976931348623157e308]) == Fraction(5e-324) + Fraction(
        1.7976931348623157e308
    )
    assert exact_sum([1e16, 1.0, -1e16]) == 1 != sum([1e16, 1.0, -1e16])


# --- the superaccumulator engines (numpy and numba) -------------------------------

ENGINES = ["numpy", "numba"]
MAX = 1.7976931348623157e308
TINY = 5e-324


def fsum(xs):
    return sum(map(Fraction, xs), Fraction(0))


def fdot(xs, ys):
    return sum((Fraction(a) * Fraction(b) for a, b in zip(xs, ys, strict=True)), Fraction(0))


def clamp(v, lo, hi):
    return min(max(v, lo), hi)


@pytest.mark.parametrize("engine", ENGINES)
def test_adversarial_sums_and_products(engine):
    every_exponent = [
        math.ldexp(1.0 + (k % 1024) / 2048, e) for k, e in enumerate(range(-1074, 1024))
    ]
    cases = [
        [1e16, 1.0, -1e16],
        [MAX, MAX, -MAX, -MAX, TINY],  # the float sum overflows; the exact one does not
        [TINY, MAX, -TINY, 2.2250738585072014e-308, -1e308, -0.0, 0.0],
        every_exponent,
        [-v for v in every_exponent] + every_exponent[::3],
        [(2.0**53 - 1) * 2.0**-1074 * s for s in (1, -1, 1)] + [2.0**-1022 - TINY],
        [MAX] * 3000,  # many records at the top bucket: carries across int64 buckets
        [(2.0 - 2.0**-52) * (-1) ** i for i in range(5001)],
    ]
    rng = np.random.default_rng(13)
    for xs in cases:
        x = np.array(xs)
        y = rng.permutation(x)
        assert exact_sum(x, engine=engine) == fsum(xs)
        assert exact_dot(x, y, engine=engine) == fdot(xs, y.tolist())
        assert exact_dot(x, x, engine=engine) == fdot(xs, xs)
        assert sum_scaled(x, engine=engine) == fsum(xs) * 2**SUM_SCALE


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(xs=st.lists(H.finite_floats(), max_size=60), data=st.data())
def test_engines_exact_on_hypothesis_arrays(engine, xs, data):
    ys = data.draw(st.lists(H.finite_floats(), min_size=len(xs), max_size=len(xs)))
    lo, hi = sorted(data.draw(st.tuples(H.finite_floats(), H.finite_floats())))
    x, y = np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)
    cx = [clamp(v, lo, hi) for v in xs]
    s, q = clamped_moments(x, lo, hi, squares=True, engine=engine)
    assert Fraction(s, 2**SUM_SCALE) == fsum(cx)
    assert Fraction(q, 2**DOT_SCALE) == fdot(cx, cx)
    cy = [clamp(v, -hi, -lo) for v in ys]
    sx, sy, sxy = clamped_cross_moments(x, y, (lo, hi, -hi, -lo), engine=engine)
    assert (sx, sy) == (s, fsum(cy) * 2**SUM_SCALE)
    assert Fraction(sxy, 2**DOT_SCALE) == fdot(cx, cy)


def test_engines_agree_on_large_mixed_arrays():
    """Past the numpy engine's chunk size, with every sign and a wide exponent range."""
    rng = np.random.default_rng(7)
    n = (1 << 20) + 12345
    x = rng.normal(0, 1, n) * 2.0 ** rng.integers(-1000, 1000, n)
    y = rng.uniform(-1, 1, n)
    ref = [clamped_cross_moments(x, y, engine=e) for e in ENGINES]
    assert ref[0] == ref[1]
    # ... and both equal the exact sums over the whole array, from integer ratios
    # (each double is n / 2**k; scaled by 2**SUM_SCALE it is the integer n·2**(SUM_SCALE-k))
    rx = [v.as_integer_ratio() for v in x.tolist()]
    ry = [v.as_integer_ratio() for v in y.tolist()]
    sx = sum(n * (2**SUM_SCALE // d) for n, d in rx)
    sy = sum(n * (2**SUM_SCALE // d) for n, d in ry)
    sxy = sum(
        nx * ny * (2**DOT_SCALE // (dx * dy)) for (nx, dx), (ny, dy) in zip(rx, ry, strict=True)
    )
    assert ref[0] == (sx, sy, sxy)
    # and against independent Fraction sums on a slice
    head = x[:3000].tolist()
    assert exact_sum(x[:3000], engine="numba") == fsum(head)
    assert exact_dot(x[:3000], x[:3000], engine="numpy") == fdot(head, head)


def test_bad_values_are_refused_without_echo():
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ParameterError, match="finite") as e:
            clamped_moments(np.array([1.5, bad]))
        assert "1.5" not in str(e.value)
    with pytest.raises(ParameterError, match="engine"):
        sum_scaled([1.0], engine="gpu")


@pytest.mark.parametrize("engine", ENGINES)
def test_non_finite_refused_by_both_engines_even_when_clamped_away(engine):
    for bad in (math.nan, math.inf, -math.inf):
        x = np.full(70_000, 0.5)
        x[12_345] = bad
        with pytest.raises(ParameterError, match="finite"):
            clamped_moments(x, 0.0, 1.0, squares=True, engine=engine)
        with pytest.raises(ParameterError, match="finite"):
            clamped_cross_moments(np.full(70_000, 0.5), x, (0.0, 1.0, 0.0, 1.0), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_strided_and_read_only_columns_are_read_in_place(engine):
    """Columns of a 2-D array (strided views) and read-only views give the same exact
    sums as contiguous copies, and are not written to."""
    rng = np.random.default_rng(11)
    xy = np.column_stack([rng.uniform(-3, 3, 5000), rng.normal(0, 1e-300, 5000)])
    xy[::7, 1] = 1e308
    before = xy.copy()
    x, y = xy[:, 0], xy[:, 1]
    ro = y.view()
    ro.flags.writeable = False
    bounds = (-2.0, 2.5, -1e300, 1e308)
    got = clamped_cross_moments(x, ro, bounds, engine=engine)
    assert got == clamped_cross_moments(x.copy(), y.copy(), bounds, engine=engine)
    cx = [clamp(v, -2.0, 2.5) for v in x.tolist()]
    cy = [clamp(v, -1e300, 1e308) for v in y.tolist()]
    assert Fraction(got[2], 2**DOT_SCALE) == fdot(cx, cy)
    assert Fraction(got[1], 2**SUM_SCALE) == fsum(cy)
    s, q = clamped_moments(ro, -1e300, 1e308, squares=True, engine=engine)
    assert (Fraction(s, 2**SUM_SCALE), Fraction(q, 2**DOT_SCALE)) == (fsum(cy), fdot(cy, cy))
    assert np.array_equal(xy, before)


@pytest.mark.parametrize("engine", ENGINES)
def test_register_windows_at_their_edges_against_fractions(engine):
    """Values and products at and just outside the compiled kernels' register windows
    (shifts ``top − 10`` and ``top − 4`` below the clamp's top shift), with signed
    zeros and both signs, against exact Fractions."""
    top = 2.0**6  # the clamp bound 100 has the top shift of [64, 128)
    parts = []
    for j in range(-14, 2):
        for frac in (1.0, 1.5, 1.9999999999999998):
            parts += [frac * top * 2.0**j, -frac * top * 2.0**j]
    x = np.array([*parts, 0.0, -0.0, -0.0, 100.0, -100.0, 5e-324, -5e-324] * 3)
    y = np.roll(x, 7)[::-1].copy()
    cx = [clamp(v, -100.0, 100.0) for v in x.tolist()]
    cy = [clamp(v, -100.0, 50.0) for v in y.tolist()]
    s, q = clamped_moments(x, -100.0, 100.0, squares=True, engine=engine)
    assert Fraction(s, 2**SUM_SCALE) == fsum(cx)
    assert Fraction(q, 2**DOT_SCALE) == fdot(cx, cx)
    sx, sy, sxy = clamped_cross_moments(x, y, (-100.0, 100.0, -100.0, 50.0), engine=engine)
    assert (Fraction(sx, 2**SUM_SCALE), Fraction(sy, 2**SUM_SCALE)) == (fsum(cx), fsum(cy))
    assert Fraction(sxy, 2**DOT_SCALE) == fdot(cx, cy)
    neg = np.array([-0.0] * 5 + [-1.0, 1.0])
    assert clamped_moments(neg, -2.0, 2.0, squares=True, engine=engine) == (0, 2 << DOT_SCALE)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bound", [100.0, 1e-300, MAX])
def test_chunked_sums_with_values_far_below_the_top_against_fractions(engine, bound):
    """Chunks of the vectorised sums whose values all split into two 53-bit integers,
    and chunks holding one value with bits far below the clamp's top (those chunks go
    to the buckets), with the clamp's top tiny (no vectorised path) or the largest
    double; against exact Fractions."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1.0, 1.0, 3000) * bound
    bound *= 0.8  # the clamp cuts about a fifth
    x[700] = bound * 2.0**-80  # bits below 2**(top − 53) of the clamp's scale
    x[2100] = -(bound * 2.0**-60) * (1 + 2.0**-52)
    x[1500] = -0.0
    x[2999] = 5e-324
    c = [clamp(v, -bound, bound) for v in x.tolist()]
    s, q = clamped_moments(x, -bound, bound, squares=True, engine=engine)
    assert Fraction(s, 2**SUM_SCALE) == fsum(c)
    assert Fraction(q, 2**DOT_SCALE) == fdot(c, c)
    assert Fraction(clamped_moments(x, -bound, bound, engine=engine)[0], 2**SUM_SCALE) == fsum(c)
    y = np.roll(x, 5)[::-1].copy() * -0.5
    y[1200] = bound * 2.0**-70
    cy = [clamp(v, -bound / 4, bound / 2) for v in y.tolist()]
    sx, sy, sxy = clamped_cross_moments(
        x, y, (-bound, bound, -bound / 4, bound / 2), engine=engine
    )
    assert (Fraction(sx, 2**SUM_SCALE), Fraction(sy, 2**SUM_SCALE)) == (fsum(c), fsum(cy))
    assert Fraction(sxy, 2**DOT_SCALE) == fdot(c, cy)
