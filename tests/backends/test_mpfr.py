"""The fused release of one double (``Backend.scalar_padded``; MPFR's in backends/mpfr.py)
against the exact composition ``transform(value, U*, S)`` on the same decoded draws,
and against an independent backend (mpmath) reading the same bytes."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from fractions import Fraction

import gmpy2
import pytest
from hypothesis import given, strategies as st
from snapcore.backends import mpfr as mp

from snapcore import SnappingMechanism
from snapcore.exact._dyadic import to_fraction
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _compiled, _engine
from snapcore.randomness._draw import Draw, decode_draw
from snapcore.randomness._sources import SeededSource
from snapcore.testing.sources import FixedBytes


def _stream(draws: int, seed: int) -> bytes:
    """Random draws with rare cases mixed in: a first word of zeros (the exponent runs
    past 64 bits), ``U*`` just below 1 and just above 1/2, and the smallest mantissa."""
    rng = random.Random(seed)
    parts = []
    for i in range(draws):
        head = rng.getrandbits(64)
        kind = i % 11
        if kind == 3:  # S and 63 zero bits, then more words: the long-exponent branch
            parts.append(bytes([rng.getrandbits(1) << 7]) + bytes(7))
            parts.append(bytes(8 * (i % 3)) + rng.getrandbits(64).to_bytes(8, "big"))
        elif kind == 5:  # U* just below 1: exponent bits "1", mantissa all ones
            parts.append(((head & (1 << 63)) | (1 << 62)).to_bytes(8, "big"))
            parts.append(b"\xff" * 15)
            continue
        elif kind == 7:  # U* = 1/2 exactly: mantissa all zeros
            parts.append(((head & (1 << 63)) | (1 << 62)).to_bytes(8, "big"))
            parts.append(bytes(15))
            continue
        else:
            parts.append(head.to_bytes(8, "big"))
        parts.append(rng.getrandbits(120).to_bytes(15, "big"))
    return b"".join(parts)


VALUES = [
    0.0,
    -0.0,
    50.0,
    49.99999999999999,
    100.0,
    -7.25,
    1e300,
    -1e300,
    5e-324,
    0.1,
    33.333333333333336,
    2.0**60 + 2.0**8,
]

MECHANISMS = [
    dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)),
    # Δ not a power of two: the centred value is not dyadic.
    dict(epsilon=Fraction(3, 7), sensitivity=Fraction(10, 3), clamp_bounds=(-20.0, 45.5)),
    # a narrow interval: many clamped outputs; a tiny ε.
    dict(epsilon=2.0, clamp_bound=3.0),
    dict(epsilon=Fraction(1, 1000), sensitivity=7, clamp_bounds=(-1e6, 1e6)),
]


@pytest.fixture
def exact_fused(monkeypatch):
    """The exact fused release under test, whatever the process has loaded: untimed
    mechanisms built in the test never switch to the compiled kernel."""
    monkeypatch.setattr("snapcore.backends.mpfr.COMPILED_SCALAR_AFTER", None)


@pytest.mark.parametrize("kw", MECHANISMS)
def test_fused_scalar_release_equals_the_exact_composition(kw, exact_fused):
    data = _stream(3000, seed=len(str(kw)))
    rng = random.Random(1)
    values = VALUES + [rng.uniform(-150.0, 150.0) for _ in range(200)]
    values += [rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(-30, 30) for _ in range(200)]
    src = FixedBytes(data)
    m = SnappingMechanism(**kw, source=src, timing="off")
    assert m._scalar is not None  # the fused path is the one under test
    ref = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    replay = FixedBytes(data)
    p = m.precision
    for i in range(len(data) // 60):
        v = values[i % len(values)]
        got = m.release(v)
        d = decode_draw(replay.read, p)
        want = ref.transform(v, Fraction(d.mantissa) * Fraction(2) ** d.exponent, d.sign)
        assert got == want and str(got) == str(want), (kw, v, d)  # -0.0 vs 0.0 too
        assert src.position == replay.position  # the same bytes drawn, no more


def test_fused_scalar_release_agrees_with_mpmath_on_the_same_bytes(exact_fused):
    data = _stream(600, seed=9)
    kw = dict(epsilon=Fraction(1, 2), clamp_bounds=(-5.0, 17.0))
    m = SnappingMechanism(**kw, source=FixedBytes(data), timing="off")
    other = SnappingMechanism(**kw, backend="mpmath", source=FixedBytes(data), timing="off")
    assert m._scalar is not None and other._scalar is None
    for i in range(300):
        v = VALUES[i % len(VALUES)] if i % 2 else (i - 150) / 7
        assert m.release(v) == other.release(v)


def test_fused_path_declines_a_source_that_decodes_itself(exact_fused):
    class Custom(SeededSource):
        def draw_raw(self, precision: int) -> tuple[int, int, int]:
            return super().draw_raw(precision)

    assert SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=Custom(1))._scalar is None
    m = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(1), timing="off")
    assert m._scalar is not None
    a = [m.release(1.5) for _ in range(50)]
    c = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=Custom(1), timing="off")
    assert a == [c.release(1.5) for _ in range(50)]


def test_a_copy_with_another_source_draws_from_its_own(exact_fused):
    """A copy given another source (timing calibration makes such copies) does not
    release through the fused function bound to the original source."""
    m = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(5), timing="off")
    copy = m.unpadded_copy(SeededSource(6))
    other = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(6), timing="off")
    assert [copy.release(0.5) for _ in range(20)] == [other.release(0.5) for _ in range(20)]
    fresh = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(5), timing="off")
    assert m.release(0.5) == fresh.release(0.5)  # m's stream untouched by the copy


# ----------------------------------------------------------------------------------
# The compiled release of one value (MPFRBackend.scalar, timing off): the
# fast path's certificate on one draw row, MPFR from the same bytes where it leaves
# the draw open.  Every release is compared with the exact composition on the bytes
# the source delivered, and must consume exactly those bytes.
# ----------------------------------------------------------------------------------
needs_numba = pytest.mark.skipif(not numba_available(), reason="the kernel needs numba")


class _Spy:
    """Counts the compiled kernel's calls (the path under test is really taken)."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, 0

    def __call__(self, v, row, params):
        self.calls += 1
        return self.kernel(v, row, params)


