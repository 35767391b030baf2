"""The MPFR backend, through gmpy2: correct rounding is MPFR's own guarantee.

Every operation goes through a private ``gmpy2.context`` object at the requested
precision (round to nearest, exponent range ``[-2**30, 2**30]``), called as a
method (``ctx.log(x)``), so the caller's current gmpy2 context is never read or
changed.  Each thread gets its own context objects, because a context records
sticky flags when used.
"""

from __future__ import annotations

import math
import sys
import threading
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import gmpy2

from snapcore.exact._dyadic import is_p_bit
from snapcore.pipeline._arithmetic import Arithmetic
from snapcore.pipeline._backend import Backend
from snapcore.plugins._hookspecs import hookimpl
from snapcore.randomness._draw import decode_draw_raw, decode_draw_raw_padded, row_size
from snapcore.randomness._sources import ByteSource

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from snapcore.pipeline._stages import Pipeline
    from snapcore.plugins._registries import BackendRegistry
    from snapcore.randomness._sources import RandomSource

__all__ = ["MPFRArithmetic", "MPFRBackend", "ScalarPathStats", "scalar_path_stats"]

#: The noise stage computes ``ln U*`` as ``log1p(U* − 1)`` (``U* − 1`` exact by
#: Sterbenz) for ``U* >= 1 − 2**-LOG1P_TAIL_BITS`` and as ``log(U*)`` below: both are
#: MPFR's correctly rounded ``ln U*``, so the choice changes no bit, only the time.
#: Measured at p = 118 (docs/timing.md, "The noise stage"): ``log`` costs the same
#: for every U* below 1 − 2**-12 (about 1.9 µs), twice as much closer to 1 (its
#: rounding test fails for the cancellation and it computes again at a higher
#: precision); ``log1p`` costs 1.2 times ``log`` far from 1, as much as ``log`` near
#: 2**-12 and a third of it from 2**-16 on (a short series).  The rule takes the
#: cheaper one in each region.
LOG1P_TAIL_BITS = 16
_LOG1P_TOP = (1 << LOG1P_TAIL_BITS) - 1
_LOG1P_FROM = 1.0 - 2.0**-LOG1P_TAIL_BITS


