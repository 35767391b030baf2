"""The mechanism's padding (snapcore.mechanism._padding).

These tests check what makes the padding of a mechanism work: a padded release never
returns before its quantum, quanta depend only on public properties (type, dtype,
length) and are calibrated on worst-case inputs with an unpadded copy of the mechanism,
the switch, and that padding never changes a released value.  Whether time still leaks
is measured by ``benchmarks/timing_leak.py``, never asserted here.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import gmpy2
import numpy as np
import pytest

import snapcore
from snapcore.calibration._params import calibrate
from snapcore.errors import ParameterError
from snapcore.mechanism import _padding
from snapcore.padding import _quanta
from snapcore.padding._pad import fallbacks_covered
from snapcore.pipeline import _engine
from snapcore.randomness._draw import Draw, encode_draw
from snapcore.randomness._sources import ByteSource, ReplaySource, SeededSource, SystemSource

MS = 1_000_000


@pytest.fixture
def stub_calibration(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[Any]]]:
    """Replace the measurement by a deterministic quantum; record what was calibrated on."""
    seen: list[list[Any]] = []

    def fake(run: Any, classes: Any, **kw: Any) -> int:
        seen.append(list(classes))
        return 2 * MS

    monkeypatch.setattr(_padding, "calibrate_quantum", fake)
    _quanta.clear_caches()
    yield seen
    _quanta.clear_caches()


# -- the switch --------------------------------------------------------------------
def test_switch_on_a_mechanism(stub_calibration: list[list[Any]]) -> None:
    kw: dict[str, Any] = {"epsilon": 1.0, "clamp_bounds": (0.0, 10.0)}
    assert snapcore.SnappingMechanism(**kw).padding is not None
    assert snapcore.SnappingMechanism(**kw, timing="off").padding is None
    assert snapcore.SnappingMechanism(**kw, source=SeededSource(1)).padding is None
    m = snapcore.SnappingMechanism(**kw, source=SeededSource(1), timing="constant")
    assert m.padding is not None
    assert snapcore.SnappingMechanism(**kw, source=SystemSource(), timing="off").padding is None


@pytest.mark.parametrize("bad", ["on", "CONSTANT", True, 1, ""])
def test_invalid_switch_is_refused_before_any_draw(bad: Any) -> None:
    src = ReplaySource([])  # any draw would raise SourceExhaustedError
    with pytest.raises(ParameterError, match="timing must be None, 'constant' or 'off'"):
        snapcore.SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 1.0), source=src, timing=bad)
    with pytest.raises(ParameterError, match="timing must be"):
        snapcore.release(
            "mean", [1.0, 2.0], epsilon=1.0, data_bounds=(0, 3), source=src, timing=bad
        )


# -- padded releases -----------------------------------------------------------------
def test_a_padded_release_takes_at_least_its_quantum(stub_calibration: list[list[Any]]) -> None:
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    assert m.padding is not None
    for value in (5.0, 1e300, 5e-324, 7, Fraction(1, 3), np.zeros(5), [1.0, 2.0]):
        start = time.perf_counter_ns()
        m.release(value)
        assert time.perf_counter_ns() - start >= 2 * MS
    assert m.padding.stats.calls == 7


def test_a_padded_call_draws_its_dither_first_and_starts_after_any_calibration(
    stub_calibration: list[list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted clock (a reading is its position in the call's events): the dither
    is drawn before the clock's first reading, the padded window starts after a
    calibration, and ``pad`` gets that window's start, the quantum and the dither."""
    events: list[str] = []
    pads: list[tuple[int, int, int]] = []

    def now() -> int:
        events.append("now")
        return len(events) - 1

    def calibrate(run: Any, classes: Any, **kw: Any) -> int:
        events.append("calibrate")
        return 2 * MS

    def pad(start: int, q: int, stats: Any = None, dither: int = 0) -> int:
        pads.append((start, q, dither))
        return 1

    def dither() -> int:
        events.append("dither")
        return 500

    monkeypatch.setattr(_padding, "_now", now)
    monkeypatch.setattr(_padding, "calibrate_quantum", calibrate)
    monkeypatch.setattr(_padding, "pad", pad)
    monkeypatch.setattr(_padding, "next_dither", dither)
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    for value in (5.0, 5.0, np.zeros(5), np.zeros(5)):
        events.clear()
        m.release(value)
        assert events[0] == "dither"
        start, q, d = pads[-1]
        assert (q, d) == (2 * MS, 500)
        assert events[start] == "now"
        assert "calibrate" not in events[start:]
    assert len(pads) == 4


