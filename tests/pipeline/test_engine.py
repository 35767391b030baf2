"""The fast path's engine (snapcore.pipeline._engine): bit-identical to the exact MPFR
pipeline, always.

References are independent of the fast path: the exact pipeline run element by
element on MPFR (``Pipeline.run``), exact rationals (``fractions.Fraction``) and
MPFR at 400 bits.  The error bound itself is checked against the exact ``y`` of
every sample: ``|t − (y/Λ + 1/2)| <= err``.
"""

from __future__ import annotations

import io
import math
import os
import random
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.exact._dyadic import round_fraction, to_fraction
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _engine
from snapcore.pipeline._engine import release_batch
from snapcore.plugins._manager import BUILTIN_PLUGINS, get_registries
from snapcore.randomness._draw import Draw, DrawBatch
from snapcore.randomness._sources import ByteSource, ReplaySource, SeededSource
from snapcore.testing.sources import FixedBytes

ENGINES = ["numpy"] + (["numba"] if numba_available() else [])

#: Parameter sets: (name, mechanism keyword arguments, value range).  They cover the
#: trivial centre/sensitivity, a non-double centre, a non-double sensitivity, the
#: table and the computed output stages, tiny and large epsilon, and p > 118.
PARAMS = [
    ("unit", dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)), (-20.0, 120.0)),
    ("symmetric-wide", dict(epsilon=0.3, clamp_bound=1e6), (-1.3e6, 1.3e6)),
    ("sens-0.1", dict(epsilon=2.0, clamp_bounds=(-3.5, 7.25), sensitivity=0.1), (-5.0, 9.0)),
    (
        "sens-third",
        dict(epsilon=0.5, clamp_bounds=(-1.0, 2.0), sensitivity=Fraction(1, 3)),
        (-2, 3),
    ),
    (
        "wide-dd-output",
        dict(epsilon=1.5, clamp_bounds=(-123456.75, 987654.3), sensitivity=0.7),
        (-2e5, 1.1e6),
    ),
    (
        "wide-non-double-sens",
        dict(epsilon=1.0, clamp_bounds=(-5e4, 5e4), sensitivity=Fraction(2, 3)),
        (-6e4, 6e4),
    ),
    ("odd-centre", dict(epsilon=0.001, clamp_bounds=(1.0, 2.0**53)), (0.0, 2.0**53 * 1.1)),
    ("tiny-eps", dict(epsilon=1e-6, clamp_bound=1e7), (-2e7, 2e7)),
    ("large-eps", dict(epsilon=40.0, clamp_bounds=(-0.001, 0.003)), (-0.002, 0.004)),
    ("p-200", dict(epsilon=1.0, clamp_bound=10.0, precision=200), (-12.0, 12.0)),
]
IDS = [p[0] for p in PARAMS]


def exact_outputs(mech: SnappingMechanism, values: np.ndarray, draws: list[Draw]) -> np.ndarray:
    """The reference: the exact pipeline, element by element."""
    pipe = mech.pipeline
    return np.array(
        [pipe.run(pipe.centre(Fraction(float(v))), d) for v, d in zip(values, draws, strict=True)]
    )


