"""The contract every arithmetic backend fulfils.

A backend does correctly rounded arithmetic at a precision of ``p`` bits and
exposes each value's exact ``(mantissa, exponent)``.  Nothing else: the mechanism's
logic lives in :mod:`snapcore.pipeline`, and the rounding of the parameters lives in
:mod:`snapcore.dyadic`.  The conformance suite (:mod:`snapcore.testing`) tests each
line marked *Contract* below, for every registered backend.

A backend's numbers are opaque to the core: it only ever hands them back to the
same :class:`Arithmetic` object, or asks for :meth:`Arithmetic.to_dyadic`.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from snapcore.pipeline import Pipeline
    from snapcore.sources import RandomSource

__all__ = ["Arithmetic", "Backend"]

#: The type of a backend's numbers (opaque to the core).
Num = Any


class Arithmetic(abc.ABC):
    """Correctly rounded arithmetic at one fixed precision.

    Every operation rounds to nearest, ties to even, at ``precision`` bits, with an
    exponent range wide enough that no overflow, underflow or subnormal occurs for
    the values snapcore uses (at least ``[-2**30, 2**30]``).  Instances must be safe
    to use from several threads at once and must not change any global state of
    their library (precision, rounding mode) that a caller could observe.
    """

    precision: int

    @abc.abstractmethod
    def from_dyadic(self, m: int, e: int) -> Num:
        """Contract: returns ``m * 2**e`` exactly; ValueError if it needs more than p bits."""

    @abc.abstractmethod
    def convert(self, q: Fraction | int | float) -> Num:
        """Contract: returns the p-bit float nearest to the rational ``q``, ties to even."""

    @abc.abstractmethod
    def add(self, a: Num, b: Num) -> Num:
        """Contract: returns the p-bit float nearest to ``a + b``, ties to even."""

    @abc.abstractmethod
    def sub(self, a: Num, b: Num) -> Num:
        """Contract: returns the p-bit float nearest to ``a - b``, ties to even."""

    @abc.abstractmethod
    def mul(self, a: Num, b: Num) -> Num:
        """Contract: returns the p-bit float nearest to ``a * b``, ties to even."""

    @abc.abstractmethod
    def div(self, a: Num, b: Num) -> Num:
        """Contract: returns the p-bit float nearest to ``a / b`` (``b != 0``), ties to even."""

    @abc.abstractmethod
    def ln(self, a: Num) -> Num:
        """Contract: returns the p-bit float nearest to ``ln(a)`` (``a > 0``), ties to even."""

    def neg(self, a: Num) -> Num:
        """Contract: returns ``-a`` exactly."""
        m, e = self.to_dyadic(a)
        return self.from_dyadic(-m, e)

    @abc.abstractmethod
    def to_dyadic(self, a: Num) -> tuple[int, int]:
        """Contract: returns ``(m, e)`` with ``m * 2**e == a`` exactly (``(0, 0)`` for zero)."""

    def noise(self, lam: Num, sign: int, u: tuple[int, int]) -> tuple[int, int]:
        """Stage *scale*: ``N = S·RN(λ·RN(ln U*))`` as an exact ``(m, e)``.

        Contract: identical to composing :meth:`from_dyadic`, :meth:`ln`, :meth:`mul`,
        :meth:`neg` and :meth:`to_dyadic` as written here.  A backend may override it
        only to go faster; the conformance suite checks the two agree.
        """
        n = self.mul(lam, self.ln(self.from_dyadic(*u)))
        if sign < 0:
            n = self.neg(n)
        return self.to_dyadic(n)


_A = TypeVar("_A", bound=Arithmetic)


class Backend(abc.ABC):
    """An arithmetic backend plugin.

    Subclasses set :attr:`name`, :attr:`library` and :attr:`install_hint`, and
    implement :meth:`is_available`, :meth:`version` and :meth:`arithmetic` (usually
    ``return self.cached_arithmetic(precision, MyArithmetic)``).  Register one from a
    plugin with ``registry.add(MyBackend)`` inside the ``snapcore_register_backends``
    hook.  A subclass that defines ``__init__`` calls ``super().__init__()``.

    Optional capability: *batch release*.  A backend may override :meth:`batch` (and
    :attr:`batch_min_size`) to release a whole array at once; the defaults decline,
    and the mechanism then releases element by element.
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
        """The :class:`Arithmetic` for ``precision`` bits (may be cached)."""

    def cached_arithmetic(self, precision: int, make: Callable[[int], _A]) -> _A:
        """``make(precision)``, built once per precision and shared (thread-safe).

        The helper behind most :meth:`arithmetic` implementations: an
        :class:`Arithmetic` is immutable and thread-safe, so one per precision is
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
        self, pipeline: Pipeline, values: np.ndarray, source: RandomSource
    ) -> np.ndarray | None:
        """Optional capability: release every element of ``values`` at once, or decline.

        Called by :meth:`snapcore.mechanism.SnappingMechanism.release` for arrays of at
        least :attr:`batch_min_size` elements whose elements are exact doubles (float
        arrays, finite, or integer arrays within ``2**53``).

        Contract: returns a float64 array of ``values``' shape, bit-identical to
        ``pipeline.run(pipeline.centre(v), d)`` element by element on the draws
        ``source.draws(values.size, p)`` in order; or returns None *before drawing
        anything*, and the mechanism takes the element-wise path.  The conformance
        suite checks the first clause whenever a backend offers a batch.  The default
        declines.
        """
        return None

    def batch_padded(
        self, pipeline: Pipeline, values: np.ndarray, source: RandomSource, exact_floor: int
    ) -> np.ndarray | None:
        """Optional capability: :meth:`batch` for a release padded to a time quantum.

        Same contract as :meth:`batch`; a backend whose batch hands rare elements to
        the exact pipeline (a certificate that may not decide) computes at least
        ``exact_floor`` elements' worth of exact work, making up the difference with
        computations on public inputs, so that the number of such elements (up to
        ``exact_floor``) does not change the batch's time (docs/timing.md).  The
        default is :meth:`batch`.
        """
        return self.batch(pipeline, values, source)

    def scalar(self, pipeline: Pipeline, source: RandomSource) -> Callable[[float], float] | None:
        """Optional capability: a fused release of one finite double, or decline.

        Called once when a mechanism is built.  Contract: returns ``f`` with ``f(v)``
        bit-identical to ``pipeline.run(pipeline.centre_ratio(*v.as_integer_ratio()),
        source.draw_raw(p))`` for every finite double ``v``, drawing exactly that one
        draw; or None, and the mechanism takes that composition itself.  The default
        declines.
        """
        return None

    def scalar_untimed(
        self, pipeline: Pipeline, source: RandomSource
    ) -> Callable[[float], float] | None:
        """Optional capability: :meth:`scalar` for a mechanism without timing padding.

        Same contract as :meth:`scalar`; its running time may depend on the draw (a
        certificate with a rare exact fallback), which is why a padded mechanism never
        asks for it (docs/timing.md).  The default is :meth:`scalar`.
        """
        return self.scalar(pipeline, source)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
