"""Layer 5, the mechanism's arithmetic: the backend contract (:class:`Backend`,
:class:`Arithmetic`), the stages sample, noise, add, snap and clamp as one readable
:class:`Pipeline`, and the fast path that runs the same stages on arrays: its
double-double kernel (``_kernel``), the kernel compiled by numba (``_compiled``) and the
engine that decides which elements the exact pipeline computes (``_engine``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.pipeline._arithmetic import (
        Arithmetic as Arithmetic,
    )
    from snapcore.pipeline._backend import (
        Backend as Backend,
    )
    from snapcore.pipeline._stages import (
        Pipeline as Pipeline,
    )

__getattr__, __dir__ = attach(__name__, __file__)
