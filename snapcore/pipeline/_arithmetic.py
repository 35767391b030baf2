"""The arithmetic contract: correctly rounded operations at one fixed precision.

The pipeline's stages (:mod:`snapcore.pipeline._stages`) run on an :class:`Arithmetic`;
a backend (:mod:`snapcore.pipeline._backend`) hands one out for each precision.  The
conformance suite (:mod:`snapcore.testing`) tests each line marked *Contract* below.
"""

from __future__ import annotations

import abc
from fractions import Fraction
from typing import Any

__all__ = ["Arithmetic", "Num"]

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
        """Stage *noise*: ``N = S·RN(λ·RN(ln U*))`` as an exact ``(m, e)``.

        Contract: identical to composing :meth:`from_dyadic`, :meth:`ln`, :meth:`mul`,
        :meth:`neg` and :meth:`to_dyadic` as written here.  A backend may override it
        only to go faster; the conformance suite checks the two agree.
        """
        n = self.mul(lam, self.ln(self.from_dyadic(*u)))
        if sign < 0:
            n = self.neg(n)
        return self.to_dyadic(n)
