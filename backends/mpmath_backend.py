"""The mpmath backend: mpmath's correctly rounded arithmetic, and an LN it proves.

Numbers are ``mpf`` values of a private :class:`mpmath.MPContext`, one per thread;
the global ``mpmath.mp`` context is never read or changed.  Every operation calls
mpmath's low-level functions (``mpmath.libmp``) with an explicit precision and
rounding mode, so no context precision is involved at all:

* add, sub, mul, div and conversion use ``mpf_add``/``mpf_mul``/``mpf_div``/
  ``from_rational`` with rounding ``'n'``.  mpmath documents these as correctly
  rounded, and ``'n'`` is round to nearest with ties to even (the conformance suite
  checks both against exact rationals).
* LN is not trusted: ``mpf_log`` (and therefore ``mpmath.iv.log``, which only calls
  it with directed rounding) evaluates at a fixed 20 guard bits and is wrong for
  inputs whose logarithm lies close to a rounding boundary.  :func:`ln_enclosure`
  instead builds a rigorous enclosure of ``ln(u)`` by interval arithmetic on
  mpmath's correctly rounded ``mpf_add``/``mpf_mul``/``mpf_div`` with directed
  rounding (floor for lower bounds, ceiling for upper bounds), plus an explicit
  bound on the truncated series.  :meth:`MPMathArithmetic.ln` runs a Ziv loop: it
  accepts the p-bit value when both ends of the enclosure round to it, and
  otherwise doubles the guard bits.
"""

from __future__ import annotations

import threading
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from snapcore.exact._dyadic import is_p_bit
from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend
from snapcore.plugins._hookspecs import hookimpl

from ._ziv import ziv_round

if TYPE_CHECKING:
    from snapcore.plugins._registries import BackendRegistry

__all__ = ["MPMathArithmetic", "MPMathBackend", "ln_enclosure"]

# mpmath is imported on first use (about 60 ms), not when the plugin is registered.
mpmath: Any = None
libmp: Any = None


def _load() -> None:
    """Import mpmath into this module's globals (once)."""
    global mpmath, libmp
    if libmp is None:
        import mpmath as mp
        from mpmath import libmp as lm

        mpmath, libmp = mp, lm


_FLOOR = "f"
_CEIL = "c"
_NEAREST = "n"

#: Table reduction: ln(v) = ln(j / 2**_TABLE_BITS) + 2 atanh((v - c)/(v + c)).
_TABLE_BITS = 8
#: Ziv loop: first guard bits.
_FIRST_GUARD = 24

_Mpf = tuple[int, Any, int, int]
_Interval = tuple[_Mpf, _Mpf]

# Enclosures of constants, keyed by (key, working precision).  Values are immutable
# tuples and deterministic, so sharing them between threads is safe.
_const_cache: dict[tuple[int, int], _Interval] = {}


def _atanh_enclosure(s_lo: _Mpf, s_hi: _Mpf, w: int) -> _Interval:
    """Enclose ``atanh(s)`` for ``s`` in ``[s_lo, s_hi]``, ``0 <= s_lo <= s_hi <= 1/2``.

    ``atanh(s) = sum_{n>=0} s**(2n+1)/(2n+1)``, every term positive and increasing in
    ``s``: the lower bound sums terms of ``s_lo`` rounded down, the upper bound terms
    of ``s_hi`` rounded up, plus the tail after ``N`` terms, which is at most
    ``s**(2N+1) / ((2N+1)(1 - s**2)) <= (4/3) s**(2N+1) / (2N+1)`` for ``s <= 1/2``.
    The loop stops once that tail bound is below ``2**-(w+4)`` times the first term.
    """
    add, mul, div, from_int = libmp.mpf_add, libmp.mpf_mul, libmp.mpf_div, libmp.from_int
    if s_hi == libmp.fzero:
        return (libmp.fzero, libmp.fzero)
    lo_sq = mul(s_lo, s_lo, w, _FLOOR)
    hi_sq = mul(s_hi, s_hi, w, _CEIL)
    lo_pow, hi_pow = s_lo, s_hi  # s**(2n+1)
    lo_sum, hi_sum = s_lo, s_hi
    # Stop when s**(2N+1) <= s * 2**-(w+6): the tail is then far below an ulp.
    stop = libmp.mpf_shift(s_hi, -(w + 6))
    n = 0
    while True:
        n += 1
        lo_pow = mul(lo_pow, lo_sq, w, _FLOOR)
        hi_pow = mul(hi_pow, hi_sq, w, _CEIL)
        k = from_int(2 * n + 1)
        lo_sum = add(lo_sum, div(lo_pow, k, w, _FLOOR), w, _FLOOR)
        if libmp.mpf_le(hi_pow, stop):
            # hi_pow bounds s**(2n+1) for the first omitted term (index n), so the tail
            # from index n on is at most (4/3) hi_pow / (2n+1); add 2 hi_pow as a bound.
            hi_sum = add(hi_sum, libmp.mpf_shift(hi_pow, 1), w, _CEIL)
            return (lo_sum, hi_sum)
        hi_sum = add(hi_sum, div(hi_pow, k, w, _CEIL), w, _CEIL)


