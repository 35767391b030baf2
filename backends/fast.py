"""The ``fast`` backend: MPFR's exact arithmetic plus a vectorised batch path.

Scalar operations are MPFR's (through gmpy2), so every contract of
:class:`~snapcore.Arithmetic` holds exactly as for the ``mpfr`` backend.
What this backend adds is :meth:`FastBackend.batch`: whole arrays released by the
double-double fast path of :mod:`snapcore.pipeline`, bit-identical to the exact
pipeline element for element (compiled by numba, a dependency; the pure-numpy engine
where numba cannot be imported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from snapcore.backends.mpfr import MPFRBackend

from snapcore.exact._sums import numba_available
from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend
from snapcore.pipeline._stages import Pipeline
from snapcore.plugins._hookspecs import hookimpl
from snapcore.randomness._sources import RandomSource

if TYPE_CHECKING:
    from collections.abc import Callable

    from snapcore.plugins._registries import BackendRegistry

__all__ = ["FastBackend"]


class FastBackend(Backend):
    """Exact MPFR arithmetic with a batch capability (:meth:`batch`)."""

    name = "fast"
    library = "gmpy2"
    install_hint = "pip install gmpy2 numba"

    def __init__(self) -> None:
        super().__init__()
        self._mpfr = MPFRBackend()

    @classmethod
    def is_available(cls) -> bool:
        return bool(MPFRBackend.is_available())

    def version(self) -> str:
        engine = "numba " + _numba_version() if numba_available() else "numpy only"
        return f"{self._mpfr.version()}; numpy {np.__version__}; {engine}"

    def arithmetic(self, precision: int) -> Arithmetic:
        arith: Arithmetic = self._mpfr.arithmetic(precision)
        return arith

    def scalar_padded(
        self, pipeline: Pipeline, source: RandomSource
    ) -> Callable[[float], float] | None:
        """MPFR's fused release of one double (:meth:`MPFRBackend.scalar_padded
        <snapcore.backends.mpfr.MPFRBackend.scalar_padded>`): the arithmetic is MPFR's."""
        return self._mpfr.scalar_padded(pipeline, source)

    def scalar(self, pipeline: Pipeline, source: RandomSource) -> Callable[[float], float] | None:
        """MPFR's release of one double without timing padding
        (:meth:`MPFRBackend.scalar
        <snapcore.backends.mpfr.MPFRBackend.scalar>`)."""
        return self._mpfr.scalar(pipeline, source)

    def batch(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """Release every element of ``values`` (finite float64 array) with fresh noise.

        Bit-identical to ``pipeline.run(pipeline.centre(v), d)`` on the draws
        ``source.draws(values.size, p)``, in order, whatever ``threads`` is (None: the
        usable CPUs for arrays of at least 2**15 elements, else one).
        """
        from snapcore.pipeline._engine import release_batch

        out: np.ndarray | None = release_batch(pipeline, values, source, threads=threads)
        return out

    def batch_padded(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        exact_floor: int,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """:meth:`batch` for a padded release, with the exact work of ``exact_floor``
        fallbacks whatever falls back (:meth:`MPFRBackend.batch_padded
        <snapcore.backends.mpfr.MPFRBackend.batch_padded>`)."""
        from snapcore.pipeline._engine import release_batch

        out: np.ndarray | None = release_batch(
            pipeline, values, source, exact_floor=exact_floor, threads=threads
        )
        return out


def _numba_version() -> str:
    import numba

    return str(numba.__version__)


@hookimpl
def snapcore_register_backends(registry: BackendRegistry) -> None:
    registry.add(FastBackend)
