"""The Ziv loop: correct rounding of a value known only through enclosures.

Used by the backends that prove their logarithm correctly rounded themselves (``arb``
and ``mpmath``).  Ziv (1991), "Fast evaluation of elementary mathematical functions
with correctly rounded last bit".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["FIRST_GUARD", "MAX_WORKING", "ziv_round"]

#: Guard bits of the first attempt.
FIRST_GUARD = 32
#: Give up (an internal error) beyond this many working bits.
MAX_WORKING = 1 << 22

T = TypeVar("T")


def ziv_round(
    p: int,
    rounded_ends: Callable[[int], tuple[T, T]],
    what: str,
    *,
    first_guard: int = FIRST_GUARD,
) -> T:
    """The value rounded to nearest at ``p`` bits, from enclosures of growing precision.

    ``rounded_ends(w)`` encloses the value at ``w`` working bits and returns both ends
    of the enclosure rounded to nearest at ``p`` bits.  Rounding to nearest is monotone,
    so when the two agree the value inside rounds to the same result; otherwise the
    guard bits ``w - p`` (``first_guard`` at first) double.  The caller proves
    termination (for ``ln`` of a rational ``!= 1``: the value is transcendental, so
    never a rounding midpoint, and the enclosure shrinks to it).

    Raises
    ------
    ArithmeticError
        If the ends still differ beyond :data:`MAX_WORKING` bits (never, for the
        values the backends round).
    """
    guard = first_guard
    while True:
        w = p + guard
        lo, hi = rounded_ends(w)
        if lo == hi:
            return lo
        if w > MAX_WORKING:  # pragma: no cover - impossible for ln of a rational != 1
            raise ArithmeticError(f"{what}: no convergence at {w} bits")
        guard *= 2