def _in_log1p_tail(um: int, ue: int) -> bool:
    """Whether ``U* = um·2**ue`` (in (0, 1)) is at least ``1 − 2**-LOG1P_TAIL_BITS``:
    in [1/2, 1) with its top ``LOG1P_TAIL_BITS`` bits all ones."""
    bl = um.bit_length()
    return bl + ue == 0 and bl >= LOG1P_TAIL_BITS and um >> (bl - LOG1P_TAIL_BITS) == _LOG1P_TOP


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

    @property
    def inlines_noise(self) -> bool:
        """Whether the primitives :meth:`noise` inlines are MPFR's own (no subclass
        overrides one), so that the fused release paths may inline them too."""
        return self._inline

    @property
    def thread_contexts(self) -> threading.local:
        """The per-thread gmpy2 contexts: ``thread_contexts.ctx`` is this thread's."""
        return self._local

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
        if _LOG1P_FROM <= a < 1 and a.precision <= self.precision:
            # ln a = log1p(a − 1), with a − 1 exact (Sterbenz): the same correctly rounded
            # value (see LOG1P_TAIL_BITS for why only this close to 1).
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
        if _in_log1p_tail(um, ue):  # as ln() above
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
        from snapcore.pipeline._engine import AUTO_MIN_SIZE

        return AUTO_MIN_SIZE

    def batch(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """Release a whole array through the vectorised fast path
        (:mod:`snapcore.pipeline`), bit-identical to this backend's own primitives,
        on ``threads`` threads (None: the usable CPUs for arrays of at least 2**15
        elements, else one), the same output for any.

        Declines (returns None, before drawing anything) when the pipeline's arithmetic
        is not exactly :class:`MPFRArithmetic`: a subclass that changes a primitive
        would no longer be what the fast path reproduces.
        """
        if type(pipeline.arith) is not MPFRArithmetic:
            return None
        from snapcore.pipeline._engine import release_batch

        out: np.ndarray | None = release_batch(pipeline, values, source, threads=threads)
        return out

    def batch_padded(
        self,
        pipeline: Pipeline,
        values: np.ndarray,
        source: RandomSource,
        exact_floor: int,
        *,
        threads: int | None = None,
    ) -> np.ndarray | None:
        """:meth:`batch`, running exact computations on public inputs when fewer than
        ``exact_floor`` elements fell back to the exact pipeline (docs/timing.md)."""
        if type(pipeline.arith) is not MPFRArithmetic:
            return None
        from snapcore.pipeline._engine import release_batch

        out: np.ndarray | None = release_batch(
            pipeline, values, source, exact_floor=exact_floor, threads=threads
        )
        return out

    def scalar_padded(
        self, pipeline: Pipeline, source: RandomSource
    ) -> Callable[[float], float] | None:
        """The release of one double for a padded mechanism: bit-identical to
        :meth:`Pipeline.run <snapcore.pipeline.Pipeline.run>` on ``source.draw_raw(p)``,
        with no step whose time depends on the value or the draw except rare events
        the padding's argument bounds (``docs/timing.md``).  Declines unless the
        arithmetic is exactly :class:`MPFRArithmetic` and the source decodes its
        bytes with :class:`~snapcore.ByteSource`'s own ``draw_raw``.

        Two paths, chosen process-wide by the rule of :meth:`scalar` (the exact
        releases of both paths count towards it), each with its own quantum: the
        returned function's attribute ``path()`` names the path the next release takes, making
        the switch when it is due, and the padding calls it before its clock starts.

        - ``"exact"``: decoding (``snapcore-draw-v1``, every draw with the steps of a
          continuation word), MPFR's noise through ``uniform_ln``, the exact add,
          snap, clamp and output over one fixed denominator
          (:meth:`Pipeline.uniform_stages <snapcore.pipeline.Pipeline.uniform_stages>`,
          ``docs/timing.md``, "Uniform paths where they are cheap").
        - ``"compiled"``: the fast path's compiled kernel on the draw's first row (as
          :meth:`scalar`); a draw it leaves open (probability at most
          ``FALLBACK_RATE_BOUND`` (:mod:`snapcore.padding`) for a fresh draw, whatever
          the value) is finished by the exact path above from the same bytes, and
          overruns the quantum (``docs/timing.md``, "The compiled scalar path").
        """
        if not _fusable(pipeline, source) or not isinstance(source, ByteSource):
            return None
        return _padded_scalar(pipeline, source)

    def scalar(self, pipeline: Pipeline, source: RandomSource) -> Callable[[float], float] | None:
        """:meth:`scalar` for a mechanism without timing padding: the same contract
        (bit-identical to the pipeline, one draw per release, the same bytes), with a
        running time that may depend on the draw.

        Once the process has made enough such releases (``compiled_scalar_after()``),
        each release reads its draw's bytes and hands them, with the value, to the
        fast path's compiled kernel in :mod:`snapcore.pipeline` (its double-double certificate,
        ``docs/fastpath.md``); a draw the certificate leaves open (a near-tie, an
        exponent continuing past the first word, an uncertified output, a calibration
        outside the kernel's range) is finished by MPFR from the same bytes, without
        a second read.  Until then, and where numba cannot be imported, it is
        :meth:`scalar`.  The switch changes no output.
        """
        parts = _fused_parts(pipeline, source)
        if parts is None:
            return None
        finish, src = parts
        exact = _release_of(pipeline, finish, src, None)
        centre, index_output = pipeline.centre_ratio, pipeline.index_output
        lock, read = src.exclusive(), src.read
        p = pipeline.arith.precision
        row = row_size(p)  # one snapcore-draw-v1 row (no continuation word)
        kernel: Any = None
        params: Any = None
        stay_exact = False
        stats = scalar_path_stats

        def warm(v: float) -> float:
            # The exact fused release, counting towards the switch.
            nonlocal kernel, params, stay_exact
            if not stay_exact:
                stats.exact_untimed += 1
                if stats.exact_untimed + stats.exact_padded >= compiled_scalar_after():
                    k, pr = _load_scalar_kernel(pipeline, row)
                    if k is None:
                        stay_exact = True  # no numba, or a calibration the bound excludes
                    else:
                        params, kernel = pr, k
                        return release(v)
            return exact(v)

        def release(v: float) -> float:
            if kernel is None:
                return warm(v)
            # The statuses are snapcore.pipeline._compiled's SCALAR_* (not imported here:
            # that module imports numba).
            with lock:
                data = read(row)
                r: float
                status: int
                r, status = kernel(v, data, params)
                if status == 0:  # SCALAR_DONE: almost every release (docs/fastpath.md)
                    return r
                if status == 2:  # SCALAR_CONTINUATION: the exponent reads on, now
                    sign, um, ue = decode_draw_raw(_replay(data, read), p)
            if status == 3:  # SCALAR_OUTPUT: k decided, its output computed exactly
                stats.exact_output += 1
                return index_output(int(r))
            if status == 1:  # SCALAR_EXACT: k not decided, MPFR from the same bytes
                stats.exact_k += 1
                sign, um, ue = decode_draw_raw(_replay(data, read), p)
            else:
                stats.continuation += 1
            return finish(centre(*v.as_integer_ratio()), sign, um, ue)

        return release


def _padded_scalar(pipeline: Pipeline, source: ByteSource) -> Callable[[float], float]:
    """The release of one double of a padded mechanism (:meth:`MPFRBackend.scalar_padded`)
    drawing from ``source`` (:func:`_fusable` with ``pipeline``).

    Returns ``release`` (a closure: the padded call's own cost stays small) with the
    attribute ``release.path``: ``path()`` names the path of the next release and makes
    the process-wide switch to the compiled kernel when it is due, so that the switch
    (importing numba, loading the kernel) never happens inside a padded call.

    The exact path (``pipeline``'s uniform stages and their fused parts,
    :func:`_fused_parts`) is built by ``path()`` when it names that path, or by the
    first release the kernel leaves open: a mechanism on the compiled path, or one
    that never releases a double (a statistic's exact value takes
    :meth:`Pipeline.run <snapcore.pipeline.Pipeline.run>`), does not build it.  Which of
    these happens depends on the process's public count of releases, not on any value.
    A release that no ``path()`` call preceded (an unpadded copy's, for the padding's
    calibration) runs ``path()`` first if the process has switched, so it starts on
    the compiled path without loading anything.
    """
    built: _ExactParts | None = None

    def exact_parts() -> _ExactParts:
        # (exact release, finish, centre), built once.
        nonlocal built
        if built is None:
            stages = pipeline.uniform_stages()
            parts = _fused_parts(pipeline, source, stages)
            if parts is None:  # pragma: no cover - _fusable said it can
                raise AssertionError("the fused parts declined a fusable pipeline")
            built = (_release_of(pipeline, *parts, stages), parts[0], stages[0])
        return built

    lock, read = source.exclusive(), source.read
    p = pipeline.arith.precision
    row = row_size(p)
    kernel: Any = None
    params: Any = None
    stay_exact = False
    started = False  # whether path() has run (the padding runs it before each release)

    def path() -> str:
        nonlocal kernel, params, stay_exact, started
        started = True
        if kernel is not None:
            return "compiled"
        stats = scalar_path_stats
        if not stay_exact and stats.exact_untimed + stats.exact_padded >= compiled_scalar_after():
            k, pr = _load_scalar_kernel(pipeline, row, padded=True)
            if k is None:
                stay_exact = True  # no numba, or a calibration the kernel does not suit
            else:
                kernel, params = k, pr
                return "compiled"
        exact_parts()
        return "exact"

    def release(v: float) -> float:
        nonlocal started
        if kernel is None:
            if not started:
                started = True
                if scalar_path_stats.loaded:  # the process has switched: start there
                    path()
                    return release(v)
            scalar_path_stats.exact_padded += 1
            return exact_parts()[0](v)
        # The statuses are snapcore.pipeline._compiled's SCALAR_* (see MPFRBackend.scalar).
        with lock:
            data = read(row)
            r: float
            status: int
            r, status = kernel(v, data, params)
            if status == 0:  # SCALAR_DONE: all but a fraction FALLBACK_RATE_BOUND
                return r
            # Left open: the exact path from the same bytes (the quantum does not
            # cover it: an overrun, docs/timing.md).
            sign, um, ue = decode_draw_raw_padded(_replay(data, read), p)
        scalar_path_stats.padded_fallback += 1
        _, finish, centre = exact_parts()
        return finish(centre(v), sign, um, ue)

    release.path = path  # type: ignore[attr-defined]
    return release


def _load_scalar_kernel(pipeline: Pipeline, row: int, padded: bool = False) -> tuple[Any, Any]:
    """The compiled scalar kernel and ``pipeline``'s parameters for it, loaded (and run
    once) now; ``(None, None)`` without numba or for a calibration the kernel's bound
    excludes, and with ``padded`` for one without an output table or certified
    double-double output (its kernel hands every decided index inside the interval to
    the exact output stage: the exact path is cheaper)."""
    from snapcore.pipeline import _compiled, _engine

    kernel, params = _compiled.scalar_release_kernel(), _engine.scalar_params(pipeline)
    if kernel is None or params is None:
        return None, None
    if padded:
        eng = _engine.engine_for(pipeline.calibration)
        if not (eng.use_table or eng.out_dd):
            return None, None
    if not scalar_path_stats.loaded:  # load (or compile) it before first use
        kernel(0.0, bytes(row), params)
        scalar_path_stats.loaded = True
    return kernel, params


class ScalarPathStats:
    """Process-wide counters of :meth:`MPFRBackend.scalar` (diagnostics).

    Attributes
    ----------
    exact_untimed : int
        Untimed releases made by the exact fused path (they count towards the switch).
    loaded : bool
        Whether the compiled kernel has been loaded in this process.
    exact_k, exact_output, continuation : int
        Compiled releases finished exactly: ``k`` not decided by the bound, the output
        not certified, a draw whose exponent continues past its first word.
    exact_padded : int
        Releases of padded mechanisms made by the exact path (they count towards the
        switch too).
    padded_fallback : int
        Compiled releases of padded mechanisms finished by the exact path.
    """

    def __init__(self) -> None:
        self.exact_untimed = 0
        self.loaded = False
        self.exact_k = 0
        self.exact_output = 0
        self.continuation = 0
        self.exact_padded = 0
        self.padded_fallback = 0

    def __repr__(self) -> str:
        return (
            f"ScalarPathStats(exact_untimed={self.exact_untimed}, loaded={self.loaded}, "
            f"exact_k={self.exact_k}, exact_output={self.exact_output}, "
            f"continuation={self.continuation}, exact_padded={self.exact_padded}, "
            f"padded_fallback={self.padded_fallback})"
        )


#: The counters of the untimed scalar path in this process.
scalar_path_stats = ScalarPathStats()

#: Untimed scalar releases a process makes exactly before it loads the compiled kernel
#: (None: never).  Loading it costs about as much as this many exact releases save.
COMPILED_SCALAR_AFTER: int | None = 1 << 16
#: The same once the process already runs snapcore's compiled engine (an array release):
#: then only the kernel's own code is loaded from numba's cache, about 10 ms.
COMPILED_SCALAR_AFTER_WARM = 1 << 10


def compiled_scalar_after() -> float:
    """How many exact untimed scalar releases the process makes before it switches to
    the compiled kernel (``inf``: never).

    The rule is the ski-rental one: the switch costs a fixed time ``L`` once per
    process (importing numba and loading the compiled kernel from its disk cache:
    0.4-1.2 s cold, about 10 ms when snapcore's compiled engine is already running,
    nothing once the kernel is loaded) and then saves ``s`` per release (the exact
    release costs 2-4 times the compiled one).  Switching after about ``L/s`` releases
    makes the total time at most twice the best choice made in hindsight, whatever the
    number of releases; switching earlier makes short programs pay ``L`` for nothing
    (a one-shot command-line release would pay the import of numba, several times its
    own running time).  Both counts are rounded to powers of two of the measured
    ratio.  Outputs do not depend on the switch: both paths are bit-identical.
    """
    if COMPILED_SCALAR_AFTER is None:
        return math.inf
    if scalar_path_stats.loaded:
        return 0
    compiled = sys.modules.get("snapcore.pipeline._compiled")
    if compiled is not None and getattr(compiled, "compiled_engine_loaded", lambda: False)():
        return min(COMPILED_SCALAR_AFTER, COMPILED_SCALAR_AFTER_WARM)
    return COMPILED_SCALAR_AFTER


def _replay(data: bytes, read: Callable[[int], bytes]) -> Callable[[int], bytes]:
    """A reader that returns ``data`` (a draw's first row, already read) first, then
    reads on from ``read``: the exact decoder sees the stream exactly once."""
    first = [data]

    def again(n: int) -> bytes:
        if first:
            out = first.pop()
            if len(out) != n:  # pragma: no cover - the row is what decode_draw_raw reads
                raise AssertionError("replayed row of the wrong length")
            return out
        return read(n)

    return again


#: Guard bits of :func:`uniform_ln`: it works at ``2·p + UNIFORM_LN_GUARD`` bits.
UNIFORM_LN_GUARD = 20


class _WideContexts(threading.local):
    def __init__(self, precision: int) -> None:
        def make(prec: int) -> Any:
            return gmpy2.context(
                precision=prec,
                round=gmpy2.RoundToNearest,
                emin=-(1 << 30),
                emax=1 << 30,
                subnormalize=False,
            )

        wide = 2 * precision + UNIFORM_LN_GUARD
        self.p, self.wide, self.exact = make(precision), make(wide), make(wide + 64)


def uniform_ln(precision: int) -> Callable[[int, int], Any]:
    """``ln U*`` correctly rounded to ``precision`` bits, for ``U* = um·2**ue`` in
    (0, 1), in a time that does not depend on how close U* is to 1.

    MPFR's ``log`` (and ``log1p``, which calls it) loses about ``k + 6`` bits to
    cancellation when ``1 − U* ≈ 2**-k`` and computes again when too few are left:
    never for ``k <= 5``, for half of the draws at ``k = 12``, always from ``k = 13``,
    so the time of ``log(U*)`` tells how small ``|noise|`` is (docs/timing.md, "The
    noise stage").  Here the logarithm is taken of ``U*/4`` (below 1/4: no
    cancellation inside MPFR, whatever U*), at ``P = 2p + 20`` bits, and
    ``ln U* = ln(U*/4) + 2·ln 2`` is formed exactly and rounded once to ``p`` bits.
    The two ``P``-bit roundings leave an error of at most ``ε = ulp_P(a)/2 + 2**-P``;
    when ``d − ε`` and ``d + ε`` round to the same ``p``-bit number it is the
    correctly rounded ``ln U*``, otherwise (``ln U*`` within ``ε`` of a rounding
    boundary: at most about ``2**-19`` for ``U* = 1 − 2**-p``, ``2**-130`` averaged over
    fresh draws) MPFR's own ``log`` at ``p`` bits gives it.  Bit-identical to
    :meth:`MPFRArithmetic.ln` either way (tests/pipeline/test_uniform.py).
    """
    ctxs = _WideContexts(precision)
    p_wide = 2 * precision + UNIFORM_LN_GUARD
    with gmpy2.context(precision=p_wide, round=gmpy2.RoundToNearest):
        two_ln2 = gmpy2.mul_2exp(gmpy2.const_log2(), 1)
        half_ulp_b = gmpy2.mpfr(gmpy2.mul_2exp(1, -p_wide))  # ulp_P(2 ln 2)/2, exact
    exp_cap = 60 - p_wide  # a's ulp exponent; beyond, d = a + 2 ln 2 might round

    def ln(um: int, ue: int) -> Any:
        c = ctxs
        a = c.wide.log(c.wide.mul_2exp(um, ue - 2))  # ln(U*/4) < −1.38
        ea = int(a.as_mantissa_exp()[1])  # a = m·2**ea with |m| < 2**P
        exact = c.exact
        d = exact.add(a, two_ln2)  # exact: |a| < 2**60
        eps = exact.add(gmpy2.mul_2exp(gmpy2.mpfr(1), ea - 1), half_ulp_b)
        p_ctx = c.p
        lo = p_ctx.add(exact.sub(d, eps), 0)
        hi = p_ctx.add(exact.add(d, eps), 0)
        if lo == hi and ea <= exp_cap:
            return lo
        return p_ctx.log(p_ctx.mul_2exp(um, ue))

    return ln


def _exact_scalar(
    pipeline: Pipeline, source: RandomSource, uniform: bool
) -> Callable[[float], float] | None:
    """The fused exact release of one double (:meth:`MPFRBackend.scalar_padded`); with
    ``uniform``, that of a padded release: every stage from
    :meth:`Pipeline.uniform_stages <snapcore.pipeline.Pipeline.uniform_stages>`,
    :func:`uniform_ln` and :func:`~snapcore.randomness._draw.decode_draw_raw_padded`."""
    stages = pipeline.uniform_stages() if uniform else None
    parts = _fused_parts(pipeline, source, stages)
    if parts is None:
        return None
    return _release_of(pipeline, *parts, stages)


def _release_of(
    pipeline: Pipeline,
    finish: Callable[[tuple[int, int], int, int, int], float],
    src: ByteSource,
    stages: _Stages | None,
) -> Callable[[float], float]:
    """The release of one double: centre it, decode one draw from ``src`` (under its
    lock) and ``finish``; with ``stages``, a padded release's centring and decoding."""
    centre: Callable[[float], tuple[int, int]]
    if stages is not None:
        centre = stages[0]
    else:
        ratio = pipeline.centre_ratio

        def centre(v: float) -> tuple[int, int]:
            return ratio(*v.as_integer_ratio())

    lock, read = src.exclusive(), src.read
    p = pipeline.arith.precision
    decode = decode_draw_raw if stages is None else decode_draw_raw_padded

    def release(v: float) -> float:
        x = centre(v)
        with lock:
            sign, um, ue = decode(read, p)
        return finish(x, sign, um, ue)

    return release


if TYPE_CHECKING:
    # (exact release of a double, the stages after decoding, the centring stage)
    _ExactParts = tuple[
        Callable[[float], float],
        Callable[[tuple[int, int], int, int, int], float],
        Callable[[float], tuple[int, int]],
    ]
    _Stages = tuple[
        Callable[[float], tuple[int, int]],
        Callable[[tuple[int, int], tuple[int, int]], tuple[int, int]],
        Callable[[int], float],
    ]


def _fusable(pipeline: Pipeline, source: RandomSource) -> bool:
    """Whether the fused paths can serve ``pipeline`` and ``source``: the arithmetic is
    exactly :class:`MPFRArithmetic` (with its noise inlined) and ``source`` decodes its
    bytes with :class:`~snapcore.ByteSource`'s own ``draw_raw``."""
    arith = pipeline.arith
    return (
        type(arith) is MPFRArithmetic
        and arith.inlines_noise
        and isinstance(source, ByteSource)
        and type(source).draw_raw is ByteSource.draw_raw
    )


def _fused_parts(
    pipeline: Pipeline, source: RandomSource, stages: _Stages | None = None
) -> tuple[Callable[[tuple[int, int], int, int, int], float], ByteSource] | None:
    """``(finish, source)``: ``finish(x, sign, um, ue)`` is the stages after decoding
    for the centred value ``x`` and one draw, as :meth:`Pipeline.run
    <snapcore.pipeline.Pipeline.run>`, and ``source`` the byte source; None when the
    fused paths must decline.  With ``stages`` (:meth:`Pipeline.uniform_stages
    <snapcore.pipeline.Pipeline.uniform_stages>`), those of a padded release."""
    from snapcore.pipeline._stages import add, snap

    if not _fusable(pipeline, source):
        return None
    arith = pipeline.arith
    assert isinstance(arith, MPFRArithmetic) and isinstance(source, ByteSource)
    p = arith.precision
    local = arith.thread_contexts
    lam = pipeline.noise_scale
    L = pipeline.granularity_log2
    kmax = pipeline.grid_index_bound
    grid, end = pipeline.grid_output, pipeline.clamped_output

    def finish(x: tuple[int, int], sign: int, um: int, ue: int) -> float:
        ctx = local.ctx
        if _in_log1p_tail(um, ue):  # U* >= 1 − 2**-16: as MPFRArithmetic.ln
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

    if stages is None:
        return finish, source
    _, add_uniform, output_uniform = stages
    ln_uniform = uniform_ln(p)

    def finish_uniform(x: tuple[int, int], sign: int, um: int, ue: int) -> float:
        n = local.ctx.mul(lam, ln_uniform(um, ue))
        m, e = n.as_mantissa_exp()
        y = add_uniform(x, (int(m) if sign > 0 else -int(m), int(e)))
        return output_uniform(snap(*y, L))

    return finish_uniform, source


@hookimpl
def snapcore_register_backends(registry: BackendRegistry) -> None:
    registry.add(MPFRBackend)