def random_values(lo: float, hi: float, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.uniform(lo, hi, n)
    # a few exact bound hits, zeros and integers
    v[: n // 50] = rng.choice([lo, hi, 0.0, 1.0, -1.0], n // 50)
    return v


def fq(x) -> Fraction:
    """An MPFR number as an exact Fraction."""
    return Fraction(*x.as_integer_ratio())


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


# ----------------------------------------------------------------------------------
# Draw decoding
# ----------------------------------------------------------------------------------
def _stream_with_continuations(p: int, count: int, seed: int) -> bytes:
    rng = random.Random(seed)
    nb = (p + 6) >> 3
    parts = []
    for j in range(count):
        w = rng.getrandbits(64)
        if j % 7 == 3:  # all 63 exponent bits zero, then zero words and a non-zero one
            w &= 1 << 63
            parts.append(w.to_bytes(8, "big"))
            for _ in range(j % 3):
                parts.append(bytes(8))
            parts.append((rng.getrandbits(64) >> rng.randint(0, 63) or 1).to_bytes(8, "big"))
        else:
            parts.append(w.to_bytes(8, "big"))
        parts.append(rng.getrandbits(8 * nb).to_bytes(nb, "big"))
    return b"".join(parts) + os.urandom(64)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", [118, 130, 200])
def test_bulk_decoding_equals_scalar_decoding(p, engine):
    data = _stream_with_continuations(p, 60, seed=p)
    a, b = FixedBytes(data), FixedBytes(data)
    batch = _engine.batch_draws(a, 60, p, engine)
    ref = b.draws(60, p)
    assert a.position == b.position, "bulk decoding consumed a different number of bytes"
    for i, d in enumerate(ref):
        assert batch.draw(i) == d
        assert batch.sign[i] == d.sign
        assert batch.e[i] == -d.exponent - (p - 1)
        assert int(batch.mhi[i]) == (d.mantissa >> (p - 53)) & ((1 << 52) - 1)
        assert int(batch.mlo[i]) == (d.mantissa >> (p - 106)) & ((1 << 53) - 1)
    assert sum(1 for i in range(60) if i % 7 == 3) == 9  # continuations were exercised


@pytest.mark.parametrize("p", [118, 130])
def test_fused_loop_with_continuations_and_chunks(p, monkeypatch):
    """The fused loop (chunks of 16 draws here) reads exactly the scalar decoder's
    bytes across continuation words and chunk ends, and releases exactly."""
    if not numba_available():
        pytest.skip("the fused loop is compiled")
    monkeypatch.setattr(_engine.FastEngine, "STREAM_CHUNK", 16)
    data = _stream_with_continuations(p, 200, seed=p + 1)
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), precision=p)
    values = random_values(-20.0, 120.0, 200, seed=p)
    a, b = FixedBytes(data), FixedBytes(data)
    out, st = release_batch(mech.pipeline, values, a, engine="numba", stats=True)
    assert _engine.engine_for(mech.calibration).fusable
    ref = exact_outputs(mech, values, b.draws(200, p))
    assert a.position == b.position, "the fused loop consumed a different number of bytes"
    assert identical(out, ref)
    assert set(range(3, 200, 7)) <= set(st.fallback_k.tolist())  # continuations exact


@pytest.mark.parametrize("engine", ENGINES)
def test_bulk_decoding_seeded_stream_position(engine):
    a, b = SeededSource(99), SeededSource(99)
    batch = _engine.batch_draws(a, 5000, 118, engine)
    ref_batch = DrawBatch.from_draws(b.draws(5000, 118), 118)
    for name in ("sign", "e", "mhi", "mlo"):
        assert np.array_equal(getattr(batch, name), getattr(ref_batch, name))
    b = SeededSource(99)
    ref = b.draws(5000, 118)
    assert all(batch.draw(i) == ref[i] for i in range(0, 5000, 97))
    assert a.read(32) == b.read(32)


# ----------------------------------------------------------------------------------
# Bit-identical outputs and a valid bound
# ----------------------------------------------------------------------------------
def _check_params(kw, vrange, n, seed, engines):
    mech = SnappingMechanism(source=SeededSource(seed), **kw)
    pipe = mech.pipeline
    p = mech.precision
    values = random_values(*vrange, n, seed)
    ref = exact_outputs(mech, values, SeededSource(seed).draws(n, p))
    for engine in engines:
        out, st = release_batch(pipe, values, SeededSource(seed), engine=engine, stats=True)
        bad = np.flatnonzero(out.view(np.int64) != ref.view(np.int64))
        assert bad.size == 0, (
            f"{kw} engine={engine}: {bad.size} mismatches, first at {bad[:3]} "
            f"(value {values[bad[0]]!r}, seed {seed})"
        )
        assert st.size == n
    return mech, st


@pytest.mark.parametrize(("name", "kw", "vrange"), PARAMS, ids=IDS)
def test_bit_identical_to_mpfr(name, kw, vrange):
    mech, st = _check_params(kw, vrange, 4000, seed=hash(name) % 1000, engines=ENGINES)
    assert _engine.engine_for(mech.calibration).supported
    assert len(st.fallback_k) <= 2


@pytest.mark.slow
@pytest.mark.parametrize(("name", "kw", "vrange"), PARAMS, ids=IDS)
def test_bit_identical_to_mpfr_million(name, kw, vrange, slow_size):
    """>= 10**6 draws per parameter set (the exact reference dominates the time)."""
    for part in range(slow_size(10, 1)):
        n = slow_size(100_000, 1_000)
        _check_params(kw, vrange, n, seed=1000 * part + len(name), engines=ENGINES)


class Recording(ByteSource):
    """Passes another byte source through and keeps every byte it delivered."""

    name = "recording"

    def __init__(self, inner: ByteSource) -> None:
        super().__init__()
        self.inner = inner
        self.log = bytearray()

    def read(self, n: int) -> bytes:
        out = self.inner.read(n)
        self.log += out
        return out

    def readinto(self, buffer) -> None:
        self.inner.readinto(buffer)  # ChaCha20 writes in place
        self.log += memoryview(buffer).cast("B")


