"""Layer 8, analysis: publishable accuracy guarantees and planning (``_guarantees``),
estimates from a guess of f(D), never from private data (``_estimates``), the exact
privacy audit of the mechanism as it runs (``_audit``), (ε, δ) accounting of the
mechanism as it runs (``_accounting``), and the floating-point attack that motivates
snapping (``_attack``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.analysis._accounting import (
        ComposedGuarantee as ComposedGuarantee,
        PairLoss as PairLoss,
        ReleaseCurve as ReleaseCurve,
        compose as compose,
        pair_curve as pair_curve,
        pair_loss as pair_loss,
        phase_scan as phase_scan,
    )
    from snapcore.analysis._attack import (
        AttackReport as AttackReport,
        Witness as Witness,
        attack as attack,
        find_witness as find_witness,
    )
    from snapcore.analysis._audit import (
        AuditResult as AuditResult,
        ExactOutputDistribution as ExactOutputDistribution,
        audit as audit,
        exact_output_distribution as exact_output_distribution,
    )
    from snapcore.analysis._estimates import (
        Bias as Bias,
        IdealOutputDistribution as IdealOutputDistribution,
        LaplaceDistance as LaplaceDistance,
        bias as bias,
        clamp_probability as clamp_probability,
        guess_accuracy as guess_accuracy,
        ideal_output_distribution as ideal_output_distribution,
        laplace_distance as laplace_distance,
    )
    from snapcore.analysis._guarantees import (
        LaplaceComparison as LaplaceComparison,
        StatisticPlan as StatisticPlan,
        accuracy as accuracy,
        accuracy_details as accuracy_details,
        bound_for_gamma as bound_for_gamma,
        compare_with_laplace as compare_with_laplace,
        epsilon_for_accuracy as epsilon_for_accuracy,
        plan_accuracy as plan_accuracy,
        plan_calibration as plan_calibration,
        plan_statistic as plan_statistic,
    )

__getattr__, __dir__ = attach(__name__, __file__)
