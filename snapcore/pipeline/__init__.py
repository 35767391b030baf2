"""Layer 6, the mechanism's arithmetic: the backend contract (:class:`Backend`,
:class:`Arithmetic`), the stages sample, scale, add, snap and clamp as one readable
:class:`Pipeline`, and the compiled fast path that runs the same stages on arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.pipeline._arithmetic import (
        Arithmetic,
    )
    from snapcore.pipeline._backend import (
        Backend,
    )
    from snapcore.pipeline._stages import (
        Pipeline,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_arithmetic": ["Arithmetic"],
        "_backend": ["Backend"],
        "_stages": ["Pipeline"],
    },
)

__all__ = [
    "Arithmetic",
    "Backend",
    "Pipeline",
]
