"""Hypothesis strategies for the hard cases of rounding to ``p`` bits, shared by the
tests of every function that rounds (the dyadic helpers, the *add* stage, the
calibration's ``b = RN(B/Δ)``)."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["PRECISIONS", "ties"]

#: Precisions from tiny to beyond the floor of 118 bits.
PRECISIONS = st.sampled_from([2, 3, 8, 24, 53, 64, 118, 119, 200])


@st.composite
def ties(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(n, E, p)``: the exact tie ``n·2**E`` halfway between two p-bit floats
    (``n`` has ``p + 1`` bits and is odd), with either parity of the lower one."""
    p = draw(PRECISIONS)
    q = draw(st.integers(1 << (p - 1), (1 << p) - 1))  # the lower neighbour's mantissa
    n = 2 * q + 1
    E = draw(st.integers(-400, 400))
    sign = draw(st.sampled_from([1, -1]))
    return sign * n, E, p
