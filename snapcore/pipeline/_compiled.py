"""The fast path compiled by numba: the kernel in loops, the batch decoder's rows, the
fused loop over a chunk of a byte stream, and the release of one value.

The compiled functions are built from this module's sources and from two written once
for numpy and numba alike: the kernel (:func:`snapcore.pipeline._kernel.make_kernel`)
and the fields of a draw's row (:func:`snapcore.randomness._draw.row_fields`).
Everything is inlined into the loops (numba IR inlining) with numpy's error model (no
Python exception checks), so LLVM can vectorise; IEEE semantics are kept: no fastmath,
hence no reassociation or contraction.  So the compiled engine gives the numpy engine's
bits.

The loops are cached on disk (``cache=True``): the first process compiles them (a few
seconds), later ones load them in well under a second, so every array from
:data:`~snapcore.pipeline._engine.AUTO_MIN_SIZE` on uses the compiled engine.  numba
notices a change of this file only; each loop therefore closes over a fingerprint of
the other two modules' sources (numba's cache key includes a closure's contents), so
that editing them compiles afresh instead of loading stale code.

numba is a dependency; where it cannot be imported (an unsupported platform),
:func:`compiled` is None and the numpy engine gives the same bits.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import sys
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from snapcore.exact._sums import numba_available
from snapcore.pipeline import _kernel
from snapcore.pipeline._kernel import make_kernel, two_prod, two_sum
from snapcore.randomness import _draw
from snapcore.randomness._draw import ROW_WORDS, row_fields

__all__ = [
    "SCALAR_CONTINUATION",
    "SCALAR_DONE",
    "SCALAR_EXACT",
    "SCALAR_OUTPUT",
    "UNDECIDED",
    "Compiled",
    "compiled",
    "compiled_engine_loaded",
    "scalar_params_vector",
    "scalar_release_kernel",
]

F64 = npt.NDArray[np.float64]

_nb: Any = importlib.import_module("numba") if numba_available() else None

#: Status of the compiled release of one value (:func:`scalar_release_kernel`): the
#: output is final; ``k`` is not decided (the exact pipeline from the same draw); the
#: draw has a continuation word (decoded exactly, reading on); ``k`` is decided but
#: the output is not certified (the exact output stage for ``k``).
SCALAR_DONE, SCALAR_EXACT, SCALAR_CONTINUATION, SCALAR_OUTPUT = 0, 1, 2, 3
#: The fused loop's ``fallback_k`` for an element whose ``k`` was not decided
#: (``|k| < 2**52`` otherwise).
UNDECIDED = -(1 << 62)

# Indices in the scalar parameter vector (:func:`scalar_params_vector`), after the
# engine's ten kernel parameters.
_LOWER, _UPPER, _DELTA, _LOW_OUTPUT, _HIGH_OUTPUT = 10, 11, 12, 13, 14
_GRANULARITY_LOG2, _KMAX, _CLAMPED_FROM, _MODE, _TABLE = 15, 16, 17, 18, 19

_FIRST_WORD, _MANTISSA_HIGH, _MANTISSA_LOW = ROW_WORDS


def scalar_params_vector(
    kernel_params: F64,
    *,
    lower: float,
    upper: float,
    delta: float,
    low_output: float,
    high_output: float,
    granularity_log2: int,
    kmax: int,
    clamped_from: int,
    mode: float,
    table: F64,
) -> F64:
    """The parameter vector of :func:`scalar_release_kernel`: the kernel's ten
    parameters, the output stage's constants and (``mode`` 0) the table of exact
    outputs for ``k = -kmax-1 .. kmax+1``.  ``mode`` is 0 (table), 1 (certified
    double-double output) or 2 (the exact output stage)."""
    head = [
        lower, upper, delta, low_output, high_output,
        float(granularity_log2), float(kmax), float(clamped_from), mode,
    ]  # fmt: skip
    out: F64 = np.concatenate([kernel_params, np.array(head, np.float64), table])
    return out


# ----------------------------------------------------------------------------------
# Element-wise helpers, inlined into the loops.
# ----------------------------------------------------------------------------------
def _select(c: Any, a: Any, b: Any) -> Any:
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


def _fma() -> Any:
    """An LLVM intrinsic ``fma(a, b, c) -> RN(a·b + c)`` on doubles, rounded once
    (``llvm.fma``: the processor's fused multiply-add, or the C library's ``fma``,
    also rounded once), or None in numba versions without the extension API."""
    try:
        from llvmlite import ir
        from numba.core import types
        from numba.extending import intrinsic
    except ImportError:  # pragma: no cover - other numba versions
        return None

    def fma(typingctx: Any, a: Any, b: Any, c: Any) -> Any:
        f64 = types.float64
        sig = f64(f64, f64, f64)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            d = ir.DoubleType()
            fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
            return builder.call(fn, list(args))

        return sig, codegen

    return intrinsic(fma)


def _two_prod_fma(a: Any, b: Any) -> tuple[Any, Any]:
    # TwoProduct with a fused multiply-add: ``a·b − p`` rounded once is exact, so
    # (p, err) are Dekker's :func:`~snapcore.pipeline._kernel.two_prod` wherever that
    # is exact.
    p = a * b
    return p, _nb_fma(a, b, -p)


def _leading_zeros() -> Any:
    """numba's ``ctlz`` (LLVM's count of leading zeros), or None in numba versions
    without it."""
    try:
        return importlib.import_module("numba.cpython.unsafe.numbers").leading_zeros
    except (ImportError, AttributeError):  # pragma: no cover - other numba versions
        return None


def _geometric_ctlz(r: Any) -> float:
    # e = 64 − bit_length(r) = leading zeros of the 64-bit word (bit 63 is clear); 64
    # when r == 0 (a continuation follows).
    return float(_nb_ctlz(r))


def _geometric_loop(r: Any) -> float:  # pragma: no cover - numba versions without ctlz
    u64 = np.uint64
    if r == u64(0):
        return 64.0
    ee = 1
    while (r >> u64(63 - ee)) == u64(0):
        ee += 1
    return float(ee)


def _decode_row(buf: Any, o: Any) -> tuple[float, float, Any, Any]:
    # One snapcore-draw-v1 row at byte offset o: (S, e, mhi, mlo); e = 64 when the 63
    # exponent bits are all zero (a continuation word follows).
    s, r, mhi, mlo = _nb_row_fields(
        _nb_be64(buf, o + _FIRST_WORD),
        _nb_be64(buf, o + _MANTISSA_HIGH),
        _nb_be64(buf, o + _MANTISSA_LOW),
    )
    return s, _nb_geometric(r), mhi, mlo


def _output_dd(k: Any, params: Any, L: Any, delta: float) -> tuple[float, bool]:
    # [E10] r = RN(c + Δ·kΛ) with its certificate of correct rounding (the element-wise
    # form of FastEngine.outputs' computed stage).
    ch, cl = params[0], params[1]
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


# ----------------------------------------------------------------------------------
# The cached loops.
# ----------------------------------------------------------------------------------
def _fingerprint() -> str:
    """A hash of the sources the loops inline from other modules (the kernel and the
    draw's row format), carried in the loops' closures: part of numba's cache key."""
    text = inspect.getsource(_kernel) + inspect.getsource(_draw)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _loops(fingerprint: str) -> tuple[Callable[..., Any], ...]:
    """The Python sources of the cached loops ``(decide, diagnose, decode_rows, fused,
    fused_run, scalar)``, closures over ``fingerprint`` (named in each body, which does nothing
    with it)."""

    def decide(
        v: Any, s: Any, e: Any, mhi: Any, mlo: Any, params: Any, k_out: Any, ok_out: Any
    ) -> None:
        # k (0 where not decided) and whether it is decided, for each element.
        fingerprint  # noqa: B018 - numba's cache key
        ch, cl, ih, il, bh, bl = params[0], params[1], params[2], params[3], params[4], params[5]
        lam_h, lam_l, far, eabs = params[6], params[7], params[8], params[9]
        for j in range(v.size):
            k, ok, _sh, _sl, _err = _nb_kernel(
                v[j], s[j], e[j], mhi[j], mlo[j],
                ch, cl, ih, il, bh, bl, lam_h, lam_l, far, eabs,
            )  # fmt: skip
            k_out[j] = np.int64(k) if ok else np.int64(0)
            ok_out[j] = ok

    def diagnose(v: Any, s: Any, e: Any, mhi: Any, mlo: Any, params: Any, out: Any) -> None:
        # Every output of the kernel, for tests.
        fingerprint  # noqa: B018 - numba's cache key
        for j in range(v.size):
            k, ok, sh, sl, err = _nb_kernel(
                v[j], s[j], e[j], mhi[j], mlo[j],
                params[0], params[1], params[2], params[3], params[4], params[5],
                params[6], params[7], params[8], params[9],
            )  # fmt: skip
            out[0, j] = k
            out[1, j] = 1.0 if ok else 0.0
            out[2, j] = sh
            out[3, j] = sl
            out[4, j] = err

    def decode_rows(buf: Any, count: Any, row: Any, sign: Any, e: Any, mhi: Any, mlo: Any) -> int:
        # snapcore-draw-v1 rows as if none had a continuation; returns the first row
        # whose 63 exponent bits are all zero (or count).
        fingerprint  # noqa: B018 - numba's cache key
        for j in range(count):
            sign[j], e[j], mhi[j], mlo[j] = _nb_decode_row(buf, j * row)
        for j in range(count):
            if e[j] == 64.0:
                return int(j)
        return int(count)

    def fused(
        buf: Any,
        count: Any,
        row: Any,
        v: Any,
        out: Any,
        params: Any,
        table: Any,
        mode: Any,
        kmax: Any,
        kmax_is_b: Any,
        L: Any,
        ends: Any,
        scratch: Any,
        kbuf: Any,
        okbuf: Any,
        fallback: Any,
        fallback_k: Any,
    ) -> tuple[int, int]:
        # Decode, decide and output ``count`` rows of ``buf`` into ``out``, in three
        # cache-resident passes (decode; the branch-free kernel, which LLVM
        # vectorises; the output stage).  Elements the bound or the output
        # certificate does not settle are listed in ``fallback`` (their k in
        # ``fallback_k``, or UNDECIDED) for the exact pipeline.  Stops before the
        # first row with a continuation word; returns (rows done, fallbacks).
        fingerprint  # noqa: B018 - numba's cache key
        sign, e = scratch[0], scratch[1]
        mhi, mlo = scratch[2].view(np.uint64), scratch[3].view(np.uint64)
        stop = _nb_decode_rows(buf, count, row, sign, e, mhi, mlo)
        _nb_decide(v[:stop], sign[:stop], e[:stop], mhi[:stop], mlo[:stop], params, kbuf, okbuf)
        lower, upper, delta, lo_out, hi_out = ends[0], ends[1], ends[2], ends[3], ends[4]
        clamped_from = kmax if kmax_is_b else kmax + 1
        nfb = 0
        if mode == 0:  # the table of exact outputs
            for j in range(stop):
                k = kbuf[j]
                idx = min(max(k, -kmax - 1), kmax + 1) + kmax + 1
                out[j] = table[idx]
        for j in range(stop):
            if not okbuf[j]:
                out[j] = 0.0
                fallback[nfb] = j
                fallback_k[nfb] = UNDECIDED
                nfb += 1
            elif mode != 0:
                # k is clamped from kmax (+1 unless kmax·Λ == b) on: the two
                # precomputed exact endpoint outputs, at the cost of one comparison.
                k = kbuf[j]
                if k >= clamped_from:
                    out[j] = hi_out
                elif k <= -clamped_from:
                    out[j] = lo_out
                else:
                    r, cert = _nb_output_dd(k, params, L, delta)
                    if cert:
                        out[j] = min(max(r, lower), upper)
                    else:
                        out[j] = 0.0
                        fallback[nfb] = j
                        fallback_k[nfb] = k
                        nfb += 1
        return stop, nfb

    def fused_run(
        buf: Any,
        count: Any,
        row: Any,
        chunk: Any,
        v: Any,
        out: Any,
        params: Any,
        table: Any,
        mode: Any,
        kmax: Any,
        kmax_is_b: Any,
        L: Any,
        ends: Any,
        scratch: Any,
        kbuf: Any,
        okbuf: Any,
        fallback: Any,
        fallback_k: Any,
    ) -> tuple[int, int, bool]:
        # ``fused`` over ``count`` rows of ``buf`` in chunks of ``chunk`` rows, in one
        # call (one thread's share of a round): fallback offsets are from row 0.
        # Stops before the first row with a continuation word, or before a chunk
        # that might not fit in ``fallback``; returns (rows done, fallbacks,
        # whether it stopped at a continuation row).
        fingerprint  # noqa: B018 - numba's cache key
        done = 0
        nfb = 0
        while done < count:
            m = min(chunk, count - done)
            if nfb + m > fallback.size:
                return done, nfb, False
            stop, f = _nb_fused(
                buf[done * row : (done + m) * row], m, row, v[done : done + m],
                out[done : done + m], params, table, mode, kmax, kmax_is_b, L, ends,
                scratch, kbuf, okbuf, fallback[nfb:], fallback_k[nfb:],
            )  # fmt: skip
            for i in range(nfb, nfb + f):
                fallback[i] += done
            nfb += f
            done += stop
            if stop < m:
                return done, nfb, True
        return done, nfb, False

    def scalar(v: Any, row: Any, params: Any) -> tuple[float, int]:
        # One value and the bytes of one snapcore-draw-v1 row: (output, SCALAR_DONE),
        # or a status saying which exact stage finishes the release (see
        # scalar_params_vector for the layout of params).
        fingerprint  # noqa: B018 - numba's cache key
        s, e, mhi, mlo = _nb_decode_row(row, 0)
        if e == 64.0:
            return 0.0, SCALAR_CONTINUATION
        k, ok, _sh, _sl, _err = _nb_kernel(
            v, s, e, mhi, mlo,
            params[0], params[1], params[2], params[3], params[4],
            params[5], params[6], params[7], params[8], params[9],
        )  # fmt: skip
        if not ok:
            return 0.0, SCALAR_EXACT
        mode, kmax = params[_MODE], params[_KMAX]
        if mode == 0.0:  # the table of exact outputs for k in [-kmax-1, kmax+1]
            idx = int(min(max(k, -kmax - 1.0), kmax + 1.0) + kmax + 1.0)
            return params[_TABLE + idx], SCALAR_DONE
        clamped_from = params[_CLAMPED_FROM]
        if k >= clamped_from:
            return params[_HIGH_OUTPUT], SCALAR_DONE
        if k <= -clamped_from:
            return params[_LOW_OUTPUT], SCALAR_DONE
        if mode == 1.0:
            r, cert = _nb_output_dd(k, params, int(params[_GRANULARITY_LOG2]), params[_DELTA])
            if cert:
                return min(max(r, params[_LOWER]), params[_UPPER]), SCALAR_DONE
        return k, SCALAR_OUTPUT

    return decide, diagnose, decode_rows, fused, fused_run, scalar


@attrs.frozen
class Compiled:
    """The compiled functions of the fast path (numba dispatchers).

    Attributes
    ----------
    decide : callable
        ``decide(v, sign, e, mhi, mlo, params, k_out, ok_out)``: the kernel on every
        element, ``k_out`` 0 where ``k`` is not decided.
    diagnose : callable
        ``diagnose(v, sign, e, mhi, mlo, params, out)``: the kernel's five outputs
        ``(k, ok, t_hi, t_lo, err)`` in the rows of ``out``.
    decode_rows : callable
        The batch decoder's rows with the contract of
        :func:`snapcore.randomness._draw.decode_rows`.
    fused : callable
        Decoding, kernel and output stage over one chunk of a byte stream.
    fused_run : callable
        ``fused`` over consecutive chunks in one call, without the GIL: one thread's
        share of a round of
        :meth:`FastEngine.run_stream <snapcore.pipeline._engine.FastEngine.run_stream>`.
    scalar : callable
        The release of one value (:func:`scalar_release_kernel`).
    """

    decide: Any
    diagnose: Any
    decode_rows: Callable[[npt.NDArray[np.uint8], int, int], tuple[Any, ...]]
    fused: Any
    fused_run: Any
    scalar: Any


def _compile(nb: Any) -> Compiled:
    """Every compiled function (compiled, or loaded from numba's disk cache, on first
    call)."""
    global _nb_two_sum, _nb_two_prod, _nb_fma, _nb_kernel, _nb_row_fields, _nb_be64, _nb_ctlz
    global _nb_geometric, _nb_decode_row, _nb_output_dd, _nb_decide, _nb_decode_rows, _nb_fused
    inline = nb.njit(inline="always", error_model="numpy")
    _nb_two_sum = inline(two_sum)
    _nb_fma = _fma()
    _nb_two_prod = inline(two_prod if _nb_fma is None else _two_prod_fma)
    _nb_kernel = inline(make_kernel(_nb_two_sum, _nb_two_prod, inline(_select)))
    _nb_row_fields = inline(row_fields)
    _nb_be64 = _load_be64() or inline(_be64)
    _nb_ctlz = _leading_zeros()
    _nb_geometric = inline(_geometric_loop if _nb_ctlz is None else _geometric_ctlz)
    _nb_decode_row = inline(_decode_row)
    _nb_output_dd = inline(_output_dd)
    decide, diagnose, decode_rows, fused, fused_run, scalar = _loops(_fingerprint())
    cached = nb.njit(cache=True, nogil=True, error_model="numpy")
    _nb_decide = cached(decide)
    _nb_decode_rows = cached(decode_rows)
    _nb_fused = cached(fused)

    def rows(buf: npt.NDArray[np.uint8], count: int, row: int) -> tuple[Any, ...]:
        sign = np.empty(count)
        e = np.empty(count)
        mhi = np.empty(count, np.uint64)
        mlo = np.empty(count, np.uint64)
        stop = _nb_decode_rows(buf, count, row, sign, e, mhi, mlo)
        return sign, e, mhi, mlo, int(stop)

    return Compiled(
        decide=_nb_decide,
        diagnose=nb.njit(cache=True, error_model="numpy")(diagnose),
        decode_rows=rows,
        fused=_nb_fused,
        fused_run=cached(fused_run),
        scalar=nb.njit(cache=True, error_model="numpy")(scalar),
    )


# The numba versions of the helpers, set by _compile (the loops read them as globals
# when numba compiles them).
_nb_two_sum: Any = None
_nb_two_prod: Any = None
_nb_fma: Any = None
_nb_kernel: Any = None
_nb_row_fields: Any = None
_nb_be64: Any = None
_nb_ctlz: Any = None
_nb_geometric: Any = None
_nb_decode_row: Any = None
_nb_output_dd: Any = None
_nb_decide: Any = None
_nb_decode_rows: Any = None
_nb_fused: Any = None

_COMPILED = None if _nb is None else _compile(_nb)


def compiled() -> Compiled | None:
    """The compiled functions, or None without numba."""
    return _COMPILED


def scalar_release_kernel() -> Any:
    """The compiled release of one value, or None without numba.

    ``kernel(v, row, params) -> (r, status)`` for a finite double ``v``, the bytes
    ``row`` of one ``snapcore-draw-v1`` draw as read from the stream
    (:func:`~snapcore.randomness._draw.row_size` bytes) and ``params =
    scalar_params(pipe)`` (:func:`snapcore.pipeline._engine.scalar_params`): decodes
    the row, decides ``k`` with the kernel's bound (E1-E9) and computes the output
    (table or certified double-double, E10).  ``status`` is :data:`SCALAR_DONE` (``r``
    is the exact pipeline's output on that draw), :data:`SCALAR_EXACT` (``k`` not
    decided), :data:`SCALAR_CONTINUATION` (the draw's exponent continues past the row:
    nothing computed) or :data:`SCALAR_OUTPUT` (``r`` is ``k``, whose output the
    certificate does not settle).  The first call in a process loads the compiled code
    from numba's disk cache (or compiles it, a few seconds, once per install).
    """
    return None if _COMPILED is None else _COMPILED.scalar


def compiled_engine_loaded() -> bool:
    """Whether this process has loaded (or compiled) any of the compiled engine's
    functions: loading one more from numba's cache then costs milliseconds, not the
    start-up of numba's compiler."""
    if _COMPILED is None:
        return False
    c = _COMPILED
    return bool(
        c.fused.overloads
        or c.fused_run.overloads
        or c.decide.overloads
        or _nb_decode_rows.overloads
    )
