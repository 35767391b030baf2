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
import contextvars
import functools
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, Literal, TypeVar

import attrs
import numpy as np

from snapcore.calibration._params import Calibration
from snapcore.errors import ParameterError
from snapcore.randomness._draw import Draw, encode_draw
from snapcore.randomness._sources import RandomSource, SeededSource

__all__ = [
    "ARRAY_BUDGET_NS",
    "DITHER_BLOCK",
    "DITHER_NS",
    "FALLBACK_RATE_BOUND",
    "FALLBACK_RISK",
    "FLOOR_ROUNDS",
    "MIN_REPS",
    "MODES",
    "PAUSE",
    "QUANTILE",
    "SPREAD_QUANTILE",
    "PaddingStats",
    "RandomDelay",
    "TimingGuarantee",
    "TimingMode",
    "active_delay",
    "bernoulli_exp",
    "budget_reps",
    "calibrate_quantum",
    "calibration_source",
    "check_timing",
    "discrete_laplace",
    "fallbacks_covered",
    "measuring_floor",
    "measuring_quantum",
    "next_dither",
    "noise_draw",
    "pad",
    "random_delay",
    "resolve_mode",
    "tie_row",
    "uniform_doubles",
    "wait_until",
]

TimingMode = Literal["constant", "off"]
#: The values of the ``timing=`` switch (``None`` means: by the source).
MODES: tuple[TimingMode, ...] = ("constant", "off")

#: A quantum is the slowest worst-case class's ``QUANTILE`` time times a margin.
QUANTILE = 0.5
#: A spread-calibrated quantum (arrays, statistics) leaves out every calibration time
#: above ``PAUSE`` times the slowest class's least time: a loaded machine pre-empts a
#: call of a millisecond or more every few calls (another process's time slice), for
#: milliseconds, which no quantum within its margin absorbs.
PAUSE = 2.0
#: The least number of rounds of a calibration within a time budget: with one call in
#: two paused (seen on a loaded 2-core machine), all of a class's rounds are paused
#: with probability ``2**-MIN_REPS``.
MIN_REPS = 7
#: With a spread-derived margin (``min_margin``), the margin is the ``SPREAD_QUANTILE``
#: of the calibration's times relative to their class's time, within bounds.
SPREAD_QUANTILE = 0.9
#: The time :func:`budget_reps` gives a calibration (arrays and statistics).
ARRAY_BUDGET_NS = 100_000_000
#: The fast path's exact fallback (snapcore.pipeline._engine): an upper bound on the
#: probability that one element of an array, with fresh draws from a CSPRNG, is handed
#: to the exact pipeline (docs/timing.md, "Exact fallbacks in arrays"), and the
#: probability left uncovered: an array's quantum covers the smallest number F of exact
#: elements such that more than F occur with probability at most ``FALLBACK_RISK``:
#: the same δ per release as the compiled scalar path's overrun (docs/timing.md).
FALLBACK_RATE_BOUND = 2.0**-40
FALLBACK_RISK = 2.0**-40

#: Rounds of every class behind a floor (``measuring_floor()``).
FLOOR_ROUNDS = 3

_now = time.perf_counter_ns
#: A padded call's deadline is offset by a dither uniform over ``range(DITHER_NS)`` ns
#: (:func:`next_dither`): several periods of the waiting loop's clock readings, a
#: fraction of a scalar quantum (docs/timing.md, "The dither").
DITHER_NS = 768
#: 10-bit words read from the OS at a time for dithers (about 3 in 4 become one).
DITHER_BLOCK = 4096
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
    next multiple of its quantum.  ``far_overruns`` counts those that took more than
    two (what a :class:`RandomDelay` with its default bound does not cover).
    """

    __slots__ = ("__weakref__", "_lock", "calls", "far_overruns", "max_multiple", "overruns")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.overruns = 0
        self.far_overruns = 0
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
                if multiple > 2:
                    self.far_overruns += 1
                if multiple > self.max_multiple:
                    self.max_multiple = multiple

    def reset_lock(self) -> None:
        """A new lock, in a forked child: one held by another thread at the fork would
        never be released there."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"PaddingStats(calls={self.calls}, overruns={self.overruns}, "
            f"far_overruns={self.far_overruns}, max_multiple={self.max_multiple})"
        )