@pytest.fixture
def compiled(monkeypatch):
    """Untimed mechanisms built in the test release through the compiled kernel from
    their first release; fresh counters; the process state is restored after."""
    stats = mp.ScalarPathStats()
    spy = _Spy(_compiled.scalar_release_kernel())
    monkeypatch.setattr(mp, "scalar_path_stats", stats)
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", 0)
    monkeypatch.setattr(_compiled, "scalar_release_kernel", lambda: spy)
    return stats, spy


def _encode(sign: int, um: int, ue: int, p: int, rng: random.Random) -> bytes:
    """The ``snapcore-draw-v1`` bytes of the draw ``(sign, um·2**ue)``, don't-care
    bits random (the inverse of the decoder, checked against it by the callers)."""
    nb = (p + 6) >> 3
    e = -ue - (p - 1)
    m = um - (1 << (p - 1))
    assert e >= 1 and 0 <= m < 1 << (p - 1)
    top = (1 << 63) if sign < 0 else 0
    if e <= 63:  # e − 1 zero bits, a one, then anything
        out = (top | (1 << (63 - e)) | rng.getrandbits(63 - e)).to_bytes(8, "big")
    else:  # 63 zero bits, zero words of 64, then a word of bit length 64 − rest
        out = top.to_bytes(8, "big")
        rest = e - 64
        while rest >= 64:
            out += bytes(8)
            rest -= 64
        bl = 64 - rest
        out += ((1 << (bl - 1)) | rng.getrandbits(bl - 1)).to_bytes(8, "big")
    pad = 8 * nb - (p - 1)
    return out + ((m << pad) | rng.getrandbits(pad)).to_bytes(nb, "big")


def _u_draw(u: Fraction, sign: int, p: int) -> tuple[int, int, int]:
    """``(sign, um, ue)`` for a p-bit ``u`` in (0, 1)."""
    n, d = u.numerator, u.denominator
    ue = -(d.bit_length() - 1) - (p - n.bit_length())
    um = n << (p - n.bit_length())
    assert Fraction(um) * Fraction(2) ** ue == u and um.bit_length() == p
    return sign, um, ue


