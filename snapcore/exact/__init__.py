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
        Rounding as Rounding,
        add_nearest as add_nearest,
        dyadic_add as dyadic_add,
        dyadic_cmp as dyadic_cmp,
        dyadic_normalise as dyadic_normalise,
        is_p_bit as is_p_bit,
        round_fraction as round_fraction,
        round_ratio as round_ratio,
        to_fraction as to_fraction,
    )
    from snapcore.exact._ieee754 import (
        double_bits as double_bits,
        double_from_bits as double_from_bits,
        granularity_from_double as granularity_from_double,
        power_of_two_exponent as power_of_two_exponent,
        round_down_double as round_down_double,
        round_up_double as round_up_double,
        snap_double as snap_double,
        snap_doubles as snap_doubles,
    )
    from snapcore.exact._sums import (
        DOT_SCALE as DOT_SCALE,
        SUM_SCALE as SUM_SCALE,
        ScaledIntegers as ScaledIntegers,
        bin_counts as bin_counts,
        bin_index as bin_index,
        clamped_cross_moments as clamped_cross_moments,
        clamped_moments as clamped_moments,
        exact_dot as exact_dot,
        exact_sum as exact_sum,
        scaled_integers as scaled_integers,
    )

__getattr__, __dir__ = attach(__name__, __file__)
