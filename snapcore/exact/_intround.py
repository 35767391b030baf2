"""Exact integer helpers shared by the backends that round in integers.

Values are dyadic pairs ``(m, e)`` standing for ``m * 2**e``.  Every function
rounds to nearest, ties to even, at ``p`` significant bits, with an unbounded
exponent range, using shifts and integer comparisons only.
"""

from __future__ import annotations

from snapcore.exact._dyadic import is_p_bit as fits
from snapcore.exact._dyadic import round_dyadic as round_nearest

__all__ = ["add_nearest", "fits", "round_nearest"]


def add_nearest(ma: int, ea: int, mb: int, eb: int, p: int) -> tuple[int, int]:
    """``ma*2**ea + mb*2**eb`` rounded to ``p`` bits; both operands have at most ``p`` bits.

    When the smaller operand is below a quarter of the larger one's unit in the last
    place, the sum rounds to the larger one (even when the larger is a power of two,
    whose lower neighbour is only half an ulp away); the exact sum is formed only
    otherwise, so the shifts stay below ``2p + 2`` bits whatever the exponents.
    """
    if not mb:
        return (ma, ea) if ma else (0, 0)
    if not ma:
        return (mb, eb)
    ta = ea + abs(ma).bit_length()  # 2**(ta-1) <= |a| < 2**ta
    tb = eb + abs(mb).bit_length()
    if ta < tb:
        ma, ea, mb, eb, ta, tb = mb, eb, ma, ea, tb, ta
    if tb <= ta - p - 2:  # |b| < 2**(ta-p-2) = ulp_p(a) / 4
        return (ma, ea)
    if ea >= eb:
        return round_nearest((ma << (ea - eb)) + mb, eb, p)
    return round_nearest(ma + (mb << (eb - ea)), ea, p)