def _special_draws(p: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """U* just below 1, at 1/2, just above 1/2, near 2**-40, 2**-63 (the last exponent of
    the first word), 2**-64 and 2**-1000 (continuation words), random."""
    two = Fraction(2)
    out = []
    for u in [
        1 - two**-p,
        Fraction(1, 2),
        Fraction(1, 2) + two**-(p),
        two**-40 * (1 + Fraction(rng.getrandbits(p - 1), 1 << (p - 1))),
        two**-63 * (1 + Fraction(rng.getrandbits(p - 1), 1 << (p - 1))),
        two**-64 * (1 + Fraction(rng.getrandbits(p - 1), 1 << (p - 1))),
        two**-1000 * (1 + Fraction(rng.getrandbits(p - 1), 1 << (p - 1))),
        Fraction(rng.getrandbits(p) | 1 << (p - 1), 1 << p),
    ]:
        for sign in (1, -1):
            out.append(_u_draw(u, sign, p))
    return out


def _edge_values(m: SnappingMechanism) -> list[float]:
    lo, hi = m.clamp_bounds
    c = float(m.calibration.centre)
    return [
        *VALUES,
        lo,
        hi,
        math.nextafter(lo, -math.inf),
        math.nextafter(hi, math.inf),
        math.nextafter(lo, math.inf),
        math.nextafter(hi, -math.inf),
        2 * lo - hi,
        2 * hi - lo,
        c,
        -5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        -1.7976931348623157e308,
    ]


#: Calibrations over the kernel's output modes: a table of exact outputs (narrow),
#: the certified double-double output (wide, Δ a double, c a double), the exact output
#: stage for every decided k (wide, Δ not a double), and p > 118.
COMPILED_MECHANISMS = [
    *MECHANISMS,
    dict(epsilon=1.0, clamp_bounds=(-1e6, 3e6)),
    dict(epsilon=Fraction(1, 3), sensitivity=Fraction(10, 3), clamp_bounds=(-1e7, 1e7)),
    dict(epsilon=0.5, clamp_bounds=(-3.0, 12.0), precision=200),
]


def _mode(m: SnappingMechanism) -> float:
    params = _engine.scalar_params(m.pipeline)
    assert params is not None
    return float(params[_compiled._MODE])


def test_the_status_codes_the_release_reads_are_the_kernels():
    """backends/mpfr.py reads the statuses as literals (importing snapcore.pipeline._compiled
    would import numba)."""
    c = _compiled
    assert (c.SCALAR_DONE, c.SCALAR_EXACT, c.SCALAR_CONTINUATION, c.SCALAR_OUTPUT) == (
        0,
        1,
        2,
        3,
    )


def test_the_compiled_mechanisms_cover_every_output_mode():
    assert {_mode(SnappingMechanism(**kw, timing="off")) for kw in COMPILED_MECHANISMS} == {
        0.0,
        1.0,
        2.0,
    }


@needs_numba
@pytest.mark.parametrize("kw", COMPILED_MECHANISMS)
def test_compiled_release_on_crafted_draws_equals_the_exact_pipeline(kw, compiled):
    stats, spy = compiled
    rng = random.Random(len(str(kw)))
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    draws = _special_draws(p, rng)
    values = _edge_values(probe)
    cases = [(v, d) for v in values for d in draws]
    data = b"".join(_encode(*d, p, rng) for _, d in cases)
    src = FixedBytes(data)
    m = SnappingMechanism(**kw, source=src, timing="off")
    ref = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    replay = FixedBytes(data)
    for v, d in cases:
        got = m.release(v)
        dd = decode_draw(replay.read, p)
        assert (dd.sign, dd.mantissa, dd.exponent) == d  # the encoder inverts the decoder
        want = ref.transform(v, Fraction(d[1]) * Fraction(2) ** d[2], d[0])
        assert str(got) == str(want), (kw, v, d)  # bit for bit, -0.0 vs 0.0 too
        assert src.position == replay.position, (kw, v, d)  # that draw's bytes, no more
    assert stats.loaded
    continued = sum(1 for _, d in cases if -d[2] - (p - 1) >= 64)
    assert spy.calls == 1 + len(cases)  # the load, then every release
    assert stats.continuation == continued > 0  # decoded exactly, reading on
    if _mode(m) == 2.0:  # no output table or certificate: every inside k exactly
        assert stats.exact_output > 0


def _tie_draws(m: SnappingMechanism, v: float, j: int, span: int) -> tuple[list, list]:
    """Draws whose ``y = RN(x + N)`` is exactly the snapping tie ``(j − 1/2)·Λ``, and
    draws whose ``y`` is within ``2**-100`` of it (not on it), for the value ``v``:
    ``U*`` scanned around ``exp(−|N|/λ)`` for ``N = (j − 1/2)·Λ − x``, each ``y``
    computed exactly by the pipeline's stages."""
    pipe, cal, p = m.pipeline, m.calibration, m.precision
    x = Fraction(*pipe.centre(Fraction(v)))
    y0 = (j - Fraction(1, 2)) * cal.granularity
    n = y0 - x
    sign = -1 if n > 0 else 1  # N = S·λ·ln U*, ln U* < 0
    ctx = gmpy2.context(precision=4 * p)
    a, lam = abs(n), cal.scale
    u0 = ctx.exp(
        -ctx.div(gmpy2.mpq(a.numerator, a.denominator), gmpy2.mpq(lam.numerator, lam.denominator))
    )
    mm, ee = (int(t) for t in gmpy2.mpfr(u0, p).as_mantissa_exp())
    shift = p - mm.bit_length()
    mm, ee = mm << shift, ee - shift
    ties, near = [], []
    for i in range(-span, span + 1):
        d = Draw(sign, mm + i, ee)
        y = to_fraction(*pipe.stages(Fraction(v), d)["y"])
        if y == y0:
            ties.append((sign, mm + i, ee))
        elif abs(y - y0) <= Fraction(1, 2**100):
            near.append((sign, mm + i, ee))
    return ties, near


@needs_numba
@pytest.mark.parametrize(
    "kw, points",
    [
        (dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)), [(50.0, 1), (47.0, 1), (30.0, -4)]),
        (
            dict(epsilon=Fraction(3, 7), sensitivity=Fraction(10, 3), clamp_bounds=(-20.0, 45.5)),
            [(12.75, 1), (0.1, -1), (33.0, 2)],
        ),
        (dict(epsilon=1.0, clamp_bounds=(-1e6, 3e6)), [(1e6, 3), (999999.5, -2)]),
    ],
)
def test_draws_at_and_next_to_a_snapping_tie_take_the_exact_path(kw, points, compiled):
    stats, spy = compiled
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    rng = random.Random(3)
    cases = []
    for v, j in points:
        ties, near = _tie_draws(probe, v, j, span=24)
        assert ties and near, (kw, v, j)  # the construction finds both kinds
        cases += [(v, d) for d in ties + near[:6]]
    data = b"".join(_encode(*d, p, rng) for _, d in cases)
    src = FixedBytes(data)
    m = SnappingMechanism(**kw, source=src, timing="off")
    ref = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    for v, d in cases:
        got = m.release(v)
        want = ref.transform(v, Fraction(d[1]) * Fraction(2) ** d[2], d[0])
        assert str(got) == str(want), (kw, v, d)
    assert src.position == len(data)
    # Every one of them is within the bound of an integer: none decided by the kernel.
    assert stats.exact_k == len(cases) and spy.calls == 1 + len(cases)


