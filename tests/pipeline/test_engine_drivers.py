"""The fast path's batch drivers: ``FastEngine.decide``, ``run``, ``run_stream`` and
``release_batch``, against the exact pipeline on the same draws.

The kernel and the output stage are tested elsewhere; here the glue around them is:
the default engine, the refusal of an unknown engine or of numba when it is missing
(with the documented messages), the contract that an undecided ``k`` is 0, the
floating-point state the numpy kernel runs under, and the ``BatchStats`` of a batch
computed entirely by the exact pipeline.  Undecided elements are built by hand: a
draw ``U* = 2**-e`` with ``e > 2**20`` lies beyond the bound's exponent range, so the
kernel refuses it and the exact pipeline decides.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _engine
from snapcore.pipeline._stages import clamp
from snapcore.randomness._draw import Draw, DrawBatch
from snapcore.randomness._sources import SeededSource
from snapcore.testing.sources import FixedBytes

ENGINES = ["numpy", *(["numba"] if numba_available() else [])]


def _exact(pipe, values, draws):
    return np.array(
        [pipe.run(pipe.centre(Fraction(float(v))), d) for v, d in zip(values, draws, strict=True)],
        dtype=np.float64,
    )


def _identical(a, b) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.int64), b.view(np.int64))


def _deep_and_ordinary(p: int, n: int, seed: int) -> list[Draw]:
    """Every third draw lies beyond the bound's exponent range (undecided); the rest
    are ordinary uniform draws."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        e = (1 << 20) + 1 + rng.randint(0, 3) if i % 3 == 0 else rng.randint(1, 5)
        out.append(
            Draw(
                sign=rng.choice([-1, 1]),
                mantissa=(1 << (p - 1)) | rng.getrandbits(p - 1),
                exponent=-(p - 1) - e,
            )
        )
    return out


@pytest.fixture(scope="module")
def setting():
    mech = SnappingMechanism(epsilon=0.5, clamp_bound=1e3)
    p = mech.precision
    draws = _deep_and_ordinary(p, 60, seed=7)
    rng = random.Random(8)
    values = np.array([rng.uniform(-1.2e3, 1.2e3) for _ in draws])
    return mech, values, draws


def test_default_engine_is_auto(setting):
    """``decide`` and ``run`` without an engine resolve "auto" and agree with the exact
    pipeline."""
    mech, values, draws = setting
    eng = _engine.engine_for(mech.calibration)
    assert eng.supported
    batch = DrawBatch.from_draws(draws, mech.precision)
    _k, _ok, used = eng.decide(values, batch)
    assert used == _engine.resolve_engine()
    out, st = eng.run(values, batch, mech.pipeline)
    assert st.engine == _engine.resolve_engine()
    assert _identical(out, _exact(mech.pipeline, values, draws))


@pytest.mark.parametrize("engine", ENGINES)
def test_undecided_k_is_zero_and_decided_k_is_exact(setting, engine):
    """``decide`` documents ``k`` as 0 where not decided; where decided it is the
    exact snapped index (the output of the exact pipeline is that of ``k``)."""
    mech, values, draws = setting
    pipe = mech.pipeline
    eng = _engine.engine_for(mech.calibration)
    k, ok, used = eng.decide(values, DrawBatch.from_draws(draws, mech.precision), engine)
    assert used == engine and k.dtype == np.int64 and ok.dtype == np.bool_
    deep = np.arange(values.size) % 3 == 0
    assert not ok[deep].any() and ok[~deep].all()
    assert (k[~ok] == 0).all()
    ref = _exact(pipe, values, draws)
    L, b = eng.L, mech.calibration.unit_clamp_bound_dyadic
    for j in np.flatnonzero(ok):
        assert pipe.output(clamp(int(k[j]), L, b)) == ref[j]
    out, st = eng.run(values, DrawBatch.from_draws(draws, mech.precision), pipe, engine)
    assert _identical(out, ref)
    assert st.engine == engine
    assert st.fallback_k.tolist() == np.flatnonzero(deep).tolist()


def test_numpy_kernel_runs_with_floating_point_exceptions_ignored(setting):
    """The numpy kernel under- and overflows by design on extreme values (a subnormal
    value, values far outside the clamp interval); under a caller's floating-point
    state that raises, it must still decide, and exactly."""
    mech, _, _ = setting
    pipe = mech.pipeline
    eng = _engine.engine_for(mech.calibration)
    p = mech.precision
    values = np.array([5e-324, -5e-324, 1.7e308, -1.7e308, 2.5e-310, 0.0, 999.0, -1e5])
    draws = SeededSource(11).draws(values.size, p)
    batch = DrawBatch.from_draws(draws, p)
    with np.errstate(all="raise"):
        _k, ok, _ = eng.decide(values, batch, "numpy")
        out, _ = eng.run(values, batch, pipe, "numpy")
    assert ok.all()
    assert _identical(out, _exact(pipe, values, draws))


