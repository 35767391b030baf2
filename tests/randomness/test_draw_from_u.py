"""``draw_from_u``: a given ``U*`` as the draw the sources produce (docs/semantics.md).

A :class:`~snapcore.randomness._sources.Draw` has a mantissa of exactly ``p`` bits and an exponent
``<= -p``; ``draw_from_u`` must give that normalised form for every p-bit ``U*`` in
(0, 1), whatever its own width, and accept ``U*`` down to the backends' exponent
range ``2**-(MIN_U_LOG2 − 1)``, refusing what lies below.  Checked with exact
``Fraction``s against the definition, for hypothesis-drawn precisions and values.
"""

from __future__ import annotations

import io
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapcore.errors import ParameterError
from snapcore.randomness._sources import MIN_U_LOG2, Draw, decode_draw, draw_from_u, encode_draw

TWO = Fraction(2)


@settings(max_examples=200, deadline=None)
@given(p=st.integers(2, 200), data=st.data())
def test_draw_from_u_is_the_normalised_p_bit_draw(p, data):
    bits = data.draw(st.integers(1, p), label="significant bits")
    m = data.draw(st.integers(2 ** (bits - 1), 2**bits - 1)) | 1  # odd: exactly `bits` bits
    k = data.draw(st.integers(bits, bits + 1100), label="u = m / 2**k")
    u = Fraction(m, 1 << k)
    sign = data.draw(st.sampled_from([1, -1]))
    d = draw_from_u(u, sign, p)
    assert 2 ** (p - 1) <= d.mantissa < 2**p and d.exponent <= -p
    assert d.mantissa * TWO**d.exponent == u == d.u and d.sign == sign
    if float(u) == u:  # a double gives the same draw
        assert draw_from_u(float(u), sign, p) == d
    if bits < p:  # one more significant bit than p is refused
        wider = u + Fraction(1, 1 << (k + p - bits + 1))
        assert wider.numerator.bit_length() == p + 1
        with pytest.raises(ParameterError, match="p-bit float"):
            draw_from_u(wider, sign, p)


def test_draw_from_u_accepts_the_smallest_u_and_refuses_below():
    """``2**-(MIN_U_LOG2 − 1)`` is the smallest ``U*`` a backend represents; half of it
    is refused before anything is drawn."""
    smallest = Fraction(1, 1 << (MIN_U_LOG2 - 1))
    d = draw_from_u(smallest, -1, 118)
    assert d.mantissa == 1 << 117 and d.exponent == -(MIN_U_LOG2 - 1) - 117
    with pytest.raises(ParameterError, match="exponent range"):
        draw_from_u(smallest / 2, -1, 118)


# -- encode_draw: the inverse of decode_draw -------------------------------------------
def test_encode_draw_bytes_by_hand() -> None:
    p = 118  # 15 mantissa bytes
    # U* = 1/2, S = -1: geometric exponent 1 -> sign bit and bit 62 of the first word
    assert encode_draw(Draw(-1, 1 << 117, -118), p) == bytes([0xC0]) + bytes(7 + 15)
    # U* = 2**-64·(1 + 2**-117): e = 64 -> a zero first word, then bit 63 of the next;
    # the mantissa's last bit is the last bit of the tail (118 - 1 = 117 bits in 120)
    got = encode_draw(Draw(1, (1 << 117) | 1, -117 - 64), p)
    assert got == bytes(8) + bytes([0x80]) + bytes(7) + (1 << 3).to_bytes(15, "big")


@given(
    st.sampled_from([53, 118, 121, 200]),
    st.sampled_from([-1, 1]),
    st.integers(1, 400),
    st.integers(0, 2**199),
)
def test_decode_draw_reads_back_what_encode_draw_writes(p, sign, e, bits) -> None:
    d = Draw(sign, (1 << (p - 1)) | (bits % (1 << (p - 1))), -(p - 1) - e)
    data = encode_draw(d, p)
    stream = io.BytesIO(data + b"next")
    assert decode_draw(stream.read, p) == d
    assert stream.read() == b"next"  # exactly the draw's bytes


def test_encode_draw_refuses_what_is_not_a_p_bit_u_star() -> None:
    with pytest.raises(ParameterError, match="p-bit"):
        encode_draw(Draw(1, 1 << 117, -117), 118)  # U* = 1
    with pytest.raises(ParameterError, match="p-bit"):
        encode_draw(Draw(1, 1 << 116, -200), 118)  # a (p-1)-bit mantissa