SOURCES = ["system", "chacha20", "seeded"]


def _check_source(source, kw, vrange, n, seed):
    """The fast path on a real source equals the exact pipeline on the same bytes."""
    reg = get_registries()
    for engine in ENGINES:
        inner = SeededSource(seed) if source == "seeded" else reg.sources.create(source)
        rec = Recording(inner)
        mech = SnappingMechanism(source=rec, **kw)
        values = random_values(*vrange, n, seed)
        out = release_batch(mech.pipeline, values, rec, engine=engine)
        draws = FixedBytes(bytes(rec.log)).draws(n, mech.precision)
        ref = exact_outputs(mech, values, draws)
        bad = np.flatnonzero(out.view(np.int64) != ref.view(np.int64))
        assert bad.size == 0, f"{source} {engine} {kw}: {bad.size} mismatches"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(("name", "kw", "vrange"), [PARAMS[0], PARAMS[4]], ids=[IDS[0], IDS[4]])
def test_bit_identical_on_every_source(source, name, kw, vrange):
    _check_source(source, kw, vrange, 2000, seed=len(name))


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(("name", "kw", "vrange"), PARAMS, ids=IDS)
def test_bit_identical_on_every_source_million(source, name, kw, vrange):
    _check_source(source, kw, vrange, 1_000_000, seed=len(name))


def _exact_t(pipe, value, draw) -> Fraction:
    st = pipe.stages(Fraction(float(value)), draw)
    ym, ye = st["y"]
    return to_fraction(ym, ye - pipe.calibration.granularity_log2) + Fraction(1, 2)


@pytest.mark.parametrize(("name", "kw", "vrange"), PARAMS, ids=IDS)
def test_error_bound_holds(name, kw, vrange):
    """``|t − (y/Λ + 1/2)| <= err`` for every sample, y from MPFR exactly."""
    mech = SnappingMechanism(**kw)
    pipe = mech.pipeline
    n = 1500
    values = random_values(*vrange, n, 5)
    draws = SeededSource(6).draws(n, mech.precision)
    eng = _engine.engine_for(mech.calibration)
    sh, sl, err, _ok = eng.diagnose(values, DrawBatch.from_draws(draws, mech.precision))
    for i in range(n):
        t = Fraction(float(sh[i])) + Fraction(float(sl[i]))
        exact = _exact_t(pipe, values[i], draws[i])
        assert abs(t - exact) <= Fraction(float(err[i])), (name, i, values[i], draws[i])


# ----------------------------------------------------------------------------------
# Near-ties and the deep tail
# ----------------------------------------------------------------------------------
def near_tie_draw(mech, x: Fraction, target_y: Fraction) -> Draw:
    """A draw whose exact noise puts ``x + N`` as close to ``target_y`` as the p-bit
    grid of U* allows (MPFR at 400 bits, then rounded once to p bits)."""
    p = mech.precision
    lam = mech.scale
    nstar = target_y - x
    sign = -1 if nstar > 0 else 1  # N = S·λ·ln U* and ln U* < 0
    ctx = gmpy2.context(precision=400)
    u = ctx.exp(ctx.div(-gmpy2.mpq(abs(nstar)), gmpy2.mpq(lam)))
    m, e = round_fraction(fq(u), p)
    return Draw(sign=sign, mantissa=m, exponent=e)


NEAR_TIE_PARAMS = [PARAMS[0], PARAMS[2], PARAMS[3], PARAMS[4], PARAMS[9]]


NEAR_TIE_IDS = [p[0] for p in NEAR_TIE_PARAMS]


@pytest.mark.parametrize(("name", "kw", "vrange"), NEAR_TIE_PARAMS, ids=NEAR_TIE_IDS)
def test_near_ties_take_the_fallback(name, kw, vrange):
    """|y/Λ − (k + 1/2)| from 2**-40 down to 2**-90, and exact ties: bit-identical;
    every one the bound cannot separate takes the exact fallback; ties (distance 0)
    always do."""
    check_near_ties(name, kw, vrange, per_exponent=3, tie_tries=40)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "kw", "vrange"), NEAR_TIE_PARAMS, ids=NEAR_TIE_IDS)
def test_near_ties_many(name, kw, vrange, slow_size):
    """About 6,000 near-ties and 400 tie attempts per parameter set."""
    check_near_ties(name, kw, vrange, per_exponent=slow_size(120, 8), tie_tries=slow_size(400, 20))