def _ln_rational_enclosure(num: int, den: int, w: int) -> _Interval:
    """Enclose ``ln(num/den)`` for ``1/3 <= num/den <= 3`` (cached per ``w``).

    ``ln(q) = 2 atanh((q - 1)/(q + 1))``, and ``|q - 1|/(q + 1) <= 1/2``.
    """
    key = (num * 4096 + den, w)
    hit = _const_cache.get(key)
    if hit is not None:
        return hit
    d, n = num - den, num + den  # s = d / n exactly
    a = abs(d)
    s_lo = libmp.from_rational(a, n, w, _FLOOR)
    s_hi = libmp.from_rational(a, n, w, _CEIL)
    lo, hi = _atanh_enclosure(s_lo, s_hi, w)
    lo, hi = libmp.mpf_shift(lo, 1), libmp.mpf_shift(hi, 1)
    res = (lo, hi) if d >= 0 else (libmp.mpf_neg(hi), libmp.mpf_neg(lo))
    _const_cache[key] = res
    return res


def ln_enclosure(x: _Mpf, w: int) -> _Interval:
    """A rigorous enclosure ``[lo, hi]`` of ``ln(x)`` for an mpf ``x > 0``, at ``w`` bits.

    ``x = v * 2**k`` with ``v`` in ``[1/sqrt 2, sqrt 2)``; ``c = j / 2**8`` is the
    table point nearest ``v``; then ``ln x = k ln 2 + ln c + 2 atanh(t)`` with
    ``t = (v - c)/(v + c)``, ``|t| < 2**-9``.  ``v - c`` and ``v + c`` are exact;
    every other operation rounds outward.  The width is a few units of ``2**-w``
    relative to ``|ln x|`` (more when ``w`` is too small for ``|k|``; the caller's
    Ziv loop then widens).
    """
    _load()
    _, man, exp, bc = x
    # k with v = x * 2**-k in [1/sqrt 2, sqrt 2): x in [2**(mag-1), 2**mag).
    mag = exp + bc
    k = mag if man * man >= 1 << (2 * bc - 1) else mag - 1
    # v = man * 2**(exp - k); c = j * 2**-8 with j the nearest integer to v * 2**8.
    sh = exp - k + _TABLE_BITS  # v * 2**8 = man * 2**sh
    j = man << sh if sh >= 0 else (man + (1 << (-sh - 1))) >> -sh
    v = libmp.from_man_exp(man, exp - k)
    c = libmp.from_man_exp(j, -_TABLE_BITS)
    d = libmp.mpf_sub(v, c)  # exact (prec=0)
    n = libmp.mpf_add(v, c)
    if d == libmp.fzero:
        lo, hi = libmp.fzero, libmp.fzero
    else:
        a = libmp.mpf_abs(d)
        s_lo = libmp.mpf_div(a, n, w, _FLOOR)
        s_hi = libmp.mpf_div(a, n, w, _CEIL)
        lo, hi = _atanh_enclosure(s_lo, s_hi, w)
        lo, hi = libmp.mpf_shift(lo, 1), libmp.mpf_shift(hi, 1)
        if d[0]:  # d < 0: atanh is odd
            lo, hi = libmp.mpf_neg(hi), libmp.mpf_neg(lo)
    if j != 1 << _TABLE_BITS:
        c_lo, c_hi = _ln_rational_enclosure(j, 1 << _TABLE_BITS, w)
        lo = libmp.mpf_add(lo, c_lo, w, _FLOOR)
        hi = libmp.mpf_add(hi, c_hi, w, _CEIL)
    if k:  # + k·ln 2, enclosed
        ln2_lo, ln2_hi = _ln_rational_enclosure(2, 1, w)
        k_mpf = libmp.from_int(k)
        low_ln2, high_ln2 = (ln2_lo, ln2_hi) if k > 0 else (ln2_hi, ln2_lo)
        k_ln2_lo = libmp.mpf_mul(k_mpf, low_ln2, w, _FLOOR)
        k_ln2_hi = libmp.mpf_mul(k_mpf, high_ln2, w, _CEIL)
        lo = libmp.mpf_add(lo, k_ln2_lo, w, _FLOOR)
        hi = libmp.mpf_add(hi, k_ln2_hi, w, _CEIL)
    return (lo, hi)