def test_a_padded_scalar_release_returns_a_new_float_every_time(
    stub_calibration: list[list[Any]],
) -> None:
    # A clamped output is one of four floats computed once per pipeline; handed out
    # as is, the caller would free memory after an inside output and not after a
    # clamped one.  The padded release returns a fresh, equal object every time.
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    plain = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="off"
    )
    pipe = plain.pipeline
    far = pipe.grid_index_bound + 5
    assert pipe.index_output(far) is pipe.index_output(far)  # the premise: one shared float
    a = plain.release(1e300)
    c, d = m.release(1e300), m.release(1e300)
    assert c is not d
    assert type(c) is float
    assert c == d == a


def test_an_unpadded_copy_draws_from_its_own_source_on_the_same_paths(
    stub_calibration: list[list[Any]],
) -> None:
    kw: dict[str, Any] = {"epsilon": 1.0, "clamp_bounds": (0.0, 10.0), "timing": "constant"}
    m = snapcore.SnappingMechanism(**kw, source=SeededSource(3))
    copy = m.unpadded_copy(SeededSource(4))
    assert copy.padding is None and m.padding is not None
    assert copy.pipeline is m.pipeline and copy.calibration == m.calibration
    assert copy.source is not m.source
    values: list[Any] = [5.0, 1e300, 7, Fraction(1, 3), np.linspace(0.0, 10.0, 2000)]
    twin = snapcore.SnappingMechanism(**kw, source=SeededSource(4))
    for v in values:
        assert np.array_equal(copy.release(v), twin.release(v))
    # The original's stream is untouched: its first release is a fresh mechanism's.
    fresh = snapcore.SnappingMechanism(**kw, source=SeededSource(3))
    assert m.release(5.0) == fresh.release(5.0)


@pytest.mark.parametrize(
    ("timing", "paths"),
    [("constant", ["scalar_padded", "batch_padded"]), ("off", ["scalar", "batch"])],
)
def test_an_unpadded_copy_takes_its_mechanisms_paths(
    timing: str, paths: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A padded mechanism's copy keeps the uniform paths (what its quanta must cover),
    an unpadded one's the faster ones."""
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing=timing
    )
    called: list[str] = []
    kind = type(m.backend)

    def spying(name: str) -> Any:
        original = getattr(kind, name)

        def spy(self: Any, *a: Any, **kw: Any) -> Any:
            called.append(name)
            return original(self, *a, **kw)

        return spy

    for name in ("scalar", "scalar_padded", "batch", "batch_padded"):
        monkeypatch.setattr(kind, name, spying(name))
    copy = m.unpadded_copy(SeededSource(4))
    copy.release(np.zeros(max(m.backend.batch_min_size, 1)))
    assert called == paths


def test_padding_never_changes_a_value() -> None:
    kw: dict[str, Any] = {"epsilon": 0.5, "sensitivity": 0.1, "clamp_bounds": (-3.0, 7.0)}
    values: list[Any] = [0.0, 2.0, 7.0, -1e300, 5e-324, 3, Fraction(1, 3)]
    arr = np.linspace(-5.0, 9.0, 1500)  # long enough for the fast path
    outs = []
    for mode in ("off", "constant"):
        m = snapcore.SnappingMechanism(**kw, source=SeededSource(11), timing=mode)
        outs.append(([m.release(v) for v in values], m.release(arr).tolist(), m.release([1.5])))
    assert outs[0] == outs[1]
    r = [
        snapcore.release(
            "mean",
            [1.0, 2.5, 9.0],
            epsilon=1.0,
            data_bounds=(0, 10),
            source=SeededSource(5),
            timing=t,
        ).value
        for t in ("off", "constant")
    ]
    assert r[0] == r[1]


