"""The core's p-bit rounding, each function checked directly against the reference.

:func:`snapcore.exact._dyadic.round_dyadic` (the *add* stage's rounding when ``x`` is dyadic)
and :func:`~snapcore.exact._dyadic.round_ratio` are compared with the independent
``snapref.round_p`` (exact Fractions and ``math.floor``) on every kind of input:
exact p-bit values, values just above and below the half-way point (rounding up
from an even mantissa to an odd one, which a wrong carry test gets wrong), ties, and
carries into the next binade.  Cheap enough to run with few examples, so a mutation
run that caps hypothesis examples still finds the bad roundings.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from snapref import RN, RU, RZ, round_p

from snapcore.exact._dyadic import Rounding, round_dyadic, round_ratio, to_fraction

PRECISIONS = st.sampled_from([2, 3, 5, 24, 53, 118, 200])


@st.composite
def near_half(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(m, e, p)`` with ``m`` a few bits longer than ``p`` and its dropped bits just
    below, at or just above one half (or all ones: a carry into the next binade)."""
    p = draw(PRECISIONS)
    extra = draw(st.integers(1, 70))
    top = draw(st.integers(1 << (p - 1), (1 << p) - 1))
    half = 1 << (extra - 1)
    low = draw(
        st.sampled_from([half - 1, half, half + 1, (1 << extra) - 1, 0, 1])
        if extra > 1
        else st.sampled_from([0, 1])
    )
    m = (top << extra) | (low % (1 << extra))
    sign = draw(st.sampled_from([1, -1]))
    return sign * m, draw(st.integers(-300, 300)), p


@settings(max_examples=200, deadline=None)
@given(t=near_half())
def test_round_dyadic_is_round_p_near_the_half_way_point(t):
    m, e, p = t
    got = round_dyadic(m, e, p)
    assert to_fraction(*got) == round_p(Fraction(m) * Fraction(2) ** e, p, RN)
    assert abs(got[0]).bit_length() <= p


@settings(max_examples=200, deadline=None)
@given(m=st.integers(-(2**300), 2**300), e=st.integers(-500, 500), p=PRECISIONS)
def test_round_dyadic_is_round_p(m, e, p):
    got = round_dyadic(m, e, p)
    assert to_fraction(*got) == round_p(Fraction(m) * Fraction(2) ** e, p, RN)
    assert abs(got[0]).bit_length() <= p


@settings(max_examples=200, deadline=None)
@given(t=near_half(), den=st.integers(1, 10**20))
def test_round_ratio_is_round_p_near_the_half_way_point(t, den):
    m, e, p = t
    num, d = (m * den << e, den) if e >= 0 else (m * den, den << -e)
    value = Fraction(num, d)
    for mode, ref in ((Rounding.NEAREST, RN), (Rounding.TOWARD_ZERO, RZ), (Rounding.UP, RU)):
        got = round_ratio(num, d, p, mode)
        assert to_fraction(*got) == round_p(value, p, ref)
        assert got == (0, 0) or (1 << (p - 1)) <= abs(got[0]) < (1 << p)


def test_round_ratio_refuses_a_zero_denominator():
    with pytest.raises(ZeroDivisionError, match=r"^round_ratio: den == 0$"):
        round_ratio(1, 0, 53)