def test_unknown_engine_is_refused_with_its_rule(setting):
    mech, values, draws = setting
    eng = _engine.engine_for(mech.calibration)
    batch = DrawBatch.from_draws(draws, mech.precision)
    with pytest.raises(
        ValueError, match=r"^engine must be 'auto', 'numba' or 'numpy', got 'gpu'$"
    ):
        eng.decide(values, batch, "gpu")


def test_numba_engine_without_numba_is_refused(setting, monkeypatch):
    mech, values, draws = setting
    eng = _engine.engine_for(mech.calibration)
    batch = DrawBatch.from_draws(draws, mech.precision)
    monkeypatch.setattr(_engine, "compiled", lambda: None)
    with pytest.raises(
        RuntimeError, match=r"^engine='numba' requested but numba is not installed$"
    ):
        eng.decide(values, batch, "numba")


def test_unsupported_calibration_stats_name_every_element():
    """A calibration outside the bound's coverage: every element by the exact
    pipeline, and ``BatchStats`` says so in its documented types."""
    mech = SnappingMechanism(epsilon=2.0**-700, clamp_bound=2.0**-650)
    eng = _engine.engine_for(mech.calibration)
    assert not eng.supported
    p = mech.precision
    v = np.linspace(-1e-196, 1e-196, 7)
    draws = SeededSource(5).draws(7, p)
    out, st = eng.run(v, DrawBatch.from_draws(draws, p), mech.pipeline, "numpy")
    assert _identical(out, _exact(mech.pipeline, v, draws))
    assert st.size == 7 and st.engine == "exact"
    assert st.fallback_k.tolist() == list(range(7))
    assert st.fallback_output.shape == (0,) and st.fallback_output.dtype == np.intp


def test_run_stream_refuses_an_engine_it_cannot_fuse():
    """Called directly on a calibration the fused loop does not cover, ``run_stream``
    refuses with its rule, before reading a byte."""
    mech = SnappingMechanism(epsilon=2.0**-700, clamp_bound=2.0**-650)
    eng = _engine.engine_for(mech.calibration)
    assert not eng.fusable
    src, ref = SeededSource(3), SeededSource(3)
    with pytest.raises(
        RuntimeError, match=r"^the fused loop needs numba and a supported calibration$"
    ):
        eng.run_stream(np.zeros(4), src, mech.pipeline)
    assert src.read(64) == ref.read(64)