def test_array_quantum_depends_only_on_length(stub_calibration: list[list[Any]]) -> None:
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    pad = m.padding
    assert pad is not None
    a, b = np.zeros(40), np.full(40, 1e300)
    assert pad.quantum_for(a) == pad.quantum_for(b)
    assert len(stub_calibration) == 1  # one calibration for length 40
    pad.quantum_for(np.zeros(41))
    assert len(stub_calibration) == 2  # a new length, a new quantum
    # Calibrated on synthetic arrays of that length, never on the caller's.
    for arr, *_ in stub_calibration[0] + stub_calibration[1]:
        assert arr is not a and arr is not b
        assert len(arr) in (40, 41)


def test_array_quantum_is_kept_per_number_of_threads(
    stub_calibration: list[list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal mechanisms share an array quantum only when their releases of that length
    use as many threads (an int as given; the default resolved: one below
    THREADS_MIN_SIZE, every usable CPU from it on), so that a quantum measured on more
    threads never pads a release on fewer."""
    from snapcore.pipeline import _threads

    monkeypatch.setattr(_threads, "usable_cpus", lambda: 4)
    n = _threads.THREADS_MIN_SIZE
    pads = {}
    for t in (None, 1, 2, 4):
        m = snapcore.SnappingMechanism(
            epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant",
            threads=t,
        )  # fmt: skip
        assert m.padding is not None
        pads[t] = m.padding
    for t in (None, 1, 2, 4):
        pads[t].array_quantum_ns(n)
    assert len(stub_calibration) == 3  # 1, 2 and 4 threads; None is 4 here
    for t in (None, 1, 2, 4):
        pads[t].array_quantum_ns(n - 1)
    assert len(stub_calibration) == 6  # a new length: 1 (None is 1 here), 2 and 4
    for t in (None, 1, 2, 4):
        pads[t].array_quantum_ns(n - 1)
        pads[t].array_quantum_ns(n)
    assert len(stub_calibration) == 6


def test_array_quantum_never_reads_elements(stub_calibration: list[list[Any]]) -> None:
    class Opaque(np.ndarray):
        def __getitem__(self, key: Any) -> Any:
            raise AssertionError("an element was read")

        def __iter__(self) -> Any:
            raise AssertionError("an element was read")

        def tolist(self) -> Any:
            raise AssertionError("an element was read")

    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    assert m.padding is not None
    x = np.arange(30.0).view(Opaque)
    assert m.padding.quantum_for(x) == m.padding.quantum_for(np.zeros(30))


def test_quanta_are_measured_again_after_a_count_of_uses(
    monkeypatch: pytest.MonkeyPatch, stub_calibration: list[list[Any]]
) -> None:
    monkeypatch.setattr(_quanta.SCALAR_QUANTA, "every", 3)
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    assert m.padding is not None
    for _ in range(7):
        m.padding.quantum_for(1.0)
    assert len(stub_calibration) == 3  # the first use, then after every 3 further uses


def test_scalar_quantum_is_calibrated_on_worst_case_classes(
    stub_calibration: list[list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The exact padded path, whatever the process has loaded (the compiled path's
    # classes: the next test).
    from snapcore.backends import mpfr

    monkeypatch.setattr(mpfr, "scalar_path_stats", mpfr.ScalarPathStats())
    monkeypatch.setattr(mpfr, "COMPILED_SCALAR_AFTER", None)
    m = snapcore.SnappingMechanism(
        epsilon=1.0,
        sensitivity=0.1,
        clamp_bounds=(0.0, 100.0),
        source=SeededSource(3),
        timing="constant",
    )
    assert m.padding is not None
    m.padding.quantum_for(42.0)
    (classes,) = stub_calibration
    values = {c[0] for c in classes}
    draws = {c[2] for c in classes}
    assert {0.0, 100.0, 50.0, 5e-324, -5e-324, 1e300, -1e300} <= values
    p = m.precision
    assert (1, (1 << p) - 1, -p) in draws  # U* = 1 - 2**-p
    # U* ~ 2**-100: the exponent continues past the draw's first word
    assert any(d is not None and d[2] == -(p - 1) - 100 for d in draws)
    # 1 - U* in (2**-15, 2**-14): MPFR's log computes twice (the slowest noise stage)
    near = [d for d in draws if d is not None and d[2] == -p]
    assert any(2**-15 < 1 - Fraction(d[1], 2**p) < 2**-14 for d in near)
    assert None in draws  # fresh draws from a source of the same kind
    m.padding.quantum_for(42)  # ints have their own classes
    assert {c[0] for c in stub_calibration[1]} >= {50, 0, 100, 10**300}


def test_a_float_quantum_is_kept_per_path_and_the_compiled_one_leaves_out_its_fallbacks(
    stub_calibration: list[list[Any]],
) -> None:
    """The backend's fused release names its path before the clock starts; a float's
    quantum is calibrated once per path, and the compiled path's calibration has no
    draw past the first word (it hands those to the exact path: docs/timing.md)."""
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 100.0), source=SeededSource(3), timing="constant"
    )
    path = ["exact"]
    pad = _padding.Padding(
        m.calibration,
        m.backend,
        m.source,
        lambda src: m.unpadded_copy(src).release,
        lambda: path[0],
    )
    p = m.precision
    pad.quantum_for(42.0)
    pad.quantum_for(43.0)
    assert len(stub_calibration) == 1
    exact = {c[2] for c in stub_calibration[0]}
    assert any(d is not None and d[2] + p - 1 <= -64 for d in exact)
    path[0] = "compiled"
    pad.quantum_for(42.0)
    pad.quantum_for(43.0)
    assert len(stub_calibration) == 2  # one more calibration, on the compiled path
    compiled = {c[2] for c in stub_calibration[1]}
    assert compiled and all(d is None or d[2] + p - 1 > -64 for d in compiled)
    assert len(compiled) == len(exact) - 1  # the same classes but the one draw
    pad.quantum_for(7)  # another type: one path, whatever the float's
    assert len(stub_calibration) == 3
    assert all(type(c[0]) is int for c in stub_calibration[2])


# -- uniform code path: the noise stage near 1 ------------------------------------------
class _Recorder:
    """A gmpy2 context proxy that records which operations are called."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        f = getattr(self._ctx, name)

        def rec(*a: Any) -> Any:
            self.calls.append(name)
            return f(*a)

        return rec


def _draws(p: int) -> dict[str, Draw]:
    m = (1 << (p - 1)) | 0x5A5A5A5A5A5A5A5A5A5A5A5A5A5A5
    return {
        "1 - 2**-p": Draw(1, (1 << p) - 1, -p),
        "1 - 2**-20": Draw(1, ((1 << 20) - 1) << (p - 20), -p),
        "1 - 2**-16": Draw(1, ((1 << 16) - 1) << (p - 16), -p),
        "1 - 2**-16 - 2**-p": Draw(1, (((1 << 16) - 1) << (p - 16)) - 1, -p),
        "1 - 2**-14": Draw(1, ((1 << 14) - 1) << (p - 14) | 0x5A5A5A, -p),
        "1/2": Draw(-1, 1 << (p - 1), -p),
        "0.7": Draw(1, m | (1 << (p - 2)), -p),
        "0.3": Draw(1, m, -p - 1),
        "2**-40": Draw(-1, m, -(p - 1) - 40),
        "2**-1000": Draw(1, m, -(p - 1) - 1000),
    }


def test_noise_stage_takes_log1p_only_within_2_to_the_minus_16_of_one() -> None:
    from snapcore.backends.mpfr import LOG1P_TAIL_BITS, MPFRArithmetic

    assert LOG1P_TAIL_BITS == 16

    p = 118
    arith = MPFRArithmetic(p)
    lam = arith.from_dyadic(3, -1)
    rec = _Recorder(arith._local.ctx)
    arith._local.ctx = rec
    paths = {}
    for name, d in _draws(p).items():
        rec.calls.clear()
        arith.noise(lam, d.sign, (d.mantissa, d.exponent))
        paths[name] = tuple(rec.calls)
    near = {paths[k] for k in ("1 - 2**-p", "1 - 2**-20", "1 - 2**-16")}
    far = {paths[k] for k in ("1 - 2**-16 - 2**-p", "1 - 2**-14", "1/2", "0.7", "0.3")}
    far |= {paths[k] for k in ("2**-40", "2**-1000")}
    assert near == {("mul_2exp", "sub", "log1p", "mul")}
    assert far == {("mul_2exp", "log", "mul")}


def test_ln_near_one_is_mpfr_log_correctly_rounded() -> None:
    """ln(u) is MPFR's correctly rounded log(u) on either side of the log1p rule."""
    from snapcore.backends.mpfr import MPFRArithmetic

    p = 118
    arith = MPFRArithmetic(p)
    rng = np.random.default_rng(7)
    us = [d for d in _draws(p).values() if d.mantissa.bit_length() + d.exponent == 0]
    for _ in range(300):
        k = int(rng.integers(1, p))
        low = int(rng.integers(0, 1 << 62)) & ((1 << (p - k)) - 1)
        us.append(Draw(1, (((1 << k) - 1) << (p - k)) | low, -p))
    lam = arith.from_dyadic(3, -1)
    with gmpy2.context(precision=p, round=gmpy2.RoundToNearest) as ctx:
        for d in us:
            u = ctx.mul_2exp(d.mantissa, d.exponent)
            assert 0.5 <= u < 1
            assert arith.ln(u) == ctx.log(u), d
            expect = ctx.mul(lam, ctx.log(u)).as_mantissa_exp()
            got = arith.noise(lam, 1, (d.mantissa, d.exponent))
            assert got == (int(expect[0]), int(expect[1])), d


def test_equal_mechanisms_share_one_calibration_until_caches_are_cleared(
    stub_calibration: list[list[Any]],
) -> None:
    kw: dict[str, Any] = {"epsilon": 1.0, "clamp_bounds": (0.0, 100.0), "timing": "constant"}
    a, b = snapcore.SnappingMechanism(**kw), snapcore.SnappingMechanism(**kw)
    a.release(50.0)
    b.release(50.0)
    a.release(1.0)
    assert len(stub_calibration) == 1  # one key for equal parameters, measured once
    assert a.padding is not None and b.padding is not None
    assert a.padding._key is b.padding._key  # interned: found by identity
    _quanta.clear_caches()
    a.release(50.0)  # the mechanism's own remembered quantum is dropped too
    assert len(stub_calibration) == 2
    other = snapcore.SnappingMechanism(**{**kw, "epsilon": 2.0})
    other.release(50.0)
    assert len(stub_calibration) == 3


def test_long_arrays_get_a_scaled_quantum_without_long_calibration_arrays(
    stub_calibration: list[list[Any]],
) -> None:
    """Past 2^18 elements: the quantum of 2^18 scaled by the lengths, and by 11/10
    when the release runs on several threads; whatever the values."""
    cap = _padding.ARRAY_CALIBRATION_MAX
    for threads, more in ((1, Fraction(1)), (2, Fraction(11, 10))):
        m = snapcore.SnappingMechanism(
            epsilon=1.0,
            clamp_bounds=(0.0, 10.0),
            source=SeededSource(3),
            timing="constant",
            threads=threads,
        )
        assert m.padding is not None
        q_cap = m.padding.array_quantum_ns(cap)
        runs = stub_calibration[-1]
        assert all(len(a) == cap for a, *_ in runs)
        for n in (cap + 1, 3 * cap, 10 * cap + 7):
            want = math.ceil(Fraction(q_cap * n, cap) * more)
            assert m.padding.array_quantum_ns(n) == want
            assert m.padding.quantum_for(np.full(n, 1e300)) == want  # whatever the values
        assert stub_calibration[-1] is runs  # no calibration on arrays longer than the cap


# -- the fast path's exact fallbacks in arrays ----------------------------------------
@pytest.mark.parametrize(
    ("epsilon", "bounds", "chunks"),
    [
        (2.0**20, (-1.0, 1.0), 0),
        (1.0, (0.0, 100.0), 0),
        (0.1, (-1e6, 1e6), 0),
        (3.0, (-7.0, 3.0), 0),
        (1.0, (0.0, 100.0), 3),
    ],
)
def test_array_calibration_includes_the_covered_exact_fallbacks(
    epsilon: float, bounds: tuple[float, float], chunks: int, stub_calibration: list[list[Any]]
) -> None:
    """``chunks > 0``: an array the fused loop reads in several chunks still has exactly
    F forced fallbacks in all (not F per chunk), in each of several releases."""
    from snapcore.pipeline._engine import AUTO_MIN_SIZE, FastEngine, release_batch

    m = snapcore.SnappingMechanism(
        epsilon=epsilon, clamp_bounds=bounds, source=SystemSource(), timing="constant"
    )
    assert m.padding is not None
    n = max(AUTO_MIN_SIZE, 4096, chunks * FastEngine.STREAM_CHUNK + 5)
    m.padding.quantum_for(np.zeros(n))
    (runs,) = stub_calibration
    centre = float(m.calibration.centre)
    # Every class is run by the release of one unpadded copy of the mechanism, whose
    # source forces the class's count of rows.
    (mech,) = {release.__self__ for _, _, release in runs}
    assert mech.padding is None and mech.source is not m.source
    forced = [(a, k) for a, k, _ in runs if k]
    assert len(forced) == 1, "one class with forced fallbacks, beside the usual ones"
    arr, k = forced[0]
    assert k == fallbacks_covered(n)
    assert arr.shape == (n,) and np.all(arr == centre)
    # Its draws make exactly F elements take the exact fallback (at random positions),
    # and every output is still the exact pipeline's; the other classes' draws, none.
    for count in (k, 0, k, k):
        mech.source.count = count
        out, st = release_batch(mech.pipeline, arr, mech.source, stats=True)
        assert len(st.fallback_k) == count
        assert np.all((out >= bounds[0]) & (out <= bounds[1]))


def test_short_arrays_and_exact_backends_get_no_fallback_class(
    stub_calibration: list[list[Any]],
) -> None:
    from snapcore.pipeline._engine import AUTO_MIN_SIZE

    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SystemSource(), timing="constant"
    )
    assert m.padding is not None
    m.padding.quantum_for(np.zeros(AUTO_MIN_SIZE - 1))  # below the batch path's size
    a = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), backend="mpmath", timing="constant"
    )
    assert a.padding is not None
    a.padding.quantum_for(np.zeros(AUTO_MIN_SIZE))  # mpmath has no batch path
    for runs in stub_calibration:
        assert len({release.__self__ for *_, release in runs}) == 1
        assert not any(k for _, k, _ in runs)