@needs_numba
def test_an_uncertified_output_is_computed_exactly(compiled):
    """``k = 2**51`` under tests/pipeline/test_engine_certificate.py's calibration: its output
    sum lies ``2**-101`` above a midpoint between doubles, so the double-double output
    is not certified; the kernel decides k (``y/Λ + 1/2`` is about ``2**51 + 0.5``) and
    the exact output stage finishes."""
    stats, spy = compiled
    kw = dict(
        epsilon=2.0**-8 * (1 + 2**-40), clamp_bounds=(2.0**-100, 2.0**61), sensitivity=1 + 2**-52
    )
    v = 2.0**60 + 2.0**59
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    d = _u_draw(Fraction(int(0.6065 * 2**p), 2**p), -1, p)  # N ≈ +λ/2, λ ≈ Λ = 2**8
    assert probe.pipeline.stages(Fraction(v), Draw(*d))["k"] == 2**51
    assert _mode(probe) == 1.0
    m = SnappingMechanism(**kw, source=FixedBytes(_encode(*d, p, random.Random(0))), timing="off")
    want = probe.transform(v, Fraction(d[1]) * Fraction(2) ** d[2], d[0])
    assert want == 2.0**60 + 2.0**59 + 2.0**8  # the correct rounding (upper neighbour)
    assert str(m.release(v)) == str(want)
    assert (stats.exact_output, stats.exact_k, spy.calls) == (1, 0, 2)


