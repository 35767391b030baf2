"""Layer 1, exact arithmetic: p-bit rounding of exact rationals, exact sums of doubles,
snapping doubles to a power-of-two grid, the integer roundings the backends share.

Nothing here draws randomness or reads data; every function is exact or correctly
rounded, and the arithmetic backends build on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.exact._dyadic import (
        Rounding,
        dyadic_add,
        dyadic_cmp,
        dyadic_normalise,
        is_p_bit,
        round_fraction,
        round_ratio,
        to_fraction,
    )
    from snapcore.exact._ieee754 import (
        double_bits,
        double_from_bits,
        granularity_from_double,
        power_of_two_exponent,
        round_down_double,
        round_up_double,
        snap_double,
        snap_doubles,
    )
    from snapcore.exact._intround import (
        add_nearest,
        fits,
        round_nearest,
    )
    from snapcore.exact._sums import (
        ScaledIntegers,
        bin_counts,
        bin_index,
        exact_dot,
        exact_sum,
        scaled_integers,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_dyadic": [
            "Rounding",
            "dyadic_add",
            "dyadic_cmp",
            "dyadic_normalise",
            "is_p_bit",
            "round_fraction",
            "round_ratio",
            "to_fraction",
        ],
        "_intround": ["add_nearest", "fits", "round_nearest"],
        "_sums": [
            "ScaledIntegers",
            "bin_counts",
            "bin_index",
            "exact_dot",
            "exact_sum",
            "scaled_integers",
        ],
        "_ieee754": [
            "double_bits",
            "double_from_bits",
            "granularity_from_double",
            "power_of_two_exponent",
            "round_down_double",
            "round_up_double",
            "snap_double",
            "snap_doubles",
        ],
    },
)

__all__ = [
    "Rounding",
    "ScaledIntegers",
    "add_nearest",
    "bin_counts",
    "bin_index",
    "double_bits",
    "double_from_bits",
    "dyadic_add",
    "dyadic_cmp",
    "dyadic_normalise",
    "exact_dot",
    "exact_sum",
    "fits",
    "granularity_from_double",
    "is_p_bit",
    "power_of_two_exponent",
    "round_down_double",
    "round_fraction",
    "round_nearest",
    "round_ratio",
    "round_up_double",
    "scaled_integers",
    "snap_double",
    "snap_doubles",
    "to_fraction",
]
