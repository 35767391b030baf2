"""Layer 8, analysis: publishable accuracy guarantees and planning (``_guarantees``),
estimates from a guess of f(D), never from private data (``_estimates``), the exact
privacy audit of the mechanism as it runs (``_audit``), and the floating-point attack
that motivates snapping (``_attack``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.analysis._attack import (
        AttackReport as AttackReport,
    )
    from snapcore.analysis._attack import (
        Witness as Witness,
    )
    from snapcore.analysis._attack import (
        attack as attack,
    )
    from snapcore.analysis._attack import (
        find_witness as find_witness,
    )
    from snapcore.analysis._audit import (
        AuditResult as AuditResult,
    )
    from snapcore.analysis._audit import (
        ExactOutputDistribution as ExactOutputDistribution,
    )
    from snapcore.analysis._audit import (
        audit as audit,
    )
    from snapcore.analysis._audit import (
        exact_output_distribution as exact_output_distribution,
    )
    from snapcore.analysis._estimates import (
        Bias as Bias,
    )
    from snapcore.analysis._estimates import (
        IdealOutputDistribution as IdealOutputDistribution,
    )
    from snapcore.analysis._estimates import (
        LaplaceDistance as LaplaceDistance,
    )
    from snapcore.analysis._estimates import (
        bias as bias,
    )
    from snapcore.analysis._estimates import (
        clamp_probability as clamp_probability,
    )
    from snapcore.analysis._estimates import (
        guess_accuracy as guess_accuracy,
    )
    from snapcore.analysis._estimates import (
        ideal_output_distribution as ideal_output_distribution,
    )
    from snapcore.analysis._estimates import (
        laplace_distance as laplace_distance,
    )
    from snapcore.analysis._guarantees import (
        LaplaceComparison as LaplaceComparison,
    )
    from snapcore.analysis._guarantees import (
        StatisticPlan as StatisticPlan,
    )
    from snapcore.analysis._guarantees import (
        accuracy as accuracy,
    )
    from snapcore.analysis._guarantees import (
        accuracy_details as accuracy_details,
    )
    from snapcore.analysis._guarantees import (
        bound_for_gamma as bound_for_gamma,
    )
    from snapcore.analysis._guarantees import (
        compare_with_laplace as compare_with_laplace,
    )
    from snapcore.analysis._guarantees import (
        epsilon_for_accuracy as epsilon_for_accuracy,
    )
    from snapcore.analysis._guarantees import (
        plan_accuracy as plan_accuracy,
    )
    from snapcore.analysis._guarantees import (
        plan_calibration as plan_calibration,
    )
    from snapcore.analysis._guarantees import (
        plan_statistic as plan_statistic,
    )

__getattr__, __dir__ = attach(__name__, __file__)
