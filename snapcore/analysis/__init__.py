"""Layer 9, analysis: publishable accuracy guarantees and planning, estimates from a
guess (never from private data), the exact privacy audit of the mechanism as it runs,
and the floating-point attack that motivates snapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.analysis._accuracy import (
        Bias,
        IdealOutputDistribution,
        LaplaceComparison,
        LaplaceDistance,
        StatisticPlan,
        accuracy,
        accuracy_details,
        bias,
        bound_for_gamma,
        clamp_probability,
        compare_with_laplace,
        epsilon_for_accuracy,
        guess_accuracy,
        ideal_output_distribution,
        laplace_distance,
        plan_accuracy,
        plan_calibration,
        plan_statistic,
    )
    from snapcore.analysis._attack import (
        AttackReport,
        Witness,
        attack,
        find_witness,
    )
    from snapcore.analysis._audit import (
        AuditResult,
        ExactOutputDistribution,
        audit,
        exact_output_distribution,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_accuracy": [
            "Bias",
            "IdealOutputDistribution",
            "LaplaceComparison",
            "LaplaceDistance",
            "StatisticPlan",
            "accuracy",
            "accuracy_details",
            "bias",
            "bound_for_gamma",
            "clamp_probability",
            "compare_with_laplace",
            "epsilon_for_accuracy",
            "guess_accuracy",
            "ideal_output_distribution",
            "laplace_distance",
            "plan_accuracy",
            "plan_calibration",
            "plan_statistic",
        ],
        "_audit": ["AuditResult", "ExactOutputDistribution", "audit", "exact_output_distribution"],
        "_attack": ["AttackReport", "Witness", "attack", "find_witness"],
    },
)

__all__ = [
    "AttackReport",
    "AuditResult",
    "Bias",
    "ExactOutputDistribution",
    "IdealOutputDistribution",
    "LaplaceComparison",
    "LaplaceDistance",
    "StatisticPlan",
    "Witness",
    "accuracy",
    "accuracy_details",
    "attack",
    "audit",
    "bias",
    "bound_for_gamma",
    "clamp_probability",
    "compare_with_laplace",
    "epsilon_for_accuracy",
    "exact_output_distribution",
    "find_witness",
    "guess_accuracy",
    "ideal_output_distribution",
    "laplace_distance",
    "plan_accuracy",
    "plan_calibration",
    "plan_statistic",
]
