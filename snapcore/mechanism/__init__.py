"""Layer 7, the mechanism: :class:`SnappingMechanism` puts a calibration, a backend,
a source and the pipeline together, and pads its releases to fixed time quanta.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.mechanism._mechanism import (
        SnappingMechanism as SnappingMechanism,
    )
    from snapcore.mechanism._padding import (
        Padding as Padding,
    )

__getattr__, __dir__ = attach(__name__, __file__)
