"""Layer 9, analysis: publishable accuracy guarantees and planning (``_guarantees``),
estimates from a guess of f(D), never from private data (``_estimates``), the exact
privacy audit of the mechanism as it runs (``_audit``), and the floating-point attack
that motivates snapping (``_attack``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
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
    from snapcore.analysis._estimates import (
        Bias,
        IdealOutputDistribution,
        LaplaceDistance,
        bias,
        clamp_probability,
        guess_accuracy,
        ideal_output_distribution,
        laplace_distance,
    )
    from snapcore.analysis._guarantees import (
        LaplaceComparison,
        StatisticPlan,
        accuracy,
        accuracy_details,
        bound_for_gamma,
        compare_with_laplace,
        epsilon_for_accuracy,
        plan_accuracy,
        plan_calibration,
        plan_statistic,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_guarantees": [
            "LaplaceComparison",
            "StatisticPlan",
            "accuracy",
            "accuracy_details",
            "bound_for_gamma",
            "compare_with_laplace",
            "epsilon_for_accuracy",
            "plan_accuracy",
            "plan_calibration",
            "plan_statistic",
        ],
        "_estimates": [
            "Bias",
            "IdealOutputDistribution",
            "LaplaceDistance",
            "bias",
            "clamp_probability",
            "guess_accuracy",
            "ideal_output_distribution",
            "laplace_distance",
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
