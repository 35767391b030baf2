"""The vectorised fast path: bit-identical to the exact pipeline, for whole arrays.

For each element the fast path computes ``t ≈ y/Λ + 1/2`` in double-double
arithmetic together with a **rigorous bound** ``err`` on ``|t − (y/Λ + 1/2)|``,
where ``y = RN_p(clamp_b(x) + S·RN_p(λ·RN_p(ln U*)))`` is the exact p-bit value of
docs/semantics.md.  When the interval ``[t − err, t + err]`` contains no integer, the
snapped index ``k = ⌊y/Λ + 1/2⌋`` is decided directly; otherwise (and whenever
anything is outside the range the bound covers) that element is computed by the
exact pipeline (:meth:`snapcore.pipeline._stages.Pipeline.run`).  The output stage
``c + Δ·clamp_b(kΛ)`` is either looked up in a table of exact outputs or computed
in double-double with a certificate of correct rounding, and again falls back to
the exact stage when the certificate fails.  So every output equals the exact
pipeline's, element for element.

The derivation of every constant below is in ``docs/fastpath.md``; the comments
``[E1]``...``[E9]`` point at its steps.

The kernel is written once, branch-free, over a few primitives; the same source
runs on whole numpy arrays (the pure-numpy engine) or, compiled by numba when it
is installed, element by element in a loop (the numba engine).  Both engines give
the same bits (IEEE-754 double arithmetic, round to nearest, no contraction).
"""

from __future__ import annotations

import functools
import importlib
import io
import math
import sys
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from snapcore.calibration._clamp import round_up_double
from snapcore.calibration._params import Calibration
from snapcore.exact._dyadic import to_fraction
from snapcore.pipeline._stages import Pipeline, clamp
from snapcore.randomness._sources import ByteSource, Draw, RandomSource, decode_draw

__all__ = [
    "AUTO_MIN_SIZE",
    "SCALAR_CONTINUATION",
    "SCALAR_DONE",
    "SCALAR_EXACT",
    "SCALAR_OUTPUT",
    "BatchStats",
    "DrawBatch",
    "FastEngine",
    "decode_draw_batch",
    "engine_for",
    "numba_available",
    "release_batch",
    "scalar_params",
    "scalar_release_kernel",
]

#: Arrays at least this long go through the fast path automatically when the
#: mechanism's backend is the MPFR reference (the fast path is bit-identical to it).
AUTO_MIN_SIZE = 1024

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


def _np_select(c: Any, a: Any, b: Any) -> Any:
    return np.where(c, a, b)


def _make_kernel(
    two_sum: Callable[..., Any], two_prod: Callable[..., Any], select: Callable[..., Any]
) -> Callable[..., Any]:
    """Build the kernel over the given primitives (numpy or numba versions)."""
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


_np_kernel = _make_kernel(two_sum, two_prod, _np_select)

# ----------------------------------------------------------------------------------
# The numba engine.  Every compiled function is defined at module level and cached
# on disk (``cache=True``): the first process compiles them (a few seconds), later
# ones load them in well under a second, so every array from ``AUTO_MIN_SIZE`` on
# uses the compiled engine.  numba is a dependency; when it cannot be imported (an
# unsupported platform) the pure-numpy engine gives the same bits.
# ----------------------------------------------------------------------------------
try:
    _nb: Any = importlib.import_module("numba")
except Exception:  # pragma: no cover - depends on the environment
    _nb = None


def numba_available() -> bool:
    """Whether numba can be imported (the compiled engine is then used)."""
    return _nb is not None


def resolve_engine(size: int) -> str:
    """The engine "auto" stands for (``size`` is kept for compatibility)."""
    return "numba" if _nb is not None else "numpy"


_U63 = 0x7FFFFFFFFFFFFFFF

#: Status of the compiled release of one value (:func:`scalar_release_kernel`): the
#: output is final; ``k`` is not decided (the exact pipeline from the same draw); the
#: draw has a continuation word (decoded exactly, reading on); ``k`` is decided but
#: the output is not certified (the exact output stage for ``k``).
SCALAR_DONE, SCALAR_EXACT, SCALAR_CONTINUATION, SCALAR_OUTPUT = 0, 1, 2, 3
# Layout of the scalar parameter vector (after the engine's ten kernel parameters).
_SP_LOWER, _SP_UPPER, _SP_DELTA, _SP_LO_OUT, _SP_HI_OUT = 10, 11, 12, 13, 14
_SP_L, _SP_KMAX, _SP_KHI, _SP_MODE, _SP_TABLE = 15, 16, 17, 18, 19
#: ``fbk`` marker of an element whose k was not decided (|k| < 2**52 otherwise).
_UNDECIDED = -(1 << 62)


def _sel(c: Any, a: Any, b: Any) -> Any:
    return a if c else b


def _be64(buf: Any, o: Any) -> Any:
    u64 = np.uint64
    return (
        (u64(buf[o]) << u64(56)) | (u64(buf[o + 1]) << u64(48))
        | (u64(buf[o + 2]) << u64(40)) | (u64(buf[o + 3]) << u64(32))
        | (u64(buf[o + 4]) << u64(24)) | (u64(buf[o + 5]) << u64(16))
        | (u64(buf[o + 6]) << u64(8)) | u64(buf[o + 7])
    )  # fmt: skip


