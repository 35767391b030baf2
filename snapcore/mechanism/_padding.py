"""The mechanism's padding: each release takes a whole number of fixed time quanta.

A release's running time is a side channel: Jin, McMurtry, Rubinstein and Ohrimenko
(IEEE S&P 2022) recovered private values from the time DP libraries took to sample
noise.  A padded :class:`~snapcore.SnappingMechanism` closes it by
**padding** (the "timing-stable step plus delay" of Ratliff and Vadhan, CCS 2024, with
a deterministic delay; the primitives are in :mod:`snapcore.padding`).  Its quanta are
calibrated once per mechanism configuration from the unpadded time of worst-case
inputs, never from the private data:

- scalar releases: one quantum per (calibration, backend, source kind) and value type;
- arrays: a quantum per (container, dtype, **length**): a function of the length only.

Calibration runs the release of an unpadded copy of the mechanism
(:meth:`~snapcore.SnappingMechanism.unpadded_copy`), which takes
the same paths as the padded one, with a separate source of the same kind.  See
``docs/timing.md`` for the argument and what is not covered.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from snapcore.calibration._params import Calibration
from snapcore.padding._pad import (
    PaddingStats,
    TimingMode,
    budget_reps,
    calibrate_quantum,
    calibration_source,
    fallbacks_covered,
    next_dither,
    noise_draw,
    pad,
    tie_row,
    uniform_doubles,
)
from snapcore.padding._quanta import ARRAY_QUANTA, SCALAR_QUANTA, generation, intern_key
from snapcore.pipeline._backend import Backend
from snapcore.pipeline._threads import resolve_threads
from snapcore.randomness._draw import Draw, encode_draw
from snapcore.randomness._sources import ByteSource, RandomSource

__all__ = [
    "ARRAY_CALIBRATION_MAX",
    "ARRAY_LENGTH_MARGIN",
    "ARRAY_MARGIN",
    "ARRAY_MIN_MARGIN",
    "SCALAR_MARGIN",
    "SCALAR_REPS",
    "Padding",
    "UnpaddedRelease",
    "chosen_draws",
    "noise_draw",
]

#: Quantum = the slowest worst-case class's median time times the margin: fixed for
#: scalars; for arrays derived from the calibration's spread, within
#: ``[ARRAY_MIN_MARGIN, ARRAY_MARGIN]`` (:func:`~snapcore.padding.calibrate_quantum`).
SCALAR_MARGIN = 1.15
ARRAY_MARGIN = 1.1
ARRAY_MIN_MARGIN = 1.03
#: Calibration rounds per class of a scalar quantum (and at most per array class).
SCALAR_REPS = 41
#: An array longer than this gets the quantum of this length scaled by the ratio of the
#: lengths (and, on several threads, by :data:`ARRAY_LENGTH_MARGIN`), rounded up, so
#: calibrating never copies a long array.
ARRAY_CALIBRATION_MAX = 1 << 18
#: A longer array released on several threads takes up to this much more per element
#: than one of :data:`ARRAY_CALIBRATION_MAX` elements, whose stream, values and output
#: fit in the caches: the threads share the memory's bandwidth (up to 12 % measured at
#: 10^6-10^7 elements on the 2-core development machine, against 0-3 % on one thread,
#: which keeps the scaled quantum; docs/timing.md, "Releases after other work, long
#: arrays and a busy second core").
ARRAY_LENGTH_MARGIN = Fraction(11, 10)

_now = time.perf_counter_ns

#: ``unpadded_release(source)``: the release of an unpadded copy of the mechanism that
#: draws from ``source`` (what :class:`Padding` times).
UnpaddedRelease = Callable[[RandomSource], Callable[[Any], object]]


class Padding:
    """The padding of one mechanism: its scalar quanta and its array quanta.

    Parameters
    ----------
    calibration : Calibration
        The mechanism's calibration (its public parameters).
    backend : Backend
        The mechanism's backend.
    source : RandomSource
        The mechanism's source: calibration draws from a fresh one of the same kind.
    unpadded_release : callable
        ``unpadded_release(source)`` is the release of an unpadded copy of the
        mechanism drawing from ``source``
        (:meth:`~snapcore.SnappingMechanism.unpadded_copy`).
    scalar_path : callable, optional
        ``scalar_path()`` names the path the backend's fused release of a float takes
        next (``"exact"`` or ``"compiled"``, :meth:`Backend.scalar_padded
        <snapcore.Backend.scalar_padded>`), making a due switch; called before the
        clock starts.  A float's quantum is kept per path.  None: one path.
    threads : int, optional
        The mechanism's ``threads=`` setting: an array's quantum is kept per number of
        threads its release uses (the setting, or for None the usable CPUs from 2**15
        elements on, one below).
    """

    __slots__ = (
        "_backend",
        "_cal",
        "_float",
        "_key",
        "_path",
        "_scalar",
        "_source",
        "_threads",
        "_unpadded",
        "_vector",
        "stats",
    )

    def __init__(
        self,
        calibration: Calibration,
        backend: Backend,
        source: RandomSource,
        unpadded_release: UnpaddedRelease,
        scalar_path: Callable[[], str] | None = None,
        threads: int | None = None,
    ) -> None:
        self._cal = calibration
        self._threads = threads
        self._path = scalar_path
        self._backend = backend
        self._source = source
        self._unpadded = unpadded_release
        # What the quanta depend on, found by identity in the caches.
        self._key = intern_key((calibration, backend.name, type(source).__qualname__))
        self.stats = PaddingStats()
        # (kind, path) -> (generation, quantum): the scalar quanta this mechanism has
        # used, valid while the shared cache has not been cleared (see clear_caches).
        self._scalar: dict[tuple[type, str], tuple[int, int]] = {}
        # (generation, quantum) of a float on its final path (compiled, or the only
        # one): the padded call's first check, without the path's lookup.
        self._float: tuple[int, int] | None = None
        # (generation, size, dtype, threads, quantum) of the last ndarray's quantum:
        # the padded call's lookup for an array of the same length and dtype.
        self._vector: tuple[int, int, np.dtype[Any], int, int] | None = None

    @property
    def mode(self) -> TimingMode:
        """Always ``"constant"`` (an unpadded mechanism has no Padding)."""
        return "constant"

    @property
    def scalar_quantum_ns(self) -> int:
        """The quantum of one scalar release of a float, in ns (calibrated on first use)."""
        return self.scalar_quantum_for(float)

    def scalar_quantum_for(self, kind: type) -> int:
        """The quantum of one scalar release of a value of type ``kind``, in ns.

        The type of a statistic's value is public (it is fixed by code, not data); the
        quantum is calibrated on that type's worst-case classes on first use.  A float's
        quantum is that of the path the backend's fused release takes next (the
        ``scalar_path`` given to the constructor; a process-wide switch, public).
        """
        path = self._path() if kind is float and self._path is not None else "exact"
        hit = self._scalar.get((kind, path))
        if hit is not None and hit[0] == generation() and not SCALAR_QUANTA.every:
            return hit[1]
        q = SCALAR_QUANTA.get((self._key, kind, path), lambda: self._calibrate_scalar(kind, path))
        self._scalar[(kind, path)] = (generation(), q)
        if kind is float and (path == "compiled" or self._path is None):
            self._float = (generation(), q)
        return q

    def array_quantum_ns(self, length: int, container: str = "ndarray", dtype: str = "<f8") -> int:
        """The quantum of one array release of ``length`` elements, in ns.

        A function of ``(length, container, dtype)`` and of the threads the release
        uses (public settings) only, calibrated on first use on worst-case arrays of
        that length (all at a bound, all far outside, mixed, all at the centre, all at
        the grid's half-points).
        """
        n = int(length)
        if n > ARRAY_CALIBRATION_MAX:
            # The array path's time is nearly linear in the length past a few
            # thousand elements (cache-sized chunks, one compiled loop), up to the
            # memory traffic that threads share (ARRAY_LENGTH_MARGIN); calibrating on
            # copies of a long array would cost several times its memory and time.
            part = self.array_quantum_ns(ARRAY_CALIBRATION_MAX, container, dtype)
            more = ARRAY_LENGTH_MARGIN if resolve_threads(self._threads, n) > 1 else 1
            return math.ceil(Fraction(part * n, ARRAY_CALIBRATION_MAX) * more)
        key = (self._key, container, dtype, n, resolve_threads(self._threads, n))
        return ARRAY_QUANTA.get(key, lambda: self._calibrate_array(n, container, dtype))

    def quantum_for(self, value: Any) -> int:
        """The quantum for releasing ``value``: by its type, and for arrays by length.

        Looks only at public properties of ``value`` (its type, dtype and length),
        never at its elements.
        """
        if type(value) is float:  # without the ABC checks below
            return self.scalar_quantum_for(float)
        if isinstance(value, np.ndarray):
            dtype = value.dtype
            if dtype.kind not in "iuf":  # refused by release: no array quantum
                return self.scalar_quantum_for(float)
            n = value.size
            threads = resolve_threads(self._threads, n)
            last = self._vector
            if (
                last is not None
                and last[1] == n
                and last[2] == dtype
                and last[3] == threads
                and last[0] == generation()
                and not ARRAY_QUANTA.every
            ):
                return last[4]
            q = self.array_quantum_ns(n, "ndarray", dtype.str)
            self._vector = (generation(), n, dtype, threads, q)
            return q
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            return self.array_quantum_ns(len(value), "list", "<f8")
        return self.scalar_quantum_for(type(value))

    def padded_call(self, release: Callable[[Any], object], value: Any) -> Any:
        """``release(value)``, returning at a whole number of quanta plus a dither
        (:func:`~snapcore.padding.next_dither`) after it started.

        A float's remembered quantum is read inside the padded window (its few checks
        cost the window's slack, not the call's time); any other lookup, which may
        calibrate, runs before the window starts again.  Invalid input raises at once
        (nothing is drawn, nothing is waited for).
        """
        dither = next_dither()
        start = _now()
        hit = self._float  # a float on its final path: the common case, inline
        if (
            type(value) is float
            and hit is not None
            and hit[0] == generation()
            and not SCALAR_QUANTA.every
        ):
            q = hit[1]
        else:
            q = self.quantum_for(value)
            start = _now()
        out = release(value)
        if type(out) is float:
            # A new object every time: a release may return a shared float (a clamped
            # output is one of four computed once), and whether the caller's dropping
            # it frees memory must not depend on the output.  Exact (−0.0 stays −0.0).
            out = out * 1.0
        pad(start, q, self.stats, dither)
        return out

    # -- calibration -------------------------------------------------------------------
    def _calibrate_scalar(self, kind: type, path: str = "exact") -> int:
        inner = calibration_source(self._source)
        # Fresh draws come from the plain source of the same kind; each chosen draw
        # from its own wrapper of it (a byte source stays a byte source, so the
        # calibration times the same fused release, decoding included, as the padded
        # calls), set before the clock starts.
        release = self._unpadded(inner)
        values = []
        for c in _scalar_classes(self._cal, kind):
            try:
                release(c)
            except Exception:  # a class this type cannot take: not calibrated on
                continue
            values.append(c)
        if not values:
            values = _scalar_classes(self._cal, float)
        # Every value with a fresh draw, and the first three values (centre and both
        # bounds) with each chosen draw.  The compiled path's quantum leaves out the
        # draws it hands to the exact path (an exponent past the first word): they
        # overrun, with probability at most FALLBACK_RATE_BOUND (docs/timing.md).
        draws = chosen_draws(self._cal.precision)
        if path == "compiled":
            draws = [d for d in draws if d[2] + self._cal.precision - 1 > -64]
        # (value, release, chosen draw or None for fresh draws)
        Class = tuple[object, Callable[[Any], object], tuple[int, int, int] | None]
        classes: list[Class] = [(v, release, None) for v in values]
        for d in draws:
            chosen = (
                _ChosenBytes(inner, self._cal.precision)
                if isinstance(inner, ByteSource)
                else _ChosenDraws(inner)
            )
            chosen.chosen = d
            fixed = self._unpadded(chosen)
            classes += [(v, fixed, d) for v in values[:3]]

        def run(cls: Class) -> None:
            cls[1](cls[0])

        return calibrate_quantum(run, classes, reps=SCALAR_REPS, margin=SCALAR_MARGIN, warmup=5)

    def _calibrate_array(self, n: int, container: str, dtype: str) -> int:
        # The array path reads its draws in bulk: the plain source of the same kind (a
        # byte source stays a byte source, so the bulk decoder is used).  Every class
        # is released by one unpadded copy drawing from one source, so that no class
        # reads objects the others do not (a colder cache would make it slower).
        source = calibration_source(self._source)
        forced = self._forced_rows(source, n)
        release = self._unpadded(source if forced is None else forced)
        # (array, elements forced to fall back, release)
        runs: list[tuple[object, int, Callable[[Any], object]]] = [
            (a, 0, release) for a in _array_classes(self._cal, n, container, dtype)
        ]
        if forced is None:

            def run(cls: tuple[object, int, Callable[[Any], object]]) -> None:
                cls[2](cls[0])

        else:
            # The centre, F elements falling back; the other classes' rows are the
            # source's own.
            runs.append((runs[4][0], fallbacks_covered(n), release))

            def run(cls: tuple[object, int, Callable[[Any], object]]) -> None:
                forced.count = cls[1]
                cls[2](cls[0])

        reps = budget_reps(run, runs, SCALAR_REPS)
        return calibrate_quantum(
            run, runs, reps=reps, margin=ARRAY_MARGIN, warmup=1, min_margin=ARRAY_MIN_MARGIN
        )

    def _forced_rows(self, source: RandomSource, n: int) -> _ForcedRows | None:
        """A calibration source of ``source``'s bytes that can make
        :func:`fallbacks_covered` ``(n)`` elements of an array at the centre take the
        fast path's exact fallback (its ``count``, 0 for the other classes), or None
        when an array of ``n`` elements does not go to a batch path with such a
        fallback.

        Such elements are rare events (at most
        :data:`~snapcore.padding._pad.FALLBACK_RATE_BOUND` each), so no ordinary
        calibration class contains one; their cost inside a batch (the exact pipeline
        run cold, after the compiled loop) is measured with these rows, from public
        parameters only: the draw is the p-bit ``U*`` nearest ``exp(−(3/2)·Λ/λ)``,
        whose noise lies within far less than the kernel's error bound of the
        snapping tie at ``(3/2)·Λ`` (the centre's ``x`` is 0).
        """
        backend = self._backend
        if (
            type(backend).batch is Backend.batch
            or n < backend.batch_min_size
            or not isinstance(source, ByteSource)
        ):
            return None
        return _ForcedRows(source, tie_row(self._cal), 0, n)

    def __repr__(self) -> str:
        return f"<Padding {self.stats!r}>"


# -- calibration classes -------------------------------------------------------------
def _scalar_classes(calibration: Calibration, kind: type) -> list[Any]:
    """Worst-case values of type ``kind`` for the scalar path.

    Floats: both bounds, the centre, far outside, subnormals, the doubles next to
    the bounds, non-dyadic fractions of the width.  Ints: the centre, the bounds,
    ±10**300.  Fractions: the float classes and fractions with large odd
    denominators (a mean's).  Other real types: the float classes converted.
    """
    lo, hi = float(calibration.lower), float(calibration.upper)
    c = float(calibration.centre)
    width = hi - lo
    floats = [
        c,
        lo,
        hi,
        math.nextafter(hi, -math.inf),
        math.nextafter(lo, math.inf),
        lo + width / 3.0,
        c + width * 0.1234567891234567,
        5e-324,
        -5e-324,
        -1e300,
        1e300,
        -1.7976931348623157e308,
    ]
    if kind is float:
        return floats
    if kind is int:
        return [int(c), math.floor(lo), math.ceil(hi), 0, -(10**300), 10**300]
    if kind is Fraction:
        exact = [Fraction(x) for x in floats]
        return [*exact, Fraction(5e-324) / 1000003, (Fraction(lo) + Fraction(hi)) / 7]
    out = []
    for x in floats:
        try:
            out.append(kind(x))
        except Exception:  # the type cannot hold this class
            continue
    return out


def _array_classes(calibration: Calibration, n: int, container: str, dtype: str) -> list[Any]:
    """Worst-case arrays of ``n`` elements of ``dtype`` in ``container`` (``"ndarray"`` or
    ``"list"``): all at the upper bound, all at the lower bound, all far outside,
    uniform over twice the interval, all at the centre (fifth), and the grid's
    half-points inside the interval."""
    lo, hi = float(calibration.lower), float(calibration.upper)
    c = float(calibration.centre)
    # The grid's half-points inside the interval: ties of the snapping before the
    # noise, and with the centre the slowest class of the computed output stage.
    step = float(calibration.sensitivity * calibration.granularity)
    if 0.0 < step < math.inf:
        kmax = max(1, min(int(float(calibration.half_width) / step), 1 << 40))
        half = c + ((np.arange(n) % (2 * kmax)) - kmax + 0.5) * step
    else:  # a grid step beyond the double range: no half-point is a double
        half = np.full(n, c)
    base = [
        np.full(n, hi),
        np.full(n, lo),
        np.full(n, 1e300),
        uniform_doubles(lo - (hi - lo), hi + (hi - lo), n),
        np.full(n, c),
        np.clip(half, lo, hi),
    ]
    kind = np.dtype(dtype)
    classes: list[Any] = []
    for a in base:
        if kind.kind in "iu":
            info = np.iinfo(kind)
            a = np.clip(np.round(a), max(info.min, -(2**53)), min(info.max, 2**53)).astype(kind)
        else:
            a = a.astype(kind)
        classes.append(a.tolist() if container == "list" else a)
    return classes


def chosen_draws(precision: int) -> list[tuple[int, int, int]]:
    """Worst-case draws ``(S, mantissa, exponent)`` for calibration: U* just below 1
    (MPFR's ``log1p`` side), within 2**-14 of 1 (where MPFR's ``log`` computes twice:
    the slowest noise stage, about 2**-12.5 of fresh draws), at 1/2, around 2**-40,
    around 2**-100 (an exponent read past the first word of the draw: a fraction
    2**-63 of draws), and a random one.  Draws below 2**-127 (two or more words past
    the first, a fraction 2**-127) are not covered (docs/timing.md)."""
    p = precision
    rnd = random.SystemRandom().getrandbits(p)
    m = (1 << (p - 1)) | (rnd & ((1 << (p - 1)) - 1))
    return [
        (1, (1 << p) - 1, -p),  # 1 - 2**-p
        (1, (((1 << 14) - 1) << (p - 14)) | (m >> 15), -p),  # 1 - U* in (2**-15, 2**-14)
        (-1, 1 << (p - 1), -p),  # 1/2
        (1, m, -(p - 1) - 40),
        (-1, m, -(p - 1) - 100),
        (1, m, -p),
    ]


# -- calibration sources ---------------------------------------------------------------
class _ChosenDraws(RandomSource):
    """A calibration source: reads a draw from a source of the real kind (paying its
    cost), then returns a chosen draw instead when one is set."""

    name = "calibration"

    def __init__(self, inner: RandomSource) -> None:
        self._inner = inner
        self.chosen: tuple[int, int, int] | None = None

    def draw_raw(self, precision: int) -> tuple[int, int, int]:
        d = self._inner.draw_raw(precision)
        return d if self.chosen is None else self.chosen

    def draw(self, precision: int) -> Draw:
        return self._inner.draw(precision)

    def draws(self, count: int, precision: int) -> list[Draw]:
        return self._inner.draws(count, precision)


class _ChosenBytes(ByteSource):
    """:class:`_ChosenDraws` for a byte source: every read reads as many bytes from
    the inner source (paying its cost) and, when a draw is chosen, returns that
    draw's ``snapcore-draw-v1`` bytes instead."""

    name = "calibration"

    def __init__(self, inner: ByteSource, precision: int) -> None:
        super().__init__()
        self._inner = inner
        self._inner_read = inner.read
        self._precision = precision
        self._pattern = b""
        self._offset = 0
        self._chosen: tuple[int, int, int] | None = None
        self._encoded: dict[tuple[int, int, int], bytes] = {}

    @property
    def chosen(self) -> tuple[int, int, int] | None:
        return self._chosen

    @chosen.setter
    def chosen(self, draw: tuple[int, int, int] | None) -> None:
        # Set before every timed call: the encodings are kept, not recomputed.
        self._chosen = draw
        self._offset = 0
        if draw is None:
            self._pattern = b""
        else:
            pattern = self._encoded.get(draw)
            if pattern is None:
                pattern = self._encoded[draw] = encode_draw(Draw(*draw), self._precision)
            self._pattern = pattern

    def read(self, n: int) -> bytes:
        data = self._inner_read(n)
        pattern = self._pattern
        if not pattern:
            return data
        if n == len(pattern) and not self._offset:  # one whole draw: the common case
            return pattern
        start = self._offset
        end = start + n
        # Every release reads its draw's bytes and no more, so a read never wraps.
        if end <= len(pattern):
            out = pattern[start:end]
        else:
            out = (pattern * (end // len(pattern) + 1))[start:end]
        self._offset = end % len(pattern)
        return out


class _ForcedRows(ByteSource):
    """A byte source for calibration: the inner source's bytes, with ``count`` rows of
    each release of ``rows`` draws replaced by ``row``, however the release splits its
    reads into chunks, and through the same path as the inner source (read, read in
    place, or :meth:`~snapcore.ByteSource.reserve` its stream).  ``count`` and ``row``
    (of the same length) may be changed between releases.  The rows' positions are
    random: one of ``POSITIONS`` random sets per count, drawn on first use, in turn,
    so that choosing them costs the timed release almost nothing.  Reads that are not
    whole rows (a continuation word, probability ``2**-63``) are passed through and
    put the row count back in step at the next release."""

    name = "calibration"
    #: Random sets of positions drawn on first use of a count (one per release).
    POSITIONS = 64

    def __init__(self, inner: ByteSource, row: bytes, count: int, rows: int) -> None:
        super().__init__()
        self._inner, self.row, self.rows = inner, row, rows
        self.count = count
        self._at = 0  # rows of the current release read so far
        self._chosen: list[int] = []  # byte offsets of the rows replaced in it
        self._sets: dict[int, list[list[int]]] = {}
        self._turn = 0

    def _take(self, n: int) -> list[int]:
        """Account for the next ``n`` bytes of a release: the byte offsets, within
        them, of the rows to replace."""
        r = len(self.row)
        if n % r:
            self._at = 0
            return []
        if self._at == 0:
            k = min(self.count, self.rows)
            sets = self._sets.get(k)
            if sets is None:
                pick = random.sample
                sets = self._sets[k] = [
                    [j * r for j in sorted(pick(range(self.rows), k))]
                    for _ in range(self.POSITIONS)
                ]
            self._turn = (self._turn + 1) % self.POSITIONS
            self._chosen = sets[self._turn]
            if n == self.rows * r:  # the whole release at once: the offsets as drawn
                return self._chosen
        start, stop = self._at * r, self._at * r + n
        self._at = 0 if stop >= self.rows * r else stop // r
        return [h - start for h in self._chosen if start <= h < stop]

    def _force(self, data: Any, hits: list[int], offset: int = 0) -> None:
        # Bytes ``offset .. offset + len(data)`` of a read whose rows start at
        # ``hits``: write the part of each such row that falls in ``data``.
        row = self.row
        r, size = len(row), len(data)
        for h in hits:
            a = h - offset
            if 0 <= a <= size - r:
                data[a : a + r] = row
            elif -r < a < size:
                lo, hi = max(a, 0), min(a + r, size)
                data[lo:hi] = row[lo - a : hi - a]

    def read(self, n: int) -> bytes:
        hits = self._take(n)
        data = self._inner.read(n)
        if not hits:
            return data
        out = bytearray(data)
        self._force(out, hits)
        return bytes(out)

    def readinto(self, buffer: Any) -> None:
        mv = memoryview(buffer).cast("B")
        hits = self._take(len(mv))
        self._inner.readinto(mv)  # in place, as the real source's read
        self._force(mv, hits)

    def reserve(self, n: int) -> Callable[[int, Any], None] | None:
        fill = self._inner.reserve(n)
        if fill is None:
            return None
        hits = self._take(n)
        if not hits:
            return fill
        force = self._force

        def forced(offset: int, buffer: Any) -> None:
            fill(offset, buffer)
            force(memoryview(buffer).cast("B"), hits, offset)

        return forced