def ln_nearest(x: _Mpf, p: int) -> _Mpf:
    """``ln(x)`` rounded to nearest-even at ``p`` bits, proven by a Ziv loop.

    ``RN`` is monotone, so if both ends of an enclosure of ``ln x`` round to the
    same p-bit value, so does ``ln x``.  The loop ends for every ``x != 1``: by the
    Lindemann-Weierstrass theorem ``ln x`` is transcendental for rational ``x != 1``,
    so it is never a p-bit rounding midpoint (nor any dyadic), its distance to the
    nearest midpoint is positive, and the enclosure's width shrinks below it as the
    guard bits grow.  (For the same reason the tie-to-even case never arises.)
    ``x == 1`` gives exactly 0.
    """
    _load()
    if x == libmp.fone:
        return cast(_Mpf, libmp.fzero)

    def rounded_ends(w: int) -> tuple[_Mpf, _Mpf]:
        lo, hi = ln_enclosure(x, w)
        return libmp.mpf_pos(lo, p, _NEAREST), libmp.mpf_pos(hi, p, _NEAREST)

    return ziv_round(p, rounded_ends, f"ln({x!r})", first_guard=_FIRST_GUARD)


class MPMathArithmetic(Arithmetic):
    """Correctly rounded p-bit arithmetic with mpmath (LN proven by a Ziv loop)."""

    def __init__(self, precision: int) -> None:
        _load()
        self.precision = precision
        self._local = threading.local()

    def _make(self, v: _Mpf) -> Any:
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            ctx = self._local.ctx = mpmath.MPContext()
            ctx.prec = self.precision
        return ctx.make_mpf(v)

    def from_dyadic(self, m: int, e: int) -> Any:
        if not is_p_bit(m, self.precision):
            raise ValueError(f"{m}*2**{e} needs more than {self.precision} bits")
        return self._make(libmp.from_man_exp(m, e))

    def convert(self, q: Fraction | int | float) -> Any:
        f = Fraction(q)
        return self._make(
            libmp.from_rational(f.numerator, f.denominator, self.precision, _NEAREST)
        )

    def add(self, a: Any, b: Any) -> Any:
        return self._make(libmp.mpf_add(a._mpf_, b._mpf_, self.precision, _NEAREST))

    def sub(self, a: Any, b: Any) -> Any:
        return self._make(libmp.mpf_sub(a._mpf_, b._mpf_, self.precision, _NEAREST))

    def mul(self, a: Any, b: Any) -> Any:
        return self._make(libmp.mpf_mul(a._mpf_, b._mpf_, self.precision, _NEAREST))

    def div(self, a: Any, b: Any) -> Any:
        if b._mpf_ == libmp.fzero:
            raise ZeroDivisionError("div: division by zero")
        return self._make(libmp.mpf_div(a._mpf_, b._mpf_, self.precision, _NEAREST))

    def ln(self, a: Any) -> Any:
        x = a._mpf_
        if x[0] or not x[1]:
            raise ValueError(f"ln: argument must be > 0, got {a}")
        return self._make(ln_nearest(x, self.precision))

    def neg(self, a: Any) -> Any:
        return self._make(libmp.mpf_neg(a._mpf_))

    def to_dyadic(self, a: Any) -> tuple[int, int]:
        sign, man, exp, _ = a._mpf_
        if not man:
            return (0, 0)
        return (-int(man) if sign else int(man), int(exp))


class MPMathBackend(Backend):
    """mpmath (pure-Python arbitrary precision), with LN proven correctly rounded."""

    name = "mpmath"
    library = "mpmath"
    install_hint = "pip install mpmath"

    @classmethod
    def is_available(cls) -> bool:
        try:
            _load()
        except ImportError:
            return False
        return True

    def version(self) -> str:
        _load()
        return f"mpmath {mpmath.__version__} (integers: {libmp.BACKEND})"

    def arithmetic(self, precision: int) -> MPMathArithmetic:
        return self.cached_arithmetic(precision, MPMathArithmetic)


@hookimpl
def snapcore_register_backends(registry: BackendRegistry) -> None:
    registry.add(MPMathBackend)