def _load_be64() -> Any:
    """An LLVM intrinsic ``(uint8 array, offset) -> uint64``: one unaligned load of
    8 bytes and a byte swap (``llvm.bswap``), on little-endian machines; else None
    (the byte-wise :func:`_be64` is used)."""
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        return None
    try:
        from llvmlite import ir
        from numba.core import types
        from numba.extending import intrinsic
    except ImportError:  # pragma: no cover - other numba versions
        return None

    def load_be64(typingctx: Any, arr: Any, off: Any) -> Any:
        sig = types.uint64(arr, types.intp)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(64).as_pointer())
            bswap = builder.module.declare_intrinsic("llvm.bswap", [ir.IntType(64)])
            return builder.call(bswap, [builder.load(ptr, align=1)])

        return sig, codegen

    return intrinsic(load_be64)


if _nb is not None:
    # Everything is inlined into the loops (numba IR inlining) with numpy's error
    # model (no Python exception checks), so LLVM can vectorise.  IEEE semantics are
    # kept: no fastmath, hence no reassociation or contraction.
    _jit_inline = _nb.njit(inline="always", error_model="numpy")
    _nb_two_sum = _jit_inline(two_sum)
    _nb_two_prod = _jit_inline(two_prod)
    _nb_sel = _jit_inline(_sel)
    _nb_kernel = _jit_inline(_make_kernel(_nb_two_sum, _nb_two_prod, _nb_sel))
    _nb_be64 = _load_be64() or _jit_inline(_be64)
    try:
        _leading_zeros: Any = importlib.import_module(
            "numba.cpython.unsafe.numbers"
        ).leading_zeros  # LLVM ctlz
    except (ImportError, AttributeError):  # pragma: no cover - other numba versions
        _leading_zeros = None

    if _leading_zeros is not None:

        def _geometric(r: Any) -> float:
            # e = 64 − bit_length(r) = leading zeros of the 64-bit word (bit 63 is
            # clear); 64 when r == 0 (a continuation follows).
            return float(_leading_zeros(r))

    else:  # pragma: no cover

        def _geometric(r: Any) -> float:
            u64 = np.uint64
            if r == u64(0):
                return 64.0
            ee = 1
            while (r >> u64(63 - ee)) == u64(0):
                ee += 1
            return float(ee)

    _nb_geometric = _jit_inline(_geometric)

    def _nb_decode_row(buf: Any, o: Any) -> tuple[float, float, Any, Any]:
        # One snapcore-draw-v1 row at byte offset o: (S, e, mhi, mlo); e = 64 when
        # the 63 exponent bits are all zero (a continuation word follows).
        u64 = np.uint64
        w = _nb_be64(buf, o)
        w1 = _nb_be64(buf, o + 8)
        w2 = _nb_be64(buf, o + 15)  # mantissa bytes 7..14: bits 57..120
        s = 1.0 - 2.0 * float(w >> u64(63))
        e = _nb_geometric(w & u64(_U63))
        mhi = w1 >> u64(12)
        mlo = ((w1 & u64(0xFFF)) << u64(41)) | ((w2 >> u64(15)) & u64(0x1FFFFFFFFFF))
        return s, e, mhi, mlo

    _nb_decode_row_i = _jit_inline(_nb_decode_row)

    def _nb_output_dd(k: Any, prm: Any, L: Any, delta: float) -> tuple[float, bool]:
        # [E10] r = RN(c + Δ·kΛ) with its certificate of correct rounding (the
        # element-wise form of FastEngine.outputs' computed stage).
        ch, cl = prm[0], prm[1]
        kl = math.ldexp(float(k), L)
        p1, p2 = _nb_two_prod(delta, kl)
        s1, s2 = _nb_two_sum(ch, p1)
        t1, t2 = _nb_two_sum(cl, p2)
        u1, u2 = _nb_two_sum(s2, t1)
        r, r2 = _nb_two_sum(s1, u1)
        exact_sum = (u2 == 0.0) and (t2 == 0.0)
        fin = math.isfinite(r)
        if not fin:
            return r, False
        m, ex = math.frexp(abs(r))
        half_gap = math.ldexp(0.25 if m == 0.5 else 0.5, ex - 53)
        resid = abs(r2) + abs(u2) + abs(t2)
        cert = exact_sum or resid * (1.0 + 2.0**-50) < half_gap * (1.0 - 2.0**-50)
        cert = cert and (r != 0.0 or exact_sum)
        return r, cert

    _nb_output_dd_i = _jit_inline(_nb_output_dd)

    def _loop_py(
        v: Any, s: Any, e: Any, mhi: Any, mlo: Any, prm: Any, k_out: Any, ok_out: Any
    ) -> None:
        ch, cl, ih, il, bh, bl = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
        lam_h, lam_l, far, eabs = prm[6], prm[7], prm[8], prm[9]
        for j in range(v.size):
            k, ok, _sh, _sl, _err = _nb_kernel(
                v[j], s[j], e[j], mhi[j], mlo[j],
                ch, cl, ih, il, bh, bl, lam_h, lam_l, far, eabs,
            )  # fmt: skip
            k_out[j] = np.int64(k) if ok else np.int64(0)
            ok_out[j] = ok

    def _diag_py(v: Any, s: Any, e: Any, mhi: Any, mlo: Any, prm: Any, out: Any) -> None:
        # every output of the kernel, for tests
        for j in range(v.size):
            k, ok, sh, sl, err = _nb_kernel(
                v[j], s[j], e[j], mhi[j], mlo[j],
                prm[0], prm[1], prm[2], prm[3], prm[4], prm[5],
                prm[6], prm[7], prm[8], prm[9],
            )  # fmt: skip
            out[0, j] = k
            out[1, j] = 1.0 if ok else 0.0
            out[2, j] = sh
            out[3, j] = sl
            out[4, j] = err

    def _decode_py(buf: Any, count: Any, row: Any, sign: Any, e: Any, mhi: Any, mlo: Any) -> int:
        # snapcore-draw-v1 rows as if none had a continuation; returns the first row
        # whose 63 exponent bits are all zero (or count).
        for j in range(count):
            sign[j], e[j], mhi[j], mlo[j] = _nb_decode_row_i(buf, j * row)
        for j in range(count):
            if e[j] == 64.0:
                return int(j)
        return int(count)

    def _fused_py(
        buf: Any,
        count: Any,
        row: Any,
        v: Any,
        out: Any,
        prm: Any,
        table: Any,
        mode: Any,
        kmax: Any,
        kmax_is_b: Any,
        L: Any,
        ends: Any,
        scratch: Any,
        kbuf: Any,
        okbuf: Any,
        fb: Any,
        fbk: Any,
    ) -> tuple[int, int]:
        # Decode, decide and output ``count`` rows of ``buf`` into ``out``, in three
        # cache-resident passes (decode; the branch-free kernel, which LLVM
        # vectorises; the output stage).  Elements the bound or the output
        # certificate does not settle are listed in ``fb`` (their k in ``fbk``, or
        # _UNDECIDED) for the exact pipeline.  Stops before the first row with a
        # continuation word; returns (rows done, fallbacks).
        sign, e = scratch[0], scratch[1]
        mhi, mlo = scratch[2].view(np.uint64), scratch[3].view(np.uint64)
        stop = _nb_decode(buf, count, row, sign, e, mhi, mlo)
        _nb_loop(v[:stop], sign[:stop], e[:stop], mhi[:stop], mlo[:stop], prm, kbuf, okbuf)
        lower, upper, delta, lo_out, hi_out = ends[0], ends[1], ends[2], ends[3], ends[4]
        khi = kmax if kmax_is_b else kmax + 1
        nfb = 0
        if mode == 0:  # the table of exact outputs
            for j in range(stop):
                k = kbuf[j]
                idx = min(max(k, -kmax - 1), kmax + 1) + kmax + 1
                out[j] = table[idx]
        for j in range(stop):
            if not okbuf[j]:
                out[j] = 0.0
                fb[nfb] = j
                fbk[nfb] = _UNDECIDED
                nfb += 1
            elif mode != 0:
                # k is clamped from khi = kmax (+1 unless kmax·Λ == b) on: the two
                # precomputed exact endpoint outputs, at the cost of one comparison.
                k = kbuf[j]
                if k >= khi:
                    out[j] = hi_out
                elif k <= -khi:
                    out[j] = lo_out
                else:
                    r, cert = _nb_output_dd_i(k, prm, L, delta)
                    if cert:
                        out[j] = min(max(r, lower), upper)
                    else:
                        out[j] = 0.0
                        fb[nfb] = j
                        fbk[nfb] = k
                        nfb += 1
        return stop, nfb

    _njit_cached = _nb.njit(cache=True, nogil=True, error_model="numpy")
    _nb_loop = _njit_cached(_loop_py)
    _nb_diag = _nb.njit(cache=True, error_model="numpy")(_diag_py)
    _nb_decode = _njit_cached(_decode_py)
    _nb_fused = _njit_cached(_fused_py)

    def _scalar_py(v: Any, row: Any, prm: Any) -> tuple[float, int]:
        # One value and the bytes of one snapcore-draw-v1 row: (output, SCALAR_DONE),
        # or a status saying which exact stage finishes the release (see
        # scalar_params for the layout of prm).
        s, e, mhi, mlo = _nb_decode_row_i(row, 0)
        if e == 64.0:
            return 0.0, SCALAR_CONTINUATION
        k, ok, _sh, _sl, _err = _nb_kernel(
            v, s, e, mhi, mlo,
            prm[0], prm[1], prm[2], prm[3], prm[4], prm[5], prm[6], prm[7], prm[8], prm[9],
        )  # fmt: skip
        if not ok:
            return 0.0, SCALAR_EXACT
        mode, kmax = prm[_SP_MODE], prm[_SP_KMAX]
        if mode == 0.0:  # the table of exact outputs for k in [-kmax-1, kmax+1]
            idx = int(min(max(k, -kmax - 1.0), kmax + 1.0) + kmax + 1.0)
            return prm[_SP_TABLE + idx], SCALAR_DONE
        khi = prm[_SP_KHI]
        if k >= khi:
            return prm[_SP_HI_OUT], SCALAR_DONE
        if k <= -khi:
            return prm[_SP_LO_OUT], SCALAR_DONE
        if mode == 1.0:
            r, cert = _nb_output_dd_i(k, prm, int(prm[_SP_L]), prm[_SP_DELTA])
            if cert:
                return min(max(r, prm[_SP_LOWER]), prm[_SP_UPPER]), SCALAR_DONE
        return k, SCALAR_OUTPUT

    _nb_scalar = _nb.njit(cache=True, error_model="numpy")(_scalar_py)


