"""Padding a call to a whole number of quanta, and measuring a quantum
(snapcore.padding._pad).

A padded call never returns before its quantum, an overrun ends at the next multiple
and is counted, a quantum covers the slowest class, the switch's default follows the
source, and an array's quantum covers as many exact fallbacks as the stated risk asks.
The random delay: exact Bernoulli(exp(−γ)) and discrete Laplace sampling (Canonne,
Kamath and Steinke 2020), its shift and its (ε_t, δ_t) claim against independent
references.  Whether time still leaks is measured by ``benchmarks/timing_leak.py``, never asserted
here.
"""

from __future__ import annotations

import math
import os
import random
import time
import warnings
from fractions import Fraction
from typing import Any

import mpmath
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


def test_a_dithered_call_ends_at_its_dither_plus_whole_quanta() -> None:
    for q, dither in ((50_000, 0), (50_000, 767), (3 * MS, 300)):
        start = time.perf_counter_ns()
        j = _pad.pad(start, q, None, dither)
        end = time.perf_counter_ns()
        assert j >= 1
        assert end - start >= dither + j * q
    stats = _pad.PaddingStats()
    start = time.perf_counter_ns() - 250 * MS  # the call "took" 2.5 quanta
    assert _pad.pad(start, 100 * MS, stats, 400) == 3
    assert time.perf_counter_ns() - start >= 400 + 3 * 100 * MS
    assert (stats.calls, stats.overruns, stats.max_multiple) == (1, 1, 3)


def test_a_dithered_deadline_is_start_plus_dither_plus_quantum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scripted clock, start 0, quantum 200, dither 100: readings 250 and 299 are
    before the deadline 300 and 300 is past it, so the call fits (``j = 1``) and reads
    the clock exactly three times.  Without the dither, 250 would already be an
    overrun; counted from the undithered start, an overrun would end elsewhere."""
    readings = iter([250, 299, 300])
    monkeypatch.setattr(_pad, "_now", lambda: next(readings))
    assert _pad.pad(0, 200, None, 100) == 1
    assert next(readings, None) is None
    # An overrun counts its multiples from the dithered start: 100 + 2·200 = 500.
    readings = iter([450, 499, 500])
    waits: list[int] = []
    monkeypatch.setattr(_pad, "wait_until", waits.append)
    assert _pad.pad(0, 200, None, 100) == 2
    assert waits == [500]


def test_dithers_cover_their_range_and_nothing_else() -> None:
    """2**17 dithers: every value of ``range(DITHER_NS)`` occurs (uniform draws miss
    one of the 768 with probability below 768·exp(−170)), none outside."""
    seen = [_pad.next_dither() for _ in range(1 << 17)]
    assert _pad.DITHER_NS == 768
    assert set(seen) == set(range(_pad.DITHER_NS))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_draws_its_own_dithers() -> None:
    """The child discards the dithers its parent had read ahead: the two processes'
    next 32 dithers differ (equal with probability 2**-288)."""
    _pad.next_dither()  # the parent holds a block read ahead
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(r)
        os.write(w, bytes(str([_pad.next_dither() for _ in range(32)]), "ascii"))
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        child = f.read().decode("ascii")
    os.waitpid(pid, 0)
    assert child != str([_pad.next_dither() for _ in range(32)])


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, float("nan"), 1, "0.9"])
def test_a_spread_quantile_outside_the_unit_interval_is_refused_before_any_run(
    bad: object,
) -> None:
    runs: list[int] = []
    with pytest.raises(ParameterError, match="spread_quantile must be a float in"):
        _pad.calibrate_quantum(
            runs.append,
            [1, 2],
            reps=3,
            margin=1.2,
            min_margin=1.03,
            spread_quantile=bad,  # type: ignore[arg-type]
        )
    assert runs == []


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


def _scripted(monkeypatch: pytest.MonkeyPatch, extra: Any) -> Any:
    """A scripted clock: class ``c``'s ``i``-th timed run takes ``c + extra(c, i)`` ns."""
    clock = [0]
    calls: dict[int, int] = {}
    monkeypatch.setattr(_pad, "_now", lambda: clock[0])

    def run(c: int) -> None:
        i = calls[c] = calls.get(c, -1) + 1
        clock[0] += c + extra(c, i)

    return run


