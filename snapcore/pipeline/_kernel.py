"""The fast path's kernel: ``k = ⌊y/Λ + 1/2⌋`` in double-double, with a rigorous bound.

For each element the kernel computes ``t ≈ y/Λ + 1/2`` in double-double arithmetic
together with a **rigorous bound** ``err`` on ``|t − (y/Λ + 1/2)|``, where
``y = RN_p(clamp_b(x) + S·RN_p(λ·RN_p(ln U*)))`` is the exact p-bit value of
docs/semantics.md.  When the interval ``[t − err, t + err]`` contains no integer, the
snapped index ``k`` is decided directly; otherwise (and whenever anything is outside
the range the bound covers) the engine (:mod:`snapcore.pipeline._engine`) leaves the
element to the exact pipeline.

The derivation of every constant below is in ``docs/fastpath.md``; the comments
``[E1]``...``[E9]`` point at its steps.

The kernel is written once, branch-free, over a few primitives (:func:`make_kernel`);
the same source runs on whole numpy arrays here (:data:`numpy_kernel`) or, compiled by
numba, element by element in a loop (:mod:`snapcore.pipeline._compiled`).  Both give
the same bits (IEEE-754 double arithmetic, round to nearest, no contraction) wherever
:func:`two_prod` is exact; the compiled one is a fused multiply-add, so where a
product's error term underflows the two pairs may differ by a few 2**-1074, within
the bound's absolute floor (docs/fastpath.md, Lemma 0 and E8), and every ``k``
either decides is the same exact ``⌊y/Λ + 1/2⌋``.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ERR_FLOOR",
    "ERR_LN_ABS",
    "ERR_LN_PER_E",
    "ERR_REL",
    "LN2_HI",
    "LN2_LO",
    "LOG_NEG_LN_HI",
    "LOG_NEG_LN_LO",
    "LOG_R",
    "MAX_E",
    "POLY",
    "make_kernel",
    "numpy_kernel",
    "numpy_select",
    "two_prod",
    "two_sum",
]

F64 = npt.NDArray[np.float64]

# ----------------------------------------------------------------------------------
# Constants.  u = 2**-53 is the unit roundoff of binary64.
# ----------------------------------------------------------------------------------
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp/Dekker splitting
#: Absolute error bound of the ln kernel, constant part [E4].
ERR_LN_ABS = 2.0**-73
#: Absolute error bound of the ln kernel per unit of the exponent e [E4].
ERR_LN_PER_E = 2.0**-97
#: Relative error bound of the double-double operations [E5-E7] and of the three
#: p-bit roundings at p >= 118 [E2], on the magnitudes they are applied to.
ERR_REL = 2.0**-100
#: Absolute floor covering underflow of error terms (all magnitudes involved are
#: far above 2**-900 or contribute at most a few 2**-1074) [E8].
ERR_FLOOR = 2.0**-900
#: The largest geometric exponent e the bound covers; deeper draws fall back.
MAX_E = float(1 << 20)
#: Number of table entries for the log reduction (index = top 8 mantissa bits).
_TABLE_BITS = 8
_TABLE_SIZE = 1 << _TABLE_BITS
#: Degree of the tail polynomial Q (log1p(z) = z − z²/2 + z³·Q(z)).
_POLY_DEGREE = 6


def _build_tables() -> tuple[F64, F64, F64, float, float, F64]:
    """The log reduction table, ln 2 as a double-double and the tail coefficients.

    ``R[i]`` is a 9-bit approximation of ``1/m`` for ``m`` in
    ``[1 + i/256, 1 + (i+1)/256)`` so that ``z = m·R[i] − 1`` is exact in binary64
    and ``|z| < 2**-8`` (checked in the tests).  ``-ln R[i] = LH[i] + LL[i]`` to
    within ``2**-106``.
    """
    import gmpy2

    ctx = gmpy2.context(precision=256)
    r = np.empty(_TABLE_SIZE)
    lh = np.empty(_TABLE_SIZE)
    ll = np.empty(_TABLE_SIZE)
    for i in range(_TABLE_SIZE):
        if i == 0:
            ri = Fraction(1)
        else:
            mid = 1 + Fraction(2 * i + 1, 2 * _TABLE_SIZE)
            # nearest multiple of 2**-9 to 1/mid (1/mid is in (0.5, 1)): 9 bits
            ri = Fraction(round(Fraction(512) / mid), 512)
        r[i] = float(ri)
        neg_ln = ctx.minus(ctx.log(gmpy2.mpq(ri.numerator, ri.denominator)))
        hi = float(neg_ln)
        lo = float(ctx.sub(neg_ln, hi))
        lh[i], ll[i] = hi, lo
    ln2 = ctx.log(2)
    ln2_hi = float(ln2)
    ln2_lo = float(ctx.sub(ln2, ln2_hi))
    coef = np.array(
        [float(Fraction((-1) ** j, j + 3)) for j in range(_POLY_DEGREE + 1)], dtype=np.float64
    )
    return r, lh, ll, ln2_hi, ln2_lo, coef


LOG_R, LOG_NEG_LN_HI, LOG_NEG_LN_LO, LN2_HI, LN2_LO, POLY = _build_tables()
_C = [float(c) for c in POLY]


# ----------------------------------------------------------------------------------
# Error-free transformations, element-wise on scalars or arrays.
# ----------------------------------------------------------------------------------
def two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """Knuth's TwoSum: ``s + err == a + b`` exactly, ``s = RN(a + b)`` (no overflow)."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