@pytest.mark.skipif(not numba_available(), reason="the fused loop is compiled")
@pytest.mark.parametrize("p", [121, 129])
def test_fused_loop_row_length_when_p_is_one_more_than_a_multiple_of_eight(p):
    """A row is ``8 + ceil((p − 1)/8)`` bytes: for ``p ≡ 1 (mod 8)`` one byte shorter
    than ``8 + ceil(p/8)``.  The fused loop reads exactly the draws of the exact
    pipeline and releases the same outputs."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), precision=p)
    assert _engine.engine_for(mech.calibration).fusable
    rng = random.Random(p)
    values = np.array([rng.uniform(-20.0, 120.0) for _ in range(300)])
    src, ref = SeededSource(p), SeededSource(p)
    out, st = _engine.release_batch(mech.pipeline, values, src, engine="numba", stats=True)
    assert _identical(out, _exact(mech.pipeline, values, ref.draws(values.size, p)))
    # no element fell back here: the empty index arrays are still intp, as documented
    assert st.fallback_k.size == st.fallback_output.size == 0
    assert st.fallback_k.dtype == st.fallback_output.dtype == np.intp
    assert src.read(64) == ref.read(64)


#: The computed output stage's near-midpoint case (test_engine_certificate.py):
#: ``Δ = 1 + 2**-52``, ``Λ = 2**8``, centre ``2**60 + 2**-101``; ``k = 2**51`` is decided
#: but its double-double output is not certified.
KW_CERT = dict(
    epsilon=2.0**-8 * (1 + 2**-40), clamp_bounds=(2.0**-100, 2.0**61), sensitivity=1 + 2**-52
)


def _row(p: int, sign: int, u_star: Fraction) -> bytes:
    """The ``snapcore-draw-v1`` row of a draw ``U* ∈ [1/2, 1)`` (exponent word with 63
    significant bits), its mantissa the p-bit truncation of ``u_star``."""
    nb = (p + 6) >> 3
    m = int(u_star * 2**p)  # p bits, top bit set
    assert 1 << (p - 1) <= m < 1 << p
    word = (int(sign < 0) << 63) | (1 << 62) | 0x1234
    return word.to_bytes(8, "big") + ((m - (1 << (p - 1))) << (8 * nb - (p - 1))).to_bytes(
        nb, "big"
    )


@pytest.mark.skipif(not numba_available(), reason="the fused loop is compiled")
def test_fused_loop_fallbacks_across_chunks(monkeypatch):
    """The fused loop (chunks of 16 draws) hands two kinds of element back: ``k`` not
    decided (``v = 2**60 + 2**59`` puts ``y/Λ + 1/2`` within about ``2**-53`` of an
    integer when ``U*`` is next to 1), computed by the exact pipeline from the row's
    own bytes; and ``k = 2**51`` decided (``U* = e**-1/4`` moves ``t`` a quarter away)
    whose output is not certified, computed by the exact output stage.  Both at
    offsets other than 0 in chunks other than the first: outputs equal the exact
    pipeline's on the same draws, and ``BatchStats`` names exactly those elements."""
    monkeypatch.setattr(_engine.FastEngine, "STREAM_CHUNK", 16)
    mech = SnappingMechanism(**KW_CERT)
    pipe, p = mech.pipeline, mech.precision
    eng = _engine.engine_for(mech.calibration)
    assert eng.fusable and not eng.use_table and p >= 118
    rng = random.Random(21)
    near_one = Fraction((1 << p) - 1, 1 << p)
    quarter = Fraction(0.7788007830714049)  # e**-1/4 rounded to a double
    undecided, uncertified = {5, 21, 37}, {9, 26}
    values, data = [], b""
    for i in range(40):
        if i in undecided or i in uncertified:
            values.append(2.0**60 + 2.0**59)
            data += _row(p, -1, quarter if i in uncertified else near_one)
        else:
            values.append(rng.uniform(0.0, 2.0**61))
            data += _row(p, rng.choice([-1, 1]), Fraction(rng.uniform(0.5, 1.0)))
    v = np.array(values)
    src = FixedBytes(data)
    out, st = _engine.release_batch(pipe, v, src, engine="numba", stats=True)
    assert src.rest() == b""  # exactly the draws' bytes were read
    ref = _exact(pipe, v, FixedBytes(data).draws(40, p))
    assert _identical(out, ref)
    assert st.engine == "numba"
    assert set(st.fallback_k.tolist()) == undecided
    assert set(st.fallback_output.tolist()) == uncertified
    assert st.fallback_k.dtype == st.fallback_output.dtype == np.intp


@pytest.mark.parametrize("engine", ENGINES)
def test_release_batch_reads_values_as_doubles_and_keeps_their_shape(engine):
    """``values`` is any array_like, read as float64 (here a nested list of Python ints,
    two of them beyond int64: exact doubles, far outside the clamp interval), released
    element by element in C order, and returned in the input's shape."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    pipe, p = mech.pipeline, mech.precision
    values = [[random.Random(i).randint(-20, 120) for i in range(j, j + 50)] for j in (0, 50, 100)]
    values[1][7], values[2][3] = 2**70, -(2**66)
    out, st = _engine.release_batch(pipe, values, SeededSource(9), engine=engine, stats=True)
    assert out.shape == (3, 50) and out.dtype == np.float64 and st.size == 150
    assert st.engine == engine  # the engine asked for, not "auto"'s choice
    flat = np.array(values, dtype=np.float64).reshape(-1)
    ref = _exact(pipe, flat, SeededSource(9).draws(150, p))
    assert _identical(out.reshape(-1), ref)


@pytest.mark.skipif(not numba_available(), reason="the fused loop is compiled")
def test_release_batch_auto_on_a_byte_source_takes_the_fused_loop(monkeypatch):
    """``engine="auto"`` stands for numba when it can be imported, and numba with a
    byte source runs the fused loop (same outputs as the exact pipeline)."""
    calls = []
    run_stream = _engine.FastEngine.run_stream

    def spy(self, v, source, pipe, threads=1, **kw):
        calls.append(v.size)
        return run_stream(self, v, source, pipe, threads, **kw)

    monkeypatch.setattr(_engine.FastEngine, "run_stream", spy)
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    pipe, p = mech.pipeline, mech.precision
    values = np.linspace(-20.0, 120.0, 64)
    out, st = _engine.release_batch(pipe, values, SeededSource(13), stats=True)
    assert calls == [64] and st.engine == "numba"
    assert _identical(out, _exact(pipe, values, SeededSource(13).draws(64, p)))