#: Every live :class:`PaddingStats` (each mechanism's padding has one).
_LIVE_STATS: weakref.WeakSet[PaddingStats] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    for stats in list(_LIVE_STATS):
        stats.reset_lock()
    _DITHERS.clear()  # the parent's read-ahead dithers: the child draws its own


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def pad(
    start_ns: int, quantum_ns: int, stats: PaddingStats | None = None, dither_ns: int = 0
) -> int:
    """Wait until ``start_ns + j·quantum_ns + dither_ns`` for the least ``j >= 1`` not
    yet passed.

    ``dither_ns`` (:func:`next_dither`, drawn before the call started) spreads the
    spin's length over several periods of its clock readings, so that where the first
    reading past the deadline falls does not follow the work's own length
    (docs/timing.md, "The dither").  Returns ``j`` (1 unless the call overran) and
    records it in ``stats``.
    """
    now = _now
    start_ns += dither_ns
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


_DITHERS: list[int] = []
_dither_pop = _DITHERS.pop  # refilled in place, so this stays the list's pop


def next_dither() -> int:
    """The next dither in ns for :func:`pad`: uniform over ``range(DITHER_NS)``, from
    the OS CSPRNG (a block of them is read every few thousand calls, so call it before
    the padded call's clock starts; a forked child reads its own)."""
    try:
        return _dither_pop()
    except IndexError:
        # 10-bit words below DITHER_NS: uniform by rejection (about 3 in 4 kept).
        words = np.frombuffer(os.urandom(2 * DITHER_BLOCK), dtype=np.uint16) & np.uint16(1023)
        _DITHERS[:] = words[words < DITHER_NS].tolist()
        return _dither_pop()


#: The OS CSPRNG (``os.urandom``, as ``secrets``) for the calibration's orders and
#: synthetic data and for the random delay: from Python's ``random`` module, which the
#: standard library a release uses has loaded already (``numpy.random`` and ``secrets``
#: would add their imports to every command's start-up).
_SYSTEM = random.SystemRandom()


