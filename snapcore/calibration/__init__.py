"""Layer 3, calibration: validating ε, Δ and the clamp interval and deriving the
mechanism's exact constants (:class:`Calibration`); choosing the clamp interval from γ;
the data-independent accuracy guarantee of a calibration.  No data, no randomness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.calibration._clamp import (
        DEFAULT_GAMMA as DEFAULT_GAMMA,
        ClampChoice as ClampChoice,
        choose_clamp_bounds as choose_clamp_bounds,
        given_clamp_bounds as given_clamp_bounds,
    )
    from snapcore.calibration._guarantee import (
        Accuracy as Accuracy,
        calibration_accuracy as calibration_accuracy,
    )
    from snapcore.calibration._params import (
        Calibration as Calibration,
        PrivacyAnalysis as PrivacyAnalysis,
        calibrate as calibrate,
        derive_calibration as derive_calibration,
        parse_epsilon as parse_epsilon,
        required_precision as required_precision,
    )

__getattr__, __dir__ = attach(__name__, __file__)