def test_fused_releases_agree_with_the_pipeline_on_either_side_of_the_log1p_rule() -> None:
    """Both fused exact releases (padded and unpadded) against ``Pipeline.run`` on
    draws chosen around ``1 − 2**-16`` (random draws land there once in 2**16)."""
    from snapcore.backends.mpfr import _exact_scalar

    from snapcore.testing.sources import FixedBytes

    m = snapcore.SnappingMechanism(
        epsilon=1.0, sensitivity=0.1, clamp_bounds=(0.0, 100.0), timing="off"
    )
    pipe, p = m.pipeline, m.precision
    rng = np.random.default_rng(3)
    draws = list(_draws(p).values())
    for k in (12, 13, 15, 16, 17, 40, p - 1):
        for _ in range(5):
            low = int(rng.integers(0, 1 << 62)) & ((1 << (p - k)) - 1)
            draws.append(Draw(int(rng.choice([-1, 1])), (((1 << k) - 1) << (p - k)) | low, -p))
    for v in (50.0, 0.0, 33.3, 5e-324, 1e300):
        for uniform in (True, False):
            src = FixedBytes(b"".join(encode_draw(d, p) for d in draws))
            release = _exact_scalar(pipe, src, uniform)
            assert release is not None
            for d in draws:
                want = pipe.run(pipe.centre_ratio(*v.as_integer_ratio()), d)
                assert release(v) == want, (v, d, uniform)
            assert src.rest() == b""