#: One mechanism per calibration for the property below, each reading a byte stream
#: the test refills (building a mechanism per example would dominate the run).
_PROPERTY: dict[int, tuple[SnappingMechanism, FixedBytes]] = {}
#: Their counters (the process's own stay as they were).
_PROPERTY_STATS = mp.ScalarPathStats()


def _property_mechanism(i: int) -> tuple[SnappingMechanism, FixedBytes]:
    if i not in _PROPERTY:
        src = FixedBytes(b"")
        _PROPERTY[i] = (SnappingMechanism(**COMPILED_MECHANISMS[i], source=src, timing="off"), src)
    return _PROPERTY[i]


_finite = st.floats(allow_nan=False, allow_infinity=False)


@needs_numba
@given(
    i=st.integers(0, len(COMPILED_MECHANISMS) - 1),
    v=st.one_of(_finite, st.floats(-200.0, 200.0), st.sampled_from(VALUES)),
    row=st.binary(min_size=48, max_size=48),
    zero_words=st.integers(0, 2),
)
def test_compiled_release_equals_the_composed_pipeline_on_random_bytes(i, v, row, zero_words):
    """Any bytes, any finite double, every output mode: the compiled release gives the
    MPFR pipeline's ``run`` on the draw those bytes decode to, and reads exactly that
    draw's bytes.  ``zero_words`` > 0 clears the first word's 63 exponent bits and
    inserts zero words (the continuation branch)."""
    old, old_after = mp.scalar_path_stats, mp.COMPILED_SCALAR_AFTER
    mp.scalar_path_stats, mp.COMPILED_SCALAR_AFTER = _PROPERTY_STATS, 0
    try:
        m, src = _property_mechanism(i)
        p = m.precision
        if zero_words:
            row = bytes([row[0] & 0x80]) + bytes(7) + bytes(8 * (zero_words - 1)) + row[8:]
        stream = row + b"\xff" * 64  # the exponent ends by then
        src.load(stream)
        got = m.release(v)
        replay = FixedBytes(stream)
        d = decode_draw(replay.read, p)
        pipe = m.pipeline
        want = pipe.run(pipe.centre_ratio(*v.as_integer_ratio()), d)
        assert str(got) == str(want), (COMPILED_MECHANISMS[i], v, row.hex())
        assert src.position == replay.position
        assert _PROPERTY_STATS.loaded
    finally:
        mp.scalar_path_stats, mp.COMPILED_SCALAR_AFTER = old, old_after


@needs_numba
@pytest.mark.parametrize("kw", [MECHANISMS[0], MECHANISMS[1], COMPILED_MECHANISMS[-2]])
def test_a_seeded_stream_gives_the_same_releases_with_the_kernel_on_and_off(kw, monkeypatch):
    rng = random.Random(2)
    values = [rng.uniform(-150.0, 150.0) for _ in range(1500)] + VALUES
    monkeypatch.setattr(mp, "scalar_path_stats", mp.ScalarPathStats())
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", None)  # never switch
    off = SnappingMechanism(**kw, source=SeededSource(11), timing="off")
    out_off = [off.release(v) for v in values]
    assert not mp.scalar_path_stats.loaded
    monkeypatch.setattr(mp, "scalar_path_stats", mp.ScalarPathStats())
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", 100)  # switch after 100 releases
    on = SnappingMechanism(**kw, source=SeededSource(11), timing="off")
    out_on = [on.release(v) for v in values]
    assert mp.scalar_path_stats.loaded and mp.scalar_path_stats.exact_untimed == 100
    assert [str(x) for x in out_on] == [str(x) for x in out_off]
    # Both streams are at the same place.
    assert off.source.draw_raw(off.precision) == on.source.draw_raw(on.precision)


# ----------------------------------------------------------------------------------
# The padded release of one value (MPFRBackend.scalar_padded) once the process has
# switched: the compiled kernel, and the exact uniform path from the same bytes for
# every draw the kernel leaves open.
# ----------------------------------------------------------------------------------
def _padded_compiled(kw: dict, src) -> tuple[SnappingMechanism, object]:
    """A padded mechanism of ``kw`` and its backend's padded fused release reading
    ``src``, switched to the compiled kernel."""
    m = SnappingMechanism(**kw, source=SeededSource(0), timing="constant")
    f = m.backend.scalar_padded(m.pipeline, src)
    assert f is not None and f.path() == "compiled"
    return m, f