def _get_numba_loop() -> Any:
    """The compiled ``(loop, decode, diag)``, or None without numba."""
    if _nb is None:
        return None
    return (_nb_loop, _nb_decode, _nb_diag)


def scalar_release_kernel() -> Any:
    """The compiled release of one value, or None without numba.

    ``kernel(v, row, prm) -> (r, status)`` for a finite double ``v``, the bytes ``row``
    of one ``snapcore-draw-v1`` draw as read from the stream (``8 + ceil((p−1)/8)``
    bytes) and ``prm = scalar_params(pipe)``: decodes the row, decides ``k`` with the
    kernel's bound (E1-E9) and computes the output (table or certified double-double,
    E10).  ``status`` is :data:`SCALAR_DONE` (``r`` is the exact pipeline's output on
    that draw), :data:`SCALAR_EXACT` (``k`` not decided), :data:`SCALAR_CONTINUATION`
    (the draw's exponent continues past the row: nothing computed) or
    :data:`SCALAR_OUTPUT` (``r`` is ``k``, whose output the certificate does not
    settle).  The first call in a process loads the compiled code from numba's disk
    cache (or compiles it, a few seconds, once per install).
    """
    return _nb_scalar if _nb is not None else None


def compiled_engine_loaded() -> bool:
    """Whether this process has loaded (or compiled) any of the compiled engine's
    functions: loading one more from numba's cache then costs milliseconds, not the
    start-up of numba's compiler."""
    if _nb is None:
        return False
    return bool(_nb_fused.overloads or _nb_loop.overloads or _nb_decode.overloads)


