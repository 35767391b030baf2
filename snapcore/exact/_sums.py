"""Exact accumulation of doubles, for statistic plugins.

Casacuberta et al. (2022) showed that a floating-point sum of clamped values can
move by more than its declared sensitivity when one record changes: rounding errors
depend on every other record.  The functions here never round.  A finite double is
the integer ``m * 2**e`` (``|m| < 2**53``), so a column of doubles is a column of
integers ``X_i`` times one common power of two ``2**e0``; sums and dot products of
those integers are Python integers, exact at any size, and the result is an exact
:class:`fractions.Fraction`.

>>> from snapcore.exact._sums import exact_sum
>>> exact_sum([1e16, 1.0, -1e16])
Fraction(1, 1)
>>> sum([1e16, 1.0, -1e16])
0.0
"""

from __future__ import annotations

import functools
import importlib
import math
import threading
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any, cast

import numpy as np

from snapcore.errors import ParameterError

__all__ = [
    "DOT_SCALE",
    "ENGINES",
    "SUM_SCALE",
    "ScaledIntegers",
    "bin_counts",
    "bin_index",
    "clamped_cross_moments",
    "clamped_moments",
    "dot_scaled",
    "exact_dot",
    "exact_sum",
    "numba_available",
    "scaled_integers",
    "sum_scaled",
]


class ScaledIntegers:
    """A finite float64 column as exact integers: ``x[i] == ints[i] * 2**exponent``.

    Attributes
    ----------
    ints : numpy.ndarray
        int64 array when every integer fits in 62 bits (the common case: sums and
        products are then done in int64 whenever they provably cannot overflow),
        otherwise an object array of Python ints.
    exponent : int
        The common binary exponent ``e0``.
    """

    __slots__ = ("exponent", "ints")

    def __init__(self, ints: np.ndarray, exponent: int) -> None:
        self.ints = ints
        self.exponent = exponent

    def _small(self) -> int | None:
        """A bound ``2**k > max|ints|`` if the ints are an int64 array, else None."""
        if self.ints.dtype != np.int64 or not len(self.ints):
            return None
        return int(np.max(np.abs(self.ints))).bit_length()

    def total(self) -> Fraction:
        """``sum(x)``, exactly."""
        k = self._small()
        if k is not None and k + len(self.ints).bit_length() <= 62:
            s = int(self.ints.sum())  # |sum| < 2**62: no int64 overflow
        else:
            s = int(self.ints.astype(object).sum()) if len(self.ints) else 0
        return _scaled(s, self.exponent)

    def dot(self, other: ScaledIntegers) -> Fraction:
        """``sum(x[i] * y[i])``, exactly."""
        if len(self.ints) != len(other.ints):
            raise ValueError("dot: columns have different lengths")
        k1, k2 = self._small(), other._small()
        if k1 is not None and k2 is not None and k1 + k2 + len(self.ints).bit_length() <= 62:
            s = int(np.dot(self.ints, other.ints))  # every partial sum < 2**62
        elif len(self.ints):
            s = int(np.dot(self.ints.astype(object), other.ints.astype(object)))
        else:
            s = 0
        return _scaled(s, self.exponent + other.exponent)


def _scaled(m: int, e: int) -> Fraction:
    return Fraction(m << e) if e >= 0 else Fraction(m, 1 << -e)