@pytest.mark.parametrize(
    ("extra", "want"),
    [
        # no jitter: the least margin, 512 · 1.03 = 527.36
        (lambda c, i: 0, 528),
        # two calls in ten 1/16 slower: median 512, 90 % of the excesses <= 1/16
        (lambda c, i: c // 16 if i % 10 < 2 else 0, 544),
        # every other call 1/4 slower: median 576, excess ±1/9 > 10 %: the largest
        # margin, 576 · 1.1 = 633.6
        (lambda c, i: c // 4 if i % 2 else 0, 634),
        # every other call pre-empted for 40 µs: left out, so no jitter at all
        (lambda c, i: 40_000 if i % 2 else 0, 528),
    ],
)
def test_a_spread_calibrated_quantum_follows_the_jitter_within_its_bounds(
    monkeypatch: pytest.MonkeyPatch, extra: Any, want: int
) -> None:
    run = _scripted(monkeypatch, extra)
    q = _pad.calibrate_quantum(
        run, [256, 512, 384], reps=20, margin=1.1, min_margin=1.03, warmup=0
    )
    assert q == want


@pytest.mark.parametrize(("quantile", "want"), [(None, 528), (0.9, 528), (0.97, 576)])
def test_the_spread_quantile_sets_how_much_of_the_jitter_the_margin_covers(
    monkeypatch: pytest.MonkeyPatch, quantile: float | None, want: int
) -> None:
    """One call in ten 1/8 slower: 6 of the 60 excesses are 1/8, the rest 0.  Their
    90th percentile (the default) interpolates between positions 53 and 54 of 59, to
    1/80: the least margin, 512 · 1.03 = 527.36; their 97th (position 57.23) is 1/8:
    512 · 9/8 = 576."""
    run = _scripted(monkeypatch, lambda c, i: c // 8 if i % 10 == 0 else 0)
    kw = {} if quantile is None else {"spread_quantile": quantile}
    q = _pad.calibrate_quantum(
        run, [256, 512, 384], reps=20, margin=1.2, min_margin=1.03, warmup=0, **kw
    )
    assert q == want


def test_a_fixed_margin_quantum_is_the_slowest_median_times_the_margin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # three calls in four pre-empted: the median is a pre-empted time
    run = _scripted(monkeypatch, lambda c, i: 10_000 if i % 4 else 0)
    q = _pad.calibrate_quantum(run, [300, 700], reps=8, margin=1.5, warmup=0)
    assert q == math.ceil(10_700 * 1.5)


def test_padding_stats_count_overruns_past_two_quanta_apart() -> None:
    """``far_overruns`` (three quanta or more) is what a random delay's default bound
    (one quantum plus the exit's jitter) leaves to its stated overrun risk."""
    stats = _pad.PaddingStats()
    for multiple in (1, 1, 2, 3, 2, 7):
        stats.record(multiple)
    assert (stats.calls, stats.overruns, stats.far_overruns, stats.max_multiple) == (6, 4, 2, 7)


# -- the random delay ------------------------------------------------------------
def _rng(seed: int) -> Any:
    return random.Random(seed).randrange


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_bernoulli_exp_has_probability_exp_minus_gamma(gamma: Fraction) -> None:
    draws = 8_000
    rng = _rng(17 + int(gamma * 6))
    hits = sum(_pad.bernoulli_exp(gamma, rng) for _ in range(draws))
    p = math.exp(-float(gamma))
    sd = math.sqrt(draws * p * (1 - p)) or 1.0
    assert abs(hits - draws * p) <= 5 * sd


def test_discrete_laplace_matches_its_exact_probabilities() -> None:
    """Frequencies of y in [-8, 8] against ``(1−α)/(1+α)·α**|y|``, α = exp(−1/scale),
    evaluated with mpmath at 50 digits (each within 5 standard deviations)."""
    scale = Fraction(3, 2)
    draws = 12_000
    rng = _rng(5)
    counts: dict[int, int] = {}
    for _ in range(draws):
        y = _pad.discrete_laplace(scale, rng)
        counts[y] = counts.get(y, 0) + 1
    mpmath.mp.dps = 50
    alpha = mpmath.exp(-1 / mpmath.mpf(3) * 2)
    for y in range(-8, 9):
        p = float((1 - alpha) / (1 + alpha) * alpha ** abs(y))
        sd = math.sqrt(draws * p * (1 - p))
        assert abs(counts.get(y, 0) - draws * p) <= 5 * sd, y


def test_refusals_name_the_parameter() -> None:
    with pytest.raises(ParameterError, match="scale"):
        _pad.discrete_laplace(Fraction(0))
    with pytest.raises(ParameterError, match="gamma"):
        _pad.bernoulli_exp(Fraction(-1))
    with pytest.raises(ParameterError, match="epsilon"):
        _pad.RandomDelay(epsilon=0, bound_ns=100)
    with pytest.raises(ParameterError, match="epsilon"):
        _pad.RandomDelay(epsilon=math.nan, bound_ns=100)
    with pytest.raises(ParameterError, match="bound_ns"):
        _pad.RandomDelay(epsilon=1, bound_ns=0)
    with pytest.raises(ParameterError, match="bound_ns"):
        _pad.RandomDelay(epsilon=1, bound_ns=1.5)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="delta"):
        _pad.RandomDelay(epsilon=1, bound_ns=100, delta=0)
    with pytest.raises(ParameterError, match="overrun_risk"):
        _pad.RandomDelay(epsilon=1, bound_ns=100, overrun_risk=1.0)
    with pytest.raises(ParameterError, match="RandomDelay"), _pad.random_delay(0.1):  # type: ignore[arg-type]
        pass


def _tail(scale: Fraction, m: int) -> Any:
    """``P(|L| >= m)`` by summing the discrete Laplace probabilities (mpmath, 60 digits)."""
    mpmath.mp.dps = 60
    alpha = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
    c = (1 - alpha) / (1 + alpha)
    return 2 * mpmath.nsum(lambda k: c * alpha**k, [m, mpmath.inf])


Q = 5_000  # a quantum, in ns


@pytest.mark.parametrize(
    ("epsilon", "bound", "delta"),
    [(Fraction(1, 10), 100, 2.0**-30), (Fraction(1), 1000, 1e-6), (Fraction(2), 7, 0.01)],
)
def test_the_shift_is_the_least_whose_truncation_is_within_delta(
    epsilon: Fraction, bound: int, delta: float
) -> None:
    d = _pad.RandomDelay(epsilon=epsilon, bound_ns=bound, delta=delta)
    scale = d.scale_for(Q)
    assert scale == Fraction(bound) / epsilon
    m = d.shift_for(Q) - bound
    assert _tail(scale, m) <= delta < _tail(scale, m - 1)
    assert d.truncation(Q) >= float(_tail(scale, m))  # rounded up
    g = _pad.RandomDelay(epsilon=epsilon, bound_ns=bound, delta=delta, overrun_risk=0.01)
    claim = g.guarantee(Q)
    assert claim.epsilon_delay == epsilon and claim.bound_ns == bound
    # ε_t = ε + ln(1/(1 − r)) and δ_t = truncation + r, both rounded up.
    mpmath.mp.dps = 40
    assert claim.epsilon >= float(epsilon) + float(-mpmath.log(1 - mpmath.mpf(0.01)))
    assert claim.epsilon <= float(epsilon) + 0.0101
    assert claim.delta >= float(_tail(scale, m)) + 0.01
    assert claim.delta <= delta + 0.01 + 1e-12


def test_the_default_bound_is_one_quantum_plus_the_jitter() -> None:
    d = _pad.RandomDelay(epsilon=Fraction(1, 2), jitter_ns=300)
    for q in (1_000, 2_000_000):
        assert d.bound_for(q) == q + 300
        assert d.scale_for(q) == Fraction(2 * (q + 300))
        assert d.guarantee(q).quantum_ns == q and d.guarantee(q).bound_ns == q + 300


def test_a_delay_lies_in_zero_to_twice_its_shift() -> None:
    d = _pad.RandomDelay(epsilon=Fraction(1, 2), bound_ns=10)
    rng = _rng(9)
    xs = [d.sample_ns(Q, rng) for _ in range(2000)]
    shift = d.shift_for(Q)
    assert all(0 <= x <= 2 * shift for x in xs)
    # Symmetric around the shift: the mean is within a few standard errors of it.
    mean = sum(xs) / len(xs)
    sd = math.sqrt(2) * float(d.scale_for(Q))
    assert abs(mean - shift) <= 5 * sd / math.sqrt(len(xs))


@pytest.mark.parametrize(
    ("lo", "hi", "n"), [(0.0, 1.0, 1000), (-150.0, 250.0, 333), (5.0, 5.5, 1)]
)
def test_uniform_doubles_are_numpys_formula_on_the_oss_words(
    lo: float, hi: float, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The OS generator replaced by a seeded one: the same bytes read again here, word by
    # word (little-endian 64-bit, as NumPy reads them on this machine), give each value
    # as lo + (hi − lo)·u with u = (word >> 11)·2**-53, in scalar double arithmetic.
    import sys

    monkeypatch.setattr(_pad, "_SYSTEM", random.Random(7))
    got = _pad.uniform_doubles(lo, hi, n)
    raw = random.Random(7).randbytes(8 * n)
    words = [int.from_bytes(raw[8 * i : 8 * i + 8], sys.byteorder) for i in range(n)]
    want = [lo + (hi - lo) * float(Fraction(w >> 11, 1 << 53)) for w in words]
    assert got.dtype.name == "float64" and got.shape == (n,)
    assert got.tolist() == want
    assert all(lo <= x <= hi for x in want)


def test_uniform_doubles_cover_the_interval_uniformly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seeded, so deterministic: every u is a multiple of 2**-53, the mean is within 5
    # standard errors of 1/2, and each tenth of [0, 1) holds its share within 5 of them.
    monkeypatch.setattr(_pad, "_SYSTEM", random.Random(11))
    n = 20_000
    x = _pad.uniform_doubles(0.0, 1.0, n)
    assert ((x * 2.0**53) % 1 == 0).all() and (x >= 0).all() and (x < 1).all()
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    counts = [int(((x >= k / 10) & (x < (k + 1) / 10)).sum()) for k in range(10)]
    assert all(abs(c - n / 10) < 5 * math.sqrt(n * 0.1 * 0.9) for c in counts)