def check_near_ties(name, kw, vrange, per_exponent, tie_tries):
    mech = SnappingMechanism(**kw)
    pipe = mech.pipeline
    p = mech.precision
    Lam = mech.granularity
    rng = random.Random(name)
    values, draws, dists = [], [], []
    for j in range(40, 91):
        for _ in range(per_exponent):
            v = rng.uniform(*vrange)
            x = Fraction(*pipe.centre(Fraction(v)))
            k = rng.randint(-3, 3) + round(x / Lam)
            sigma = rng.choice([-1, 1])
            target = (k + Fraction(1, 2) + sigma * Fraction(1, 2**j)) * Lam
            d = near_tie_draw(mech, x, target)
            values.append(v)
            draws.append(d)
    # exact ties: search p-bit neighbours of U* for y exactly on the half-integer
    ties = 0
    for _ in range(tie_tries):
        v = rng.uniform(*vrange)
        x = Fraction(*pipe.centre(Fraction(v)))
        k = rng.randint(-3, 3) + round(x / Lam)
        target = (k + Fraction(1, 2)) * Lam
        d0 = near_tie_draw(mech, x, target)
        for delta in range(-40, 41):
            d = Draw(sign=d0.sign, mantissa=d0.mantissa + delta, exponent=d0.exponent)
            if not (1 << (p - 1)) <= d.mantissa < (1 << p):
                continue
            if _exact_t(pipe, v, d) - Fraction(1, 2) == target / Lam:
                values.append(v)
                draws.append(d)
                ties += 1
                break
    vals = np.array(values)
    for i, d in enumerate(draws):
        t = _exact_t(pipe, vals[i], d)
        dists.append(abs(t - math.floor(t + Fraction(1, 2))))  # distance to an integer
    batch = DrawBatch.from_draws(draws, p)
    ref = exact_outputs(mech, vals, draws)
    eng = _engine.engine_for(mech.calibration)
    sh, sl, err, ok = eng.diagnose(vals, batch)
    for engine in ENGINES:
        out, st = eng.run(vals, batch, pipe, engine)
        assert identical(out, ref), f"{name} {engine}: near-tie mismatch"
        fallback = set(st.fallback_k.tolist())
        for i, dist in enumerate(dists):
            t_approx = Fraction(float(sh[i])) + Fraction(float(sl[i]))
            off = abs(t_approx - _exact_t(pipe, vals[i], draws[i]))
            assert off <= Fraction(float(err[i]))  # the bound holds at near-ties too
            if dist + off <= Fraction(float(err[i])):  # the approximation is within err
                assert i in fallback, f"{name}: near-tie {i} at {float(dist)!r} not refused"
            if dist == 0:
                assert i in fallback, f"{name}: exact tie {i} not refused"
    assert min(dists) < Fraction(1, 2**85)
    assert max(dists) > Fraction(1, 2**41)
    assert sum(d < Fraction(1, 2**73) for d in dists) >= 13 * per_exponent
    assert ties >= 1, "no exact tie found"
    assert not ok[np.array(dists) < Fraction(1, 2**73)].any()


@pytest.mark.parametrize("e", [64, 200, 900, 1000, 4000, (1 << 20) + 1])
def test_deep_tail(e):
    """U* around 2**-e (far beyond the 63 bits of the first word): bit-identical;
    beyond the bound's exponent range (e > 2**20) the exact fallback is taken."""
    mech = SnappingMechanism(epsilon=0.001, clamp_bound=1e6)
    p = mech.precision
    pipe = mech.pipeline
    rng = random.Random(e)
    draws = [
        Draw(
            sign=rng.choice([-1, 1]),
            mantissa=(1 << (p - 1)) | rng.getrandbits(p - 1),
            exponent=-(p - 1) - e - rng.randint(0, 3),
        )
        for _ in range(200)
    ]
    vals = np.array([rng.uniform(-1e6, 1e6) for _ in draws])
    ref = exact_outputs(mech, vals, draws)
    eng = _engine.engine_for(mech.calibration)
    batch = DrawBatch.from_draws(draws, p)
    sh, sl, err, _ok = eng.diagnose(vals, batch)
    for engine in ENGINES:
        out, st = eng.run(vals, batch, pipe, engine)
        assert identical(out, ref)
        if e > 1 << 20:
            assert len(st.fallback_k) == len(draws)
    if e <= 1 << 20:
        for i in range(0, 200, 7):
            t = Fraction(float(sh[i])) + Fraction(float(sl[i]))
            assert abs(t - _exact_t(pipe, vals[i], draws[i])) <= Fraction(float(err[i]))


