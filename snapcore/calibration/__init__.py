"""Layer 3, calibration: validating ε, Δ and the clamp interval and deriving the
mechanism's exact constants (:class:`Calibration`); choosing the clamp interval from γ;
the data-independent accuracy guarantee of a calibration.  No data, no randomness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.calibration._clamp import (
        DEFAULT_GAMMA,
        ClampChoice,
        choose_clamp_bounds,
        given_clamp_bounds,
    )
    from snapcore.calibration._guarantee import (
        Accuracy,
        calibration_accuracy,
    )
    from snapcore.calibration._params import (
        Calibration,
        PrivacyAnalysis,
        calibrate,
        derive_calibration,
        parse_epsilon,
        required_precision,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_params": [
            "Calibration",
            "PrivacyAnalysis",
            "calibrate",
            "derive_calibration",
            "parse_epsilon",
            "required_precision",
        ],
        "_clamp": ["DEFAULT_GAMMA", "ClampChoice", "choose_clamp_bounds", "given_clamp_bounds"],
        "_guarantee": ["Accuracy", "calibration_accuracy"],
    },
)

__all__ = [
    "DEFAULT_GAMMA",
    "Accuracy",
    "Calibration",
    "ClampChoice",
    "PrivacyAnalysis",
    "calibrate",
    "calibration_accuracy",
    "choose_clamp_bounds",
    "derive_calibration",
    "given_clamp_bounds",
    "parse_epsilon",
    "required_precision",
]