def scalar_params(pipe: Pipeline) -> F64 | None:
    """The parameter vector of :func:`scalar_release_kernel` for ``pipe``'s
    calibration, or None when the kernel's bound does not cover it (``p < 118`` or
    magnitudes outside :attr:`FastEngine.supported`): those releases stay exact."""
    eng = engine_for(pipe.calibration)
    if not eng.supported or pipe.calibration.precision < 118:
        return None
    mode = 0.0 if eng.use_table else (1.0 if eng.out_dd else 2.0)
    lo_out, hi_out = eng.end_outputs(pipe)
    head = [
        eng.lower, eng.upper, eng.delta_f, lo_out, hi_out,
        float(eng.L), float(eng.kmax), float(eng.khi), mode,
    ]  # fmt: skip
    table = eng.table(pipe) if eng.use_table else np.zeros(0)
    prm: F64 = np.concatenate([eng.params, np.array(head, np.float64), table])
    return prm


# ----------------------------------------------------------------------------------
# Draws as arrays.
# ----------------------------------------------------------------------------------
_M52 = (1 << 52) - 1
_M53 = (1 << 53) - 1


class DrawBatch:
    """``count`` draws as arrays, with the exact draw of each element on demand.

    Attributes
    ----------
    sign : ndarray of float64
        ``S`` as ±1.0.
    e : ndarray of float64
        The geometric exponent ``e >= 1`` (``U* = (1 + m·2**-(p-1))·2**-e``).
    mhi, mlo : ndarray of uint64
        The top 52 and the next 53 of the ``p − 1`` mantissa bits.
    """

    def __init__(
        self,
        precision: int,
        sign: F64,
        e: F64,
        mhi: npt.NDArray[np.uint64],
        mlo: npt.NDArray[np.uint64],
        exact: Callable[[int], Draw],
    ) -> None:
        self.precision = precision
        self.sign = sign
        self.e = e
        self.mhi = mhi
        self.mlo = mlo
        self._exact = exact

    def __len__(self) -> int:
        return int(self.sign.size)

    def draw(self, i: int) -> Draw:
        """The exact draw of element ``i``."""
        return self._exact(i)

    @classmethod
    def from_draws(cls, draws: list[Draw], precision: int) -> DrawBatch:
        """Arrays from a list of :class:`~snapcore.randomness._sources.Draw` objects."""
        p = precision
        n = len(draws)
        sign = np.fromiter((d.sign for d in draws), dtype=np.float64, count=n)
        e = np.fromiter((-d.exponent - (p - 1) for d in draws), dtype=np.float64, count=n)
        mhi = np.fromiter(((d.mantissa >> (p - 53)) & _M52 for d in draws), np.uint64, n)
        mlo = np.fromiter(((d.mantissa >> (p - 106)) & _M53 for d in draws), np.uint64, n)
        kept = list(draws)
        return cls(p, sign, e, mhi, mlo, kept.__getitem__)