def two_prod(a: Any, b: Any) -> tuple[Any, Any]:
    """Dekker's TwoProduct: ``p + err == a·b`` exactly, ``p = RN(a·b)``.

    Exact when ``|a|, |b| < 2**996`` and no intermediate underflows.
    """
    p = a * b
    ca = _SPLITTER * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLITTER * b
    bh = cb - (cb - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, err


def numpy_select(c: Any, a: Any, b: Any) -> Any:
    """``a`` where ``c`` else ``b``, element-wise (the kernel's branch-free choice)."""
    return np.where(c, a, b)


def make_kernel(
    two_sum: Callable[..., Any], two_prod: Callable[..., Any], select: Callable[..., Any]
) -> Callable[..., Any]:
    """The kernel over the given primitives (numpy or numba versions).

    ``kernel(v, s, e, mhi, mlo, *params) -> (k, ok, t_hi, t_lo, err)`` for the
    statistic value ``v`` and the draw's fields (as a
    :class:`~snapcore.randomness._draw.DrawBatch` holds them) with the ten parameters of
    :attr:`FastEngine.params <snapcore.pipeline._engine.FastEngine.params>`:
    ``t = t_hi + t_lo ≈ y/Λ + 1/2`` within ``err``, and ``k = ⌊y/Λ + 1/2⌋`` when ``ok``.
    """
    c0, c1, c2, c3, c4, c5, c6 = _C
    ln2_hi, ln2_lo = LN2_HI, LN2_LO
    # The tables are closure constants (numba freezes them; no reference counting).
    tab_r, tab_h, tab_l = LOG_R, LOG_NEG_LN_HI, LOG_NEG_LN_LO

    def kernel(
        v: Any,  # the statistic value (double)
        s: Any,  # the sign S as ±1.0
        e: Any,  # the geometric exponent e >= 1 as a double: U* = (mH + mL)·2**-e
        mhi: Any,  # top 52 mantissa bits of U* (uint64)
        mlo: Any,  # next 53 mantissa bits (uint64)
        ch: float,  # c = ch + cl (exactly, up to err_c)
        cl: float,
        ih: float,  # 1/(ΔΛ) = ih + il (relative error <= 2**-104)
        il: float,
        bh: float,  # b/Λ = bh + bl
        bl: float,
        lam_h: float,  # λ/Λ = lam_h + lam_l, in (1/2, 1]
        lam_l: float,
        far: float,  # |RN(v − ch)| > far implies |(v − c)/Δ| > b (far = 4Δb, rounded up)
        eabs: float,  # constant absolute error terms of x (err_c·|1/(ΔΛ)|) and the floor
    ) -> tuple[Any, Any, Any, Any, Any]:
        # ---- [E1] x' = clamp_b(RN_p((v − c)/Δ)) / Λ, approximately ----------------
        d1, d2 = two_sum(v, -ch)
        d2b = d2 - cl
        fr = abs(d1) > far
        d1s = select(fr, 0.0, d1)
        d2s = select(fr, 0.0, d2b)
        dh, dl = two_sum(d1s, d2s)
        p1, p2 = two_prod(dh, ih)
        p3 = dh * il + dl * ih
        xh, xl = two_sum(p1, p2 + p3)
        ex0 = ERR_REL * 4.0 * abs(xh) + 2.0**-51 * abs(ih) * abs(d2s) + eabs
        neg = select(fr, d1 < 0.0, xh < 0.0)
        sg = select(neg, -1.0, 1.0)
        axh = sg * xh
        axl = sg * xl
        over = fr | (axh > bh) | ((axh == bh) & (axl > bl))
        eb = ERR_REL * bh
        clear = fr | ((axh - bh) - (abs(axl) + abs(bl)) > 2.0 * (ex0 + eb))
        Xh = select(over, sg * bh, xh)
        Xl = select(over, sg * bl, xl)
        eX = select(over & clear, eb, ex0 + eb)
        # ---- [E3] ln U* = −e·ln2 − ln r + log1p(z) + log1p(r·mL/(1+z)) ------------
        i = mhi >> 44
        r = tab_r[i]
        mh = 1.0 + mhi * 2.0**-52
        ml = mlo * 2.0**-105
        q1, q2 = two_prod(mh, r)
        z = (q1 - 1.0) + q2  # exact: |z| < 2**-8 and z is a multiple of 2**-61
        wt = (r * ml) / (1.0 + z)
        z2h, z2l = two_prod(z, z)
        q = c6
        q = q * z + c5
        q = q * z + c4
        q = q * z + c3
        q = q * z + c2
        q = q * z + c1
        q = q * z + c0
        tail = (z2h * z) * q
        eh, el = two_prod(-e, ln2_hi)
        el = el + (-e) * ln2_lo
        a1, a2 = two_sum(eh, tab_h[i])
        a3, a4 = two_sum(a1, z)
        a5, a6 = two_sum(a3, -0.5 * z2h)
        lo = (((((a2 + a4) + a6) + el) + tab_l[i]) + (wt - 0.5 * z2l)) + tail
        lh, ll = two_sum(a5, lo)
        eln = ERR_LN_ABS + ERR_LN_PER_E * (e + 2.0)
        # ---- [E5] P = S·(λ/Λ)·ln U* ---------------------------------------------
        r1, r2 = two_prod(lam_h, lh)
        r3 = lam_h * ll + lam_l * lh
        ph, pl = two_sum(r1, r2 + r3)
        ph = s * ph
        pl = s * pl
        # ---- [E6] T = x' + P + 1/2 ----------------------------------------------
        s1, s2 = two_sum(Xh, ph)
        t1, t2 = two_sum(Xl, pl)
        w = s2 + t1
        v1, v2 = two_sum(s1, w)
        w2 = t2 + v2
        th, tl = two_sum(v1, w2)
        h1, h2 = two_sum(th, 0.5)
        h3 = h2 + tl
        sh, sl = two_sum(h1, h3)
        # ---- [E8] the total bound ------------------------------------------------
        err = 2.0 * (eln + eX + ERR_REL * (abs(Xh) + 4.0 * abs(ph) + abs(th) + 1.0) + ERR_FLOOR)
        # ---- [E9] decide k = floor(t) when no integer is within err --------------
        fl = np.floor(sh)
        f = sh - fl  # exact whenever f < 1/2 (Sterbenz), and f == 0 iff sh == fl
        up = (fl + 1.0) - sh  # exact whenever up < 1/2
        zero = f == 0.0
        k = fl - select(zero & (sl < 0.0), 1.0, 0.0)
        dist0 = select(zero, abs(sl), f + sl)
        dist1 = up - sl
        ok = (dist0 > err) & (dist1 > err) & (err < 0.25) & (abs(sh) < 2.0**52) & (e <= MAX_E)
        return k, ok, sh, sl, err

    return kernel


#: The kernel on numpy arrays (the numpy engine).
numpy_kernel = make_kernel(two_sum, two_prod, numpy_select)