# ----------------------------------------------------------------------------------
# Integration: mechanism, backends, sources
# ----------------------------------------------------------------------------------
def test_release_fast_backend_equals_exact_path():
    """Same SeededSource: the fast backend's release equals the exact pipeline's."""
    kw = dict(epsilon=0.7, clamp_bounds=(-50.0, 50.0))
    v = random_values(-60.0, 60.0, 3000, 1).reshape(30, 100)
    fast = SnappingMechanism(backend="fast", source=SeededSource(42), **kw)
    out = fast.release(v)
    assert out.shape == v.shape and out.dtype == np.float64
    mpfr = SnappingMechanism(backend="mpfr", source=SeededSource(42), **kw)
    ref = exact_outputs(mpfr, v.reshape(-1), SeededSource(42).draws(v.size, mpfr.precision))
    assert identical(out.reshape(-1), ref)
    # the automatic dispatch (mpfr, large array) gives the same bits
    assert identical(mpfr.release(v).reshape(-1), ref)
    # a short list goes element by element, on the same stream
    m2 = SnappingMechanism(backend="fast", source=SeededSource(42), **kw)
    small = m2.release(list(v.reshape(-1)[:10]))
    assert small == ref[:10].tolist()


@pytest.mark.parametrize(("name", "kw", "vrange"), [PARAMS[0], PARAMS[2], PARAMS[6]], ids=str)
def test_extreme_and_boundary_values(name, kw, vrange):
    """Huge values (overflowing v − c), values around c ± 4Δb (the 'far' test), at
    the bounds and one ulp around them: bit-identical to the exact pipeline."""
    mech = SnappingMechanism(**kw)
    lo, hi = mech.clamp_bounds
    c = float(mech.calibration.centre)
    w = float(4 * mech.sensitivity * mech.unit_clamp_bound)
    base = [
        1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 1e18, -1e18,
        5e-324, -5e-324, 0.0, -0.0, lo, hi, c, c + w, c - w, c + w / 2, c - w / 2,
    ]  # fmt: skip
    vals = []
    for b in base:
        vals += [b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf)]
    vals = np.array([v for v in vals if math.isfinite(v)] * 40)
    draws = SeededSource(17).draws(vals.size, mech.precision)
    ref = exact_outputs(mech, vals, draws)
    for engine in ENGINES:
        out = release_batch(mech.pipeline, vals, SeededSource(17), engine=engine)
        assert identical(out, ref), name
    batch = DrawBatch.from_draws(draws, mech.precision)
    sh, sl, err, _ok = _engine.engine_for(mech.calibration).diagnose(vals, batch)
    for i in range(0, vals.size, 7):
        t = Fraction(float(sh[i])) + Fraction(float(sl[i]))
        exact = _exact_t(mech.pipeline, vals[i], draws[i])
        assert abs(t - exact) <= Fraction(float(err[i])), (name, vals[i])


def test_release_empty_and_shapes():
    m = SnappingMechanism(epsilon=1.0, clamp_bound=3.0, backend="fast", source=SeededSource(1))
    assert m.release(np.array([])).shape == (0,)
    out = m.release(np.zeros((2, 3, 4), dtype=np.float32))
    assert out.shape == (2, 3, 4) and out.dtype == np.float64
    with pytest.raises(ValueError, match="missing values"):
        m.release(np.array([1.0, np.nan]))


def test_release_integer_and_replay_inputs():
    kw = dict(epsilon=1.0, clamp_bounds=(0.0, 1000.0))
    ints = np.arange(-100, 1100, dtype=np.int64)
    draws = SeededSource(3).draws(ints.size, 118)
    replay = [(d.sign, d.u) for d in draws]
    fast = SnappingMechanism(backend="fast", source=ReplaySource(replay), **kw)
    ref = exact_outputs(fast, ints.astype(np.float64), draws)
    assert identical(fast.release(ints), ref)
    # int64 beyond 2**53 is not an exact double: element-wise exact path, same bits
    big = np.array([2**60 + 1, 5, -(2**62) - 3], dtype=np.int64)
    m = SnappingMechanism(backend="fast", source=SeededSource(8), **kw)
    out = m.release(big)
    ref_m = SnappingMechanism(source=SeededSource(8), **kw)
    assert out.tolist() == [ref_m.release(int(b)) for b in big]


