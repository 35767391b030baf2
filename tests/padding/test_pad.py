"""Padding a call to a whole number of quanta, and measuring a quantum
(snapcore.padding._pad).

A padded call never returns before its quantum, an overrun ends at the next multiple
and is counted, a quantum covers the slowest class, the switch's default follows the
source, and an array's quantum covers as many exact fallbacks as the stated risk asks.
Whether time still leaks is measured by ``benchmarks/timing_leak.py``, never asserted
here.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from fractions import Fraction
from typing import Any

import pytest

from snapcore.errors import ParameterError
from snapcore.padding import _pad
from snapcore.plugins._manager import get_registries

MS = 1_000_000


def test_pad_never_returns_before_its_quantum() -> None:
    for q in (1, 50_000, 3 * MS):
        start = time.perf_counter_ns()
        j = _pad.pad(start, q)
        assert j >= 1
        assert time.perf_counter_ns() - start >= j * q


def test_an_overrun_rounds_up_to_the_next_multiple() -> None:
    q = 100 * MS
    stats = _pad.PaddingStats()
    start = time.perf_counter_ns() - 250 * MS  # the call "took" 2.5 quanta
    j = _pad.pad(start, q, stats)
    end = time.perf_counter_ns()
    assert j == 3
    assert end - start >= 3 * q
    assert (stats.calls, stats.overruns, stats.max_multiple) == (1, 1, 3)
    _pad.pad(time.perf_counter_ns(), 50 * MS, stats)
    assert (stats.calls, stats.overruns, stats.max_multiple) == (2, 1, 3)


def test_a_call_that_fits_does_nothing_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pad`` counts the call before its first clock reading, and a call that fits
    returns at the first reading past the deadline with nothing after it: code run
    after the deadline is timed by the caller, unpadded.  An overrun records its
    multiple after waiting (it is visible anyway)."""
    events: list[str] = []
    clock = iter([100, 150, 199, 200, 1000, 1000])

    def fake_now() -> int:
        events.append("now")
        return next(clock)

    class Recording(_pad.PaddingStats):
        def count(self) -> None:
            events.append("count")

        def overran(self, multiple: int) -> None:
            events.append(f"overran {multiple}")

    monkeypatch.setattr(_pad, "_now", fake_now)
    stats = Recording()
    # start 0, quantum 200: readings 100, 150, 199 are before the deadline, 200 is past
    assert _pad.pad(0, 200, stats) == 1
    assert events == ["count", "now", "now", "now", "now"]
    events.clear()
    # start 0, quantum 400: the first reading (1000) is past 2 quanta: j = 3, then it
    # waits for 1200 (the clock says 1000 once more, then runs out: stop there)
    with pytest.raises(StopIteration):
        _pad.pad(0, 400, stats)
    assert events[:2] == ["count", "now"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_counters_held_at_a_fork_are_free_in_the_child() -> None:
    """Every PaddingStats (each padded mechanism has its own) gets a new lock in a
    forked child: one held at the fork by another thread would never be released."""
    stats = _pad.PaddingStats()
    with stats._lock:  # another thread inside stats.count() at the fork
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
            pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            os._exit(0 if stats._lock.acquire(timeout=2.0) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_calibrate_quantum_takes_the_slowest_class() -> None:
    def run(c: int) -> None:
        target = time.perf_counter_ns() + c
        while time.perf_counter_ns() < target:
            pass

    q = _pad.calibrate_quantum(run, [10_000, 400_000], reps=5, margin=1.5, warmup=0)
    assert q >= 1.5 * 400_000


# -- the switch --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "on"),
    [("system", True), ("chacha20", True), ("seeded", False), ("replay", False)],
)
def test_default_is_on_for_cryptographic_sources(source: str, on: bool) -> None:
    kind = get_registries().sources.get(source)
    assert _pad.resolve_mode(None, kind.cryptographic) == ("constant" if on else "off")
    assert _pad.resolve_mode("constant", kind.cryptographic) == "constant"
    assert _pad.resolve_mode("off", kind.cryptographic) == "off"


@pytest.mark.parametrize("bad", ["on", "CONSTANT", True, 1, ""])
def test_an_invalid_switch_is_refused(bad: Any) -> None:
    with pytest.raises(ParameterError, match="timing must be None, 'constant' or 'off'"):
        _pad.check_timing(bad)
    with pytest.raises(ParameterError, match="timing must be"):
        _pad.resolve_mode(bad, True)


# -- the fast path's exact fallbacks in arrays ----------------------------------------
def test_fallbacks_covered_leave_at_most_the_stated_risk() -> None:
    # Independent of the code's bound: the exact union bound C(n, F+1)·p**(F+1) on
    # P(more than F of n elements fall back), in rationals.
    p = Fraction(_pad.FALLBACK_RATE_BOUND)
    risk = Fraction(_pad.FALLBACK_RISK)

    def union(n: int, f: int) -> Fraction:
        return math.comb(n, f + 1) * p ** (f + 1)

    previous = 1
    for n in [1, 2, 1000, 1024, 4096, 10**5, 2**18, 10**6, 2**24, 10**7, 2**30, 2**36]:
        f = _pad.fallbacks_covered(n)
        assert f >= 1
        assert union(n, f) <= risk
        # not wastefully large: one fewer would leave more than the risk (up to the
        # factor (n·p)**k/k! vs C(n, k)·p**k, which is below 1.01 here)
        assert f == 1 or union(n, f - 1) > risk / Fraction(101, 100)
        assert f >= previous  # more elements, at least as many covered
        previous = f


def test_a_calibration_source_is_a_fresh_source_of_the_same_kind() -> None:
    from snapcore.randomness._sources import ReplaySource, SeededSource, SystemSource

    mine = SystemSource()
    fresh = _pad.calibration_source(mine)
    assert type(fresh) is SystemSource and fresh is not mine
    # A kind that needs arguments: a seeded stream (its draws are discarded).
    assert type(_pad.calibration_source(ReplaySource([]))) is SeededSource


def test_a_floor_is_the_slowest_class_least_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within measuring_floor, calibrate_quantum returns the slowest class's least time
    (a scripted clock: class c takes c ns, plus 1000 ns on its first, cold, run)."""
    clock = [0]
    seen: set[int] = set()
    monkeypatch.setattr(_pad, "_now", lambda: clock[0])

    def run(c: int) -> None:
        clock[0] += c + (0 if c in seen else 1000)
        seen.add(c)

    with _pad.measuring_floor():
        assert _pad.calibrate_quantum(run, [300, 700, 500], reps=9, margin=2.0) == 700
    # Outside the block: a quantum (the slowest median times the margin), not a floor.
    assert _pad.calibrate_quantum(run, [300, 700, 500], reps=9, margin=2.0) == 1400


def test_padding_stats_count_overruns_past_two_quanta_apart() -> None:
    """``far_overruns`` (three quanta or more) is what a random delay's default bound
    (one quantum plus the exit's jitter) leaves to its stated overrun risk."""
    stats = _pad.PaddingStats()
    for multiple in (1, 1, 2, 3, 2, 7):
        stats.record(multiple)
    assert (stats.calls, stats.overruns, stats.far_overruns, stats.max_multiple) == (6, 4, 2, 7)