def uniform_doubles(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` doubles uniform over ``[lo, hi)`` from the OS CSPRNG, formed as NumPy's
    ``Generator.uniform`` forms them: ``lo + (hi − lo)·u`` with ``u`` a random multiple
    of ``2**-53`` in ``[0, 1)`` (the top 53 bits of a random 64-bit word)."""
    words = np.frombuffer(_SYSTEM.randbytes(8 * n), dtype=np.uint64)
    u = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return lo + (hi - lo) * u


# -- measuring a quantum -------------------------------------------------------------
def calibrate_quantum(
    run: Callable[[C], object],
    classes: Sequence[C],
    *,
    reps: int,
    margin: float,
    warmup: int = 2,
    min_margin: float | None = None,
    spread_quantile: float = SPREAD_QUANTILE,
) -> int:
    """A quantum in ns: the slowest class's time times a margin.

    Each class is run ``warmup`` times first (caches, lazy imports, compilation),
    then ``reps`` rounds run every class once, in a fresh random order per round, so
    that the machine's drift affects all classes alike.

    Without ``min_margin``: the slowest class's ``QUANTILE`` (median) time times
    ``margin``.  With it (arrays, statistics), the times above ``PAUSE`` times the
    slowest class's least time are left out as pauses of the machine (a class's
    ordinary spread is far smaller), and the quantum is the slowest class's median
    time without them, times a margin derived from the calibration's spread: one plus
    the ``spread_quantile`` of the kept times' excess over their class's median,
    relative to it, within ``[min_margin, margin]``.  Under the jitter measured,
    about ``1 − spread_quantile`` of the slowest class's calls then overrun; on a
    machine whose jitter is larger the margin is ``margin``.

    Within ``measuring_floor()`` it returns the classes' floor instead: the least
    time of the slowest class (see there).
    """
    if not (isinstance(spread_quantile, float) and 0.0 < spread_quantile <= 1.0):
        raise ParameterError(
            "spread_quantile must be a float in (0, 1], got "
            f"{type(spread_quantile).__name__} {spread_quantile!r}"
        )
    if getattr(_FLOOR, "on", False):
        return _floor(run, classes)
    for c in classes:
        for _ in range(warmup):
            run(c)
    k = len(classes)
    times = np.empty((reps, k), np.float64)
    order = list(range(k))
    for r in range(reps):
        _SYSTEM.shuffle(order)
        for i in order:
            t = _now()
            run(classes[i])
            times[r, i] = _now() - t
    if min_margin is None:
        return max(1, math.ceil(float(np.quantile(times, QUANTILE, axis=0).max()) * margin))
    kept = np.where(times <= PAUSE * times.min(axis=0).max(), times, np.nan)
    each = np.maximum(np.nanquantile(kept, QUANTILE, axis=0), 1.0)
    excess = float(np.nanquantile(kept / each - 1.0, spread_quantile))
    spread = min(margin, max(min_margin, 1.0 + excess))
    return max(1, math.ceil(float(each.max()) * spread))


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
    with _floor_mode(True):
        yield


@contextlib.contextmanager
def measuring_quantum() -> Iterator[None]:
    """Within the block (in this thread), :func:`calibrate_quantum` measures a quantum,
    also inside a ``measuring_floor()`` block: a quantum calibrated while a floor is
    measured (a statistic's synthetic releases calibrating their mechanism's quanta)
    is a quantum."""
    with _floor_mode(False):
        yield


@contextlib.contextmanager
def _floor_mode(on: bool) -> Iterator[None]:
    previous = getattr(_FLOOR, "on", False)
    _FLOOR.on = on
    try:
        yield
    finally:
        _FLOOR.on = previous


def _floor(run: Callable[[C], object], classes: Sequence[C]) -> int:
    for c in classes:
        run(c)
    best = [math.inf] * len(classes)
    order = list(range(len(classes)))
    for _ in range(FLOOR_ROUNDS):
        _SYSTEM.shuffle(order)
        for i in order:
            t = _now()
            run(classes[i])
            best[i] = min(best[i], _now() - t)
    return max(1, int(max(best)))


def budget_reps(run: Callable[[C], object], classes: Sequence[C], cap: int) -> int:
    """Rounds for :func:`calibrate_quantum` within :data:`ARRAY_BUDGET_NS`
    (``MIN_REPS`` to ``cap``), from the least time of three runs of the first class
    (one run may be paused by the machine, see :data:`PAUSE`)."""
    one = math.inf
    for _ in range(3):
        t0 = _now()
        run(classes[0])
        one = min(one, max(1, _now() - t0))
    return int(max(MIN_REPS, min(cap, ARRAY_BUDGET_NS // (one * len(classes)))))


@functools.lru_cache(maxsize=256)
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


def noise_draw(calibration: Calibration, noise: Fraction) -> Draw:
    """The draw (sign +) whose ``U*`` is the p-bit number nearest ``exp(−noise/λ)``, so
    that its noise ``λ·|ln U*|`` is ``noise`` to within a rounding: a chosen draw, from
    public parameters only (calibration classes, the padded arrays' dummies, the
    timing benchmark).

    ``exp`` is evaluated at ``4p`` bits and that value rounded once to ``p`` bits.
    """
    import gmpy2

    from snapcore.exact._dyadic import round_fraction

    p = calibration.precision
    ratio = Fraction(noise) / calibration.scale
    with gmpy2.context(gmpy2.get_context(), precision=4 * p):
        u = gmpy2.exp(-gmpy2.mpq(ratio.numerator, ratio.denominator))
    m, e = round_fraction(Fraction(*u.as_integer_ratio()), p)
    return Draw(1, m, e)


def tie_row(calibration: Calibration) -> bytes:
    """The ``snapcore-draw-v1`` bytes of :func:`noise_draw` ``(calibration, (3/2)·Λ)``:
    a near-tie of the snapping for ``x = 0`` (the centre), which the fast path's
    kernel leaves to the exact pipeline."""
    noise = Fraction(3, 2) * calibration.granularity
    return encode_draw(noise_draw(calibration, noise), calibration.precision)


def calibration_source(source: RandomSource) -> RandomSource:
    """A source of the same kind as ``source`` for calibration runs, never the caller's
    own stream: a fresh instance when the class needs no arguments (system, chacha20),
    else a seeded stream (calibration draws are discarded)."""
    try:
        return type(source)()
    except TypeError:
        return SeededSource(0)


# -- a random delay: the running time itself (ε_t, δ_t)-DP ----------------------------
RandBelow = Callable[[int], int]


def _randbelow(n: int) -> int:
    return _SYSTEM.randrange(n)


def bernoulli_exp(gamma: Fraction, randbelow: RandBelow = _randbelow) -> bool:
    """True with probability ``exp(−gamma)``, exactly, for a rational ``gamma >= 0``
    (Canonne, Kamath and Steinke 2020, Algorithm 1): only uniform integers, no floats."""
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ParameterError(f"gamma must be >= 0, got {gamma}")
    while gamma > 1:
        if not _bernoulli_exp_at_most_1(Fraction(1), randbelow):
            return False
        gamma -= 1
    return _bernoulli_exp_at_most_1(gamma, randbelow)


def _bernoulli_exp_at_most_1(gamma: Fraction, randbelow: RandBelow) -> bool:
    k = 1
    while True:
        p = gamma / k  # Bernoulli(gamma / k)
        if randbelow(p.denominator) >= p.numerator:
            return k % 2 == 1
        k += 1


def discrete_laplace(scale: Fraction, randbelow: RandBelow = _randbelow) -> int:
    """An integer ``y`` with probability proportional to ``exp(−|y|/scale)``, exactly,
    for a rational ``scale > 0`` (Canonne, Kamath and Steinke 2020, Algorithm 2)."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ParameterError(f"scale must be > 0, got {scale}")
    t, s = scale.numerator, scale.denominator
    while True:
        u = randbelow(t)
        if not bernoulli_exp(Fraction(u, t), randbelow):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), randbelow):
            v += 1
        y = (u + t * v) // s
        negative = randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _positive_fraction(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_: Any, __: Any, value: Any) -> None:
        if not isinstance(value, Fraction) or value <= 0:
            raise ParameterError(f"{name} must be a real number > 0, got {value!r}")

    return check


def _probability(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, float) or not 0.0 <= value < 1.0:
        raise ParameterError(f"{attribute.name} must be a float in [0, 1), got {value!r}")


def _to_fraction(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        return value  # refused by the validator, with the type in the message
    if isinstance(value, float) and not math.isfinite(value):
        return value
    return Fraction(value)


def _to_probability(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        return value
    return float(value)


def _whole_ns(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"{attribute.name} must be an int >= 1 (ns), got {value!r}")


@attrs.frozen(kw_only=True)
class TimingGuarantee:
    """What a release's running time reveals: it is (ε_t, δ_t)-DP (Ratliff and Vadhan,
    CCS 2024), given the timing-stability assumption it states.

    The assumption: for every input, the padded call's time ``T`` (from its start to
    the end of its last quantum) lies in ``[q, q + bound_ns]`` except with probability
    at most ``overrun_risk``.  With ``bound_ns = q + jitter`` that is "at most one
    overrun multiple", whatever the machine's speed does to the overrun *rates*.

    Attributes
    ----------
    epsilon : float
        ε_t of the claim, rounded up: ``epsilon_delay + ln(1/(1 − overrun_risk))``.
    delta : float
        δ_t of the claim, rounded up: the delay's truncation plus ``overrun_risk``.
    epsilon_delay : Fraction
        ``bound_ns / scale_ns``, exact: the delay's own ε (what a budget is charged).
    quantum_ns : int
        The padded call's quantum ``q``.
    bound_ns : int
        The timing-stability bound assumed, in ns.
    scale_ns : Fraction
        The scale of the discrete Laplace delay, in ns.
    shift_ns : int
        The delay's shift: it lies in ``[0, 2·shift_ns]``.
    overrun_risk : float
        The stated bound on ``P(T ∉ [q, q + bound_ns])``.
    basis : str
        How the bounds were obtained: what was measured, how, on which machine.
    """

    epsilon: float
    delta: float
    epsilon_delay: Fraction
    quantum_ns: int
    bound_ns: int
    scale_ns: Fraction
    shift_ns: int
    overrun_risk: float
    basis: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (exact values as strings besides floats)."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_delay": float(self.epsilon_delay),
            "epsilon_delay_exact": str(self.epsilon_delay),
            "quantum_ns": self.quantum_ns,
            "bound_ns": self.bound_ns,
            "scale_ns": str(self.scale_ns),
            "shift_ns": self.shift_ns,
            "overrun_risk": self.overrun_risk,
            "basis": self.basis,
        }


def _optional_whole_ns(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None:
        _whole_ns(instance, attribute, value)


def _non_negative_ns(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(f"{attribute.name} must be an int >= 0 (ns), got {value!r}")


@attrs.frozen(kw_only=True)
class RandomDelay:
    """A random delay after a padded call: ``clamp(shift + L, 0, 2·shift)`` ns with ``L``
    discrete Laplace of scale ``bound/epsilon`` (sampled exactly), from the OS CSPRNG.

    Observed from its start, a padded call returns at ``T + delay``, ``T = j·q``.  If
    for every input ``T`` lies in ``[q, q + bound]`` except with probability ``r =
    overrun_risk``, that time is (ε_t, δ_t)-DP with ``ε_t = epsilon + ln(1/(1 − r))``
    and ``δ_t = P(|L| >= shift − bound) + r`` (docs/timing.md, "A random delay").  The
    shift is the least giving ``P(|L| >= shift − bound) <= delta``.

    Parameters
    ----------
    epsilon : real > 0
        The delay's ε: the scale is ``bound/epsilon``.
    bound_ns : int >= 1, optional
        The timing-stability bound in ns.  Default: one quantum plus ``jitter_ns``, per
        call (then ``T ∈ [q, q + bound]`` means at most one overrun multiple).
    jitter_ns : int >= 0
        The spread of a padded call's exit past its deadline, in ns (the default bound
        adds it to the quantum).
    delta : float in (0, 1)
        The truncation's share of δ_t.
    overrun_risk : float in [0, 1)
        The stated ``r`` (measured: ``PaddingStats.far_overruns`` counts calls of
        three or more quanta).
    basis : str
        How ``bound``, ``jitter_ns`` and ``overrun_risk`` were obtained (recorded).
    charge : bool
        Whether a release with a ``budget=`` also charges ``epsilon`` to it.
    """

    epsilon: Fraction = attrs.field(
        converter=_to_fraction, validator=_positive_fraction("epsilon")
    )
    bound_ns: int | None = attrs.field(default=None, validator=_optional_whole_ns)
    jitter_ns: int = attrs.field(default=1_000, validator=_non_negative_ns)
    delta: float = attrs.field(default=2.0**-30, converter=_to_probability, validator=_probability)
    overrun_risk: float = attrs.field(
        default=0.0, converter=_to_probability, validator=_probability
    )
    basis: str = attrs.field(
        default="stated by the caller", validator=attrs.validators.instance_of(str)
    )
    charge: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if self.delta <= 0.0:
            raise ParameterError(f"delta must be > 0, got {self.delta!r}")

    def bound_for(self, quantum_ns: int) -> int:
        """The timing-stability bound for a call of quantum ``quantum_ns``."""
        return self.bound_ns if self.bound_ns is not None else quantum_ns + self.jitter_ns

    def scale_for(self, quantum_ns: int) -> Fraction:
        """The discrete Laplace scale ``bound/epsilon``, in ns."""
        return Fraction(self.bound_for(quantum_ns)) / self.epsilon

    def shift_for(self, quantum_ns: int) -> int:
        """The least shift whose truncation probability is at most ``delta``."""
        return self.bound_for(quantum_ns) + _tail_steps(self.scale_for(quantum_ns), self.delta)

    def truncation(self, quantum_ns: int) -> float:
        """``P(|L| >= shift − bound)``, rounded up."""
        bound = self.bound_for(quantum_ns)
        return _two_tails(self.scale_for(quantum_ns), self.shift_for(quantum_ns) - bound)

    def guarantee(self, quantum_ns: int) -> TimingGuarantee:
        """The (ε_t, δ_t) claim of a call of quantum ``quantum_ns`` followed by this delay."""
        r = self.overrun_risk
        eps = float(self.epsilon) - math.log1p(-r)
        eps = math.nextafter(eps * (1.0 + 2.0**-50), math.inf)
        delta = min(1.0, math.nextafter(self.truncation(quantum_ns) + r, math.inf))
        return TimingGuarantee(
            epsilon=eps,
            delta=delta,
            epsilon_delay=self.epsilon,
            quantum_ns=quantum_ns,
            bound_ns=self.bound_for(quantum_ns),
            scale_ns=self.scale_for(quantum_ns),
            shift_ns=self.shift_for(quantum_ns),
            overrun_risk=r,
            basis=self.basis,
        )

    def sample_ns(self, quantum_ns: int, randbelow: RandBelow = _randbelow) -> int:
        """One delay in ``[0, 2·shift]`` ns for a call of quantum ``quantum_ns``."""
        shift = self.shift_for(quantum_ns)
        noise = discrete_laplace(self.scale_for(quantum_ns), randbelow)
        return min(2 * shift, max(0, shift + noise))


def _two_tails(scale: Fraction, m: int) -> float:
    """``P(|L| >= m) = 2·α**m/(1 + α)`` for ``α = exp(−1/scale)`` and ``m >= 1``, rounded
    up (a relative margin of 2**-40 over the float evaluation)."""
    log_alpha = -1.0 / float(scale)
    value = 2.0 * math.exp(m * log_alpha) / (1.0 + math.exp(log_alpha))
    return min(1.0, value * (1.0 + 2.0**-40) + 5e-324)


def _tail_steps(scale: Fraction, delta: float) -> int:
    """The least ``m >= 1`` with ``P(|L| >= m) <= delta``."""
    m = max(1, math.ceil(float(scale) * math.log(2.0 / delta)) - 2)
    while _two_tails(scale, m) > delta:
        m += 1
    while m > 1 and _two_tails(scale, m - 1) <= delta:
        m -= 1
    return m


_DELAY: contextvars.ContextVar[RandomDelay | None] = contextvars.ContextVar(
    "snapcore_random_delay", default=None
)


@contextlib.contextmanager
def random_delay(delay: RandomDelay | None) -> Iterator[None]:
    """Within the block, every release padded as a whole (:func:`snapcore.release`,
    with or without ``by=``) is followed by a draw of ``delay``, and its record carries
    the :class:`TimingGuarantee` (``Release.timing_guarantee``); None for none."""
    if delay is not None and not isinstance(delay, RandomDelay):
        raise ParameterError(f"delay must be a RandomDelay or None, got {type(delay).__name__}")
    token = _DELAY.set(delay)
    try:
        yield
    finally:
        _DELAY.reset(token)


def active_delay() -> RandomDelay | None:
    """The :class:`RandomDelay` of the innermost :func:`random_delay` block, or None."""
    return _DELAY.get()
