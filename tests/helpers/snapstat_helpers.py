"""Shared strategies and exact references for the statistic tests.

The references compute each statistic from its definition with Fractions (two-pass
for the moments), independently of snapcore's one-pass scaled-integer code.
"""

from __future__ import annotations

import bisect
from fractions import Fraction

from hypothesis import strategies as st

MAX_DOUBLE = 1.7976931348623157e308
SPECIAL = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-300,
    -1e-300,
    1e300,
    -1e300,
    MAX_DOUBLE,
    -MAX_DOUBLE,
    1.0,
    -1.0,
    0.1,
    1 / 3,
    2.0**53,
    2.0**53 + 2,
    -(2.0**52) - 1,
]


def finite_floats() -> st.SearchStrategy[float]:
    """Doubles of every magnitude, with the awkward ones over-represented."""
    return st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(SPECIAL),
        st.integers(-1000, 1000).map(float),
    )


@st.composite
def data_bounds(draw: st.DrawFn) -> tuple[float, float]:
    a = draw(finite_floats())
    b = draw(finite_floats().filter(lambda v: v != a))
    return (min(a, b), max(a, b))


def values_for(bounds: tuple[float, float], max_size: int = 60) -> st.SearchStrategy[list[float]]:
    a, b = bounds
    elem = st.one_of(finite_floats(), st.just(a), st.just(b))
    return st.lists(elem, min_size=0, max_size=max_size)


def clamp(x: float, a: float, b: float) -> Fraction:
    return Fraction(min(max(x, a), b))


def ref_sum(xs: list[float], a: float, b: float) -> Fraction:
    return sum((clamp(x, a, b) for x in xs), Fraction(0))


def ref_mean(xs: list[float], a: float, b: float) -> Fraction:
    return ref_sum(xs, a, b) / len(xs)


def ref_variance(xs: list[float], a: float, b: float) -> Fraction:
    c = [clamp(x, a, b) for x in xs]
    m = sum(c, Fraction(0)) / len(c)
    return sum(((v - m) ** 2 for v in c), Fraction(0)) / (len(c) - 1)


def ref_covariance(
    xs: list[float], ys: list[float], bx: tuple[float, float], by: tuple[float, float]
) -> Fraction:
    cx = [clamp(x, *bx) for x in xs]
    cy = [clamp(y, *by) for y in ys]
    mx = sum(cx, Fraction(0)) / len(cx)
    my = sum(cy, Fraction(0)) / len(cy)
    return sum(((u - mx) * (v - my) for u, v in zip(cx, cy, strict=True)), Fraction(0)) / (
        len(cx) - 1
    )


def ref_histogram(xs: list[float], edges: list[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    for x in xs:
        v = min(max(x, edges[0]), edges[-1])
        i = bisect.bisect_right(edges, v) - 1
        counts[min(i, len(counts) - 1)] += 1
    return counts


@st.composite
def replace_neighbour(
    draw: st.DrawFn, xs: list[float], elem: st.SearchStrategy[float]
) -> list[float]:
    """``xs`` with one record replaced (``xs`` non-empty)."""
    i = draw(st.integers(0, len(xs) - 1))
    out = list(xs)
    out[i] = draw(elem)
    return out


@st.composite
def add_remove_neighbour(
    draw: st.DrawFn, xs: list[float], elem: st.SearchStrategy[float]
) -> list[float]:
    """``xs`` with one record added or removed."""
    out = list(xs)
    if out and draw(st.booleans()):
        del out[draw(st.integers(0, len(out) - 1))]
    else:
        out.insert(draw(st.integers(0, len(out))), draw(elem))
    return out
