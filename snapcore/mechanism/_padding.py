"""Constant-time releases: each release takes a whole number of fixed time quanta.

A release's running time is a side channel: Jin, McMurtry, Rubinstein and Ohrimenko
(IEEE S&P 2022) recovered private values from the time DP libraries took to sample
noise.  snapcore closes it by **padding** (the "timing-stable step plus delay" of
Ratliff and Vadhan, CCS 2024, with a deterministic delay): a protected call measures
its start with :func:`time.perf_counter_ns`, runs, then waits until
``start + j·q``, the first multiple ``j >= 1`` of a quantum ``q`` not yet passed.
``q`` is calibrated once per mechanism configuration from the unprotected time of
worst-case inputs, never from the private data:

- scalar releases: one quantum per (calibration, backend, source kind);
- arrays: a quantum per (container, dtype, **length**): a function of the length only;
- statistics (:func:`snapcore.release`): a quantum around the whole call per
  (statistic, public parameters, public n), calibrated on synthetic data of that shape.

An overrun (a call slower than ``q``, from a GC pause, preemption or an input outside
the calibrated classes) rounds up to the next multiple and is counted
(:class:`PaddingStats`), so time reveals at most *which* multiple.  See
``docs/timing.md`` for the argument and what is not covered.

The switch: ``timing="constant"`` pads, ``timing="off"`` does not; the default
(``None``) pads exactly when the source is cryptographic (``system``, ``chacha20``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from fractions import Fraction
from typing import Any, Literal, TypeVar

import numpy as np

from snapcore.errors import ParameterError
from snapcore.randomness._sources import ByteSource, Draw, encode_draw

__all__ = [
    "FALLBACK_RATE_BOUND",
    "FALLBACK_RISK",
    "MODES",
    "Padding",
    "PaddingStats",
    "QuantaStore",
    "TimingMode",
    "calibrate_quantum",
    "default_store_path",
    "fallbacks_covered",
    "machine_fingerprint",
    "mechanism_padding",
    "noise_draw",
    "pad",
    "padded_release",
    "padded_statistic",
    "quanta_store",
    "resolve_mode",
    "statistic_stats",
    "wait_until",
]

TimingMode = Literal["constant", "off"]
#: The values of the ``timing=`` switch (``None`` means: by the source).
MODES: tuple[str, ...] = ("constant", "off")

#: Quantum = the slowest worst-case class's ``QUANTILE`` time times the margin.
QUANTILE = 0.5
SCALAR_MARGIN = 1.15
ARRAY_MARGIN = 1.1
STATISTIC_MARGIN = 1.2
#: An array longer than this gets the quantum of this length scaled by the ratio of the
#: lengths (rounded up), so calibrating never copies a long array.
ARRAY_CALIBRATION_MAX = 1 << 18
#: Calibration repetitions per class (scalar) and the time budget for arrays.
SCALAR_REPS = 41
ARRAY_BUDGET_NS = 100_000_000
STATISTIC_REPS = 15
#: With ``timing=None`` (the default), a statistic's whole release is padded only up to
#: this public n: its quantum is calibrated by releasing synthetic data of that size
#: several times, which at data scale would cost more than the release itself (and the
#: memory of the synthetic copies).  Above it the mechanism's releases are still
#: padded; ``timing="constant"`` pads the whole release at any n.
STATISTIC_DEFAULT_MAX_N = 100_000
#: The fast path's exact fallback (snapcore.pipeline._fastpath): an upper bound on the probability
#: that one element of an array, with fresh draws from a CSPRNG, is handed to the exact
#: pipeline (docs/timing.md, "Exact fallbacks in arrays"), and the probability left
#: uncovered: an array's quantum covers the smallest number F of exact elements such
#: that more than F occur with probability at most ``FALLBACK_RISK``.
FALLBACK_RATE_BOUND = 2.0**-40
FALLBACK_RISK = 2.0**-64
#: A quantum is measured again after this many uses (0: never, the default; see
#: docs/timing.md: on a loaded machine it tracks the load, but its effect on the
#: leak measurement is not yet settled).
RECALIBRATE_SCALAR = 0
RECALIBRATE_ARRAY = 0
#: At most this many quanta are remembered per cache (least recently used dropped).
CACHE_SIZE = 256
#: A quantum kept in a :class:`QuantaStore` is used for this long after its measurement.
STORE_MAX_AGE_S = 3600.0

_now = time.perf_counter_ns
F = TypeVar("F", bound=Callable[..., Any])


def resolve_mode(timing: Any, source: Any) -> TimingMode:
    """The effective mode for ``timing=`` and a source (instance, class or name).

    ``None`` gives ``"constant"`` for a cryptographic source and ``"off"`` otherwise.

    Raises
    ------
    ParameterError
        If ``timing`` is not None, ``"constant"`` or ``"off"``.
    """
    if timing is None:
        return "constant" if _is_cryptographic(source) else "off"
    if isinstance(timing, str) and timing in MODES:
        return "constant" if timing == "constant" else "off"
    raise ParameterError(f"timing must be None, 'constant' or 'off', got {timing!r}")


def _is_cryptographic(source: Any) -> bool:
    if source is None:
        return True  # the default is the OS CSPRNG
    if isinstance(source, str):
        from snapcore.plugins._manager import get_registries

        reg = get_registries().sources
        try:
            source = reg.get(source)
        except Exception:  # an unknown name: the caller reports it
            return False
    return bool(getattr(source, "cryptographic", False))


# -- waiting -----------------------------------------------------------------------
def wait_until(deadline_ns: int) -> None:
    """Return at the first :func:`time.perf_counter_ns` reading >= ``deadline_ns``.

    Spins on the clock, never sleeps: a sleep's wake-up latency (tens of microseconds
    with Linux's default timer slack, milliseconds on a loaded machine) is larger than
    a scalar quantum and grows with the time slept, so a call that finished early
    would return later than one that finished late.  Spinning keeps the whole quantum
    CPU-bound, whatever part of it the release used.
    """
    now = _now
    while now() < deadline_ns:
        pass


class PaddingStats:
    """Counters of padded calls: how many, how many overran, the largest multiple.

    Thread-safe.  ``overruns`` counts calls that took more than one quantum; each
    returned at the next multiple of its quantum.
    """

    __slots__ = ("_lock", "calls", "max_multiple", "overruns")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.overruns = 0
        self.max_multiple = 0

    def record(self, multiple: int) -> None:
        """Count one call that ended at ``multiple`` quanta."""
        self.count()
        self.overran(multiple)

    def count(self) -> None:
        """Count one call (:func:`pad` does it before the deadline)."""
        with self._lock:
            self.calls += 1
            if self.max_multiple < 1:
                self.max_multiple = 1

    def overran(self, multiple: int) -> None:
        """Record the multiple of a counted call (an overrun when above 1)."""
        if multiple > 1:
            with self._lock:
                self.overruns += 1
                if multiple > self.max_multiple:
                    self.max_multiple = multiple

    def __repr__(self) -> str:
        return (
            f"PaddingStats(calls={self.calls}, overruns={self.overruns}, "
            f"max_multiple={self.max_multiple})"
        )


def pad(start_ns: int, quantum_ns: int, stats: PaddingStats | None = None) -> int:
    """Wait until ``start_ns + j·quantum_ns`` for the least ``j >= 1`` not yet passed.

    Returns ``j`` (1 unless the call overran) and records it in ``stats``.
    """
    now = _now
    deadline = start_ns + quantum_ns
    if stats is not None:
        stats.count()  # before the deadline: after it, a call that fits does nothing
    # The first reading decides and is also the first step of the spin: a call whose
    # work ends just before the deadline then leaves at the first reading past it,
    # like every other call, and not after a longer gap between a decision and a
    # separate waiting loop (a gap hit more often by classes with less slack).
    t = now()
    if t < deadline:
        while t < deadline:
            t = now()
        return 1
    j = -(-(t - start_ns) // quantum_ns)
    wait_until(start_ns + j * quantum_ns)
    if stats is not None:
        stats.overran(j)
    return j


def calibrate_quantum(
    run: Callable[[Any], object],
    classes: Sequence[Any],
    *,
    reps: int,
    margin: float,
    warmup: int = 2,
) -> int:
    """A quantum in ns: the slowest class's :data:`QUANTILE` time times ``margin``.

    Each class is run ``warmup`` times first (caches, lazy imports, compilation),
    then ``reps`` rounds run every class once, in a fresh random order per round, so
    that the machine's drift affects all classes alike.
    """
    rng = np.random.default_rng()
    for c in classes:
        for _ in range(warmup):
            run(c)
    times: list[list[int]] = [[] for _ in classes]
    order = np.arange(len(classes))
    for _ in range(reps):
        rng.shuffle(order)
        for i in order.tolist():
            t = _now()
            run(classes[i])
            times[i].append(_now() - t)
    worst = max(_quantile(t, QUANTILE) for t in times)
    return max(1, math.ceil(worst * margin))


def _budget_reps(run: Callable[[Any], object], classes: Sequence[Any], cap: int) -> int:
    """Rounds for :func:`calibrate_quantum` within :data:`ARRAY_BUDGET_NS` (5 to
    ``cap``), from one timed run of the first class."""
    t0 = _now()
    run(classes[0])
    one = max(1, _now() - t0)
    return int(max(5, min(cap, ARRAY_BUDGET_NS // (one * len(classes)))))


def fallbacks_covered(length: int) -> int:
    """How many exact fallback elements an array's quantum covers: the least ``F >= 1``
    with ``P(more than F) <= FALLBACK_RISK`` when each of ``length`` elements falls back
    independently with probability at most :data:`FALLBACK_RATE_BOUND`.

    Uses the bound ``P(X >= F + 1) <= C(n, F + 1)·p**(F + 1) <= (n·p)**(F + 1)/(F + 1)!``
    for ``X ~ Binomial(n, p)``, in base-2 logarithms.  A function of the length only.
    """
    n = max(1, int(length))
    log_mu = math.log2(n) + math.log2(FALLBACK_RATE_BOUND)
    log_risk = math.log2(FALLBACK_RISK)
    f = 1
    while (f + 1) * log_mu - math.lgamma(f + 2) / math.log(2) > log_risk:
        f += 1
    return f


def _quantile(xs: list[int], q: float) -> float:
    if len(xs) == 1:
        return float(xs[0])
    return float(np.quantile(np.asarray(xs, dtype=np.float64), q))


class QuantaStore:
    """Calibrated quanta kept across processes, in an SQLite file.

    A one-shot process (the command line) would otherwise calibrate its quanta on
    every run, which costs more than the release itself.  A quantum is a function of
    public parameters and of the machine only (it is measured on synthetic, public
    inputs), so keeping it discloses nothing about any data.  An entry is used only
    on the machine and software that measured it (:func:`machine_fingerprint`) and
    for :data:`STORE_MAX_AGE_S` seconds after it was measured, so the quanta follow
    the machine's load at that pace.  The store is a cache: when it cannot be opened,
    read or written (a read-only directory, a damaged file), quanta are measured in
    the process as without it.

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file (created with mode 0600 in a directory of mode 0700).
    max_age_s : float
        How long an entry is used after its measurement.
    """

    def __init__(self, path: str | os.PathLike[str], max_age_s: float | None = None) -> None:
        self.path = os.fspath(path)
        self.max_age_s = STORE_MAX_AGE_S if max_age_s is None else float(max_age_s)

    def _connect(self) -> Any:
        import sqlite3

        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        con = sqlite3.connect(self.path, timeout=2.0)
        con.execute(
            "CREATE TABLE IF NOT EXISTS quanta (key TEXT PRIMARY KEY, fingerprint TEXT "
            "NOT NULL, quantum_ns INTEGER NOT NULL, measured_at REAL NOT NULL)"
        )
        return con

    @staticmethod
    def _text(key: Hashable) -> str | None:
        text = repr(key)
        # A key that prints an object's address is not stable across processes.
        return None if " at 0x" in text else text

    def load(self, key: Hashable) -> int | None:
        """The stored quantum for ``key``, or None (absent, stale, another machine)."""
        text = self._text(key)
        if text is None:
            return None
        try:
            con = self._connect()
            try:
                row = con.execute(
                    "SELECT quantum_ns, measured_at FROM quanta WHERE key = ? AND fingerprint = ?",
                    (text, machine_fingerprint()),
                ).fetchone()
            finally:
                con.close()
        except Exception:  # a cache: measure in the process instead
            return None
        if row is None:
            return None
        q, at = int(row[0]), float(row[1])
        if q < 1 or not 0.0 <= time.time() - at <= self.max_age_s:
            return None
        return q

    def save(self, key: Hashable, quantum_ns: int) -> None:
        """Record a quantum just measured (silently skipped when the store is unusable)."""
        text = self._text(key)
        if text is None:
            return
        try:
            con = self._connect()
            try:
                with con:
                    con.execute(
                        "INSERT OR REPLACE INTO quanta VALUES (?, ?, ?, ?)",
                        (text, machine_fingerprint(), int(quantum_ns), time.time()),
                    )
            finally:
                con.close()
        except Exception:
            return


@functools.cache
def machine_fingerprint() -> str:
    """What a stored quantum is tied to: host, processor, Python and library versions."""
    import platform
    import sys

    # The package's version string (the package is imported before any of its modules;
    # reading its distribution metadata instead would parse the README-sized METADATA).
    ours = str(getattr(sys.modules.get("snapcore"), "__version__", "source"))

    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if "model name" in ln), None)
    except OSError:
        pass
    if cpu is None:  # platform.processor() may run a subprocess (uname -p): only if needed
        cpu = platform.processor()
    return "|".join(
        [
            platform.node(),
            platform.machine(),
            cpu,
            str(os.cpu_count()),
            platform.python_implementation(),
            platform.python_version(),
            ours,
            np.__version__,
        ]
    )


def default_store_path() -> str:
    """``$XDG_CACHE_HOME/snapcore/quanta.sqlite3`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "snapcore", "quanta.sqlite3")


_STORE: list[QuantaStore | None] = [None]


@contextlib.contextmanager
def quanta_store(store: QuantaStore | str | os.PathLike[str] | None) -> Iterator[None]:
    """Within the block, look calibrated quanta up in ``store`` (and record new ones).

    ``None`` keeps quanta in the process only (the default outside any block).  The
    command line uses :func:`default_store_path`, or the path in the environment
    variable ``SNAPCORE_TIMING_STORE`` (``off`` for none).
    """
    if store is not None and not isinstance(store, QuantaStore):
        store = QuantaStore(store)
    previous = _STORE[0]
    _STORE[0] = store
    try:
        yield
    finally:
        _STORE[0] = previous


class _LRU:
    """A small thread-safe least-recently-used map of calibrated quanta.

    With ``every > 0``, each quantum is measured again after every ``every`` uses (a
    count of calls, which is public), so that it follows the machine's load: a quantum
    measured in a quiet moment makes many calls overrun when the load rises.  Within
    :func:`quanta_store`, a quantum missing here is looked up in the store before it
    is measured, and a newly measured one is recorded there.
    """

    def __init__(self, name: str, every: int, size: int = CACHE_SIZE) -> None:
        self._d: OrderedDict[Hashable, list[int]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self._name = name
        self.every = every

    def get(self, key: Hashable, compute: Callable[[], int]) -> int:
        with self._lock:
            entry = self._d.get(key)
            if entry is not None:
                self._d.move_to_end(key)
                entry[1] += 1
                if not self.every or entry[1] < self.every:
                    return entry[0]
                entry[1] = 0  # measured again: the stored quantum is as old as ours
            due = entry is not None
        store = _STORE[0]
        stored = None if store is None or due else store.load((self._name, key))
        if stored is not None:
            q = stored
        else:
            q = compute()  # outside the lock: calibration runs releases
            if store is not None:
                store.save((self._name, key), q)
        with self._lock:
            self._d[key] = [q, 0]
            self._d.move_to_end(key)
            while len(self._d) > self._size:
                self._d.popitem(last=False)
        return q

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


_SCALAR = _LRU("scalar", RECALIBRATE_SCALAR)
_ARRAY = _LRU("array", RECALIBRATE_ARRAY)
_STATISTIC = _LRU("statistic", RECALIBRATE_ARRAY)
_STATISTIC_STATS = PaddingStats()


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _INTERN_LOCK
    for c in (_SCALAR, _ARRAY, _STATISTIC):
        c._lock = threading.Lock()
    _STATISTIC_STATS._lock = threading.Lock()
    _INTERN_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: Bumped by clear_caches: quanta remembered by a Padding from an older generation are
#: looked up again.
_GENERATION = [0]


def clear_caches() -> None:
    """Forget every calibrated quantum (they are measured again when next needed)."""
    for c in (_SCALAR, _ARRAY, _STATISTIC):
        c.clear()
    _GENERATION[0] += 1


def statistic_stats() -> PaddingStats:
    """The process-wide counters of padded :func:`snapcore.release` calls."""
    return _STATISTIC_STATS


# -- the mechanism -----------------------------------------------------------------
def _calibration_source(source: Any) -> Any:
    """A source of the same kind for calibration runs, never the caller's own stream.

    A fresh instance when the class needs no arguments (system, chacha20), else a
    seeded stream (calibration draws are discarded).
    """
    from snapcore.randomness._sources import SeededSource

    try:
        return type(source)()
    except TypeError:
        return SeededSource(0)


def _scalar_classes(mech: Any, kind: type) -> list[Any]:
    """Worst-case values of type ``kind`` for the scalar path.

    Floats: both bounds, the centre, far outside, subnormals, the doubles next to
    the bounds, non-dyadic fractions of the width.  Ints: the centre, the bounds,
    ±10**300.  Fractions: the float classes and fractions with large odd
    denominators (a mean's).  Other real types: the float classes converted.
    """
    lo, hi = mech.clamp_bounds
    c = float(mech.calibration.centre)
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
    from fractions import Fraction

    if kind is Fraction:
        fr = [Fraction(x) for x in floats]
        return [*fr, Fraction(5e-324) / 1000003, (Fraction(lo) + Fraction(hi)) / 7]
    out = []
    for x in floats:
        try:
            out.append(kind(x))
        except Exception:  # the type cannot hold this class
            continue
    return out


class _ChosenDraws:
    """A calibration source: reads a draw from a source of the real kind (paying its
    cost), then returns a chosen draw instead when one is set."""

    cryptographic = False
    name = "calibration"

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.chosen: tuple[int, int, int] | None = None

    def draw_raw(self, precision: int) -> tuple[int, int, int]:
        d = self._inner.draw_raw(precision)
        return d if self.chosen is None else self.chosen

    def draw(self, precision: int) -> Any:
        return self._inner.draw(precision)

    def draws(self, count: int, precision: int) -> Any:
        return self._inner.draws(count, precision)


class _ChosenBytes(ByteSource):
    """:class:`_ChosenDraws` for a byte source: every read reads as many bytes from
    the inner source (paying its cost) and, when a draw is chosen, returns that
    draw's ``snapcore-draw-v1`` bytes instead.  A byte source, so the calibration
    times the same fused release (decoding included) as the padded calls."""

    name = "calibration"

    def __init__(self, inner: ByteSource, precision: int) -> None:
        super().__init__()
        self._inner = inner
        self._p = precision
        self._pattern = b""
        self._off = 0
        self._chosen: tuple[int, int, int] | None = None
        self._encoded: dict[tuple[int, int, int], bytes] = {}

    @property
    def chosen(self) -> tuple[int, int, int] | None:
        return self._chosen

    @chosen.setter
    def chosen(self, draw: tuple[int, int, int] | None) -> None:
        # Set before every timed call: the encodings are kept, not recomputed.
        self._chosen = draw
        self._off = 0
        if draw is None:
            self._pattern = b""
        else:
            pat = self._encoded.get(draw)
            if pat is None:
                pat = self._encoded[draw] = encode_draw(Draw(*draw), self._p)
            self._pattern = pat

    def read(self, n: int) -> bytes:
        data = self._inner.read(n)
        pat = self._pattern
        if not pat:
            return data
        off = self._off
        end = off + n
        # Every release reads its draw's bytes and no more, so a read never wraps.
        out = pat[off:end] if end <= len(pat) else (pat * (end // len(pat) + 1))[off:end]
        self._off = end % len(pat)
        return out


def chosen_draws(precision: int) -> list[tuple[int, int, int]]:
    """Worst-case draws ``(S, mantissa, exponent)`` for calibration: U* just below 1
    (MPFR's ``log1p`` side), within 2**-14 of 1 (where MPFR's ``log`` computes twice:
    the slowest noise stage, about 2**-12.5 of fresh draws), at 1/2, around 2**-40,
    around 2**-100 (an exponent read past the first word of the draw: a fraction
    2**-63 of draws), and a random one.  Draws below 2**-127 (two or more words past
    the first, a fraction 2**-127) are not covered (docs/timing.md)."""
    p = precision
    rnd = int.from_bytes(np.random.default_rng().bytes((p + 7) // 8), "big")
    m = (1 << (p - 1)) | (rnd & ((1 << (p - 1)) - 1))
    return [
        (1, (1 << p) - 1, -p),  # 1 - 2**-p
        (1, (((1 << 14) - 1) << (p - 14)) | (m >> 15), -p),  # 1 - U* in (2**-15, 2**-14)
        (-1, 1 << (p - 1), -p),  # 1/2
        (1, m, -(p - 1) - 40),
        (-1, m, -(p - 1) - 100),
        (1, m, -p),
    ]


def noise_draw(mech: Any, noise: Fraction) -> Draw:
    """The draw (sign +) whose ``U*`` is the p-bit number nearest ``exp(−noise/λ)``, so
    that its noise ``λ·|ln U*|`` is ``noise`` to within a rounding: a chosen draw, from
    public parameters only (calibration classes, the timing benchmark).

    ``exp`` is evaluated at ``4p`` bits and that value rounded once to ``p`` bits.
    """
    import gmpy2

    from snapcore.exact._dyadic import round_fraction

    p: int = mech.precision
    ratio = Fraction(noise) / mech.calibration.scale
    with gmpy2.context(gmpy2.get_context(), precision=4 * p):
        u = gmpy2.exp(-gmpy2.mpq(ratio.numerator, ratio.denominator))
    m, e = round_fraction(Fraction(*u.as_integer_ratio()), p)
    return Draw(1, m, e)


def _tie_row(mech: Any) -> bytes:
    """The ``snapcore-draw-v1`` row of :func:`noise_draw` ``(mech, (3/2)·Λ)``: a
    near-tie of the snapping for ``x = 0``."""
    return encode_draw(
        noise_draw(mech, Fraction(3, 2) * mech.calibration.granularity), mech.precision
    )


class _ForcedRows(ByteSource):
    """A byte source for calibration: the inner source's bytes, with ``count`` rows of
    each multi-row read (at random row positions) replaced by ``row``."""

    name = "calibration"

    def __init__(self, inner: ByteSource, row: bytes, count: int) -> None:
        super().__init__()
        self._inner, self._row, self._count = inner, row, count

    def read(self, n: int) -> bytes:
        data = bytearray(self._inner.read(n))
        r = len(self._row)
        if n % r == 0 and n // r > self._count:
            for j in random.sample(range(n // r), self._count):
                data[j * r : (j + 1) * r] = self._row
        return bytes(data)


class _NullPadding:
    """Goes through the padded call's own steps with a quantum of 1 ns (calibration)."""

    def quantum_for(self, value: Any) -> int:
        return Padding.quantum_for(self, value)  # type: ignore[arg-type]

    def scalar_quantum_for(self, kind: type) -> int:
        return 1

    def array_quantum_ns(self, length: int, container: str = "ndarray", dtype: str = "<f8") -> int:
        return 1

    def finish(self, start_ns: int, quantum_ns: int) -> int:
        return pad(start_ns, quantum_ns, None)


def _sibling(mech: Any) -> Any:
    """A shallow copy of ``mech`` with a calibration source and a 1 ns quantum."""
    sib = copy.copy(mech)
    inner = _calibration_source(mech.source)
    src: Any = (
        _ChosenBytes(inner, mech.precision)
        if isinstance(inner, ByteSource)
        else _ChosenDraws(inner)
    )
    sib._source = src
    sib._timing = _NullPadding()
    # The backend's fused release bound to the calibration source, as the padded
    # mechanism's own is bound to its source: the calibration times that path.
    fused = mech.backend.scalar_padded(mech._pipeline, src)
    sib._scalar = None if fused is None else (src, fused)
    return sib


class Padding:
    """The padding of one mechanism: its scalar quantum and its array quanta.

    Parameters
    ----------
    mech : SnappingMechanism
        The mechanism to pad (its unpadded ``release`` is used for calibration,
        with a separate source of the same kind).
    key : hashable
        What the quanta depend on (the calibration, backend and source kind).
    """

    __slots__ = ("_key", "_mech", "_scalar", "stats")

    def __init__(self, mech: Any, key: Hashable) -> None:
        self._mech = mech
        self._key = key
        self.stats = PaddingStats()
        # kind -> (generation, quantum): the scalar quanta this mechanism has used,
        # valid while the shared cache has not been cleared (see clear_caches).
        self._scalar: dict[type, tuple[int, int]] = {}

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
        quantum is calibrated on that type's worst-case classes on first use.
        """
        hit = self._scalar.get(kind)
        if hit is not None and hit[0] == _GENERATION[0] and not _SCALAR.every:
            return hit[1]
        q = _SCALAR.get((self._key, kind), lambda: self._calibrate_scalar(kind))
        self._scalar[kind] = (_GENERATION[0], q)
        return q

    def _calibrate_scalar(self, kind: type) -> int:
        sib = _sibling(self._mech)
        src = sib._source
        # Time what the quantum covers: the unpadded release, without the padding's
        # own lookup before the clock starts.
        release = type(self._mech).release
        raw = getattr(release, "__wrapped__", release)
        values = []
        for c in _scalar_classes(self._mech, kind):
            try:
                raw(sib, c)
            except Exception:  # a class this type cannot take: not calibrated on
                continue
            values.append(c)
        if not values:
            values = _scalar_classes(self._mech, float)
        # Every value with a fresh draw, and the first three values (centre and both
        # bounds) with each chosen draw.
        classes: list[tuple[Any, Any]] = [(v, None) for v in values]
        classes += [(v, d) for v in values[:3] for d in chosen_draws(self._mech.precision)]

        def run(cls: tuple[Any, Any]) -> None:
            src.chosen = cls[1]
            raw(sib, cls[0])

        return calibrate_quantum(run, classes, reps=SCALAR_REPS, margin=SCALAR_MARGIN, warmup=5)

    def array_quantum_ns(self, length: int, container: str = "ndarray", dtype: str = "<f8") -> int:
        """The quantum of one array release of ``length`` elements, in ns.

        A function of ``(length, container, dtype)`` only, calibrated on first use on
        worst-case arrays of that length (all at a bound, all far outside, mixed, all at
        the centre, all at the grid's half-points).
        """
        n = int(length)
        if n > ARRAY_CALIBRATION_MAX:
            # The array path's time is linear in the length past a few thousand
            # elements (cache-sized chunks, one compiled loop); calibrating on copies
            # of a long array would cost several times its memory and time.
            part = self.array_quantum_ns(ARRAY_CALIBRATION_MAX, container, dtype)
            return -(-part * n // ARRAY_CALIBRATION_MAX)
        key = (self._key, container, dtype, n)
        return _ARRAY.get(key, lambda: self._calibrate_array(n, container, dtype))

    def _calibrate_array(self, n: int, container: str, dtype: str) -> int:
        sib = _sibling(self._mech)
        # The array path reads its draws in bulk: give it the plain source of the same
        # kind (a byte source stays a byte source, so the bulk decoder is used).
        sib._source = sib._source._inner
        lo, hi = self._mech.clamp_bounds
        c = float(self._mech.calibration.centre)
        rng = np.random.default_rng()
        # The grid's half-points inside the interval: ties of the snapping before the
        # noise, and with the centre the slowest class of the computed output stage.
        step = float(self._mech.grid_step)
        if 0.0 < step < math.inf:
            kmax = max(1, min(int(float(self._mech.half_width) / step), 1 << 40))
            half = c + ((np.arange(n) % (2 * kmax)) - kmax + 0.5) * step
        else:  # a grid step beyond the double range: no half-point is a double
            half = np.full(n, c)
        base = [
            np.full(n, hi),
            np.full(n, lo),
            np.full(n, 1e300),
            rng.uniform(lo - (hi - lo), hi + (hi - lo), n),
            np.full(n, c),
            np.clip(half, lo, hi),
        ]
        dt = np.dtype(dtype)
        classes: list[Any] = []
        for a in base:
            if dt.kind in "iu":
                info = np.iinfo(dt)
                a = np.clip(np.round(a), max(info.min, -(2**53)), min(info.max, 2**53)).astype(dt)
            else:
                a = a.astype(dt)
            classes.append(a.tolist() if container == "list" else a)
        runs: list[tuple[Any, Any]] = [(a, sib) for a in classes]
        forced = self._forced_fallbacks(sib, n)
        if forced is not None:
            runs.append((classes[4], forced))  # the centre, F elements falling back

        def run(cls: tuple[Any, Any]) -> None:
            cls[1].release(cls[0])

        reps = _budget_reps(run, runs, SCALAR_REPS)
        return calibrate_quantum(run, runs, reps=reps, margin=ARRAY_MARGIN, warmup=1)

    def _forced_fallbacks(self, sib: Any, n: int) -> Any:
        """A calibration copy whose draws make :func:`fallbacks_covered` ``(n)`` elements
        of an array at the centre take the fast path's exact fallback, or None when an
        array of ``n`` elements does not go to a batch path with such a fallback.

        Such elements are rare events (at most :data:`FALLBACK_RATE_BOUND` each), so no
        ordinary calibration class contains one; their cost inside a batch (the exact
        pipeline run cold, between compiled chunks) is measured here, from public
        parameters only: the draw is the p-bit ``U*`` nearest ``exp(−(3/2)·Λ/λ)``,
        whose noise lies within far less than the kernel's error bound of the snapping
        tie at ``(3/2)·Λ`` (the centre's ``x`` is 0).
        """
        from snapcore.pipeline._backend import Backend

        backend, src = self._mech.backend, sib._source
        if (
            type(backend).batch is Backend.batch
            or n < backend.batch_min_size
            or not isinstance(src, ByteSource)
        ):
            return None
        forced = copy.copy(sib)
        forced._source = _ForcedRows(src, _tie_row(self._mech), fallbacks_covered(n))
        return forced

    def quantum_for(self, value: Any) -> int:
        """The quantum for releasing ``value``: by its type, and for arrays by length.

        Looks only at public properties of ``value`` (its type, dtype and length),
        never at its elements.
        """
        if type(value) is float:  # the common case, without the ABC checks below
            return self.scalar_quantum_for(float)
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "iuf":  # refused by release: no array quantum
                return self.scalar_quantum_for(float)
            return self.array_quantum_ns(value.size, "ndarray", value.dtype.str)
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            return self.array_quantum_ns(len(value), "list", "<f8")
        return self.scalar_quantum_for(type(value))

    def finish(self, start_ns: int, quantum_ns: int) -> int:
        """Pad a release that started at ``start_ns``; returns the multiple."""
        return pad(start_ns, quantum_ns, self.stats)

    def __repr__(self) -> str:
        return f"<Padding {self.stats!r}>"


class _Key:
    """A cache key hashed once, shared by every equal key (see :func:`_interned`).

    A mechanism's key holds its :class:`~snapcore.calibration._params.Calibration` (a dozen
    Fractions): hashing and comparing it on every release cost about as much as the
    release itself.  Interned keys are found by identity.
    """

    __slots__ = ("_hash", "key")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _Key) and self.key == other.key)

    def __repr__(self) -> str:
        return repr(self.key)


_INTERNED: dict[Hashable, _Key] = {}
_INTERN_LOCK = threading.Lock()


def _interned(key: Hashable) -> _Key:
    """The one :class:`_Key` for ``key`` in this process (at most :data:`CACHE_SIZE`
    kept; a dropped one is only re-created, never wrong)."""
    with _INTERN_LOCK:
        k = _INTERNED.get(key)
        if k is None:
            if len(_INTERNED) >= CACHE_SIZE:
                _INTERNED.pop(next(iter(_INTERNED)))
            k = _INTERNED[key] = _Key(key)
        return k


def mechanism_padding(mech: Any, timing: Any) -> Padding | None:
    """The :class:`Padding` for a new mechanism, or None when ``timing`` resolves to off.

    Raises
    ------
    ParameterError
        If ``timing`` is not None, ``"constant"`` or ``"off"``.
    """
    if resolve_mode(timing, mech.source) == "off":
        return None
    key = (mech.calibration, mech.backend.name, type(mech.source).__qualname__)
    return Padding(mech, _interned(key))


def padded_release(fn: F) -> F:
    """Decorate ``SnappingMechanism.release``: pad each call by its ``_timing``.

    Invalid input raises at once (nothing is drawn, nothing is waited for).
    """

    @functools.wraps(fn)
    def release(self: Any, value: Any) -> Any:
        guard: Padding | None = self._timing
        if guard is None:
            return fn(self, value)
        q = guard.quantum_for(value)  # calibrated on first use, before the clock starts
        start = _now()
        out = fn(self, value)
        if type(out) is float:
            # A new object every time: a release may return a shared float (a clamped
            # output is one of four computed once), and whether the caller's dropping
            # it frees memory must not depend on the output.  Exact (−0.0 stays −0.0).
            out = out * 1.0
        guard.finish(start, q)
        return out

    return release  # type: ignore[return-value]


# -- statistics --------------------------------------------------------------------
_SYNTHETIC_KINDS = ("spread", "subnormal", "outside", "lower", "upper")


def _synthetic(
    n: int, columns: int, bounds: Any, options: dict[str, Any], like: Any, kind: str
) -> tuple[Any, Any]:
    """Public worst-case data of ``n`` records shaped like ``like``; and ``column=``.

    ``kind`` is one of :data:`_SYNTHETIC_KINDS`: full-mantissa doubles spread over
    twice the data bounds (about half clamped), with subnormals and ±1e300 mixed in;
    all subnormal; all far outside; all at the lower or the upper bound.  Categories
    cycle when the statistic takes ``categories``.
    """
    rng = np.random.default_rng()
    cats = options.get("categories")
    cols: list[np.ndarray] = []
    for j in range(max(columns, 1)):
        if cats is not None:
            cat_list = list(cats)
            cols.append(np.array([cat_list[i % len(cat_list)] for i in range(n)], dtype=object))
            continue
        if bounds is not None:
            lo, hi = bounds[j] if columns > 1 else bounds[0]
        elif options.get("bins") is not None:
            lo, hi = float(options["bins"][0]), float(options["bins"][-1])
        else:
            lo, hi = -1.0, 1.0
        w = hi - lo
        if kind == "spread":
            col = rng.uniform(lo - w / 2, hi + w / 2, n)
            col[0:n:97] = 5e-324
            col[1:n:89] = 1e300
            col[2:n:83] = -1e300
        elif kind == "subnormal":
            col = np.where(np.arange(n) % 2 == 0, 5e-324, -5e-324 * 3)
        elif kind == "outside":
            col = np.where(np.arange(n) % 2 == 0, 1e300, -1e300)
        else:
            col = np.full(n, lo if kind == "lower" else hi)
        cols.append(col)
    if columns == 0:
        cols = [np.zeros(n)]
    if isinstance(like, list | tuple):
        if len(cols) == 1:
            return cols[0].tolist(), None
        return [list(r) for r in zip(*(c.tolist() for c in cols), strict=True)], None
    if len(cols) == 1:
        return cols[0], None
    names = [f"c{j}" for j in range(len(cols))]
    return dict(zip(names, cols, strict=True)), tuple(names)


def _stat_key(kw: dict[str, Any], n: int | None) -> Hashable | None:
    try:
        parts = tuple(sorted((k, repr(v)) for k, v in kw.items() if k not in ("data", "budget")))
    except Exception:
        return None
    return (parts, n)


def padded_statistic(fn: F) -> F:
    """Decorate :func:`snapcore.release`: pad the whole call to a quantum that depends on
    the statistic, its public parameters and the public n only.

    The quantum is calibrated on the first call with a given key by releasing
    synthetic data of that shape (with a separate source of the same kind, no budget);
    if the statistic cannot release synthetic data (a plugin with its own data
    format), the call is not padded beyond its mechanism and the release says so in
    its notes.
    """

    @functools.wraps(fn)
    def release(statistic: Any, data: Any, **kw: Any) -> Any:
        mode = resolve_mode(kw.get("timing"), kw.get("source"))
        if mode == "off":
            return fn(statistic, data, **kw)
        start = _now()
        out = fn(statistic, data, **kw)
        key = _stat_key({"statistic": statistic, **kw}, out.n)
        if kw.get("timing") is None and out.n is not None and out.n > STATISTIC_DEFAULT_MAX_N:
            return _note(
                out,
                f"timing: the statistic's computation is padded by default only up to "
                f"n = {STATISTIC_DEFAULT_MAX_N} records (timing='constant' pads it at any "
                "n); the mechanism's releases were padded",
            )
        if key is None or out.n is None:
            return _note(out, "timing: not padded (no public size or unhashable parameters)")
        t_cal = _now()
        try:
            q = _STATISTIC.get(key, lambda: _calibrate_statistic(fn, statistic, data, out, kw))
        except Exception as exc:  # the statistic cannot release synthetic data
            return _note(
                out,
                "timing: the statistic could not be calibrated on synthetic data "
                f"({type(exc).__name__}); only the mechanism's releases were padded",
            )
        # A first call's calibration (synthetic data only) is not part of its quantum.
        pad(start + (_now() - t_cal), q, _STATISTIC_STATS)
        return out

    return release  # type: ignore[return-value]


def _calibrate_statistic(
    fn: Callable[..., Any], statistic: Any, data: Any, out: Any, kw: dict[str, Any]
) -> int:
    from snapcore.plugins._manager import resolve_statistic

    stat = resolve_statistic(statistic)
    src = kw.get("source")
    # A name (or None) makes each release build a fresh source, as the caller's calls
    # do; an instance is replaced by a fresh one of the same kind (the caller's stream
    # is never read).
    cal_src = src if src is None or isinstance(src, str) else _calibration_source(src)
    bounds = out.data_bounds
    options = {k: kw[k] for k in stat.options if k in kw}
    ckw = dict(kw)
    ckw.update(source=cal_src, budget=None, timing=kw.get("timing") or "constant")
    classes = []
    for kind in _SYNTHETIC_KINDS:
        synth, column = _synthetic(int(out.n), stat.columns, bounds, options, data, kind)
        if column is not None:
            ckw["column"] = column if len(column) > 1 else column[0]
        elif kw.get("column") is not None:  # a table with a named column (the CLI, frames)
            name = kw["column"]
            synth = {name if isinstance(name, str) else name[0]: synth}
        classes.append(synth)

    def run(d: Any) -> Any:
        return fn(statistic, d, **ckw)

    return calibrate_quantum(
        run,
        classes,
        reps=_budget_reps(run, classes, STATISTIC_REPS),
        margin=STATISTIC_MARGIN,
        warmup=1,
    )


def _note(out: Any, note: str) -> Any:
    import attrs

    return attrs.evolve(out, notes=(*out.notes, note))
