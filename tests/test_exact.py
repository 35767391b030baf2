"""snapcore.exact: sums and dot products of doubles, exactly (against Fractions)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import snapstat_helpers as H
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcore.exact import exact_dot, exact_sum, scaled_integers


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