def scaled_integers(values: Sequence[float] | np.ndarray) -> ScaledIntegers:
    """Write a column of finite doubles as exact integers times a common power of two.

    Parameters
    ----------
    values : sequence of float or numpy.ndarray
        Finite doubles (a ValueError otherwise).

    Returns
    -------
    ScaledIntegers
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.isfinite(x).all():
        raise ValueError("scaled_integers: values must be finite")
    mant, exp = np.frexp(x)  # x = mant * 2**exp, 0.5 <= |mant| < 1 (or 0)
    m = np.ldexp(mant, 53).astype(np.int64)  # exact: a double has 53 significant bits
    e = exp.astype(np.int64) - 53
    nonzero = m != 0
    if not nonzero.any():
        return ScaledIntegers(np.zeros(len(x), dtype=np.int64), 0)
    # Strip trailing zeros so the integers stay small for ordinary data (exact:
    # the shifted-out bits are zero).
    tz = np.zeros(len(m), dtype=np.int64)
    tz[nonzero] = _trailing_zeros(m[nonzero])
    m = m >> tz
    e = e + tz
    e0 = int(e[nonzero].min())
    shifts = np.where(nonzero, e - e0, 0)
    if int(shifts.max()) + 53 <= 62:
        ints = m << shifts  # |ints| < 2**62: still int64
    else:
        ints = m.astype(object) << shifts.astype(object)
    return ScaledIntegers(ints, e0)


def _trailing_zeros(m: np.ndarray) -> np.ndarray:
    a = np.abs(m)
    low = a & -a  # lowest set bit, a power of two <= 2**52
    out: np.ndarray = np.log2(low.astype(np.float64)).astype(np.int64)  # exact: powers of 2
    return out


# ---------------------------------------------------------------------------
# Superaccumulators: exact sums of doubles and of products of doubles.
#
# Every finite double is x = ±m · 2**(k − 1074) with an integer 0 <= m < 2**53 and
# a shift 0 <= k <= 2045 (k = max(E, 1) − 1 for the 11-bit exponent field E; m has
# the implicit bit when E > 0).  So x · 2**1074 is the integer ±m · 2**k, and a sum
# of doubles times 2**1074 is a sum of such integers.  Following Neal (2015, "Fast
# exact summation using small and large superaccumulators"), the engines keep one
# int64 bucket per shift: bucket k collects the low 32 bits of every m with shift k,
# bucket k + 32 its high 21 bits.  One record adds less than 2**33 to any bucket,
# so ``_BLOCK`` records cannot overflow int64; the buckets are folded into one
# Python int (``Σ bucket[k] · 2**k``) after each block.  Products use the same
# buckets on ``x·y·2**2148 = ±(mx·my) · 2**(kx + ky)``, with each 53-bit mantissa
# split into 26- and 27-bit halves so that the three partial products
# (``hx·hy``, ``hx·ly + lx·hy``, ``lx·ly``) stay below 2**54 before their own
# 32-bit split (the numpy engine adds the three; the compiled one first combines them
# into ``mx·my = hi·2**52 + lo``, two words, see ``_compile``).  Nothing is rounded;
# the result is the same integer whatever the order of the records or the engine.

#: ``exact_sum(x) == Fraction(sum_scaled(x), 2**SUM_SCALE)``.
SUM_SCALE = 1074
#: ``exact_dot(x, y) == Fraction(dot_scaled(x, y), 2**DOT_SCALE)``.
DOT_SCALE = 2 * SUM_SCALE
#: Records per int64 block: each adds < 2**33 to a bucket, 2**28 · 2**33 < 2**63.
_BLOCK = 1 << 28
_SUM_BUCKETS = 2046 + 32
_DOT_BUCKETS = 2 * 2045 + 52 + 32 + 1
#: The compiled kernels add the values whose shift k is in ``[k1, k1 + _SUM_WINDOW]``
#: (``k1`` a little below the largest shift of the clamped column) as ``m·2**(k − k1)``
#: (< 2**63) into a 128-bit integer held in two registers, and products whose shift
#: sum is in ``[k2, k2 + _PRODUCT_WINDOW]`` as the two words of ``m·m'`` (< 2**54 and
#: < 2**53) shifted by at most 8 bits, into two more; only values outside the windows
#: go to the buckets.  The same integers, with no store-to-load chain through a bucket
#: for typical data.  Over ``_BLOCK`` records a register sum stays below 2**91.
_SUM_WINDOW = 10
#: Values per int64 chunk of the vectorised sums (``_sum_numba``,
#: ``_sum_squares_numba``): every partial sum is below 2**55 per value, 2**63 per chunk.
_CHUNK = 256
#: ``X² = Σ p_j · 2**w_j`` for the eight partial products of ``_sum_squares_numba``:
#: h1², h1·h0 (twice), h0², h1·l1 (twice, at 2**53), h1·l0 + h0·l1 (same), h0·l0
#: (same) + l1², l1·l0 (twice), l0².
_SQUARE_WEIGHTS = (160, 134, 106, 108, 81, 54, 28, 0)
#: ``X·Y`` likewise: hx1·hy1, hx1·hy0 + hx0·hy1, hx0·hy0, then at 2**53 hx1·ly1 +
#: lx1·hy1, hx1·ly0 + hx0·ly1, lx1·hy0 + lx0·hy1, hx0·ly0 + lx0·hy0, then lx1·ly1,
#: lx1·ly0 + lx0·ly1, lx0·ly0.
_CROSS_WEIGHTS = (160, 133, 106, 107, 80, 80, 53, 54, 27, 0)
_PRODUCT_WINDOW = 8
_M32 = np.uint64(0xFFFFFFFF)
_M26 = np.int64((1 << 26) - 1)

#: Engines of :func:`sum_scaled` and :func:`dot_scaled`.
ENGINES = ("auto", "numpy", "numba")
#: With engine "auto", numba is compiled (about a second, once per process) only for
#: arrays at least this long; after that it is used for every size.
NUMBA_MIN_SIZE = 1 << 16


def _fold(acc: np.ndarray) -> int:
    """``Σ acc[k] · 2**k`` as a Python int."""
    total = 0
    for k in np.flatnonzero(acc).tolist():
        total += int(acc[k]) << k
    return total


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sign (bool), shift k (intp) and mantissa m (int64) of finite doubles."""
    bits = x.view(np.uint64)
    field = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    frac = (bits & np.uint64((1 << 52) - 1)).astype(np.int64)
    normal = field != 0
    m = np.where(normal, frac | np.int64(1 << 52), frac)
    k = np.where(normal, field.astype(np.intp) - 1, 0)
    return bits >> np.uint64(63) != 0, k, m


def _bucket_add(acc: np.ndarray, k: np.ndarray, t: np.ndarray, neg: np.ndarray) -> None:
    """``acc[k] += ±(t & 2**32−1)``, ``acc[k + 32] += ±(t >> 32)`` for 0 <= t < 2**54."""
    lo = t & np.int64(0xFFFFFFFF)
    hi = t >> np.int64(32)
    size = len(acc)
    # bincount adds float64 weights: exact, since every partial sum is an integer
    # below 2**53 (chunks of _NP_CHUNK records of < 2**32 each).
    for shift, part in ((0, lo), (32, hi)):
        w = np.where(neg, -part, part).astype(np.float64)
        acc += np.bincount(k + shift, weights=w, minlength=size)[:size].astype(np.int64)


_NP_CHUNK = 1 << 20  # 2**20 records of < 2**32: bincount's float sums stay < 2**52


def _sum_numpy(x: np.ndarray) -> int:
    total = 0
    for start in range(0, len(x), _NP_CHUNK):
        neg, k, m = _split(x[start : start + _NP_CHUNK])
        acc = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        _bucket_add(acc, k, m, neg)
        total += _fold(acc)
    return total


def _dot_numpy(x: np.ndarray, y: np.ndarray) -> int:
    total = 0
    for start in range(0, len(x), _NP_CHUNK):
        nx, kx, mx = _split(x[start : start + _NP_CHUNK])
        ny, ky, my = _split(y[start : start + _NP_CHUNK])
        neg = nx != ny
        k = kx + ky
        hx, lx = mx >> np.int64(26), mx & _M26
        hy, ly = my >> np.int64(26), my & _M26
        acc = np.zeros(_DOT_BUCKETS, dtype=np.int64)
        _bucket_add(acc, k + 52, hx * hy, neg)  # < 2**54 each
        _bucket_add(acc, k + 26, hx * ly + lx * hy, neg)  # < 2**54
        _bucket_add(acc, k, lx * ly, neg)  # < 2**52
        total += _fold(acc)
    return total


@functools.cache
def numba_available() -> bool:
    """Whether numba can be imported (once per process): the compiled engines, here and
    in the fast path (:mod:`snapcore.pipeline._compiled`), are then used; without it
    their numpy engines give the same results."""
    try:
        importlib.import_module("numba")
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


_numba_lock = threading.Lock()
_numba_kernels: tuple[Any, ...] | None = None
_numba_checked = False


