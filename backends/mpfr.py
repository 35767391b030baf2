"""The MPFR backend, through gmpy2: correct rounding is MPFR's own guarantee.

Every operation goes through a private ``gmpy2.context`` object at the requested
precision (round to nearest, exponent range ``[-2**30, 2**30]``), called as a
method (``ctx.log(x)``), so the caller's current gmpy2 context is never read or
changed.  Each thread gets its own context objects, because a context records
sticky flags when used.
"""

from __future__ import annotations

import threading
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import gmpy2

from snapcore.backend import Arithmetic, Backend
from snapcore.dyadic import is_p_bit
from snapcore.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from snapcore.pipeline import Pipeline
    from snapcore.plugins import BackendRegistry
    from snapcore.sources import RandomSource

__all__ = ["MPFRArithmetic", "MPFRBackend"]


class _ThreadContexts(threading.local):
    """One private gmpy2 context per thread (a context records sticky flags)."""

    def __init__(self, precision: int) -> None:
        self.ctx = gmpy2.context(
            precision=precision,
            round=gmpy2.RoundToNearest,
            emin=-(1 << 30),
            emax=1 << 30,
            subnormalize=False,
        )


class MPFRArithmetic(Arithmetic):
    """Correctly rounded p-bit arithmetic with MPFR."""

    def __init__(self, precision: int) -> None:
        self.precision = precision
        self._local = _ThreadContexts(precision)
        # The inlined noise() below is only valid while the primitives it inlines are
        # MPFR's own; a subclass that overrides one gets the base-class composition.
        cls = type(self)
        self._inline = all(
            getattr(cls, n) is getattr(MPFRArithmetic, n)
            for n in ("from_dyadic", "ln", "mul", "neg", "to_dyadic")
        )

    def from_dyadic(self, m: int, e: int) -> Any:
        # Only a mantissa longer than p bits can need more than p significant bits.
        if m.bit_length() > self.precision and not is_p_bit(m, self.precision):
            raise ValueError(f"{m}*2**{e} needs more than {self.precision} bits")
        return self._local.ctx.mul_2exp(m, e)  # exact: m has at most p bits

    def convert(self, q: Fraction | int | float) -> Any:
        f = Fraction(q)
        return self._local.ctx.div(gmpy2.mpz(f.numerator), gmpy2.mpz(f.denominator))

    def add(self, a: Any, b: Any) -> Any:
        return self._local.ctx.add(a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._local.ctx.sub(a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._local.ctx.mul(a, b)

    def div(self, a: Any, b: Any) -> Any:
        return self._local.ctx.div(a, b)

    def ln(self, a: Any) -> Any:
        ctx = self._local.ctx
        if 0.5 <= a < 1 and a.precision <= self.precision:
            # ln a = log1p(a − 1), with a − 1 exact (Sterbenz): the same correctly rounded
            # value, but MPFR's log slows down as a approaches 1 and log1p does not, so
            # the time of the noise stage stops depending on how close U* is to 1.
            return ctx.log1p(ctx.sub(a, 1))
        return ctx.log(a)

    def neg(self, a: Any) -> Any:
        return self._local.ctx.minus(a)

    def to_dyadic(self, a: Any) -> tuple[int, int]:
        if not a:
            return (0, 0)
        m, e = a.as_mantissa_exp()
        return (int(m), int(e))

    def noise(self, lam: Any, sign: int, u: tuple[int, int]) -> tuple[int, int]:
        # The base-class composition with the method calls inlined (same operations).
        if not self._inline or u[0].bit_length() > self.precision:
            return super().noise(lam, sign, u)  # validates and raises
        ctx = self._local.ctx
        um, ue = u
        if um.bit_length() + ue == 0:  # U* in [1/2, 1): as ln() above
            n = ctx.mul(lam, ctx.log1p(ctx.sub(ctx.mul_2exp(um, ue), 1)))
        else:
            n = ctx.mul(lam, ctx.log(ctx.mul_2exp(um, ue)))
        m, e = n.as_mantissa_exp()  # n != 0: U* < 1 so ln U* < 0
        return (int(m) if sign > 0 else -int(m), int(e))


class MPFRBackend(Backend):
    """MPFR (GNU multiple-precision floats with correct rounding) via gmpy2."""

    name = "mpfr"
    library = "gmpy2"
    install_hint = "pip install gmpy2"

    @classmethod
    def is_available(cls) -> bool:
        return True  # gmpy2 is a dependency of snapcore itself

    def version(self) -> str:
        return f"gmpy2 {gmpy2.version()}, {gmpy2.mpfr_version()}"

    def arithmetic(self, precision: int) -> MPFRArithmetic:
        return self.cached_arithmetic(precision, MPFRArithmetic)

    @property
    def batch_min_size(self) -> int:
        """Arrays at least this long are offered to :meth:`batch`."""
        from snapcore.fastpath import AUTO_MIN_SIZE

        return AUTO_MIN_SIZE

    def batch(
        self, pipeline: Pipeline, values: np.ndarray, source: RandomSource
    ) -> np.ndarray | None:
        """Release a whole array through the vectorised fast path (:mod:`snapcore.fastpath`),
        bit-identical to this backend's own primitives.

        Declines (returns None, before drawing anything) when the pipeline's arithmetic
        is not exactly :class:`MPFRArithmetic`: a subclass that changes a primitive
        would no longer be what the fast path reproduces.
        """
        if type(pipeline.arith) is not MPFRArithmetic:
            return None
        from snapcore.fastpath import release_batch

        out: np.ndarray | None = release_batch(pipeline, values, source)
        return out

    def scalar(self, pipeline: Pipeline, source: RandomSource) -> Callable[[float], float] | None:
        """The release of one double fused into one function: decoding
        (``snapcore-draw-v1``), MPFR's noise, the exact add, snap, clamp and output,
        with the same operations as :meth:`Pipeline.run
        <snapcore.pipeline.Pipeline.run>` on ``source.draw_raw(p)`` and no layer in
        between.  Declines unless the arithmetic is exactly :class:`MPFRArithmetic`
        and the source decodes its bytes with :class:`~snapcore.sources.ByteSource`'s
        own ``draw_raw``."""
        from snapcore.pipeline import add
        from snapcore.sources import ByteSource, _decode_raw

        arith = pipeline.arith
        if (
            type(arith) is not MPFRArithmetic
            or not arith._inline
            or not isinstance(source, ByteSource)
            or type(source).draw_raw is not ByteSource.draw_raw
        ):
            return None
        p = arith.precision
        local = arith._local
        lam = pipeline._lam
        L = pipeline._L
        kmax = pipeline._kmax
        centre = pipeline.centre_ratio
        grid, end = pipeline._grid_output, pipeline._end
        lock, read = source.exclusive(), source.read

        def release(v: float) -> float:
            x = centre(*v.as_integer_ratio())
            with lock:
                sign, um, ue = _decode_raw(read, p)
            ctx = local.ctx
            if um.bit_length() + ue == 0:  # U* in [1/2, 1): as MPFRArithmetic.ln
                n = ctx.mul(lam, ctx.log1p(ctx.sub(ctx.mul_2exp(um, ue), 1)))
            else:
                n = ctx.mul(lam, ctx.log(ctx.mul_2exp(um, ue)))
            m, e = n.as_mantissa_exp()
            ym, ye = add(x, (int(m) if sign > 0 else -int(m), int(e)), p)
            s = L - ye  # snap: k = floor(y/Λ + 1/2)
            k = ym << -s if s <= 0 else (ym + (1 << (s - 1))) >> s
            if -kmax < k < kmax:
                return grid(k, L)
            return end(k)  # the precomputed outputs at and beyond ±kmax, as run

        return release


@hookimpl
def snapcore_register_backends(registry: BackendRegistry) -> None:
    registry.add(MPFRBackend)