#: The calibrations with an output table or a certified double-double output (the
#: others keep the exact padded path: see the next test).
PADDED_COMPILED = [kw for kw in COMPILED_MECHANISMS if kw is not COMPILED_MECHANISMS[-2]]


@needs_numba
def test_a_calibration_without_a_fast_output_stage_stays_on_the_exact_padded_path(compiled):
    stats, spy = compiled
    kw = COMPILED_MECHANISMS[-2]
    m = SnappingMechanism(**kw, source=SeededSource(0), timing="constant")
    assert _mode(m) == 2.0
    f = m.backend.scalar_padded(m.pipeline, SeededSource(1))
    assert f.path() == "exact"
    ref = m.backend.scalar_padded(m.pipeline, SeededSource(1))
    assert [str(f(v)) for v in VALUES] == [str(ref(v)) for v in VALUES]
    assert stats.exact_padded == 2 * len(VALUES) and spy.calls == 0


@needs_numba
@pytest.mark.parametrize("kw", PADDED_COMPILED)
def test_padded_compiled_release_on_crafted_draws_equals_the_exact_pipeline(kw, compiled):
    """Every output mode, values at and beyond the bounds, draws that the kernel
    decides and draws it hands on (continuation words): MPFR's transform of the
    decoded draw, bit for bit, reading that draw's bytes and no more."""
    stats, spy = compiled
    rng = random.Random(7 + len(str(kw)))
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    cases = [(v, d) for v in _edge_values(probe) for d in _special_draws(p, rng)]
    data = b"".join(_encode(*d, p, rng) for _, d in cases)
    src = FixedBytes(data)
    _, f = _padded_compiled(kw, src)
    replay = FixedBytes(data)
    for v, d in cases:
        got = f(v)
        decode_draw(replay.read, p)
        want = probe.transform(v, Fraction(d[1]) * Fraction(2) ** d[2], d[0])
        assert str(got) == str(want), (kw, v, d)
        assert src.position == replay.position, (kw, v, d)
    continued = sum(1 for _, d in cases if -d[2] - (p - 1) >= 64)
    assert spy.calls == 1 + len(cases)  # the load, then every release
    assert stats.padded_fallback >= continued > 0
    assert stats.exact_padded == 0  # nothing went to the exact path unasked


