"""Deliberately broken backends: each LN is faithful (within one ulp) but not always
correctly rounded.  The conformance suite must fail every one of them."""

from __future__ import annotations

from typing import Any

import gmpy2
from mpmath import libmp
from snapcore.backends.mpfr import MPFRArithmetic, MPFRBackend


class _TruncatedLn(MPFRArithmetic):
    """MPFR, but LN rounded toward zero: faithful, wrong about half the time."""

    def ln(self, a: Any) -> Any:
        ctx = gmpy2.context(self._local.ctx, round=gmpy2.RoundToZero)
        return ctx.log(a)


class _DoubleRoundedLn(MPFRArithmetic):
    """MPFR, but LN rounded to p + 16 bits and then to p bits: wrong only when ln(u)
    lies within about 2**-17 ulp of a midpoint (random inputs almost never do)."""

    def ln(self, a: Any) -> Any:
        wide = gmpy2.context(self._local.ctx, precision=self.precision + 16)
        return self._local.ctx.add(wide.log(a), 0)


class _MpmathLogLn(MPFRArithmetic):
    """MPFR, but LN from mpmath's own ``mpf_log`` (fixed 20 guard bits), unproven."""

    def ln(self, a: Any) -> Any:
        m, e = self.to_dyadic(a)
        s, man, exp, _ = libmp.mpf_log(libmp.from_man_exp(m, e), self.precision, "n")
        return self.from_dyadic(-int(man) if s else int(man), int(exp))


def _backend(name: str, arith_cls: type[MPFRArithmetic]) -> type[MPFRBackend]:
    class Broken(MPFRBackend):
        def arithmetic(self, precision: int) -> MPFRArithmetic:
            return arith_cls(precision)

    Broken.name = name
    Broken.__name__ = Broken.__qualname__ = f"Broken_{name.replace('-', '_')}"
    return Broken


TruncatedLnBackend = _backend("broken-rz-ln", _TruncatedLn)
DoubleRoundedLnBackend = _backend("broken-double-rounded-ln", _DoubleRoundedLn)
MpmathLogBackend = _backend("broken-mpmath-log", _MpmathLogLn)

BROKEN = (TruncatedLnBackend, DoubleRoundedLnBackend, MpmathLogBackend)
