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
    )
    from snapcore.exact._dyadic import (
        dyadic_add as dyadic_add,
    )
    from snapcore.exact._dyadic import (
        dyadic_cmp as dyadic_cmp,
    )
    from snapcore.exact._dyadic import (
        dyadic_normalise as dyadic_normalise,
    )
    from snapcore.exact._dyadic import (
        is_p_bit as is_p_bit,
    )
    from snapcore.exact._dyadic import (
        round_fraction as round_fraction,
    )
    from snapcore.exact._dyadic import (
        round_ratio as round_ratio,
    )
    from snapcore.exact._dyadic import (
        to_fraction as to_fraction,
    )
    from snapcore.exact._ieee754 import (
        double_bits as double_bits,
    )
    from snapcore.exact._ieee754 import (
        double_from_bits as double_from_bits,
    )
    from snapcore.exact._ieee754 import (
        granularity_from_double as granularity_from_double,
    )
    from snapcore.exact._ieee754 import (
        power_of_two_exponent as power_of_two_exponent,
    )
    from snapcore.exact._ieee754 import (
        round_down_double as round_down_double,
    )
    from snapcore.exact._ieee754 import (
        round_up_double as round_up_double,
    )
    from snapcore.exact._ieee754 import (
        snap_double as snap_double,
    )
    from snapcore.exact._ieee754 import (
        snap_doubles as snap_doubles,
    )
    from snapcore.exact._intround import (
        add_nearest as add_nearest,
    )
    from snapcore.exact._intround import (
        fits as fits,
    )
    from snapcore.exact._intround import (
        round_nearest as round_nearest,
    )
    from snapcore.exact._sums import (
        DOT_SCALE as DOT_SCALE,
    )
    from snapcore.exact._sums import (
        SUM_SCALE as SUM_SCALE,
    )
    from snapcore.exact._sums import (
        ScaledIntegers as ScaledIntegers,
    )
    from snapcore.exact._sums import (
        bin_counts as bin_counts,
    )
    from snapcore.exact._sums import (
        bin_index as bin_index,
    )
    from snapcore.exact._sums import (
        clamped_cross_moments as clamped_cross_moments,
    )
    from snapcore.exact._sums import (
        clamped_moments as clamped_moments,
    )
    from snapcore.exact._sums import (
        exact_dot as exact_dot,
    )
    from snapcore.exact._sums import (
        exact_sum as exact_sum,
    )
    from snapcore.exact._sums import (
        scaled_integers as scaled_integers,
    )

__getattr__, __dir__ = attach(__name__, __file__)
