"""Padding a call to a whole number of time quanta, and measuring a quantum.

A padded call measures its start with :func:`time.perf_counter_ns`, runs, then waits
until ``start + j·q``, the first multiple ``j >= 1`` of its quantum ``q`` not yet
passed (:func:`pad`).  ``q`` is measured (:func:`calibrate_quantum`) on worst-case
inputs that are public, never on private data.  An overrun (a call slower than ``q``)
rounds up to the next multiple and is counted (:class:`PaddingStats`), so time reveals
at most *which* multiple.  See ``docs/timing.md``.

The switch is ``timing=``: ``"constant"`` pads, ``"off"`` does not, and the default
(None) pads exactly when the source is cryptographic (:func:`resolve_mode`).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

import numpy as np

from snapcore.errors import ParameterError
from snapcore.randomness._sources import RandomSource, SeededSource

__all__ = [
    "ARRAY_BUDGET_NS",
    "FALLBACK_RATE_BOUND",
    "FALLBACK_RISK",
    "FLOOR_ROUNDS",
    "MODES",
    "QUANTILE",
    "PaddingStats",
    "TimingMode",
    "budget_reps",
    "calibrate_quantum",
    "calibration_source",
    "check_timing",
    "fallbacks_covered",
    "measuring_floor",
    "pad",
    "resolve_mode",
    "wait_until",
]

TimingMode = Literal["constant", "off"]
#: The values of the ``timing=`` switch (``None`` means: by the source).
MODES: tuple[TimingMode, ...] = ("constant", "off")

#: A quantum is the slowest worst-case class's ``QUANTILE`` time times a margin.
QUANTILE = 0.5
#: The time :func:`budget_reps` gives a calibration (arrays and statistics).
ARRAY_BUDGET_NS = 100_000_000
#: The fast path's exact fallback (snapcore.pipeline._engine): an upper bound on the
#: probability that one element of an array, with fresh draws from a CSPRNG, is handed
#: to the exact pipeline (docs/timing.md, "Exact fallbacks in arrays"), and the
#: probability left uncovered: an array's quantum covers the smallest number F of exact
#: elements such that more than F occur with probability at most ``FALLBACK_RISK``.
FALLBACK_RATE_BOUND = 2.0**-40
FALLBACK_RISK = 2.0**-64

#: Rounds of every class behind a floor (:func:`measuring_floor`).
FLOOR_ROUNDS = 3

_now = time.perf_counter_ns
C = TypeVar("C")
_FLOOR = threading.local()


def check_timing(timing: object) -> TimingMode | None:
    """``timing=`` checked: None (by the source), ``"constant"`` or ``"off"``.

    Raises
    ------
    ParameterError
        If ``timing`` is anything else.
    """
    if timing is None:
        return None
    if isinstance(timing, str) and timing in MODES:
        return "constant" if timing == "constant" else "off"
    raise ParameterError(f"timing must be None, 'constant' or 'off', got {timing!r}")


def resolve_mode(timing: object, cryptographic: bool) -> TimingMode:
    """The effective mode for ``timing=`` and a source that is ``cryptographic`` or not.

    None gives ``"constant"`` for a cryptographic source and ``"off"`` otherwise.

    Raises
    ------
    ParameterError
        If ``timing`` is not None, ``"constant"`` or ``"off"``.
    """
    mode = check_timing(timing)
    if mode is None:
        return "constant" if cryptographic else "off"
    return mode


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

    Thread-safe, and fork-safe: a forked child gives every live instance a new lock.
    ``overruns`` counts calls that took more than one quantum; each returned at the
    next multiple of its quantum.
    """

    __slots__ = ("__weakref__", "_lock", "calls", "max_multiple", "overruns")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.overruns = 0
        self.max_multiple = 0
        _LIVE_STATS.add(self)

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

    def reset_lock(self) -> None:
        """A new lock, in a forked child: one held by another thread at the fork would
        never be released there."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"PaddingStats(calls={self.calls}, overruns={self.overruns}, "
            f"max_multiple={self.max_multiple})"
        )


#: Every live :class:`PaddingStats` (each mechanism's padding has one).
_LIVE_STATS: weakref.WeakSet[PaddingStats] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    for stats in list(_LIVE_STATS):
        stats.reset_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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


# -- measuring a quantum -------------------------------------------------------------
def calibrate_quantum(
    run: Callable[[C], object],
    classes: Sequence[C],
    *,
    reps: int,
    margin: float,
    warmup: int = 2,
) -> int:
    """A quantum in ns: the slowest class's ``QUANTILE`` time times ``margin``.

    Each class is run ``warmup`` times first (caches, lazy imports, compilation),
    then ``reps`` rounds run every class once, in a fresh random order per round, so
    that the machine's drift affects all classes alike.

    Within :func:`measuring_floor` it returns the classes' floor instead: the least
    time of the slowest class (see there).
    """
    if getattr(_FLOOR, "on", False):
        return _floor(run, classes)
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


@contextlib.contextmanager
def measuring_floor() -> Iterator[None]:
    """Within the block (in this thread), :func:`calibrate_quantum` returns a **floor**
    instead of a quantum: each class runs once to warm up, then ``FLOOR_ROUNDS`` rounds
    in a fresh random order, and the floor is the slowest class's least time, in ns.

    A quantum below its floor is overrun by every call of the slowest class even in
    the machine's fastest moment (it would switch the padding off); a quantum read
    from a :class:`~snapcore.padding.QuantaStore` is checked against it.  Measuring a
    floor runs the calibration's own classes (public inputs) a few times, a fraction
    of a calibration's runs.
    """
    previous = getattr(_FLOOR, "on", False)
    _FLOOR.on = True
    try:
        yield
    finally:
        _FLOOR.on = previous


def _floor(run: Callable[[C], object], classes: Sequence[C]) -> int:
    rng = np.random.default_rng()
    for c in classes:
        run(c)
    best = [math.inf] * len(classes)
    order = np.arange(len(classes))
    for _ in range(FLOOR_ROUNDS):
        rng.shuffle(order)
        for i in order.tolist():
            t = _now()
            run(classes[i])
            best[i] = min(best[i], _now() - t)
    return max(1, int(max(best)))


def budget_reps(run: Callable[[C], object], classes: Sequence[C], cap: int) -> int:
    """Rounds for :func:`calibrate_quantum` within :data:`ARRAY_BUDGET_NS` (5 to
    ``cap``), from one timed run of the first class."""
    t0 = _now()
    run(classes[0])
    one = max(1, _now() - t0)
    return int(max(5, min(cap, ARRAY_BUDGET_NS // (one * len(classes)))))


def _quantile(xs: list[int], q: float) -> float:
    if len(xs) == 1:
        return float(xs[0])
    return float(np.quantile(np.asarray(xs, dtype=np.float64), q))


def fallbacks_covered(length: int) -> int:
    """How many exact fallback elements an array's quantum covers: the least ``F >= 1``
    with ``P(more than F) <= FALLBACK_RISK`` when each of ``length`` elements falls back
    independently with probability at most ``FALLBACK_RATE_BOUND``.

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


def calibration_source(source: RandomSource) -> RandomSource:
    """A source of the same kind as ``source`` for calibration runs, never the caller's
    own stream: a fresh instance when the class needs no arguments (system, chacha20),
    else a seeded stream (calibration draws are discarded)."""
    try:
        return type(source)()
    except TypeError:
        return SeededSource(0)