def test_fast_backend_registered_and_exact_scalar():
    reg = get_registries()
    assert "fast" in reg.backends.names() and "fast" in reg.backends.available()
    assert BUILTIN_PLUGINS["fast"] == "snapcore.backends.fast"
    fast = reg.backends.create("fast")
    assert callable(fast.batch)
    a = fast.arithmetic(118)
    third = a.div(a.convert(1), a.convert(3))
    m, e = a.to_dyadic(third)
    assert (m, e) == round_fraction(Fraction(1, 3), 118)
    kw = dict(epsilon=1.0, clamp_bounds=(0.0, 10.0))
    x = SnappingMechanism(backend="fast", **kw).transform(3.3, 0.375, -1)
    y = SnappingMechanism(backend="mpfr", **kw).transform(3.3, 0.375, -1)
    assert x == y


def test_unsupported_parameters_fall_back_entirely():
    """Magnitudes outside the bound's coverage: the whole batch is exact."""
    mech = SnappingMechanism(epsilon=2.0**-700, clamp_bound=2.0**-650)
    eng = _engine.engine_for(mech.calibration)
    assert not eng.supported
    v = np.linspace(-1e-196, 1e-196, 50)
    out, st = release_batch(mech.pipeline, v, SeededSource(4), stats=True)
    ref = exact_outputs(mech, v, SeededSource(4).draws(50, mech.precision))
    assert identical(out, ref) and st.engine == "exact"


def test_output_stage_computed_and_certified():
    """Wide bounds (no table): the double-double output stage is certified or exact."""
    kw = dict(epsilon=3.0, clamp_bounds=(-1e9 + 0.3, 3e9 + 0.1), sensitivity=0.37)
    mech = SnappingMechanism(**kw)
    eng = _engine.engine_for(mech.calibration)
    assert not eng.use_table and eng.out_dd
    k = np.arange(-eng.kmax - 3, eng.kmax + 4, max(1, eng.kmax // 5000), dtype=np.int64)
    k = np.concatenate([k, [-eng.kmax, eng.kmax, 0, 1, -1]])
    out, bad = eng.outputs(k, mech.pipeline)
    from snapcore.pipeline._stages import clamp

    L, b = mech.calibration.granularity_log2, mech.calibration.unit_clamp_bound_dyadic
    ref = np.array([mech.pipeline.output(clamp(int(kk), L, b)) for kk in k])
    assert identical(out, ref)
    assert bad.size <= k.size // 100


def test_system_source_large_reads():
    """Large reads bypass the buffer but keep the stream's byte accounting."""
    from snapcore.randomness._sources import SystemSource

    src = SystemSource()
    a = src.read(5)
    b = src.read(100_000)
    c = src.read(3)
    assert (len(a), len(b), len(c)) == (5, 100_000, 3)
    assert len(set(b[i : i + 16] for i in range(0, 100_000, 16))) == 6250  # no repeats
    batch = _engine.batch_draws(src, 70_000, 118)
    assert len(batch) == 70_000 and set(np.unique(batch.sign)) <= {-1.0, 1.0}
    assert 0.45 < np.mean(batch.e == 1.0) < 0.55  # P(e = 1) = 1/2


def test_default_source_is_chacha20():
    from snapcore.randomness._chacha import ChaCha20Source

    m = SnappingMechanism(epsilon=1.0, clamp_bound=1.0)
    assert type(m.source) is ChaCha20Source and m.source.cryptographic
    assert SnappingMechanism(epsilon=1.0, clamp_bound=1.0, source="system").source.name == "system"


def test_chacha20_source():
    pytest.importorskip("cryptography")
    from snapcore.randomness._chacha import ChaCha20Source

    reg = get_registries()
    assert "chacha20" in reg.sources.names()
    src = reg.sources.create("chacha20")
    assert isinstance(src, ChaCha20Source) and src.cryptographic
    assert src.read(10) != ChaCha20Source().read(10)
    # RFC 8439 §2.4.2 keystream (block counter 1): the cipher is ChaCha20 itself
    key = bytes(range(32))
    nonce = bytes.fromhex("000000000000004a00000000")
    src = ChaCha20Source(reader=io.BytesIO(key + nonce).read)
    src.read(64)  # block 0; the RFC's vector is block 1
    head = src.read(3) + src.read(13)
    assert head.hex() == "224f51f3401bd9e12fde276fb8631ded"
    # draws through the fast path consume the stream like the scalar decoder
    m = SnappingMechanism(epsilon=1.0, clamp_bound=5.0, source="chacha20")
    out = m.release(np.zeros(5000))
    assert np.all(np.abs(out) <= 5.0)


def test_mpfr_batch_declines_for_a_modified_arithmetic():
    """The MPFR backend's fast path reproduces MPFR's own primitives only: with a
    subclassed arithmetic it declines, before drawing, and release goes element-wise."""
    from fractions import Fraction as Q

    from snapcore.backends.mpfr import MPFRArithmetic, MPFRBackend

    from snapcore.pipeline._stages import Pipeline
    from snapcore.randomness._sources import ReplaySource

    class Modified(MPFRArithmetic):
        pass

    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    cal = mech.calibration
    values = np.full(2048, 42.0)
    src = ReplaySource([(1, Q(1, 2))] * 2048)
    backend = MPFRBackend()
    assert backend.batch_min_size <= values.size
    assert backend.batch(Pipeline(cal, Modified(cal.precision)), values, src) is None
    assert src.remaining == 2048
    out = backend.batch(Pipeline(cal, backend.arithmetic(cal.precision)), values, src)
    assert out is not None and src.remaining == 0
    assert (out == mech.transform(42.0, Q(1, 2), 1)).all()


# ----------------------------------------------------------------------------------
# Value classes: clamped k is written from the two endpoint outputs, never recomputed
# ----------------------------------------------------------------------------------
#: (name, mechanism keyword arguments, use_table, kmax_is_b): both output stages, with
#: kmax·Λ == b (the clamped output starts at |k| == kmax) and kmax·Λ < b (at kmax + 1).
CLASS_PARAMS = [
    ("table-kmax-is-b", dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)), True, True),
    ("table-kmax-below-b", dict(epsilon=1.0, clamp_bounds=(0.0, 101.0)), True, False),
    ("dd-kmax-is-b", dict(epsilon=1.0, clamp_bounds=(0.0, 1e5)), False, True),
    ("dd-kmax-below-b", dict(epsilon=1.0, clamp_bounds=(0.0, 100001.0)), False, False),
    (
        "dd-sens-0.7",
        dict(epsilon=1.5, clamp_bounds=(-123456.75, 987654.3), sensitivity=0.7),
        False,
        False,
    ),
]


