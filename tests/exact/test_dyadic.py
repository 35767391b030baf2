"""Exact p-bit rounding and the dyadic helpers (snapcore.exact._dyadic), against the
independent reference ``snapref`` (exact Fractions and ``math.floor``).

- **Ties to even** (docs/semantics.md, rounding ``RN``):
  :func:`~snapcore.exact._dyadic.round_ratio`, :func:`~snapcore.exact._dyadic.round_fraction`
  and :func:`~snapcore.exact._dyadic.round_dyadic` are given exact ties and compared with
  ``snapref.round_p``.
- **Every kind of input**: exact p-bit values, values just above and below the half-way
  point (rounding up from an even mantissa to an odd one, which a wrong carry test gets
  wrong), and carries into the next binade.  Cheap enough to run with few examples, so
  a mutation run that caps hypothesis examples still finds the bad roundings.
- **The helpers** ``is_p_bit``, ``dyadic_cmp``, ``dyadic_normalise``, ``dyadic_add``
  and ``to_fraction``, exactly, and the one form of zero.

Reproduce a failure with the ``@reproduce_failure`` line hypothesis prints.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from rounding_cases import PRECISIONS, ties
from snapref import RN, RU, RZ, round_p

from snapcore.exact._dyadic import (
    Rounding,
    dyadic_add,
    dyadic_cmp,
    dyadic_normalise,
    is_p_bit,
    round_dyadic,
    round_fraction,
    round_ratio,
    to_fraction,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- ties to even -----------------------------------------------------------------------


@SETTINGS
@given(t=ties(), scale=st.integers(1, 10**30))
def test_round_ratio_ties_go_to_even(t, scale):
    n, E, p = t
    value = Fraction(n) * Fraction(2) ** E
    want = round_p(value, p, RN)
    # The reference's tie goes to the neighbour with an even mantissa.
    m_want = abs(want) / Fraction(2) ** (E + 1)
    assert m_want.denominator == 1 and (m_want.numerator % 2 == 0 or m_want == 1 << p)
    # round_ratio with an arbitrary (not only power-of-two) common factor.
    num, den = (n * scale << E, scale) if E >= 0 else (n * scale, scale << -E)
    assert to_fraction(*round_ratio(num, den, p)) == want
    assert to_fraction(*round_ratio(-num, -den, p)) == want
    assert to_fraction(*round_fraction(value, p)) == want
    assert to_fraction(*round_dyadic(n, E, p)) == want


# -- near the half-way point and every other input ----------------------------------

ROUNDING_PRECISIONS = st.sampled_from([2, 3, 5, 24, 53, 118, 200])


@st.composite
def near_half(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(m, e, p)`` with ``m`` a few bits longer than ``p`` and its dropped bits just
    below, at or just above one half (or all ones: a carry into the next binade)."""
    p = draw(ROUNDING_PRECISIONS)
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
@given(m=st.integers(-(2**300), 2**300), e=st.integers(-500, 500), p=ROUNDING_PRECISIONS)
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


# -- the small exact helpers -------------------------------------------------------------


@SETTINGS
@given(
    m=st.integers(-(2**300), 2**300)
    | st.builds(lambda k, s: k << s, st.integers(-9, 9), st.integers(0, 400)),
    p=PRECISIONS,
)
def test_is_p_bit_matches_reference(m, p):
    from snapref import is_p_bit as ref_is_p_bit

    assert is_p_bit(m, p) == (m == 0 or ref_is_p_bit(Fraction(m), p))


@SETTINGS
@given(
    m1=st.integers(-(2**80), 2**80),
    e1=st.integers(-300, 300),
    m2=st.integers(-(2**80), 2**80),
    e2=st.integers(-300, 300),
)
def test_dyadic_cmp_and_to_fraction_are_exact(m1, e1, m2, e2):
    a, b = Fraction(m1) * Fraction(2) ** e1, Fraction(m2) * Fraction(2) ** e2
    got = to_fraction(m1, e1)
    assert (got.numerator, got.denominator) == (a.numerator, a.denominator)  # lowest terms
    assert dyadic_cmp(m1, e1, m2, e2) == (a > b) - (a < b)
    assert dyadic_cmp(m1, e1, m1, e1) == 0


#: Mantissas of every kind: any size and sign, and multiples of large powers of two.
MANTISSAS = st.integers(-(2**80), 2**80) | st.builds(
    lambda k, s: k << s, st.integers(-9, 9), st.integers(0, 300)
)


@SETTINGS
@given(m1=MANTISSAS, e1=st.integers(-300, 300), m2=MANTISSAS, e2=st.integers(-300, 300))
@example(m1=0, e1=-7, m2=0, e2=5)
@example(m1=3, e1=-2, m2=-3, e2=-2)  # the sum is zero
@example(m1=1, e1=-1, m2=1, e2=-1)  # the sum carries into a new power of two
def test_dyadic_normalise_and_add_are_exact(m1, e1, m2, e2):
    a, b = Fraction(m1) * Fraction(2) ** e1, Fraction(m2) * Fraction(2) ** e2
    for (m, e), want in ((dyadic_normalise(m1, e1), a), (dyadic_add(m1, e1, m2, e2), a + b)):
        assert Fraction(m) * Fraction(2) ** e == want
        # the normal form: an odd mantissa, or (0, 0) for zero
        assert (m, e) == (0, 0) if want == 0 else m % 2 == 1


@pytest.mark.parametrize("e", [-5, 0, 7])
def test_zero_is_the_pair_0_0(e):
    """The documented form of zero, whatever the exponent asked for."""
    assert round_dyadic(0, e, 118) == (0, 0)
    assert round_ratio(0, 3 << 7, 118) == (0, 0)
    assert round_fraction(Fraction(0), 53) == (0, 0)
