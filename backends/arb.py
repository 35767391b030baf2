"""The arb backend: python-flint's arb balls for LN, exact integers for the rest.

arb computes rigorous balls ``[mid +- rad]`` but rounds their midpoints toward zero
and python-flint 0.9 exposes no correctly rounded wrapper (``arb_fpwrap``).  So:

* Numbers are exact dyadic pairs ``(m, e)`` (``m * 2**e``, at most ``p`` bits).
  add, sub, mul, div and conversion form the exact result (or, for a sum whose
  smaller term is far below the larger's last bit, an exact stand-in) and round it
  to nearest-even in Python integers.
* LN runs a Ziv loop: compute ``arb.log`` of the exact input at a working precision,
  read the ball exactly (``mid().man_exp()``, ``rad().man_exp()``), and accept when
  both ends of the ball round to the same p-bit value — that is, when the ball holds
  no p-bit rounding midpoint.  Otherwise double the guard bits.

python-flint's working precision ``flint.ctx.prec`` is one process-wide setting:
every use here holds a module lock, sets it, and restores the caller's value in a
``finally``.  (A thread outside snapcore that changes ``ctx.prec`` without the lock
cannot make a result wrong: balls are rigorous at any precision, so it can only
make the loop run again.)
"""

from __future__ import annotations

import threading
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from snapcore.exact._dyadic import add_nearest, is_p_bit, round_dyadic, round_ratio
from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend
from snapcore.plugins._hookspecs import hookimpl

from ._ziv import ziv_round

if TYPE_CHECKING:
    from snapcore.plugins._registries import BackendRegistry

__all__ = ["FLINT_LOCK", "ArbArithmetic", "ArbBackend"]

# python-flint is imported on first use (about 80 ms), not when the plugin is
# registered.
flint: Any = None


def _load() -> None:
    """Import python-flint into this module's globals (once)."""
    global flint
    if flint is None:
        import flint as fl

        flint = fl


#: Guards python-flint's process-wide ``ctx.prec``.
FLINT_LOCK = threading.Lock()

Dyadic = tuple[int, int]


def ln_ball(m: int, e: int, w: int) -> tuple[int, int, int, int]:
    """``ln(m * 2**e)`` as an arb ball at ``w`` bits: ``(mid_m, mid_e, rad_m, rad_e)``.

    The ball ``[mid - rad, mid + rad]`` contains ``ln(m * 2**e)`` (arb's guarantee);
    its ends are read exactly.
    """
    _load()
    with FLINT_LOCK:
        saved = flint.ctx.prec
        try:
            flint.ctx.prec = w
            # Exact: an arb is built from (mantissa, exponent) without rounding.
            y = flint.arb((m, e)).log()
            mm, me = y.mid().man_exp()  # exact reads
            rm, re = y.rad().man_exp()
        finally:
            flint.ctx.prec = saved
    return (int(mm), int(me), int(rm), int(re))


def ln_nearest(m: int, e: int, p: int) -> Dyadic:
    """``ln(m * 2**e)`` rounded to nearest-even at ``p`` bits, proven by a Ziv loop.

    Both ends of the ball are rounded exactly; ``RN`` is monotone, so when they agree
    the logarithm inside rounds to the same value.  The loop ends for every input
    ``!= 1``: ``ln`` of a rational ``!= 1`` is transcendental (Lindemann-Weierstrass),
    hence never a rounding midpoint, and arb's radius shrinks to zero as ``w`` grows.
    ``ln(1) = 0`` comes back as an exact ball.
    """

    def rounded_ends(w: int) -> tuple[Dyadic, Dyadic]:
        mm, me, rm, re = ln_ball(m, e, w)
        # Ends mid -/+ rad exactly on the common exponent.
        f = min(me, re)
        mid = mm << (me - f)
        rad = rm << (re - f)
        return round_dyadic(mid - rad, f, p), round_dyadic(mid + rad, f, p)

    return ziv_round(p, rounded_ends, f"ln({m}*2**{e})")


class ArbArithmetic(Arithmetic):
    """Correctly rounded p-bit arithmetic: exact integers, and LN by arb balls."""

    def __init__(self, precision: int) -> None:
        _load()
        self.precision = precision

    def from_dyadic(self, m: int, e: int) -> Dyadic:
        if not is_p_bit(m, self.precision):
            raise ValueError(f"{m}*2**{e} needs more than {self.precision} bits")
        return (m, e) if m else (0, 0)

    def convert(self, q: Fraction | int | float) -> Dyadic:
        f = Fraction(q)
        return round_ratio(f.numerator, f.denominator, self.precision)

    def add(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return add_nearest(a[0], a[1], b[0], b[1], self.precision)

    def sub(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return add_nearest(a[0], a[1], -b[0], b[1], self.precision)

    def mul(self, a: Dyadic, b: Dyadic) -> Dyadic:
        return round_dyadic(a[0] * b[0], a[1] + b[1], self.precision)

    def div(self, a: Dyadic, b: Dyadic) -> Dyadic:
        if not b[0]:
            raise ZeroDivisionError("div: division by zero")
        if not a[0]:
            return (0, 0)
        m, e = round_ratio(a[0], b[0], self.precision)
        return (m, e + a[1] - b[1])

    def ln(self, a: Dyadic) -> Dyadic:
        if a[0] <= 0:
            raise ValueError(f"ln: argument must be > 0, got {a[0]}*2**{a[1]}")
        return ln_nearest(a[0], a[1], self.precision)

    def neg(self, a: Dyadic) -> Dyadic:
        return (-a[0], a[1]) if a[0] else (0, 0)

    def to_dyadic(self, a: Dyadic) -> tuple[int, int]:
        return a


class ArbBackend(Backend):
    """arb ball arithmetic (FLINT) through python-flint, LN proven by a Ziv loop."""

    name = "arb"
    library = "python-flint"
    install_hint = "pip install python-flint"

    @classmethod
    def is_available(cls) -> bool:
        try:
            _load()
        except ImportError:
            return False
        return True

    def version(self) -> str:
        _load()
        return f"python-flint {flint.__version__} (FLINT {flint.__FLINT_VERSION__})"

    def arithmetic(self, precision: int) -> ArbArithmetic:
        return self.cached_arithmetic(precision, ArbArithmetic)


@hookimpl
def snapcore_register_backends(registry: BackendRegistry) -> None:
    registry.add(ArbBackend)
