"""The integer roundings the backends share (snapcore.exact._dyadic.add_nearest), against the
independent reference ``snapref.round_p``.

``add_nearest`` forms the exact sum only when the smaller operand can change the
rounded result; when it lies below a quarter of the larger one's unit in the last
place it returns the larger one.  Both branches are checked, and the boundary between
them (operands whose exponents differ by about ``p``), with the larger operand a power
of two (whose lower neighbour is only half an ulp away) among them.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import example, given, settings, strategies as st
from snapref import RN, round_p

from snapcore.exact._dyadic import add_nearest, is_p_bit

PRECISIONS = st.sampled_from([2, 3, 5, 24, 53, 118])


def value(m: int, e: int) -> Fraction:
    return Fraction(m) * Fraction(2) ** e


@st.composite
def operands(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """Two p-bit dyadics ``(ma, ea, mb, eb)`` and ``p``; ``b``'s exponent is ``a``'s
    shifted by up to about ``2p``, so the sum sits on either side of the shortcut."""
    p = draw(PRECISIONS)
    mantissa = st.integers(-(1 << p) + 1, (1 << p) - 1) | st.sampled_from(
        [1 << (p - 1), -(1 << (p - 1)), 1, -1, 0]  # powers of two, and zero
    )
    ma, mb = draw(mantissa), draw(mantissa)
    ea = draw(st.integers(-300, 300))
    eb = ea - draw(st.integers(-2 * p - 8, 2 * p + 8))
    return ma, ea, mb, eb, p


@settings(max_examples=1000, deadline=None)
@given(t=operands())
# 1.0 at p = 53: its ulp is 2**-52, the binade below's 2**-53.
@example(t=(1 << 52, -52, -1, -55, 53))  # 1 less a quarter of the lower ulp: the shortcut
@example(t=(1 << 52, -52, -1, -54, 53))  # ... less half the lower ulp: a tie, to even 1
@example(t=(1 << 52, -52, -3, -55, 53))  # ... less 3/4 of the lower ulp: 1 − 2**-53
@example(t=(1 << 52, -52, 1, -54, 53))  # ... plus a quarter ulp: rounds back down
@example(t=(3, 10, -3, 10, 2))  # the sum is zero
def test_add_nearest_is_the_sum_rounded_to_nearest(t):
    ma, ea, mb, eb, p = t
    got = add_nearest(ma, ea, mb, eb, p)
    want = round_p(value(ma, ea) + value(mb, eb), p, RN)
    assert value(*got) == want
    assert got == (0, 0) if want == 0 else is_p_bit(got[0], p)
    assert add_nearest(mb, eb, ma, ea, p) == got  # the order does not matter