def _value_classes(mech: SnappingMechanism, n: int) -> dict[str, np.ndarray]:
    cal = mech.calibration
    lo, hi = float(cal.lower), float(cal.upper)
    step = Fraction(2) ** cal.granularity_log2 * cal.sensitivity  # Δ·Λ, data units
    kmax = _engine.engine_for(cal).kmax
    rng = np.random.default_rng(5)
    js = rng.integers(-kmax - 1, kmax + 1, n)
    js[:4] = [-kmax - 1, -kmax, kmax - 1, kmax]  # the half-points next to the ends
    half = np.array([float(cal.centre + (int(j) + Fraction(1, 2)) * step) for j in js])
    return {
        "at-upper": np.full(n, hi),
        "at-lower": np.full(n, lo),
        "clamped": np.where(np.arange(n) % 2 == 0, hi + (hi - lo), lo - (hi - lo) / 3),
        "outside": np.where(np.arange(n) % 2 == 0, 1e300, -1e300),
        "half-points": half,
        "inside": rng.uniform(lo, hi, n),
    }


@pytest.mark.parametrize(("name", "kw", "use_table", "kmax_is_b"), CLASS_PARAMS,
                         ids=[c[0] for c in CLASS_PARAMS])  # fmt: skip
def test_value_classes_bit_identical_and_clamped_k_never_recomputed(
    name, kw, use_table, kmax_is_b
):
    """All-at-a-bound, all-clamped, all-outside (±1e300), half-point and inside
    batches give the element-wise exact outputs on the same draws, on both engines,
    and a decided clamped ``k`` (``|k| >= kmax`` when ``kmax·Λ == b``, else
    ``> kmax``) is written from the two endpoint outputs ([S9]), never sent to the
    exact output stage: the output stage costs the same for every value class."""
    mech = SnappingMechanism(**kw)
    eng = _engine.engine_for(mech.calibration)
    assert (eng.use_table, eng.kmax_is_b, eng.fusable) == (use_table, kmax_is_b, True)
    pipe, p, n = mech.pipeline, mech.precision, 300
    for cls, values in _value_classes(mech, n).items():
        seed = 1000 + len(cls)
        ref = exact_outputs(mech, values, SeededSource(seed).draws(n, p))
        for engine in ENGINES:
            out, st = release_batch(pipe, values, SeededSource(seed), engine=engine, stats=True)
            bad = np.flatnonzero(out.view(np.int64) != ref.view(np.int64))
            assert bad.size == 0, f"{name} {cls} {engine}: {bad.size} mismatches at {bad[:3]}"
            if cls in ("at-upper", "at-lower", "clamped", "outside"):
                assert len(st.fallback_output) == 0, f"{name} {cls} {engine}: {st}"
                assert len(st.fallback_k) <= 3
        if cls in ("at-upper", "clamped", "outside"):
            # the classes do reach the clamped output (and, at a bound, k == kmax)
            assert (ref == mech.calibration.upper).sum() > n // 8


