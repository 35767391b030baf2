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
    )
    from snapcore.calibration._clamp import (
        ClampChoice as ClampChoice,
    )
    from snapcore.calibration._clamp import (
        choose_clamp_bounds as choose_clamp_bounds,
    )
    from snapcore.calibration._clamp import (
        given_clamp_bounds as given_clamp_bounds,
    )
    from snapcore.calibration._guarantee import (
        Accuracy as Accuracy,
    )
    from snapcore.calibration._guarantee import (
        calibration_accuracy as calibration_accuracy,
    )
    from snapcore.calibration._params import (
        Calibration as Calibration,
    )
    from snapcore.calibration._params import (
        PrivacyAnalysis as PrivacyAnalysis,
    )
    from snapcore.calibration._params import (
        calibrate as calibrate,
    )
    from snapcore.calibration._params import (
        derive_calibration as derive_calibration,
    )
    from snapcore.calibration._params import (
        parse_epsilon as parse_epsilon,
    )
    from snapcore.calibration._params import (
        required_precision as required_precision,
    )

__getattr__, __dir__ = attach(__name__, __file__)