@needs_numba
def test_padded_compiled_release_of_ties_and_uncertified_outputs_is_exact(compiled):
    """Draws the kernel's bound cannot decide (at and next to a snapping tie) and an
    output it cannot certify: the exact path finishes each, bit-identical."""
    stats, _spy = compiled
    kw = dict(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    cases = []
    for v, j in [(50.0, 1), (47.0, 1), (30.0, -4)]:
        ties, near = _tie_draws(probe, v, j, span=24)
        cases += [(v, d) for d in ties + near[:6]]
    data = b"".join(_encode(*d, p, random.Random(1)) for _, d in cases)
    src = FixedBytes(data)
    _, f = _padded_compiled(kw, src)
    for v, d in cases:
        want = probe.transform(v, Fraction(d[1]) * Fraction(2) ** d[2], d[0])
        assert str(f(v)) == str(want), (v, d)
    assert src.position == len(data)
    assert stats.padded_fallback == len(cases) > 0
    # An output the double-double cannot certify (see the untimed test above).
    kw = dict(
        epsilon=2.0**-8 * (1 + 2**-40), clamp_bounds=(2.0**-100, 2.0**61), sensitivity=1 + 2**-52
    )
    v = 2.0**60 + 2.0**59
    probe = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    p = probe.precision
    d = _u_draw(Fraction(int(0.6065 * 2**p), 2**p), -1, p)
    _, f = _padded_compiled(kw, FixedBytes(_encode(*d, p, random.Random(0))))
    before = stats.padded_fallback
    assert str(f(v)) == str(2.0**60 + 2.0**59 + 2.0**8)  # the correct rounding
    assert stats.padded_fallback == before + 1


@needs_numba
@pytest.mark.parametrize("kw", [MECHANISMS[0], MECHANISMS[1], COMPILED_MECHANISMS[-3]])
def test_a_padded_mechanism_switches_to_the_kernel_with_the_same_releases(kw, monkeypatch):
    """The process-wide switch, counted over exact releases of both paths, moves a
    padded mechanism from the exact uniform path to the kernel with a new quantum of
    its own; a seeded stream gives the same releases as a mechanism that never
    switches, and the stream ends at the same place."""
    rng = random.Random(5)
    values = [rng.uniform(-150.0, 150.0) for _ in range(300)] + VALUES
    monkeypatch.setattr(mp, "scalar_path_stats", mp.ScalarPathStats())
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", None)  # never switch
    off = SnappingMechanism(**kw, source=SeededSource(11), timing="constant")
    out_off = [off.release(v) for v in values]
    assert not mp.scalar_path_stats.loaded
    assert mp.scalar_path_stats.exact_padded >= len(values)
    stats = mp.ScalarPathStats()
    monkeypatch.setattr(mp, "scalar_path_stats", stats)
    spy = _Spy(_compiled.scalar_release_kernel())
    monkeypatch.setattr(_compiled, "scalar_release_kernel", lambda: spy)
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", 1)  # after the first exact release
    on = SnappingMechanism(**kw, source=SeededSource(11), timing="constant")
    pad = on.padding
    assert pad is not None
    q_exact = pad.scalar_quantum_ns  # calibrated on the exact path: the switch is due
    out_on = [on.release(v) for v in values]
    assert stats.loaded and spy.calls >= len(values)
    assert [str(x) for x in out_on] == [str(x) for x in out_off]
    assert off.source.draw_raw(off.precision) == on.source.draw_raw(on.precision)
    # One quantum per path, the compiled one measured on the kernel.
    assert on.release.__self__ is on
    q_compiled = pad.scalar_quantum_ns
    assert 0 < q_compiled < q_exact


def test_compiled_scalar_after_follows_the_documented_rule(monkeypatch):
    monkeypatch.setattr(mp, "scalar_path_stats", mp.ScalarPathStats())
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", 1 << 16)
    monkeypatch.setitem(sys.modules, "snapcore.pipeline._compiled", None)  # not imported
    assert mp.compiled_scalar_after() == 1 << 16
    monkeypatch.setitem(sys.modules, "snapcore.pipeline._compiled", _compiled)
    monkeypatch.setattr(_compiled, "compiled_engine_loaded", lambda: True)
    assert mp.compiled_scalar_after() == mp.COMPILED_SCALAR_AFTER_WARM
    mp.scalar_path_stats.loaded = True
    assert mp.compiled_scalar_after() == 0
    monkeypatch.setattr(mp, "COMPILED_SCALAR_AFTER", None)
    assert mp.compiled_scalar_after() == math.inf


def test_import_and_one_release_do_not_import_numba():
    """The compiled kernel is loaded lazily: a one-shot release (the command line's)
    never pays numba's import, with or without timing padding."""
    code = (
        "import sys, snapcore\n"
        "from snapcore import SnappingMechanism\n"
        "assert 'numba' not in sys.modules, 'import snapcore'\n"
        "for t in ('off', None):\n"
        "    m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), timing=t)\n"
        "    assert 0.0 <= m.release(42.0) <= 100.0\n"
        "fast_path = ('snapcore.pipeline._compiled', 'snapcore.pipeline._engine')\n"
        "bad = sorted(n for n in ('numba', 'llvmlite', *fast_path) if n in sys.modules)\n"
        "assert not bad, bad\n"
    )
    env = {**__import__("os").environ, "PYTHONSAFEPATH": "1", "SNAPCORE_TIMING_STORE": "off"}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr


@needs_numba
def test_threads_sharing_a_source_draw_each_draw_once(compiled):
    """Four threads releasing the same value from one mechanism take every draw of
    the stream exactly once: the multiset of outputs is the sequential one."""
    import threading
    from collections import Counter

    kw = dict(epsilon=Fraction(1, 2), clamp_bounds=(-5.0, 17.0))
    m = SnappingMechanism(**kw, source=SeededSource(21), timing="off")
    seq = SnappingMechanism(**kw, source=SeededSource(21), timing="off")
    m.release(3.25)
    outs: list[float] = []
    lock = threading.Lock()

    def work() -> None:
        got = [m.release(3.25) for _ in range(400)]
        with lock:
            outs.extend(got)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = [seq.release(3.25) for _ in range(1601)]
    assert Counter([*outs, want[0]]) == Counter(want)  # (few distinct outputs: a short diff)
    assert m.source.draw_raw(m.precision) == seq.source.draw_raw(seq.precision)