def _get_numba() -> tuple[Any, ...] | None:
    """The compiled kernels, compiled on first use; None without numba."""
    global _numba_kernels, _numba_checked
    with _numba_lock:
        if _numba_checked:
            return _numba_kernels
        _numba_checked = True
        if not numba_available():
            return None
        _numba_kernels = _compile(importlib.import_module("numba"))
        return _numba_kernels


def _compile(numba: Any) -> tuple[Any, ...]:
    """The compiled one-pass kernels (see the comment above ``SUM_SCALE``).

    One loop over the records clamps, refuses NaN and ±inf, and adds each mantissa
    (low 32 bits at bucket ``k``, the rest at ``k + 32``, signed).  A product
    ``mx·my`` is formed exactly as ``hi·2**52 + lo`` (``lo < 2**53``, ``hi < 2**55``)
    from 26/27-bit halves and added the same way at ``kx + ky`` and ``kx + ky + 52``.
    One record adds less than 2**32 to any bucket, so ``_BLOCK`` records cannot
    overflow int64.
    """
    inline = numba.njit(inline="always", error_model="numpy")
    m26 = np.int64((1 << 26) - 1)
    m27 = np.int64((1 << 27) - 1)
    m32 = np.int64(0xFFFFFFFF)
    inf = np.uint64(0x7FF0000000000000)

    def _split(b: np.uint64) -> tuple[np.int64, np.int64, np.int64]:  # pragma: no cover
        """``(−sign, k, m)`` with ``x·2**1074 = ±m·2**k``; −sign is 0 or −1."""
        field = np.int64((b >> np.uint64(52)) & np.uint64(0x7FF))
        m = np.int64(b & np.uint64(0xFFFFFFFFFFFFF))
        if field != 0:  # normal: the implicit bit; subnormals have k = 0
            m |= np.int64(1 << 52)
            field -= 1
        return -np.int64(b >> np.uint64(63)), field, m

    def _product(mx: np.int64, my: np.int64) -> tuple[np.int64, np.int64]:  # pragma: no cover
        """``(hi, lo)`` with ``mx·my = hi·2**52 + lo`` exactly, for 0 <= mx, my < 2**53."""
        hx, lx = mx >> np.int64(26), mx & m26
        hy, ly = my >> np.int64(26), my & m26
        mid = hx * ly + lx * hy  # < 2**54
        return hx * hy + (mid >> np.int64(26)), lx * ly + ((mid & m26) << np.int64(26))

    def _add(acc: np.ndarray, k: np.int64, t: np.int64, s: np.int64) -> None:  # pragma: no cover
        """``acc[k] ±= t & (2**32 − 1)``, ``acc[k + 32] ±= t >> 32`` (− when s = −1)."""
        acc[k] += ((t & m32) ^ s) - s
        acc[k + 32] += ((t >> np.int64(32)) ^ s) - s

    def _add128(
        lo: np.uint64, hi: np.int64, v: np.int64, s: np.int64
    ) -> tuple[Any, Any]:  # pragma: no cover
        """``(lo, hi) ± v`` as a two's complement 128-bit integer ``hi·2**64 + lo``
        (− when s = −1), for 0 <= v < 2**63."""
        w = (v ^ s) - s  # ±v
        u = np.uint64(w)
        lo = lo + u
        return lo, hi + (w >> np.int64(63)) + np.int64(lo < u)  # w's high word, the carry

    split = inline(_split)
    product = inline(_product)
    add = inline(_add)
    add128 = inline(_add128)

    def _clamp_split(
        v: np.float64, b: np.uint64, lo: np.float64, hi: np.float64, lob: np.uint64, hib: np.uint64
    ) -> Any:  # pragma: no cover
        """:func:`_split` of ``v`` (bits ``b``) clamped to ``[lo, hi]`` (bits ``lob``, ``hib``)."""
        return split(lob if v < lo else hib if v > hi else b)

    def _add_signed(lo: np.uint64, hi: np.int64, t: np.int64) -> Any:  # pragma: no cover
        """``(lo, hi) + t`` for a signed ``t`` (|t| < 2**63): :func:`_add128` of |t|."""
        return add128(lo, hi, -t if t < 0 else t, -np.int64(t < 0))

    clamp_split = inline(_clamp_split)
    add_signed = inline(_add_signed)

    def moments1(  # pragma: no cover
        x: np.ndarray,
        xb: np.ndarray,
        box: np.ndarray,
        boxb: np.ndarray,
        acc: np.ndarray,
        sq: np.ndarray,
        squares: bool,
        flag: np.ndarray,
        window: np.ndarray,
        reg: np.ndarray,
    ) -> None:
        lo, hi, lob, hib = box[0], box[1], boxb[0], boxb[1]
        k1, k2 = window[0], window[1]
        bad = np.uint64(0)
        z = np.int64(0)
        sl, sh = np.uint64(0), z  # Σ ±m·2**(k − k1) over the sum window
        ql, qh = np.uint64(0), z  # Σ lo(m²)·2**(2(k − k2)) over the product window
        pl_, ph_ = np.uint64(0), z  # Σ hi(m²)·2**(2(k − k2))
        for i in range(x.shape[0]):
            v, b = x[i], xb[i]
            if (b & inf) == inf:  # NaN or ±inf, before the clamp: refused
                bad = np.uint64(1)
                continue
            s, k, m = clamp_split(v, b, lo, hi, lob, hib)
            d = k - k1
            if np.uint64(d) <= np.uint64(_SUM_WINDOW):
                sl, sh = add128(sl, sh, m << d, s)
            else:
                add(acc, k, m, s)
            if squares:
                ph, pl = product(m, m)
                d = k - k2
                if np.uint64(d) <= np.uint64(_PRODUCT_WINDOW // 2):
                    ql, qh = add128(ql, qh, pl << (d + d), z)
                    pl_, ph_ = add128(pl_, ph_, ph << (d + d), z)
                else:
                    add(sq, k + k, pl, z)
                    add(sq, k + k + 52, ph, z)
        reg[0], reg[1] = np.int64(sl), sh
        reg[2], reg[3] = np.int64(ql), qh
        reg[4], reg[5] = np.int64(pl_), ph_
        flag[0] = bad

    def moments2(  # pragma: no cover
        x: np.ndarray,
        xb: np.ndarray,
        y: np.ndarray,
        yb: np.ndarray,
        box: np.ndarray,
        boxb: np.ndarray,
        ax: np.ndarray,
        ay: np.ndarray,
        axy: np.ndarray,
        flag: np.ndarray,
        window: np.ndarray,
        reg: np.ndarray,
    ) -> None:
        lo0, hi0, lo1, hi1 = box[0], box[1], box[2], box[3]
        lb0, hb0, lb1, hb1 = boxb[0], boxb[1], boxb[2], boxb[3]
        kx1, ky1, k2 = window[0], window[2], window[1] + window[3]
        bad = np.uint64(0)
        z = np.int64(0)
        xl, xh = np.uint64(0), z
        yl, yh = np.uint64(0), z
        ql, qh = np.uint64(0), z
        pl_, ph_ = np.uint64(0), z
        for i in range(x.shape[0]):
            u, ub, v, vb = x[i], xb[i], y[i], yb[i]
            if (ub & inf) == inf or (vb & inf) == inf:
                bad = np.uint64(1)
                continue
            sx, kx, mx = clamp_split(u, ub, lo0, hi0, lb0, hb0)
            sy, ky, my = clamp_split(v, vb, lo1, hi1, lb1, hb1)
            d = kx - kx1
            if np.uint64(d) <= np.uint64(_SUM_WINDOW):
                xl, xh = add128(xl, xh, mx << d, sx)
            else:
                add(ax, kx, mx, sx)
            d = ky - ky1
            if np.uint64(d) <= np.uint64(_SUM_WINDOW):
                yl, yh = add128(yl, yh, my << d, sy)
            else:
                add(ay, ky, my, sy)
            ph, pl = product(mx, my)
            s = sx ^ sy
            d = kx + ky - k2
            if np.uint64(d) <= np.uint64(_PRODUCT_WINDOW):
                ql, qh = add128(ql, qh, pl << d, s)
                pl_, ph_ = add128(pl_, ph_, ph << d, s)
            else:
                add(axy, kx + ky, pl, s)
                add(axy, kx + ky + 52, ph, s)
        reg[0], reg[1] = np.int64(xl), xh
        reg[2], reg[3] = np.int64(yl), yh
        reg[4], reg[5] = np.int64(ql), qh
        reg[6], reg[7] = np.int64(pl_), ph_
        flag[0] = bad

    def bins(  # pragma: no cover
        x: np.ndarray, e: np.ndarray, drop: bool, counts: np.ndarray, flag: np.ndarray
    ) -> None:
        k = e.shape[0] - 1
        e0, ek = e[0], e[k]
        scale = k / (ek - e0)  # a guess only (inf if the width overflows)
        bad = np.uint64(0)
        for i in range(x.shape[0]):
            v = x[i]
            if v - v != 0.0:  # NaN or ±inf
                bad = np.uint64(1)
                continue
            if v < e0 or v > ek:
                if drop:
                    continue
                v = e0 if v < e0 else ek
            g = (v - e0) * scale
            j = np.int64(g) if 0.0 <= g < k else np.int64(0) if not g >= 0.0 else k - 1
            # the guess is checked by exact comparisons with the edges, then corrected
            if e[j] <= v and (j == k - 1 or v < e[j + 1]):
                counts[j] += 1
                continue
            lo, hi = np.int64(0), np.int64(k)  # e[lo] <= v < e[hi] (or v == e[k])
            while hi - lo > 1:
                mid = (lo + hi) >> 1
                if e[mid] <= v:
                    lo = mid
                else:
                    hi = mid
            counts[lo] += 1
        flag[0] = bad

    def _chunk(  # pragma: no cover
        y: np.ndarray, lo: float, hi: float, scale: np.ndarray
    ) -> tuple[Any, Any, Any, Any]:
        """``(Σh, Σl, #non-finite, #inexact)`` over one chunk: branch-free, so the
        compiler vectorises it (as a separate loop over a slice; the same loop nested
        in the chunk loop is not vectorised)."""
        s1, i1, s2, i2 = scale[0], scale[1], scale[2], scale[3]
        z = np.int64(0)
        bad, inexact, sh, sl = z, z, z, z
        for i in range(y.shape[0]):
            v = y[i]
            bad += np.int64(v - v != 0.0)  # NaN or ±inf
            c = min(max(v, lo), hi)
            h = np.int64(c * s1)  # exact: |c·s1| < 2**53
            r = c - np.float64(h) * i1  # the bits of c below 1/s1, exactly
            q = np.int64(r * s2)
            inexact += np.int64(np.float64(q) * i2 != r)  # bits of r below 1/s2
            sh += h
            sl += q
        return sh, sl, bad, inexact

    chunk = inline(_chunk)

    def _chunk_squares(  # pragma: no cover
        y: np.ndarray, lo: float, hi: float, scale: np.ndarray, out: np.ndarray
    ) -> tuple[Any, Any]:
        """As :func:`_chunk`, ``Σh`` and ``Σl`` in ``out[0:2]`` and the eight partial
        sums of ``X²`` (``X = h·2**53 + l``, halves of 27 bits, see
        ``_SQUARE_WEIGHTS``) in ``out[2:10]``; returns the counts of non-finite and
        inexact values."""
        s1, i1, s2, i2 = scale[0], scale[1], scale[2], scale[3]
        z = np.int64(0)
        bad, inexact, sh, sl = z, z, z, z
        a, b, c2, d, e, f, g, h2 = z, z, z, z, z, z, z, z
        for i in range(y.shape[0]):
            v = y[i]
            bad += np.int64(v - v != 0.0)
            c = min(max(v, lo), hi)
            h = np.int64(c * s1)
            r = c - np.float64(h) * i1
            q = np.int64(r * s2)
            inexact += np.int64(np.float64(q) * i2 != r)
            sh += h
            sl += q
            h1, h0 = h >> np.int64(27), h & m27
            l1, l0 = q >> np.int64(27), q & m27
            a += h1 * h1
            b += h1 * h0
            c2 += h0 * h0
            d += h1 * l1
            e += h1 * l0 + h0 * l1
            f += h0 * l0 + l1 * l1
            g += l1 * l0
            h2 += l0 * l0
        out[0], out[1] = sh, sl
        out[2], out[3], out[4], out[5], out[6] = a, b, c2, d, e
        out[7], out[8], out[9] = f, g, h2
        return bad, inexact

    chunk_squares = inline(_chunk_squares)

    def _chunk_cross(  # pragma: no cover
        u: np.ndarray, w: np.ndarray, box: np.ndarray, scale: np.ndarray, out: np.ndarray
    ) -> tuple[Any, Any]:
        """For two columns: ``Σhx, Σlx, Σhy, Σly`` and the ten partial sums of ``X·Y``
        (see ``_CROSS_WEIGHTS``) in ``out``; returns the counts of non-finite and
        inexact values."""
        lo0, hi0, lo1, hi1 = box[0], box[1], box[2], box[3]
        sx1, ix1, sx2, ix2 = scale[0], scale[1], scale[2], scale[3]
        sy1, iy1, sy2, iy2 = scale[4], scale[5], scale[6], scale[7]
        z = np.int64(0)
        bad, inexact = z, z
        a0, a1, a2, a3, p1, p2, p3 = z, z, z, z, z, z, z
        q1, q2, q3, q4, r1, r2, r3 = z, z, z, z, z, z, z
        for i in range(u.shape[0]):
            v, t = u[i], w[i]
            bad += np.int64(v - v != 0.0) + np.int64(t - t != 0.0)
            cx = min(max(v, lo0), hi0)
            cy = min(max(t, lo1), hi1)
            hx = np.int64(cx * sx1)
            rx = cx - np.float64(hx) * ix1
            lx = np.int64(rx * sx2)
            hy = np.int64(cy * sy1)
            ry = cy - np.float64(hy) * iy1
            ly = np.int64(ry * sy2)
            inexact += np.int64(np.float64(lx) * ix2 != rx) + np.int64(np.float64(ly) * iy2 != ry)
            a0 += hx
            a1 += lx
            a2 += hy
            a3 += ly
            hx1, hx0 = hx >> np.int64(27), hx & m27
            lx1, lx0 = lx >> np.int64(27), lx & m27
            hy1, hy0 = hy >> np.int64(27), hy & m27
            ly1, ly0 = ly >> np.int64(27), ly & m27
            p1 += hx1 * hy1
            p2 += hx1 * hy0 + hx0 * hy1
            p3 += hx0 * hy0
            q1 += hx1 * ly1 + lx1 * hy1
            q2 += hx1 * ly0 + hx0 * ly1
            q3 += lx1 * hy0 + lx0 * hy1
            q4 += hx0 * ly0 + lx0 * hy0
            r1 += lx1 * ly1
            r2 += lx1 * ly0 + lx0 * ly1
            r3 += lx0 * ly0
        out[0], out[1], out[2], out[3] = a0, a1, a2, a3
        out[4], out[5], out[6], out[7], out[8] = p1, p2, p3, q1, q2
        out[9], out[10], out[11], out[12], out[13] = q3, q4, r1, r2, r3
        return bad, inexact

    chunk_cross = inline(_chunk_cross)

    def sums(  # pragma: no cover
        x: np.ndarray,
        xb: np.ndarray,
        box: np.ndarray,
        boxb: np.ndarray,
        scale: np.ndarray,
        acc: np.ndarray,
        flag: np.ndarray,
        reg: np.ndarray,
    ) -> None:
        lo, hi, lob, hib = box[0], box[1], boxb[0], boxb[1]
        z = np.int64(0)
        hl, hh = np.uint64(0), z  # Σ h
        ll, lh = np.uint64(0), z  # Σ l
        for start in range(0, x.shape[0], _CHUNK):
            sh, sl, bad, inexact = chunk(x[start : start + _CHUNK], lo, hi, scale)
            if bad:
                flag[0] = np.uint64(1)
                return
            if inexact:  # this chunk in the buckets, value by value
                for i in range(start, min(start + _CHUNK, x.shape[0])):
                    v, b = x[i], xb[i]
                    sg, k, m = clamp_split(v, b, lo, hi, lob, hib)
                    add(acc, k, m, sg)
                continue
            hl, hh = add_signed(hl, hh, sh)
            ll, lh = add_signed(ll, lh, sl)
        reg[0], reg[1] = np.int64(hl), hh
        reg[2], reg[3] = np.int64(ll), lh

    def sums_squares(  # pragma: no cover
        x: np.ndarray,
        xb: np.ndarray,
        box: np.ndarray,
        boxb: np.ndarray,
        scale: np.ndarray,
        acc: np.ndarray,
        sq: np.ndarray,
        flag: np.ndarray,
        reg: np.ndarray,
    ) -> None:
        lo, hi, lob, hib = box[0], box[1], boxb[0], boxb[1]
        z = np.int64(0)
        wl = np.zeros(10, dtype=np.uint64)  # 128-bit sums: Σh, Σl, then the eight of X²
        wh = np.zeros(10, dtype=np.int64)
        out = np.zeros(10, dtype=np.int64)
        for start in range(0, x.shape[0], _CHUNK):
            bad, inexact = chunk_squares(x[start : start + _CHUNK], lo, hi, scale, out)
            if bad:
                flag[0] = np.uint64(1)
                return
            if inexact:  # this chunk in the buckets, value by value
                for i in range(start, min(start + _CHUNK, x.shape[0])):
                    v, b = x[i], xb[i]
                    sg, k, m = clamp_split(v, b, lo, hi, lob, hib)
                    add(acc, k, m, sg)
                    ph, pl = product(m, m)
                    add(sq, k + k, pl, z)
                    add(sq, k + k + 52, ph, z)
                continue
            for j in range(10):
                t = out[j]
                wl[j], wh[j] = add_signed(wl[j], wh[j], t)
        for j in range(10):
            reg[2 * j], reg[2 * j + 1] = np.int64(wl[j]), wh[j]

    def sums_cross(  # pragma: no cover
        x: np.ndarray,
        xb: np.ndarray,
        y: np.ndarray,
        yb: np.ndarray,
        box: np.ndarray,
        boxb: np.ndarray,
        scale: np.ndarray,
        ax: np.ndarray,
        ay: np.ndarray,
        axy: np.ndarray,
        flag: np.ndarray,
        reg: np.ndarray,
    ) -> None:
        lo0, hi0, lo1, hi1 = box[0], box[1], box[2], box[3]
        lb0, hb0, lb1, hb1 = boxb[0], boxb[1], boxb[2], boxb[3]
        wl = np.zeros(14, dtype=np.uint64)
        wh = np.zeros(14, dtype=np.int64)
        out = np.zeros(14, dtype=np.int64)
        n = x.shape[0]
        for start in range(0, n, _CHUNK):
            end = start + _CHUNK
            bad, inexact = chunk_cross(x[start:end], y[start:end], box, scale, out)
            if bad:
                flag[0] = np.uint64(1)
                return
            if inexact:  # this chunk in the buckets, pair by pair
                for i in range(start, min(end, n)):
                    u, ub, v, vb = x[i], xb[i], y[i], yb[i]
                    sx, kx, mx = clamp_split(u, ub, lo0, hi0, lb0, hb0)
                    sy, ky, my = clamp_split(v, vb, lo1, hi1, lb1, hb1)
                    add(ax, kx, mx, sx)
                    add(ay, ky, my, sy)
                    ph, pl = product(mx, my)
                    s = sx ^ sy
                    add(axy, kx + ky, pl, s)
                    add(axy, kx + ky + 52, ph, s)
                continue
            for j in range(14):
                t = out[j]
                wl[j], wh[j] = add_signed(wl[j], wh[j], t)
        for j in range(14):
            reg[2 * j], reg[2 * j + 1] = np.int64(wl[j]), wh[j]

    jit = numba.njit(nogil=True, error_model="numpy")
    return (
        jit(moments1),
        jit(moments2),
        jit(bins),
        jit(sums),
        jit(sums_squares),
        jit(sums_cross),
    )


def _box(bounds: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    box = np.array(bounds, dtype=np.float64)
    return box, box.view(np.uint64)


def _top_shift(x: np.ndarray, lo: float, hi: float) -> int:
    """The largest shift k of a clamped value: from the bounds when both are finite,
    else from the data (2045 when it holds NaN or ±inf, which the kernel refuses).
    Only the speed depends on it (see ``_window``)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        if not len(x):
            return 0
        top = max(float(x.max()), -float(x.min()))
        lo, hi = (max(lo, -top), min(hi, top)) if math.isfinite(top) else (-math.inf, math.inf)
    k = 0
    for v in (lo, hi):
        field = (int(np.float64(v).view(np.uint64)) >> 52) & 0x7FF
        k = max(k, min(field, 2046) - 1)
    return max(k, 0)


def _window(top: int) -> tuple[int, int]:
    """The least shifts of the sum window and of the product window below ``top``."""
    return max(top - _SUM_WINDOW, 0), max(top - _PRODUCT_WINDOW // 2, 0)


def _wide(reg: np.ndarray, i: int) -> int:
    """The 128-bit integer ``reg[i + 1]·2**64 + (reg[i] as unsigned)``."""
    return (int(reg[i + 1]) << 64) + (int(reg[i]) & ((1 << 64) - 1))


def _halves(h: int, low: int, top: int) -> int:
    """``Σc·2**1074`` from the sums ``h`` and ``low`` of the halves ``c = (h·2**53 +
    l)·2**(top − 53 − 1074)`` (see :func:`_sum_numba`)."""
    return ((h << 53) + low) << (top - 53)


def _sum_numba(x: np.ndarray, lo: float, hi: float, top: int) -> int:
    """The vectorised sum: each clamped value ``c`` is ``(h·2**53 + l)·2**(top − 53 −
    1074)`` with integers ``|h|, |l| < 2**53`` found by two exact float products and
    truncations (``r = c − h·2**(top − 1074)`` is exact, and ``l·2**(top − 1127) == r``
    is checked, which also catches an underflow of ``r·2**(1127 − top)``); ``h`` and
    ``l`` are summed in int64 by chunks of ``_CHUNK`` (below
    2**62), each chunk then added to a 128-bit register sum.  A chunk holding a value
    with bits below ``2**(top − 53 − 1074)`` (``l`` not an integer) goes to the
    buckets instead.  Needs ``top >= 104`` (both scales finite)."""
    kernels = _get_numba()
    assert kernels is not None
    box, boxb = _box((lo, hi))
    scale = np.array(_scales(top))
    total = 0
    for (part,) in _blocks(x):
        acc = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        reg = np.zeros(4, dtype=np.int64)
        kernels[3](part, part.view(np.uint64), box, boxb, scale, acc, flag, reg)
        if flag[0]:
            raise _not_finite("values")
        total += _fold(acc) + _halves(_wide(reg, 0), _wide(reg, 2), top)
    return total


def _sum_squares_numba(x: np.ndarray, lo: float, hi: float, top: int) -> tuple[int, int]:
    """:func:`_sum_numba` with the sum of squares: ``X = h·2**53 + l`` is ``c·2**(1127 −
    top)``, and ``X²`` is the sum of eight products of 27-bit halves (``h = h1·2**27 +
    h0``, ``l = l1·2**27 + l0``, with ``h1``, ``l1`` signed) at ``_SQUARE_WEIGHTS``,
    each partial sum below 2**55 per value and 2**63 per chunk."""
    kernels = _get_numba()
    assert kernels is not None
    box, boxb = _box((lo, hi))
    scale = np.array(_scales(top))
    total = squares = 0
    for (part,) in _blocks(x):
        acc = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        sq = np.zeros(_DOT_BUCKETS, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        reg = np.zeros(20, dtype=np.int64)
        kernels[4](part, part.view(np.uint64), box, boxb, scale, acc, sq, flag, reg)
        if flag[0]:
            raise _not_finite("values")
        w = [_wide(reg, 2 * j) for j in range(10)]
        total += _fold(acc) + _halves(w[0], w[1], top)
        xx = sum(v << k for v, k in zip(w[2:], _SQUARE_WEIGHTS, strict=True))
        squares += _fold(sq) + (xx << (2 * top - 106))
    return total, squares


def _moments1_numba(x: np.ndarray, lo: float, hi: float, squares: bool) -> tuple[int, int]:
    kernels = _get_numba()
    assert kernels is not None
    top = _top_shift(x, lo, hi)
    if top >= 104:
        return _sum_squares_numba(x, lo, hi, top) if squares else (_sum_numba(x, lo, hi, top), 0)
    box, boxb = _box((lo, hi))
    k1, k2 = _window(top)
    window = np.array([k1, k2], dtype=np.int64)
    s = q = 0
    for start in range(0, len(x), _BLOCK):
        part = x[start : start + _BLOCK]
        acc = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        sq = np.zeros(_DOT_BUCKETS if squares else 1, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        reg = np.zeros(6, dtype=np.int64)
        kernels[0](part, part.view(np.uint64), box, boxb, acc, sq, squares, flag, window, reg)
        if flag[0]:
            raise _not_finite("values")
        s += _fold(acc) + (_wide(reg, 0) << k1)
        if squares:
            q += _fold(sq) + (_wide(reg, 2) << (2 * k2)) + (_wide(reg, 4) << (2 * k2 + 52))
    return s, q


#: Values per contiguous copy when a column is strided (the vectorised kernels read
#: a strided column several times slower than a copy costs).
_COPY = 1 << 16


def _blocks(*cols: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
    """The columns in aligned pieces of at most ``_BLOCK`` values, each piece
    contiguous: views when every column is, else copies of ``_COPY`` values."""
    contiguous = all(c.flags.c_contiguous for c in cols)
    step = _BLOCK if contiguous else _COPY
    for start in range(0, len(cols[0]), step):
        parts = (c[start : start + step] for c in cols)
        yield tuple(parts) if contiguous else tuple(np.ascontiguousarray(p) for p in parts)


def _scales(top: int) -> list[float]:
    return [2.0 ** (1074 - top), 2.0 ** (top - 1074), 2.0 ** (1127 - top), 2.0 ** (top - 1127)]


def _cross_numba(
    x: np.ndarray, y: np.ndarray, bounds: Sequence[float], tx: int, ty: int
) -> tuple[int, int, int]:
    """:func:`_sum_squares_numba` for two columns: ``X·Y`` as ten partial sums of
    products of 27-bit halves at ``_CROSS_WEIGHTS``, each below 2**55 per pair."""
    kernels = _get_numba()
    assert kernels is not None
    box, boxb = _box(bounds)
    scale = np.array(_scales(tx) + _scales(ty))
    sx = sy = sxy = 0
    for px, py in _blocks(x, y):
        ax = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        ay = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        axy = np.zeros(_DOT_BUCKETS, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        reg = np.zeros(28, dtype=np.int64)
        kernels[5](
            px, px.view(np.uint64), py, py.view(np.uint64), box, boxb, scale, ax, ay, axy,
            flag, reg,
        )  # fmt: skip
        if flag[0]:
            raise _not_finite("x and y")
        w = [_wide(reg, 2 * j) for j in range(14)]
        sx += _fold(ax) + _halves(w[0], w[1], tx)
        sy += _fold(ay) + _halves(w[2], w[3], ty)
        xy = sum(v << k for v, k in zip(w[4:], _CROSS_WEIGHTS, strict=True))
        sxy += _fold(axy) + (xy << (tx + ty - 106))
    return sx, sy, sxy


def _moments2_numba(x: np.ndarray, y: np.ndarray, bounds: Sequence[float]) -> tuple[int, int, int]:
    kernels = _get_numba()
    assert kernels is not None
    tx, ty = _top_shift(x, bounds[0], bounds[1]), _top_shift(y, bounds[2], bounds[3])
    if tx >= 104 and ty >= 104:
        return _cross_numba(x, y, bounds, tx, ty)
    box, boxb = _box(bounds)
    kx1, kx2 = _window(tx)
    ky1, ky2 = _window(ty)
    window = np.array([kx1, kx2, ky1, ky2], dtype=np.int64)
    k2 = kx2 + ky2
    sx = sy = sxy = 0
    for start in range(0, len(x), _BLOCK):
        px, py = x[start : start + _BLOCK], y[start : start + _BLOCK]
        ax = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        ay = np.zeros(_SUM_BUCKETS, dtype=np.int64)
        axy = np.zeros(_DOT_BUCKETS, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        reg = np.zeros(8, dtype=np.int64)
        kernels[1](
            px, px.view(np.uint64), py, py.view(np.uint64), box, boxb, ax, ay, axy, flag,
            window, reg,
        )  # fmt: skip
        if flag[0]:
            raise _not_finite("x and y")
        sx += _fold(ax) + (_wide(reg, 0) << kx1)
        sy += _fold(ay) + (_wide(reg, 2) << ky1)
        sxy += _fold(axy) + (_wide(reg, 4) << k2) + (_wide(reg, 6) << (k2 + 52))
    return sx, sy, sxy


_numba_warm: set[str] = set()


def _engine(engine: str, size: int, kernel: str = "moments") -> str:
    """The engine to run: "numba" for engine "auto" once ``kernel`` has been compiled
    in this process or when the array is large enough to repay compiling it."""
    if engine not in ENGINES:
        raise ParameterError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    if engine == "numba":
        if _get_numba() is None:
            raise ParameterError("engine 'numba' needs numba: pip install numba")
        return "numba"
    if engine == "numpy" or not (kernel in _numba_warm or size >= NUMBA_MIN_SIZE):
        return "numpy"
    if _get_numba() is None:
        return "numpy"
    _numba_warm.add(kernel)
    return "numba"


def _not_finite(name: str) -> ParameterError:
    return ParameterError(f"{name} must contain only finite doubles")


def _doubles(values: Any, name: str, *, check: bool = True) -> np.ndarray:
    """A flat float64 view (strided columns are not copied) or copy; finiteness is
    checked here (numpy engine) or in the compiled loop (numba engine), in both cases
    before any result is returned."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if check and not np.isfinite(x).all():
        raise _not_finite(name)
    return x


_ALL = (-math.inf, math.inf)


def clamped_moments(
    values: Sequence[float] | np.ndarray,
    lower: float = -math.inf,
    upper: float = math.inf,
    *,
    squares: bool = False,
    engine: str = "auto",
) -> tuple[int, int]:
    """Exact sum (and sum of squares) of the values clamped to ``[lower, upper]``.

    Parameters
    ----------
    values : sequence of float or numpy.ndarray
        Finite doubles.
    lower, upper : float
        The clamp interval (each value is clamped before it is added; a clamp only
        compares, so it is exact).
    squares : bool
        Also the sum of squares (otherwise 0 is returned for it).
    engine : {"auto", "numpy", "numba"}
        The vectorised numpy engine or the compiled numba engine (same integers).

    Returns
    -------
    (int, int)
        ``Σ c_i · 2**SUM_SCALE`` and ``Σ c_i² · 2**DOT_SCALE`` for the clamped values
        ``c_i``: integers, because every double is a multiple of ``2**-1074``.

    Raises
    ------
    ParameterError
        On NaN or ±inf (the message does not say which element).
    """
    x = _doubles(values, "values", check=False)
    if _engine(engine, len(x)) == "numba":
        return _moments1_numba(x, lower, upper, squares)
    if not np.isfinite(x).all():
        raise _not_finite("values")
    c = np.clip(x, lower, upper)
    return _sum_numpy(c), _dot_numpy(c, c) if squares else 0


def clamped_cross_moments(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    bounds: Sequence[float] = (-math.inf, math.inf, -math.inf, math.inf),
    *,
    engine: str = "auto",
) -> tuple[int, int, int]:
    """Exact ``Σ cx_i``, ``Σ cy_i`` and ``Σ cx_i · cy_i`` of two clamped columns.

    ``bounds`` is ``(a, b, c, d)``: x is clamped to ``[a, b]``, y to ``[c, d]``.  The
    sums are scaled by ``2**SUM_SCALE``, ``2**SUM_SCALE`` and ``2**DOT_SCALE`` (see
    :func:`clamped_moments`).
    """
    a, b = _doubles(x, "x", check=False), _doubles(y, "y", check=False)
    if len(a) != len(b):
        raise ParameterError(f"x and y must have the same length, got {len(a)} and {len(b)}")
    if _engine(engine, len(a)) == "numba":
        return _moments2_numba(a, b, bounds)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise _not_finite("x and y")
    ca, cb = np.clip(a, bounds[0], bounds[1]), np.clip(b, bounds[2], bounds[3])
    return _sum_numpy(ca), _sum_numpy(cb), _dot_numpy(ca, cb)


def sum_scaled(values: Sequence[float] | np.ndarray, *, engine: str = "auto") -> int:
    """``Σ x_i · 2**1074`` exactly: the sum of finite doubles as an integer.

    See :func:`clamped_moments` (with no clamp).
    """
    return clamped_moments(values, engine=engine)[0]


def dot_scaled(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, engine: str = "auto"
) -> int:
    """``Σ x_i · y_i · 2**2148`` exactly, as an integer (see :func:`clamped_cross_moments`)."""
    return clamped_cross_moments(x, y, engine=engine)[2]


def exact_sum(values: Sequence[float] | np.ndarray | Any, *, engine: str = "auto") -> Fraction:
    """The exact sum of finite doubles, as a Fraction (no rounding at any step)."""
    return Fraction(sum_scaled(values, engine=engine), 1 << SUM_SCALE)


def exact_dot(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, engine: str = "auto"
) -> Fraction:
    """The exact ``sum(x[i] * y[i])`` of finite doubles, as a Fraction."""
    return Fraction(dot_scaled(x, y, engine=engine), 1 << DOT_SCALE)


def bin_counts(
    edges: np.ndarray,
    values: Sequence[float] | np.ndarray,
    *,
    drop: bool = False,
    engine: str = "auto",
) -> np.ndarray:
    """Counts of finite doubles in the bins ``[e_i, e_{i+1})`` (the last one closed).

    Each value's bin is decided by exact comparisons of doubles with the edges: the
    result is ``searchsorted(edges, x, "right") − 1`` (capped at ``k − 1``) for every
    value; a floating-point guess from evenly spaced edges only says where to compare
    first, and a value it misses is placed by binary search.

    Parameters
    ----------
    edges : numpy.ndarray
        ``k + 1`` finite, strictly increasing float64 edges.
    values : sequence of float or numpy.ndarray
        Finite doubles (a ParameterError otherwise).
    drop : bool
        Values outside ``[e_0, e_k]`` are not counted (otherwise they are clamped into
        the first or last bin).
    engine : {"auto", "numpy", "numba"}
        Same counts from either engine.

    Returns
    -------
    numpy.ndarray
        ``k`` int64 counts.
    """
    e = np.ascontiguousarray(edges, dtype=np.float64)
    x = _doubles(values, "values", check=False)
    k = len(e) - 1
    if _engine(engine, len(x), "bins") == "numba":
        kernels = _get_numba()
        assert kernels is not None
        out = np.zeros(k, dtype=np.int64)
        flag = np.zeros(1, dtype=np.uint64)
        kernels[2](x, e, drop, out, flag)
        if flag[0]:
            raise _not_finite("values")
        return out
    if not np.isfinite(x).all():
        raise _not_finite("values")
    if drop:
        x = x[(x >= e[0]) & (x <= e[-1])]
    counts: np.ndarray = np.bincount(bin_index(e, np.clip(x, e[0], e[-1])), minlength=k)
    return counts


def bin_index(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The bin of each ``x`` in ``[e_0, e_k]``: ``i`` with ``e_i <= x < e_{i+1}`` (the
    last bin closed), decided by exact comparisons.

    A floating-point guess (exact for evenly spaced edges up to one bin) is corrected
    by comparing with the edges; values the guess missed by more than two bins are
    placed by binary search.  The result is ``searchsorted(edges, x, "right") − 1``
    capped at ``k − 1``, only faster.
    """
    k = len(edges) - 1
    with np.errstate(all="ignore"):
        guess = np.floor((x - edges[0]) * (k / (edges[-1] - edges[0])))
    guess[~np.isfinite(guess)] = 0
    idx = np.clip(guess, 0, k - 1).astype(np.intp)
    for _ in range(2):
        idx -= (x < edges[idx]) & (idx > 0)
        idx += (x >= edges[idx + 1]) & (idx < k - 1)
    bad = (x < edges[idx]) | ((x >= edges[idx + 1]) & (idx < k - 1))
    if bad.any():
        idx[bad] = np.minimum(np.searchsorted(edges, x[bad], side="right") - 1, k - 1)
    return cast(np.ndarray, idx)