@pytest.mark.parametrize("backend", ["mpfr", "fast"])
@pytest.mark.parametrize("forced", [0, 1, 2, 3])
def test_padded_batches_do_the_covered_exact_work_whatever_falls_back(
    forced: int, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A padded array release runs ``fallbacks_covered(n)`` exact computations in all:
    the elements that fell back, and dummies on public inputs for the rest; an
    unpadded one runs only the fallbacks.  Outputs are the same either way."""
    from snapcore.pipeline._engine import AUTO_MIN_SIZE

    n = max(AUTO_MIN_SIZE, 4096)
    floor = fallbacks_covered(n)
    monkeypatch.setattr(_padding, "calibrate_quantum", lambda run, classes, **kw: 1000)
    _quanta.clear_caches()
    kw: dict[str, Any] = {"epsilon": 1.0, "clamp_bounds": (0.0, 100.0), "backend": backend}
    tie = _padding.tie_row(calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0)))
    outs = {}
    try:
        for mode in ("off", "constant"):
            src = SeededSource(9)
            if forced:
                src = _padding._ForcedRows(src, tie, forced, n)
            m = snapcore.SnappingMechanism(**kw, source=src, timing=mode)
            m.padding and m.padding.quantum_for(np.zeros(n))  # calibrate before counting
            calls = []
            exact = _engine.row_release(m.pipeline)

            def counting(row: bytes, v: Any, exact: Any = exact, calls: list[Any] = calls) -> Any:
                calls.append(1)
                return exact(row, v)

            monkeypatch.setitem(_engine._ROW_RELEASES, m.pipeline, counting)
            random.seed(5)  # the forced rows' positions, the same in both runs
            outs[mode] = m.release(np.full(n, 50.0))
            want = max(floor, forced) if mode == "constant" else forced
            assert len(calls) == want, (mode, len(calls))
    finally:
        _quanta.clear_caches()
    assert np.array_equal(outs["off"], outs["constant"])


@pytest.mark.parametrize(
    ("epsilon", "bounds", "noise_over_grid"),
    [
        (1.0, (0.0, 100.0), Fraction(3, 2)),
        (2.0**20, (-1.0, 1.0), Fraction(5, 4)),
        (0.1, (-1e6, 1e6), Fraction(7)),
    ],
)
def test_noise_draw_is_the_p_bit_u_nearest_its_target(
    epsilon: float, bounds: tuple[float, float], noise_over_grid: Fraction
) -> None:
    """Against exp evaluated by mpmath at 600 digits: ``U*`` is p-bit and within half
    an ulp of ``exp(−noise/λ)``."""
    import mpmath

    m = snapcore.SnappingMechanism(epsilon=epsilon, clamp_bounds=bounds, timing="off")
    noise = noise_over_grid * m.calibration.granularity
    d = _padding.noise_draw(m.calibration, noise)
    p = m.precision
    assert d.sign == 1 and d.mantissa.bit_length() == p
    ratio = noise / m.calibration.scale
    with mpmath.workdps(600):
        target = mpmath.exp(-mpmath.mpf(ratio.numerator) / ratio.denominator)
        err = abs(mpmath.mpf(d.mantissa) * mpmath.mpf(2) ** d.exponent - target)
        assert err <= mpmath.mpf(2) ** (d.exponent - 1)


class _Reservable(ByteSource):
    """A stream that can be produced from any position (a test double for ChaCha20's
    reserve), from fixed bytes."""

    name = "reservable"

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data, self.position = data, 0

    def read(self, n: int) -> bytes:
        out = self.data[self.position : self.position + n]
        self.position += n
        return out

    def reserve(self, n: int) -> Any:
        start = self.position
        self.position += n

        def fill(offset: int, buffer: Any) -> None:
            mv = memoryview(buffer).cast("B")
            mv[:] = self.data[start + offset : start + offset + len(mv)]

        return fill


@pytest.mark.parametrize("path", ["read", "readinto", "reserve"])
def test_forced_rows_replace_count_rows_per_release_on_every_path(path: str) -> None:
    """The calibration's forcing source gives the inner stream's bytes with exactly
    ``count`` whole rows of each release replaced by the chosen row, through reads,
    reads in place and reserved fills (in parts, out of order), and the same
    positions on every path for the same random state; ``count`` can change between
    releases."""
    row, rows = bytes(range(100, 123)), 50
    r = len(row)
    data = os.urandom(r * rows * 4)
    got = {}
    for way in ("read", path):
        random.seed(11)
        src = _padding._ForcedRows(_Reservable(data), row, 2, rows)
        parts = []
        for count, chunks in ((2, [rows]), (3, [20, 30]), (0, [rows]), (1, [7, 43])):
            src.count = count
            release = b""
            for m in chunks:
                if way == "read":
                    release += src.read(m * r)
                elif way == "readinto":
                    buf = bytearray(m * r)
                    src.readinto(buf)
                    release += bytes(buf)
                else:
                    fill = src.reserve(m * r)
                    buf = np.zeros(m * r, np.uint8)
                    cut = (m * r) // 3 + 5  # a row split between two fills
                    fill(cut, buf[cut:])
                    fill(0, buf[:cut])
                    release += buf.tobytes()
            parts.append((count, release))
        got[way] = parts
    assert got["read"] == got[path]
    inner = [data[i * rows * r : (i + 1) * rows * r] for i in range(4)]
    for (count, release), plain in zip(got[path], inner, strict=True):
        changed = [
            j for j in range(rows) if release[j * r : (j + 1) * r] != plain[j * r : (j + 1) * r]
        ]
        assert len(changed) == count
        assert all(release[j * r : (j + 1) * r] == row for j in changed)


def test_array_quantum_lookup_follows_length_dtype_and_cleared_caches(
    stub_calibration: list[list[Any]],
) -> None:
    """The padded call's quick lookup of an array's quantum (the last length and
    dtype seen) gives what the shared cache gives: a new calibration for a new
    length or dtype, and again after the caches are cleared."""
    m = snapcore.SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 10.0), source=SeededSource(3), timing="constant"
    )
    pad = m.padding
    assert pad is not None
    a = np.zeros(40)
    q = pad.quantum_for(a)
    assert pad.quantum_for(np.ones(40)) == q and len(stub_calibration) == 1
    pad.quantum_for(np.zeros(40, np.int64))
    assert len(stub_calibration) == 2
    pad.quantum_for(np.zeros(41))
    assert len(stub_calibration) == 3
    _quanta.clear_caches()
    pad.quantum_for(a)
    assert len(stub_calibration) == 4
    m.release(a)
    assert len(stub_calibration) == 4
