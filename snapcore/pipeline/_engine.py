"""The fast path's engine: whole arrays released bit-identically to the exact pipeline.

:class:`FastEngine` holds, for one calibration, the kernel's double-double parameters
(derived exactly from the calibration) and the output stage.  For each element the
kernel (:mod:`snapcore.pipeline._kernel`, or its compiled form in
:mod:`snapcore.pipeline._compiled`) decides the snapped index ``k = ⌊y/Λ + 1/2⌋`` when
its rigorous bound allows; otherwise (and whenever anything is outside the range the
bound covers) that element is computed by the exact pipeline
(:meth:`snapcore.pipeline.Pipeline.run`).  The output stage
``c + Δ·clamp_b(kΛ)`` is either looked up in a table of exact outputs or computed in
double-double with a certificate of correct rounding, and again falls back to the exact
stage when the certificate fails.  So every output equals the exact pipeline's, element
for element.

:func:`release_batch` is the driver: it reads the draws (in bulk from a byte source,
:func:`snapcore.randomness._draw.decode_draw_batch`, or fused with the kernel and the
output stage in one compiled loop over chunks of the stream, the chunks shared among
threads with the same output for any number of them) and runs the engine.  The
derivation of every constant is in ``docs/fastpath.md``; ``[E10]`` marks its step.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from snapcore.calibration._params import Calibration
from snapcore.exact._dyadic import to_fraction
from snapcore.exact._ieee754 import round_up_double
from snapcore.exact._sums import numba_available
from snapcore.padding._pad import tie_row
from snapcore.pipeline._compiled import UNDECIDED, compiled, scalar_params_vector
from snapcore.pipeline._kernel import numpy_kernel, two_prod, two_sum
from snapcore.pipeline._stages import Pipeline, add, snap
from snapcore.pipeline._threads import check_threads, resolve_threads
from snapcore.randomness._draw import (
    BATCH_MIN_PRECISION,
    DrawBatch,
    decode_draw_batch,
    decode_draw_raw,
    decode_rows,
    row_size,
)
from snapcore.randomness._sources import ByteSource, RandomSource

__all__ = [
    "AUTO_MIN_SIZE",
    "BatchStats",
    "FastEngine",
    "batch_draws",
    "engine_for",
    "release_batch",
    "resolve_engine",
    "scalar_params",
]

#: Arrays at least this long go through the fast path automatically when the
#: mechanism's backend is the MPFR reference (the fast path is bit-identical to it).
AUTO_MIN_SIZE = 1024

F64 = npt.NDArray[np.float64]


def resolve_engine() -> str:
    """The kernel engine "auto" stands for: "numba" when numba can be imported, else
    "numpy" (the same bits)."""
    return "numba" if numba_available() else "numpy"


def batch_draws(
    source: RandomSource, count: int, precision: int, engine: str = "auto"
) -> DrawBatch:
    """``count`` draws from ``source`` as arrays, exactly ``source.draws(count, precision)``.

    A :class:`~snapcore.ByteSource` at ``precision >= 118`` is
    decoded in bulk (:func:`~snapcore.randomness._draw.decode_draw_batch`, with the
    compiled row decoder unless ``engine`` is "numpy"), consuming exactly the bytes the
    scalar decoder would; other sources are asked for their draws.
    """
    p = precision
    if not isinstance(source, ByteSource) or p < BATCH_MIN_PRECISION:
        return DrawBatch.from_draws(source.draws(count, p), p)
    fns = compiled() if engine != "numpy" else None
    return decode_draw_batch(source, count, p, decode_rows if fns is None else fns.decode_rows)


def _double_double(q: Fraction) -> tuple[float, float, Fraction]:
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
    """The fast path for one :class:`~snapcore.Calibration`.

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
        lam_h, lam_l, _ = _double_double(lam)
        ch, cl, rc = _double_double(c)
        ih, il, _ = _double_double(inv)
        bh, bl, _ = _double_double(b / Lam)
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
        self._dummy: tuple[npt.NDArray[np.uint8], F64, F64] | None = None

    def dummy_inputs(self) -> tuple[npt.NDArray[np.uint8], F64, F64]:
        """The padded release's dummies' public inputs and their output (built once
        per calibration, on first use): the bytes of one row that makes the centre a
        near-tie of the snapping (:func:`~snapcore.padding._pad.tie_row`: what a real
        fallback computes), the calibration's centre, and a one-element array their
        results are written to (and discarded).  A row whose exponent would continue
        past its first word (a granularity far above the scale) is replaced by one in
        [1/2, 1) (bytes ``0x5A``)."""
        got = self._dummy
        if got is None:
            cal = self.calibration
            size = row_size(cal.precision)
            tie = tie_row(cal)
            rows = np.frombuffer(tie if len(tie) == size else bytes([0x5A]) * size, np.uint8)
            got = self._dummy = (rows, np.array([float(cal.centre)]), np.zeros(1))
        return got

    # -- output stage ---------------------------------------------------------------
    @property
    def clamped_from(self) -> int:
        """The smallest ``k >= 0`` whose output is the clamped one (the endpoint):
        ``kmax`` when ``kmax·Λ == b``, else ``kmax + 1``."""
        return self.kmax if self.kmax_is_b else self.kmax + 1

    def end_outputs(self, pipe: Pipeline) -> tuple[float, float]:
        """The exact outputs of the clamped ``k <= -clamped_from`` and
        ``k >= clamped_from`` ([S9]).

        Every element whose ``k`` is decided and clamped takes one of these two
        values, so releasing clamped values costs no more than releasing values inside
        the interval.  The pipeline computes them once, when it is built.
        """
        return pipe.index_output(-self.kmax - 1), pipe.index_output(self.kmax + 1)

    def table(self, pipe: Pipeline) -> F64:
        """Exact outputs for ``k = -kmax-1 .. kmax+1`` (the ends: clamped)."""
        with self._table_lock:
            if self._table is None:
                ks = range(-self.kmax - 1, self.kmax + 2)
                self._table = np.array([pipe.index_output(k) for k in ks], dtype=np.float64)
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
        L = self.L
        lo_out, hi_out = self.end_outputs(pipe)
        clamped_from = self.clamped_from
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
            bad = np.flatnonzero(~cert & (np.abs(k) < clamped_from))
        else:
            bad = np.flatnonzero(np.abs(k) < clamped_from)
            if bad.size:
                uniq, inv = np.unique(k[bad], return_inverse=True)
                vals = np.array([pipe.index_output(int(kk)) for kk in uniq])
                out[bad] = vals[inv]
            bad = np.empty(0, np.intp)
        for j in bad:
            out[j] = pipe.index_output(int(k[j]))
        out[k >= clamped_from] = hi_out
        out[k <= -clamped_from] = lo_out
        return out, bad

    # -- the kernel -----------------------------------------------------------------
    def decide(
        self, v: F64, draws: DrawBatch, engine: str = "auto"
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], str]:
        """``k`` and whether it is decided, for each element."""
        n = v.size
        if engine == "auto":
            engine = resolve_engine()
        k = np.empty(n, np.int64)  # 0 where not decided
        ok = np.empty(n, np.bool_)
        params = self.params
        if engine == "numba":
            fns = compiled()
            if fns is None:
                raise RuntimeError("engine='numba' requested but numba is not installed")
            fns.decide(v, draws.sign, draws.e, draws.mhi, draws.mlo, params, k, ok)
        elif engine == "numpy":
            step = self.CHUNK
            with np.errstate(all="ignore"):
                for a in range(0, n, step):
                    sl = slice(a, a + step)
                    kk, oo, _, _, _ = numpy_kernel(
                        v[sl], draws.sign[sl], draws.e[sl], draws.mhi[sl], draws.mlo[sl],
                        *params.tolist(),
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
            fns = compiled()
            if fns is None:
                raise RuntimeError("engine='numba' requested but numba is not installed")
            out = np.empty((5, v.size))
            fns.diagnose(v, draws.sign, draws.e, draws.mhi, draws.mlo, self.params, out)
            return out[2], out[3], out[4], out[1] != 0.0
        with np.errstate(all="ignore"):
            _k, ok, sh, sl, err = numpy_kernel(
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
    #: Chunks taken from the source at a time and shared among the threads (one
    #: buffer of their stream bytes, about 3 MB at p = 118).  Fixed, whatever the
    #: number of threads, so that the source is asked for the same chunks in the same
    #: order and each element gets the same stream bytes.
    ROUND_CHUNKS = 16

    def run_stream(
        self, v: F64, source: ByteSource, pipe: Pipeline, threads: int = 1, exact_floor: int = 0
    ) -> tuple[F64, BatchStats]:
        """Outputs for values ``v`` with draws read from ``source``'s byte stream.

        A compiled loop decodes the rows (``snapcore-draw-v1``), runs the kernel and
        the output stage, and writes straight into the output array.  Exactly the
        bytes ``source.draws(v.size, p)`` would read are read, under
        :meth:`~snapcore.RandomSource.exclusive`, one chunk of :attr:`STREAM_CHUNK`
        rows at a time; elements the bound or the output certificate does not
        settle, and the rare draws with a continuation word, are computed by the
        exact pipeline from their own bytes, in element order, in this thread.

        The stream is taken in rounds of :attr:`ROUND_CHUNKS` chunks, and a round's
        chunks are split into ``threads`` contiguous runs, one per thread, each
        decoded in one compiled call that releases the GIL.  A source that can
        :meth:`~snapcore.ByteSource.reserve` its stream reserves each chunk and the
        threads produce their runs' bytes; other sources are read chunk by chunk
        first.  A draw with a continuation word shifts every later row: the round's
        rows after it are decoded again, in order, from the bytes already taken.  So
        the output does not depend on ``threads``.

        The elements the kernel leaves undecided are computed after the loop, by
        one loop over their rows' bytes (:func:`row_release`); with ``exact_floor``
        (a padded release, :func:`release_batch`), when fewer than that many elements
        needed the exact pipeline, the same loop runs as many more on the dummies'
        public inputs (:meth:`dummy_inputs`), with the same steps and objects, so
        that a real fallback and a dummy cost the same.
        """
        fns = compiled()
        if fns is None or not self.fusable:
            raise RuntimeError("the fused loop needs numba and a supported calibration")
        n = v.size
        row = row_size(self.calibration.precision)
        out = np.empty(n, np.float64)
        chunk = min(self.STREAM_CHUNK, max(n, 1))
        loop = _FusedLoop(self, fns.fused_run, pipe, v, out, row, chunk)
        round_rows = min(n, chunk * self.ROUND_CHUNKS)
        workers = max(1, min(threads, self.ROUND_CHUNKS, -(-n // chunk)))
        slots = [_Slot(chunk) for _ in range(workers)]
        pool = _pool(workers - 1) if workers > 1 else None
        buf = np.empty(round_rows * row, np.uint8)
        fall_k: list[int] = []
        fall_out: list[int] = []
        # The undecided elements' (row bytes, values, value index, output, output
        # index), computed after the loop.
        jobs: list[tuple[bytes, F64, int, F64, int]] = []
        pending = b""  # stream bytes taken ahead of a continuation draw, not yet used

        def read(k: int) -> bytes:
            nonlocal pending
            got, pending = pending[:k], pending[k:]
            return got + source.read(k - len(got)) if len(got) < k else got

        def settle(first: int, res: _RunResult) -> None:
            # A run's exact fallbacks, in element order (rows from `first`, the
            # round's first element; their bytes are still in `buf`).
            for j, kk in zip(res.fallback, res.fallback_k, strict=True):
                if kk == UNDECIDED:
                    i = first + j
                    jobs.append((buf[j * row : (j + 1) * row].tobytes(), v, i, out, i))
                    fall_k.append(i)
                else:
                    out[first + j] = pipe.index_output(kk)
                    fall_out.append(first + j)

        with source.exclusive():
            pos = 0
            while pos < n:
                first = pos
                if pending:  # after a continuation: one chunk from the bytes taken
                    m = min(chunk, n - first)
                    buf[: m * row] = np.frombuffer(read(m * row), np.uint8)
                    results = [loop.run(buf, first, 0, m, slots[0])]
                else:
                    m = min(round_rows, n - first)
                    sizes = [min(chunk, m - a) for a in range(0, m, chunk)]
                    fill = _take(source, buf, sizes, row)
                    results = _run_round(loop, buf, first, sizes, fill, slots, pool)
                pos = first + m
                for res in results:
                    settle(first, res)
                    if res.continuation:
                        # Row `res.stop` has a continuation word: the bytes taken from
                        # its start belong to it and to the next draws, in order.
                        pending = buf[res.stop * row : m * row].tobytes() + pending
                        out[first + res.stop] = _exact_element(
                            pipe, float(v[first + res.stop]), read
                        )
                        fall_k.append(first + res.stop)
                        pos = first + res.stop + 1
                        break
            if pending:  # pragma: no cover - the reads above never over-read
                raise AssertionError("fused loop read past its draws")
        missing = exact_floor - len(fall_k) - len(fall_out)
        if missing > 0:
            rows, values, sink = self.dummy_inputs()
            dummy = (rows[0:row].tobytes(), values, 0, sink, 0)
            jobs += [dummy] * missing
        exact_row = row_release(pipe)
        for rowbytes, vals, i, dest, o in jobs:
            dest[o] = exact_row(rowbytes, vals[i])
        st = BatchStats(n, np.array(fall_k, np.intp), np.array(fall_out, np.intp), "numba")
        return out, st


def _take(
    source: ByteSource, buf: npt.NDArray[np.uint8], sizes: list[int], row: int
) -> Callable[[int, Any], None] | None:
    """Take the next chunks (``sizes`` rows each) from ``source``: reserved at once
    (the reservation's ``fill`` returned, to be called by the threads for their
    chunks), or read in place into ``buf`` chunk by chunk (None returned)."""
    fill = source.reserve(sum(sizes) * row)
    if fill is None:
        a = 0
        for m in sizes:
            source.readinto(buf[a * row : (a + m) * row])
            a += m
    return fill


class _Slot:
    """One thread's scratch arrays for the fused loop."""

    def __init__(self, chunk: int) -> None:
        self.scratch = np.empty((4, chunk), np.float64)  # sign, e, mhi, mlo (as uint64)
        self.kbuf = np.empty(chunk, np.int64)
        self.okbuf = np.empty(chunk, np.bool_)
        self.fallback = np.empty(2 * chunk, np.int64)
        self.fallback_k = np.empty(2 * chunk, np.int64)


class _RunResult:
    """What the fused loop left to the exact pipeline in one thread's run of rows:
    the fallback rows (counted from the round's first row, in order), their ``k`` (or
    ``UNDECIDED``), whether the run stopped at a row with a continuation word, and the
    row it stopped at (that row, or the run's end)."""

    __slots__ = ("continuation", "fallback", "fallback_k", "stop")

    def __init__(self) -> None:
        self.stop = 0
        self.fallback: list[int] = []
        self.fallback_k: list[int] = []
        self.continuation = False


class _FusedLoop:
    """The compiled loop over runs of chunks, bound to one batch: its values, output
    array and the engine's constants."""

    def __init__(
        self, eng: FastEngine, fused_run: Any, pipe: Pipeline, v: F64, out: F64, row: int,
        chunk: int,
    ) -> None:  # fmt: skip
        self.fused_run = fused_run
        self.v = v
        self.out = out
        self.row = row
        self.chunk = chunk
        self.params = eng.params
        self.mode = 0 if eng.use_table else 1
        self.table = eng.table(pipe) if eng.use_table else np.zeros(1)
        self.ends = np.array([eng.lower, eng.upper, eng.delta_f, *eng.end_outputs(pipe)])
        self.kmax = np.int64(min(eng.kmax, 1 << 62))
        self.kmax_is_b = eng.kmax_is_b
        self.L = eng.L

    def run(
        self, buf: npt.NDArray[np.uint8], first: int, lo: int, hi: int, slot: _Slot
    ) -> _RunResult:
        """Rows ``lo .. hi-1`` of a round whose first element is ``first`` and whose
        stream bytes are ``buf``, with ``slot``'s scratch; stops at a continuation
        row."""
        row = self.row
        res = _RunResult()
        a = lo
        while a < hi:
            done, nfb, cont = self.fused_run(
                buf[a * row : hi * row], hi - a, row, self.chunk,
                self.v[first + a : first + hi], self.out[first + a : first + hi],
                self.params, self.table, self.mode, self.kmax, self.kmax_is_b, self.L,
                self.ends, slot.scratch, slot.kbuf, slot.okbuf, slot.fallback,
                slot.fallback_k,
            )  # fmt: skip
            res.fallback += [a + int(j) for j in slot.fallback[:nfb]]
            res.fallback_k += slot.fallback_k[:nfb].tolist()
            a += int(done)
            if cont:
                res.continuation = True
                break
        res.stop = a
        return res


def _run_round(
    loop: _FusedLoop,
    buf: npt.NDArray[np.uint8],
    first: int,
    sizes: list[int],
    fill: Callable[[int, Any], None] | None,
    slots: list[_Slot],
    pool: ThreadPoolExecutor | None,
) -> list[_RunResult]:
    """The fused loop on a round's chunks (``sizes`` rows each, from element
    ``first``), split into one contiguous run of chunks per slot; the runs after the
    calling thread's go to ``pool``.  With ``fill``, each thread first produces its
    run's stream bytes into ``buf``, in one call.  Returns the runs' results in order (those
    after the first that stopped at a continuation row decoded rows that are
    decoded again)."""
    row = loop.row
    t = min(len(slots), len(sizes))
    bounds = [len(sizes) * w // t for w in range(t + 1)]
    starts = [0]
    for m in sizes:
        starts.append(starts[-1] + m)

    def run(w: int) -> _RunResult:
        lo, hi = bounds[w], bounds[w + 1]
        if fill is not None:
            fill(starts[lo] * row, buf[starts[lo] * row : starts[hi] * row])
        return loop.run(buf, first, starts[lo], starts[hi], slots[w])

    futures = [] if pool is None else [pool.submit(run, w) for w in range(1, t)]
    try:
        own = run(0)
    finally:  # no thread still writes into the buffers when this returns or raises
        wait(futures)
    return [own] + [f.result() for f in futures]


_POOL_LOCK = threading.Lock()
_POOL: tuple[int, int, ThreadPoolExecutor] | None = None  # (pid, size, pool)


def _pool(size: int) -> ThreadPoolExecutor:
    """A process-wide pool of at least ``size`` threads for the fused loop's chunks
    (made afresh in a forked child, whose copy of the pool has no threads).  A pool
    replaced by a larger one is not shut down: a release may still be submitting to
    it; its threads end when it is no longer referenced."""
    global _POOL
    with _POOL_LOCK:
        pid = os.getpid()
        if _POOL is None or _POOL[0] != pid or _POOL[1] < size:
            _POOL = (pid, size, ThreadPoolExecutor(size, thread_name_prefix="snapcore-fused"))
        return _POOL[2]


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
    threads: int | None = None,
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
        and a :class:`~snapcore.ByteSource`, decoding, the kernel and the
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
    threads : int or None
        Threads sharing the fused loop's chunks (:meth:`FastEngine.run_stream`); the
        output is the same for every number.  None:
        :func:`~snapcore.pipeline._threads.resolve_threads` (the usable CPUs, one for
        arrays shorter than :data:`~snapcore.pipeline._threads.THREADS_MIN_SIZE`).  The
        other engines run in the calling thread.

    Raises
    ------
    ParameterError
        If ``threads`` is not None or an int >= 1 (before anything is drawn).
    """
    threads = check_threads(threads)
    arr = np.asarray(values, dtype=np.float64)
    flat = np.ascontiguousarray(arr.reshape(-1))
    if engine == "auto":
        engine = resolve_engine()
    eng = engine_for(pipe.calibration)
    p = pipe.calibration.precision
    if (
        engine == "numba"
        and eng.fusable
        and isinstance(source, ByteSource)
        and p >= BATCH_MIN_PRECISION
    ):
        t = resolve_threads(threads, flat.size)
        out, st = eng.run_stream(flat, source, pipe, t, exact_floor=exact_floor)
    else:
        draws = batch_draws(source, flat.size, p, engine)
        out, st = eng.run(flat, draws, pipe, engine)
        missing = exact_floor - len(st.fallback_k) - len(st.fallback_output)
        if missing > 0:
            _exact_dummies(pipe, missing)
    res = out.reshape(arr.shape)
    return (res, st) if stats else res


def _exact_element(pipe: Pipeline, v: float, read: Callable[[int], bytes]) -> float:
    """The exact release of the double ``v`` with the draw decoded from ``read``:
    ``pipe.run(pipe.centre(Fraction(v)), decode_draw(read, p))``, without building
    the Fraction and the :class:`~snapcore.randomness.Draw` (the same integers)."""
    return pipe.run(
        pipe.centre_ratio(*v.as_integer_ratio()),
        decode_draw_raw(read, pipe.calibration.precision),
    )


def _exact_dummies(pipe: Pipeline, count: int) -> None:
    """``count`` exact computations as an undecided element's, on public inputs, with
    the same steps and objects: :func:`row_release` on a row's bytes taken from an
    array of bytes, and a value read from an array of doubles (the calibration's
    centre); results discarded."""
    exact_row = row_release(pipe)
    rows, values, sink = engine_for(pipe.calibration).dummy_inputs()
    row = rows.size
    for _ in range(count):
        sink[0] = exact_row(rows[0:row].tobytes(), values[0])


#: Each pipeline's :func:`row_release`, built on first use.
_ROW_RELEASES: weakref.WeakKeyDictionary[Pipeline, Callable[[bytes, Any], float]] = (
    weakref.WeakKeyDictionary()
)


def row_release(pipe: Pipeline) -> Callable[[bytes, Any], float]:
    """``exact(row, v)``: the exact release of the double ``v`` with the draw whose
    ``snapcore-draw-v1`` bytes are ``row``, a draw whose exponent ends in its first
    word (:func:`~snapcore.randomness._draw.row_size` bytes); the same value as
    ``pipe.run(pipe.centre_ratio(*v.as_integer_ratio()), decode_draw_raw(row))``.

    The fused loop's exact fallback (an element its bound does not decide) and the
    padded release's dummies (:func:`release_batch`'s ``exact_floor``) both run it:
    one closure per pipeline with its constants bound, the draw decoded from the
    row's integer without a reader, no :class:`~fractions.Fraction` or
    :class:`~snapcore.randomness.Draw` object.
    """
    got = _ROW_RELEASES.get(pipe)
    if got is not None:
        return got
    p = pipe.calibration.precision
    nbytes = row_size(p) - 8  # the mantissa's bytes
    low = 8 * nbytes
    t_mask = (1 << low) - 1
    t_shift = low - (p - 1)
    top = 1 << (p - 1)
    low63 = (1 << 63) - 1
    noise, lam = pipe.arith.noise, pipe.noise_scale
    L, kmax = pipe.granularity_log2, pipe.grid_index_bound
    # The pipeline's own stages, unbound, and a weak reference to it: a closure that
    # held the pipeline (its cache's key) would keep it alive for ever.
    centre, grid, end = Pipeline.centre_ratio, Pipeline.grid_output, Pipeline.clamped_output
    pipe_ref = weakref.ref(pipe)
    from_bytes = int.from_bytes

    def exact(row: bytes, v: Any) -> float:
        me = pipe_ref()
        assert me is not None  # the caller holds the pipeline
        whole = from_bytes(row, "big")
        w = whole >> low
        r = w & low63
        if not r:  # pragma: no cover - the fused loop hands continuation rows elsewhere
            raise AssertionError("a row whose exponent continues past its first word")
        um = top | ((whole & t_mask) >> t_shift)
        ue = r.bit_length() - 64 - (p - 1)
        n = noise(lam, -1 if w >> 63 else 1, (um, ue))
        k = snap(*add(centre(me, *float(v).as_integer_ratio()), n, p), L)
        return grid(me, k, L) if -kmax < k < kmax else end(me, k)

    _ROW_RELEASES[pipe] = exact
    return exact


def scalar_params(pipe: Pipeline) -> F64 | None:
    """The parameter vector of :func:`~snapcore.pipeline._compiled.scalar_release_kernel`
    for ``pipe``'s calibration, or None when the kernel's bound does not cover it
    (``p < 118`` or magnitudes outside it: not :attr:`FastEngine.supported`): those
    releases stay exact."""
    eng = engine_for(pipe.calibration)
    if not eng.supported:
        return None
    low_output, high_output = eng.end_outputs(pipe)
    return scalar_params_vector(
        eng.params,
        lower=eng.lower,
        upper=eng.upper,
        delta=eng.delta_f,
        low_output=low_output,
        high_output=high_output,
        granularity_log2=eng.L,
        kmax=eng.kmax,
        clamped_from=eng.clamped_from,
        mode=0.0 if eng.use_table else (1.0 if eng.out_dd else 2.0),
        table=eng.table(pipe) if eng.use_table else np.zeros(0),
    )
