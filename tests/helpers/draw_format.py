"""An independent bit-level decoder of the draw format ``snapcore-draw-v1``, read from
the format's text (module docstring of :mod:`snapcore.randomness._draw`), not from
snapcore's decoders."""

from __future__ import annotations

import math
from fractions import Fraction

from snapcore.randomness._draw import Draw

__all__ = ["bit_decode", "check_draw", "u_star"]


def bit_decode(stream: bytes, p: int, start: int = 0) -> tuple[int, int, int, int]:
    """(S, e, m, bytes consumed) of the draw starting at byte ``start``, per the text:
    sign = first bit; e = 1 + zeros before the first one (crossing 64-bit words);
    the rest of that word is discarded; then ceil((p-1)/8) bytes whose first p - 1
    bits are m."""
    bits = "".join(f"{byte:08b}" for byte in stream)
    i = 8 * start
    sign = -1 if bits[i] == "1" else 1
    j = i + 1
    while bits[j] == "0":
        j += 1
    e = j - i  # zeros counted = j - i - 1, e = zeros + 1
    word_end = i + 64 * ((j - i) // 64 + 1)
    m = int(bits[word_end : word_end + p - 1], 2)
    end = word_end + 8 * math.ceil((p - 1) / 8)
    return sign, e, m, end // 8 - start


def u_star(e: int, m: int, p: int) -> Fraction:
    """U* = (1 + m·2**-(p-1))·2**-e."""
    return (1 + Fraction(m, 2 ** (p - 1))) / 2**e


def check_draw(d: Draw, sign: int, e: int, m: int, p: int) -> None:
    assert d.sign == sign
    assert d.u == u_star(e, m, p)
    assert d.mantissa == 2 ** (p - 1) + m and d.exponent == -(p - 1) - e
    assert 2 ** (p - 1) <= d.mantissa < 2**p