# ----------------------------------------------------------------------------------
# The exact release of one row (the fused loop's fallback and the padded dummies)
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "kw", "vrange"), PARAMS, ids=IDS)
def test_row_release_equals_the_exact_pipeline(name, kw, vrange):
    """``row_release(pipe)(row, v)`` is ``pipe.run`` on the value and the draw the
    scalar decoder reads from the row's bytes: random rows (both signs, exponents
    from the first bits to the 63rd), values inside, at and beyond the bounds, and
    the dummies' public row."""
    mech = SnappingMechanism(**kw, timing="off")
    pipe, p = mech.pipeline, mech.precision
    exact = _engine.row_release(pipe)
    rng = random.Random(IDS.index(name))
    nb = (p + 6) >> 3
    values = [*random_values(*vrange, 60, 5), vrange[0] * 4, vrange[1] * 4, 0.0, -0.0]
    rows = [bytes([0x5A]) * (8 + nb)]
    for j in range(len(values) - 1):
        # A sign bit, then j % 63 zero bits: the exponent ends in the first word.
        word = rng.getrandbits(1) << 63 | (rng.getrandbits(63) >> (j % 63) or 1)
        rows.append(word.to_bytes(8, "big") + rng.getrandbits(8 * nb).to_bytes(nb, "big"))
    for v, row in zip(values, rows, strict=True):
        draw = Draw(*_draw_of(row, p))
        want = pipe.run(pipe.centre(Fraction(float(v))), draw)
        got = exact(row, np.float64(v))
        assert identical(np.array([got]), np.array([want])), (name, v, row.hex())
    assert _engine.row_release(pipe) is exact  # built once per pipeline


def test_row_release_does_not_keep_its_pipeline_alive():
    """The cache of :func:`row_release` is keyed weakly by the pipeline: once the
    pipeline is dropped, it and its closure are collected."""
    import gc
    import weakref

    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), timing="off")
    pipe = mech.pipeline
    _engine.row_release(pipe)
    assert pipe in _engine._ROW_RELEASES
    gone = weakref.ref(pipe)
    del mech, pipe
    gc.collect()
    assert gone() is None


def _draw_of(row: bytes, p: int) -> tuple[int, int, int]:
    from snapcore.randomness._draw import decode_draw_raw

    return decode_draw_raw(io.BytesIO(row).read, p)


@pytest.mark.skipif(not numba_available(), reason="the fused loop is compiled")
@pytest.mark.parametrize("floor", [0, 1, 3])
def test_fused_loop_runs_fallbacks_and_dummies_through_one_loop(floor, monkeypatch):
    """The fused loop computes its undecided elements after the loop, with the padded
    release's dummies (``exact_floor``) in the same loop of :func:`row_release`
    calls: as many calls as ``max(floor, fallbacks)``, the dummies on the public row
    and the calibration's centre, and outputs equal to the exact pipeline's."""
    from snapcore.padding._pad import tie_row

    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), timing="off")
    pipe, p = mech.pipeline, mech.precision
    n, ties = 2000, (3, 1500)
    rng = random.Random(floor)
    nb = (p + 6) >> 3
    rows = [
        rng.getrandbits(64).to_bytes(8, "big") + rng.getrandbits(8 * nb).to_bytes(nb, "big")
        for _ in range(n)
    ]
    for j in ties:  # near-ties at the centre: the kernel leaves them undecided
        rows[j] = tie_row(mech.calibration)
    values = np.full(n, 50.0)
    exact = _engine.row_release(pipe)
    calls = []

    def counting(row, v):
        calls.append((row, float(v)))
        return exact(row, v)

    monkeypatch.setitem(_engine._ROW_RELEASES, pipe, counting)
    out, st = release_batch(
        pipe, values, FixedBytes(b"".join(rows)), stats=True, exact_floor=floor
    )
    assert sorted(st.fallback_k.tolist()) == list(ties)
    assert len(calls) == max(floor, len(ties))
    dummy = (tie_row(mech.calibration), float(mech.calibration.centre))
    assert calls[: len(ties)] == [(rows[j], 50.0) for j in ties]
    assert calls[len(ties) :] == [dummy] * (len(calls) - len(ties))
    want = exact_outputs(mech, values, [Draw(*_draw_of(r, p)) for r in rows])
    assert identical(out, want)