def _bit_length_u63(r: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Bit lengths of non-zero uint64 values below 2**63, exactly."""
    _, ex = np.frexp(r.astype(np.float64))
    ex = ex.astype(np.int64)
    # The conversion may round up to the next power of two: correct by one.
    too_big = (r >> (ex - 1).astype(np.uint64)) == 0
    out: npt.NDArray[np.int64] = ex - too_big
    return out


def _decode_rows(buf: bytes, count: int, p: int, use_numba: bool = True) -> tuple[Any, ...]:
    """Vectorised ``snapcore-draw-v1`` for rows without a continuation word.

    Returns ``(sign, e, mhi, mlo, stop)``: ``stop`` is the first row whose 63
    exponent bits are all zero (``count`` if none); rows from it on are meaningless.
    """
    nb = (p + 6) >> 3
    row = 8 + nb
    fns = _get_numba_loop() if use_numba else None
    if fns is not None:
        sign = np.empty(count)
        e = np.empty(count)
        mhi = np.empty(count, np.uint64)
        mlo = np.empty(count, np.uint64)
        stop = fns[1](np.frombuffer(buf, np.uint8), count, row, sign, e, mhi, mlo)
        return sign, e, mhi, mlo, int(stop)
    w = np.ndarray((count,), dtype=">u8", buffer=buf, offset=0, strides=(row,)).astype(np.uint64)
    w1 = np.ndarray((count,), dtype=">u8", buffer=buf, offset=8, strides=(row,)).astype(np.uint64)
    # bytes 15..22 of the mantissa field: t bits 57..120 (from the top)
    w2 = np.ndarray((count,), dtype=">u8", buffer=buf, offset=15, strides=(row,)).astype(np.uint64)
    sign = np.where((w >> np.uint64(63)) != 0, -1.0, 1.0)
    r = w & np.uint64((1 << 63) - 1)
    good = r != 0
    rr = np.where(good, r, np.uint64(1))
    e = (64 - _bit_length_u63(rr)).astype(np.float64)
    mhi = w1 >> np.uint64(12)
    mlo = ((w1 & np.uint64(0xFFF)) << np.uint64(41)) | (
        (w2 >> np.uint64(15)) & np.uint64(_M53 >> 12)
    )
    bad = np.flatnonzero(~good)
    return sign, e, mhi, mlo, int(bad[0]) if bad.size else count


def _scan_stream(
    source: ByteSource,
    count: int,
    p: int,
    segment: Callable[[int, bytes, int], int],
    special: Callable[[int, Draw], None],
) -> Callable[[int], Draw]:
    """Walk ``count`` draws of a ``snapcore-draw-v1`` stream in bulk.

    ``segment(start, buf, n)`` processes up to ``n`` rows of ``buf`` (draws
    ``start, start + 1, ...``) and returns how many rows precede the first one with a
    continuation word; that draw is decoded by the scalar decoder and passed to
    ``special(index, draw)``.  Exactly the bytes the scalar decoder would read are
    read.  Returns ``exact(i) -> Draw`` for any of the draws.
    """
    nb = (p + 6) >> 3
    row = 8 + nb
    specials: dict[int, Draw] = {}
    segments: list[tuple[int, bytes]] = []  # (start, buffer)
    done = 0
    with source.exclusive():
        pending = b""
        while done < count:
            need = (count - done) * row
            if not pending:
                pending = source.read(need)
            elif len(pending) < need:
                pending = pending + source.read(need - len(pending))
            buf = pending
            n = count - done
            stop = segment(done, buf, n)
            segments.append((done, buf))
            done += stop
            if stop == n:
                pending = buf[n * row :]
                break
            # Row `stop` has a continuation: decode it with the scalar decoder from
            # the stream position of its first word.
            rest = [buf[stop * row :]]
            state = {"off": 0}

            def read(k: int, rest: list[bytes] = rest, state: dict[str, int] = state) -> bytes:
                off = state["off"]
                if len(rest[0]) - off < k:
                    rest[0] = rest[0] + source.read(k - (len(rest[0]) - off))
                out = rest[0][off : off + k]
                state["off"] = off + k
                return out

            d = decode_draw(read, p)
            specials[done] = d
            special(done, d)
            done += 1
            pending = rest[0][state["off"] :]
        if pending:  # pragma: no cover - the reads above never over-read
            raise AssertionError("bulk decoder read past its draws")

    seg_starts = [s[0] for s in segments]

    def exact(i: int) -> Draw:
        if i in specials:
            return specials[i]
        j = int(np.searchsorted(seg_starts, i, side="right")) - 1
        start, buf = segments[j]
        o = (i - start) * row
        return decode_draw(io.BytesIO(buf[o : o + row]).read, p)

    return exact


def decode_draw_batch(
    source: RandomSource, count: int, precision: int, engine: str = "auto"
) -> DrawBatch:
    """``count`` draws from ``source``, exactly as ``source.draws(count, precision)``.

    For a :class:`~snapcore.randomness._sources.ByteSource` the stream is decoded in bulk
    (format ``snapcore-draw-v1``), consuming exactly the bytes the scalar decoder
    would; the rare draw with a continuation word (all 63 exponent bits zero) is
    decoded by the scalar decoder.  Other sources are asked for their draws.
    ``engine="numpy"`` avoids the numba decoder.
    """
    p = precision
    if not isinstance(source, ByteSource) or p < 118:
        return DrawBatch.from_draws(source.draws(count, p), p)
    signs: list[Any] = []
    es: list[Any] = []
    his: list[Any] = []
    los: list[Any] = []

    def segment(start: int, buf: bytes, n: int) -> int:
        sign, e, mhi, mlo, stop = _decode_rows(buf, n, p, engine != "numpy")
        signs.append(sign[:stop])
        es.append(e[:stop])
        his.append(mhi[:stop])
        los.append(mlo[:stop])
        return int(stop)

    def special(i: int, d: Draw) -> None:
        signs.append(np.array([float(d.sign)]))
        es.append(np.array([float(-d.exponent - (p - 1))]))
        his.append(np.array([(d.mantissa >> (p - 53)) & _M52], dtype=np.uint64))
        los.append(np.array([(d.mantissa >> (p - 106)) & _M53], dtype=np.uint64))

    exact = _scan_stream(source, count, p, segment, special)

    def join(parts: list[Any], dtype: Any) -> Any:
        if len(parts) == 1:  # the usual case: no copy
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    return DrawBatch(
        p,
        join(signs, np.float64),
        join(es, np.float64),
        join(his, np.uint64),
        join(los, np.uint64),
        exact,
    )


# ----------------------------------------------------------------------------------
# The engine for one calibration.
# ----------------------------------------------------------------------------------
def _dd(q: Fraction) -> tuple[float, float, Fraction]:
    """``q ≈ hi + lo`` (hi = RN(q), lo = RN(q − hi)) and the exact residual."""
    hi = float(q)
    lo = float(q - Fraction(hi))
    return hi, lo, q - Fraction(hi) - Fraction(lo)


class BatchStats:
    """What happened in one batch (for tests and diagnostics).

    Attributes
    ----------
    size : int
    fallback_k : ndarray of intp
        Elements whose ``k`` was not decided by the bound (computed exactly).
    fallback_output : ndarray of intp
        Elements whose output stage was computed exactly.
    engine : str
    """

    def __init__(self, size: int, fallback_k: Any, fallback_output: Any, engine: str) -> None:
        self.size = size
        self.fallback_k = fallback_k
        self.fallback_output = fallback_output
        self.engine = engine

    def __repr__(self) -> str:
        return (
            f"BatchStats(size={self.size}, fallback_k={len(self.fallback_k)}, "
            f"fallback_output={len(self.fallback_output)}, engine={self.engine!r})"
        )


class FastEngine:
    """The fast path for one :class:`~snapcore.calibration._params.Calibration`.

    Parameters
    ----------
    calibration : Calibration
        The exact constants; the engine derives its double-double parameters from
        them exactly, and refuses (``supported`` is False) parameters whose
        magnitudes the error bound does not cover.
    """

    #: Output-table size limit (entries); above it the output stage is computed.
    TABLE_MAX = 8193
    #: Elements per chunk in the numpy engine (keeps temporaries in cache).
    CHUNK = 1 << 15

    def __init__(self, calibration: Calibration) -> None:
        cal = calibration
        self.calibration = cal
        L = cal.granularity_log2
        self.L = L
        Lam = to_fraction(1, L)
        lam = cal.scale / Lam
        b = cal.unit_clamp_bound
        c = cal.centre
        delta = cal.sensitivity
        inv = 1 / (delta * Lam)
        self.kmax = int((b / Lam).__floor__())
        # When ±kmax·Λ is ±b itself the exact stage releases the endpoint, not RN(c ± Δb).
        self.kmax_is_b = self.kmax * Lam == b
        lam_h, lam_l, _ = _dd(lam)
        ch, cl, rc = _dd(c)
        ih, il, _ = _dd(inv)
        bh, bl, _ = _dd(b / Lam)
        far = 4 * delta * b
        supported = (
            -600 <= L <= 600
            and Fraction(2) ** -900 < inv < Fraction(2) ** 900
            and far < Fraction(2) ** 990
            and abs(c) < Fraction(2) ** 990
            and cal.precision >= 118
        )
        self.supported = bool(supported)
        eabs = abs(rc) * inv * 2 + Fraction(2) ** -1000
        self.params = np.array(
            [ch, cl, ih, il, bh, bl, lam_h, lam_l, round_up_double(far) if supported else 0.0,
             round_up_double(eabs)],
            dtype=np.float64,
        )  # fmt: skip
        # Output stage: a table of exact outputs for k in [-kmax-1, kmax+1], where
        # the two ends stand for the clamped outputs c ± Δ·b.
        self._table: F64 | None = None
        self._table_lock = threading.Lock()
        self.use_table = 2 * self.kmax + 3 <= self.TABLE_MAX
        d_is_double = Fraction(float(delta)) == delta
        self.out_dd = (
            not self.use_table
            and d_is_double
            and rc == 0
            and Fraction(2) ** -900 < delta * Lam
            and abs(delta) < Fraction(2) ** 900
        )
        self.delta_f = float(delta)
        self.lower = float(cal.lower)
        self.upper = float(cal.upper)
        #: The fused compiled loop covers the table and the computed output stages.
        self.fusable = self.supported and (self.use_table or self.out_dd)

    # -- output stage ---------------------------------------------------------------
    @property
    def khi(self) -> int:
        """The smallest ``k >= 0`` whose output is the clamped one (the endpoint):
        ``kmax`` when ``kmax·Λ == b``, else ``kmax + 1``."""
        return self.kmax if self.kmax_is_b else self.kmax + 1

    def end_outputs(self, pipe: Pipeline) -> tuple[float, float]:
        """The exact outputs of the clamped ``k <= -khi`` and ``k >= khi`` ([S9]).

        Every element whose ``k`` is decided and clamped takes one of these two
        values, so releasing clamped values costs no more than releasing values inside
        the interval.  The pipeline computes them once, when it is built.
        """
        return pipe.index_output(-self.kmax - 1), pipe.index_output(self.kmax + 1)

    def table(self, pipe: Pipeline) -> F64:
        """Exact outputs for ``k = -kmax-1 .. kmax+1`` (the ends: clamped)."""
        with self._table_lock:
            if self._table is None:
                L, b = self.L, self.calibration.unit_clamp_bound_dyadic
                ks = range(-self.kmax - 1, self.kmax + 2)
                self._table = np.array([pipe.output(clamp(k, L, b)) for k in ks], dtype=np.float64)
            return self._table

    def outputs(self, k: npt.NDArray[np.int64], pipe: Pipeline) -> tuple[F64, Any]:
        """``RN(c + Δ·clamp_b(kΛ))`` clamped to ``[lower, upper]``, for decided ``k``.

        Returns the outputs and the indices whose double-double output the certificate
        could not settle (recomputed exactly: the output fallbacks).  The list is empty
        with a table, and when the stage has no double-double form (Δ not a double), where
        every output is computed exactly by design rather than as a fallback.
        """
        kmax = self.kmax
        if self.use_table:
            idx = np.clip(k, -kmax - 1, kmax + 1)
            idx += kmax + 1
            return self.table(pipe).take(idx), np.empty(0, np.intp)
        L, b = self.L, self.calibration.unit_clamp_bound_dyadic
        lo_out, hi_out = self.end_outputs(pipe)
        khi = self.khi
        out = np.empty(k.shape, np.float64)
        if self.out_dd:
            # [E10] r = RN(c + Δ·kΛ) with a certificate of correct rounding.
            ch, cl = self.params[0], self.params[1]
            kc = np.clip(k, -kmax, kmax).astype(np.float64)
            kl = np.ldexp(kc, L)
            p1, p2 = two_prod(self.delta_f, kl)
            s1, s2 = two_sum(ch, p1)
            t1, t2 = two_sum(cl, p2)
            u1, u2 = two_sum(s2, t1)
            r, r2 = two_sum(s1, u1)
            exact_sum = (u2 == 0.0) & (t2 == 0.0)
            m, ex = np.frexp(np.abs(r))
            half_gap = np.ldexp(np.where(m == 0.5, 0.25, 0.5), ex - 53)
            resid = np.abs(r2) + np.abs(u2) + np.abs(t2)
            cert = exact_sum | (resid * (1.0 + 2.0**-50) < half_gap * (1.0 - 2.0**-50))
            cert &= np.isfinite(r) & (r != 0.0) | exact_sum & np.isfinite(r)
            out[:] = np.clip(r, self.lower, self.upper)
            bad = np.flatnonzero(~cert & (np.abs(k) < khi))
        else:
            bad = np.flatnonzero(np.abs(k) < khi)
            if bad.size:
                uniq, inv = np.unique(k[bad], return_inverse=True)
                vals = np.array([pipe.output(clamp(int(kk), L, b)) for kk in uniq])
                out[bad] = vals[inv]
            bad = np.empty(0, np.intp)
        for j in bad:
            out[j] = pipe.output(clamp(int(k[j]), L, b))
        out[k >= khi] = hi_out
        out[k <= -khi] = lo_out
        return out, bad

    # -- the kernel -----------------------------------------------------------------
    def decide(
        self, v: F64, draws: DrawBatch, engine: str = "auto"
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], str]:
        """``k`` and whether it is decided, for each element."""
        n = v.size
        if engine == "auto":
            engine = resolve_engine(n)
        k = np.empty(n, np.int64)  # 0 where not decided
        ok = np.empty(n, np.bool_)
        prm = self.params
        if engine == "numba":
            fns = _get_numba_loop()
            if fns is None:
                raise RuntimeError("engine='numba' requested but numba is not installed")
            fns[0](v, draws.sign, draws.e, draws.mhi, draws.mlo, prm, k, ok)
        elif engine == "numpy":
            step = self.CHUNK
            with np.errstate(all="ignore"):
                for a in range(0, n, step):
                    sl = slice(a, a + step)
                    kk, oo, _, _, _ = _np_kernel(
                        v[sl], draws.sign[sl], draws.e[sl], draws.mhi[sl], draws.mlo[sl],
                        *prm.tolist(),
                    )  # fmt: skip
                    k[sl] = np.where(oo, kk, 0.0)
                    ok[sl] = oo
        else:
            raise ValueError(f"engine must be 'auto', 'numba' or 'numpy', got {engine!r}")
        return k, ok, engine

    def diagnose(
        self, v: F64, draws: DrawBatch, engine: str = "numpy"
    ) -> tuple[F64, F64, F64, Any]:
        """``(t_hi, t_lo, err, ok)`` of the kernel: ``t ≈ y/Λ + 1/2`` within ``err``."""
        if engine == "numba":
            fns = _get_numba_loop()
            if fns is None:
                raise RuntimeError("engine='numba' requested but numba is not installed")
            out = np.empty((5, v.size))
            fns[2](v, draws.sign, draws.e, draws.mhi, draws.mlo, self.params, out)
            return out[2], out[3], out[4], out[1] != 0.0
        with np.errstate(all="ignore"):
            _k, ok, sh, sl, err = _np_kernel(
                v, draws.sign, draws.e, draws.mhi, draws.mlo, *self.params.tolist(),
            )  # fmt: skip
        return sh, sl, err, ok

    def run(
        self, v: F64, draws: DrawBatch, pipe: Pipeline, engine: str = "auto"
    ) -> tuple[F64, BatchStats]:
        """Outputs for values ``v`` (float64, finite) and draws, bit-identical to
        ``pipe.run(pipe.centre(v_i), draw_i)`` for every ``i``."""
        n = v.size
        if not self.supported:
            out = np.array(
                [pipe.run(pipe.centre(Fraction(float(v[j]))), draws.draw(j)) for j in range(n)],
                dtype=np.float64,
            )
            return out, BatchStats(n, np.arange(n), np.empty(0, np.intp), "exact")
        k, ok, used = self.decide(v, draws, engine)
        out, bad_out = self.outputs(k, pipe)
        slow = np.flatnonzero(~ok)
        for j in slow:
            out[j] = pipe.run(pipe.centre(Fraction(float(v[j]))), draws.draw(int(j)))
        return out, BatchStats(n, slow, bad_out, used)

    #: Draws per chunk of the fused loop (about 190 kB of stream at p = 118).
    STREAM_CHUNK = 1 << 13

    def run_stream(self, v: F64, source: ByteSource, pipe: Pipeline) -> tuple[F64, BatchStats]:
        """Outputs for values ``v`` with draws read from ``source``'s byte stream.

        One compiled loop per chunk decodes the rows (``snapcore-draw-v1``), runs the
        kernel and the output stage, and writes straight into the output array; the
        stream is read chunk by chunk into one preallocated buffer (in place with
        :meth:`~snapcore.randomness._sources.ByteSource.readinto`).  Exactly the bytes
        ``source.draws(v.size, p)`` would read are read, under
        :meth:`~snapcore.randomness._sources.RandomSource.exclusive`; elements the bound or the
        output certificate does not settle, and the rare draws with a continuation
        word, are computed by the exact pipeline from their own bytes.
        """
        if _nb is None or not self.fusable:
            raise RuntimeError("the fused loop needs numba and a supported calibration")
        n = v.size
        p = self.calibration.precision
        row = 8 + ((p + 6) >> 3)
        out = np.empty(n, np.float64)
        chunk = min(self.STREAM_CHUNK, max(n, 1))
        buf = np.empty(chunk * row, np.uint8)
        fb = np.empty(chunk, np.int64)
        fbk = np.empty(chunk, np.int64)
        scratch = np.empty((4, chunk), np.float64)  # sign, e, mhi, mlo (as uint64)
        kbuf = np.empty(chunk, np.int64)
        okbuf = np.empty(chunk, np.bool_)
        L, b = self.L, self.calibration.unit_clamp_bound_dyadic
        mode = 0 if self.use_table else 1
        table = self.table(pipe) if self.use_table else np.zeros(1)
        ends = np.array([self.lower, self.upper, self.delta_f, *self.end_outputs(pipe)])
        kmax = np.int64(min(self.kmax, 1 << 62))
        fall_k: list[int] = []
        fall_out: list[int] = []
        pending = b""  # stream bytes read ahead of a continuation draw, not yet used

        def read(k: int) -> bytes:
            nonlocal pending
            got, pending = pending[:k], pending[k:]
            return got + source.read(k - len(got)) if len(got) < k else got

        def exact(j: int, draw: Draw) -> float:
            return pipe.run(pipe.centre(Fraction(float(v[j]))), draw)

        with source.exclusive():
            pos = 0
            while pos < n:
                m = min(chunk, n - pos)
                view = buf[: m * row]
                if pending:
                    view[:] = np.frombuffer(read(m * row), np.uint8)
                else:
                    source.readinto(view)
                stop, nfb = _nb_fused(
                    view, m, row, v[pos : pos + m], out[pos : pos + m], self.params, table,
                    mode, kmax, self.kmax_is_b, L, ends, scratch, kbuf, okbuf, fb, fbk,
                )  # fmt: skip
                for i in range(nfb):
                    j, kk = int(fb[i]), int(fbk[i])
                    if kk == _UNDECIDED:
                        rowbytes = view[j * row : (j + 1) * row].tobytes()
                        out[pos + j] = exact(pos + j, decode_draw(io.BytesIO(rowbytes).read, p))
                        fall_k.append(pos + j)
                    else:
                        out[pos + j] = pipe.output(clamp(kk, L, b))
                        fall_out.append(pos + j)
                if stop < m:
                    # Row `stop` has a continuation word: the bytes read after its start
                    # belong to it and to the next draws, in stream order.
                    pending = view[stop * row :].tobytes() + pending
                    out[pos + stop] = exact(pos + stop, decode_draw(read, p))
                    fall_k.append(pos + stop)
                    pos += stop + 1
                else:
                    pos += m
            if pending:  # pragma: no cover - the reads above never over-read
                raise AssertionError("fused loop read past its draws")
        st = BatchStats(n, np.array(sorted(fall_k), np.intp), np.array(fall_out, np.intp), "numba")
        return out, st


@functools.lru_cache(maxsize=64)
def engine_for(calibration: Calibration) -> FastEngine:
    """The (cached) engine for a calibration."""
    return FastEngine(calibration)


def release_batch(
    pipe: Pipeline,
    values: npt.ArrayLike,
    source: RandomSource,
    *,
    engine: str = "auto",
    stats: bool = False,
    exact_floor: int = 0,
) -> Any:
    """Release every element of ``values`` with fresh noise from ``source``.

    Bit-identical to the exact pipeline on the same draws: the draws are taken
    from ``source`` in the same order and with the same bytes as
    ``[pipe.run(pipe.centre(v), d) for v, d in zip(values, source.draws(n, p))]``.

    Parameters
    ----------
    pipe : Pipeline
        The exact pipeline (used for the elements the bound does not decide).
    values : array_like of float64
        Finite values (checked by the caller), any shape.
    source : RandomSource
        The randomness.
    engine : {"auto", "numba", "numpy"}
        The kernel engine; "auto" uses numba when it can be imported.  With numba
        and a :class:`~snapcore.randomness._sources.ByteSource`, decoding, the kernel and the
        output stage run fused in one compiled loop over cache-sized chunks of the
        stream (:meth:`FastEngine.run_stream`).
    stats : bool
        Also return a :class:`BatchStats`.
    exact_floor : int
        For a release padded to a time quantum (docs/timing.md): when fewer than this
        many elements fell back to the exact pipeline, run as many more exact
        computations of the same kind on public inputs (the calibration's centre and
        a fixed draw; the results are discarded), so that the batch's time does not
        depend on how many of its draws the kernel left undecided, up to this many.
    """
    arr = np.asarray(values, dtype=np.float64)
    flat = np.ascontiguousarray(arr.reshape(-1))
    if engine == "auto":
        engine = resolve_engine(flat.size)
    eng = engine_for(pipe.calibration)
    p = pipe.calibration.precision
    if engine == "numba" and eng.fusable and isinstance(source, ByteSource) and p >= 118:
        out, st = eng.run_stream(flat, source, pipe)
    else:
        draws = decode_draw_batch(source, flat.size, p, engine)
        out, st = eng.run(flat, draws, pipe, engine)
    missing = exact_floor - len(st.fallback_k) - len(st.fallback_output)
    if missing > 0:
        _exact_dummies(pipe, missing)
    res = out.reshape(arr.shape)
    return (res, st) if stats else res


def _exact_dummies(pipe: Pipeline, count: int) -> None:
    """``count`` exact computations as an undecided element's (decode one row, centre
    a double, run the pipeline) on public inputs; results discarded."""
    p = pipe.calibration.precision
    row = bytes([0x5A]) * (8 + ((p + 6) >> 3))
    v = float(pipe.calibration.centre)
    for _ in range(count):
        pipe.run(pipe.centre(Fraction(v)), decode_draw(io.BytesIO(row).read, p))
