"""The contract every arithmetic backend fulfils.

A backend does correctly rounded arithmetic at a precision of ``p`` bits and
exposes each value's exact ``(mantissa, exponent)``.  Nothing else: the mechanism's
logic lives in :mod:`snapcore.pipeline._stages`, and the rounding of the parameters lives in
:mod:`snapcore.exact._dyadic`.  The conformance suite (:mod:`snapcore.testing`) tests each
line marked *Contract* below, for every registered backend.

A backend's numbers are opaque to the core: it only ever hands them back to the
same :class:`Arithmetic` object, or asks for :meth:`Arithmetic.to_dyadic`.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from snapcore.pipeline._stages import Pipeline
    from snapcore.randomness._sources import RandomSource

__all__ = ["Backend"]

from snapcore.pipeline._arithmetic import Arithmetic

_A = TypeVar("_A", bound=Arithmetic)


class Backend(abc.ABC):
    """An arithmetic backend plugin.

    Subclasses set :attr:`name`, :attr:`library` and :attr:`install_hint`, and
    implement :meth:`is_available`, :meth:`version` and :meth:`arithmetic` (usually
    ``return self.cached_arithmetic(precision, MyArithmetic)``).  Register one from a
    plugin with ``registry.add(MyBackend)`` inside the ``snapcore_register_backends``
    hook.  A subclass that defines ``__init__`` calls ``super().__init__()``.

    Optional capabilities, one family declared here with defaults that decline (or
    fall back to their sibling): a backend may release a whole array at once
    (:meth:`batch`, for arrays of at least :attr:`batch_min_size` elements) or one
    double in one fused call (:meth:`scalar`), each with a ``_padded`` form for a
    mechanism padded to a time quantum (:meth:`batch_padded`, :meth:`scalar_padded`).
    When a backend declines, the mechanism runs the pipeline itself.  The conformance
    suite tests each one a backend offers.
    """

    #: Name under which users select the backend (``backend="mpfr"``).
    name: ClassVar[str]
    #: The library that does the arithmetic (shown in comparisons).
    library: ClassVar[str]
    #: What to run when the library is missing.
    install_hint: ClassVar[str]

    @classmethod
    @abc.abstractmethod
    def is_available(cls) -> bool:
        """Whether the backend's library can be imported.  Must not raise."""

    @abc.abstractmethod
    def version(self) -> str:
        """The library's version string."""

    def __init__(self) -> None:
        self._arithmetics: dict[int, Arithmetic] = {}
        self._arithmetics_lock = threading.Lock()

    @abc.abstractmethod
    def arithmetic(self, precision: int) -> Arithmetic:
        """The :class:`~snapcore.Arithmetic` for ``precision`` bits (may be cached)."""

    def cached_arithmetic(self, precision: int, make: Callable[[int], _A]) -> _A:
        """``make(precision)``, built once per precision and shared (thread-safe).

        The helper behind most :meth:`arithmetic` implementations: an
        :class:`~snapcore.Arithmetic` is immutable and thread-safe, so one per precision is
        enough.
        """
        with self._arithmetics_lock:
            arith = self._arithmetics.get(precision)
            if arith is None:
                arith = self._arithmetics[precision] = make(precision)
        return arith  # type: ignore[return-value]

    @property
    def batch_min_size(self) -> int:
        """Optional capability: arrays shorter than this are never offered to
        :meth:`batch` (default 0: every array is)."""
        return 0

    def batch(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """Optional capability: release every element of ``values`` at once, or decline.

        Called by :meth:`snapcore.SnappingMechanism.release` for arrays of at
        least :attr:`batch_min_size` elements whose elements are exact doubles (float
        arrays, finite, or integer arrays within ``2**53``).  ``threads`` is the
        mechanism's setting (an int >= 1, or None: the backend chooses); a backend
        may use up to that many threads, and its output must not depend on them.

        Contract: returns a float64 array of ``values``' shape, bit-identical to
        ``pipeline.run(pipeline.centre(v), d)`` element by element on the draws
        ``source.draws(values.size, p)`` in order; or returns None *before drawing
        anything*, and the mechanism takes the element-wise path.  The conformance
        suite checks the first clause whenever a backend offers a batch.  The default
        declines.
        """
        return None

    def batch_padded(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        exact_floor: int,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """Optional capability: :meth:`batch` for a release padded to a time quantum.

        Same contract as :meth:`batch`; a backend whose batch hands rare elements to
        the exact pipeline (a certificate that may not decide) computes at least
        ``exact_floor`` elements' worth of exact work, making up the difference with
        computations on public inputs, so that the number of such elements (up to
        ``exact_floor``) does not change the batch's time (docs/timing.md).  The
        default is :meth:`batch`.
        """
        return self.batch(pipeline, values, source, threads=threads)

    def scalar_padded(
        self, pipeline: Pipeline, source: RandomSource
    ) -> Callable[[float], float] | None:
        """Optional capability: a fused release of one finite double whose time does not
        depend on the value or the draw, for a mechanism padded to a time quantum; or
        decline.

        Called once when a padded mechanism is built.  Contract: returns ``f`` with
        ``f(v)`` bit-identical to ``pipeline.run(pipeline.centre_ratio(*v.as_integer_ratio()),
        source.draw_raw(p))`` for every finite double ``v``, drawing exactly that one
        draw; or None, and the mechanism takes that composition itself.  The default
        declines.  ``f`` may carry an attribute ``path``: ``f.path()`` names the path
        of its next release (a string) and the padding keeps a quantum per path; it is
        called before a padded call's clock starts (MPFR's switches from its exact path
        to a compiled kernel whose rare undecided draws, a probability stated in
        docs/timing.md, overrun the quantum).
        """
        return None

    def scalar(self, pipeline: Pipeline, source: RandomSource) -> Callable[[float], float] | None:
        """Optional capability: :meth:`scalar_padded` for a mechanism without timing padding.

        Same contract as :meth:`scalar_padded`; its running time may depend on the draw
        (a certificate with a rare exact fallback), which is why a padded mechanism never
        asks for it (docs/timing.md).  The default is :meth:`scalar_padded`.
        """
        return self.scalar_padded(pipeline, source)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
