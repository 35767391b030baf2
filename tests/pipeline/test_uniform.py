"""The padded release's stages (``Pipeline.uniform_stages``: centring, add and output;
``uniform_ln``; ``decode_draw_raw_padded``): the same exact values as the ordinary stages,
with integer sizes that do not depend on the value (docs/timing.md)."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import snapcore
from snapcore.mechanism import _padding
from snapcore.padding import _quanta
from snapcore.randomness._sources import SeededSource

CONFIGS: list[dict[str, Any]] = [
    {"epsilon": 1.0, "sensitivity": 0.1, "clamp_bounds": (0.0, 100.0)},  # Δ not dyadic
    {"epsilon": 0.5, "clamp_bounds": (-3.0, 7.0)},  # Δ = 1
    {"epsilon": 2.0**20, "clamp_bounds": (-1.0, 1.0)},  # computed output stage
    {"epsilon": 1e-290, "sensitivity": 1 / 3, "clamp_bounds": (-1e300, 1e300)},
    {"epsilon": 1.0, "sensitivity": 2.0**-1000, "clamp_bounds": (0.0, 2.0**-990)},
    {"epsilon": 0.01, "sensitivity": 1e-300, "clamp_bounds": (-5e-324, 3.5e-323)},
    # b < 2**-957: b's last bit lies below 2**-1074, so D needs more than 2**1074
    {"epsilon": 1.0, "sensitivity": 0.1, "clamp_bounds": (-(2.0**-990), 2.0**-990)},
]

EXTREMES = [
    0.0,
    -0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
]

doubles = st.builds(
    lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0],
    st.integers(0, 2**64 - 1),
).filter(math.isfinite)


def _pipe(cfg: dict[str, Any]) -> Any:
    return snapcore.SnappingMechanism(**cfg, source=SeededSource(0), timing="off").pipeline


def _around(cfg: dict[str, Any]) -> list[float]:
    """The bounds, the centre and the doubles next to them: where the clip and the
    exact clamp decide."""
    lo, hi = cfg["clamp_bounds"]
    pipe = _pipe(cfg)
    cal = pipe.calibration
    b = cal.unit_clamp_bound
    out = []
    for q in (cal.centre, cal.centre + cal.sensitivity * b, cal.centre - cal.sensitivity * b):
        f = float(q)
        out += [f, math.nextafter(f, math.inf), math.nextafter(f, -math.inf)]
    return [*out, lo, hi, math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_uniform_centre_is_the_exact_clamped_ratio_over_one_denominator(
    cfg: dict[str, Any],
) -> None:
    pipe = _pipe(cfg)
    centre = pipe.uniform_stages()[0]
    denominators = set()
    sizes = []
    for v in EXTREMES + _around(cfg):
        n, d = centre(v)
        assert Fraction(n, d) == Fraction(*pipe.centre_ratio(*v.as_integer_ratio())), v
        denominators.add(d)
        sizes.append(abs(n).bit_length())
    assert len(denominators) == 1
    (d,) = denominators
    # b·D is an integer and bounds every numerator: sizes fixed by public parameters.
    b = pipe.calibration.unit_clamp_bound
    assert (b * d).denominator == 1
    assert max(sizes) <= (b * d).numerator.bit_length()


@settings(max_examples=300, deadline=None)
@given(v=doubles, which=st.integers(0, len(CONFIGS) - 1))
def test_uniform_centre_agrees_on_every_double(v: float, which: int) -> None:
    pipe = _pipe(CONFIGS[which])
    n, d = pipe.uniform_stages()[0](v)
    assert Fraction(n, d) == Fraction(*pipe.centre_ratio(*v.as_integer_ratio()))


@pytest.mark.parametrize("cfg", CONFIGS)
def test_uniform_index_output_is_index_output(cfg: dict[str, Any]) -> None:
    pipe = _pipe(cfg)
    uniform = pipe.uniform_stages()[2]
    kmax = pipe.grid_index_bound
    ks = {0, 1, -1, kmax, -kmax, kmax - 1, 1 - kmax, kmax + 1, -kmax - 1, 10 * kmax, -(10**40)}
    for k in sorted(ks):
        a, b = pipe.index_output(k), uniform(k)
        assert a == b and math.copysign(1.0, a) == math.copysign(1.0, b), k


@settings(max_examples=300, deadline=None)
@given(
    v=doubles,
    which=st.integers(0, len(CONFIGS) - 1),
    nm=st.integers(2**117, 2**118 - 1),
    ne=st.integers(-1200, 40),
    negative=st.booleans(),
)
def test_uniform_add_is_add(v: float, which: int, nm: int, ne: int, negative: bool) -> None:
    from snapcore.pipeline._stages import add

    pipe = _pipe(CONFIGS[which])
    centre, add_uniform, _ = pipe.uniform_stages()
    noise = (-nm if negative else nm, ne)
    x = centre(v)
    want = add(pipe.centre_ratio(*v.as_integer_ratio()), noise, pipe.calibration.precision)
    got = add_uniform(x, noise)
    assert Fraction(got[0]) * Fraction(2) ** got[1] == Fraction(want[0]) * Fraction(2) ** want[1]
    assert abs(got[0]).bit_length() <= pipe.calibration.precision


@pytest.mark.parametrize("cfg", CONFIGS)
def test_padded_and_unpadded_releases_agree_draw_for_draw(
    cfg: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_padding, "calibrate_quantum", lambda run, classes, **kw: 1000)
    _quanta.clear_caches()
    try:
        plain = snapcore.SnappingMechanism(**cfg, source=SeededSource(4), timing="off")
        padded = snapcore.SnappingMechanism(**cfg, source=SeededSource(4), timing="constant")
        for v in EXTREMES + _around(cfg) + [float(i) / 7 for i in range(-50, 50)]:
            a, b = plain.release(v), padded.release(v)
            assert a == b and math.copysign(1.0, a) == math.copysign(1.0, b), v
    finally:
        _quanta.clear_caches()


def _unit_draws(p: int) -> list[tuple[int, int]]:
    """U* = um·2**ue in (0, 1): every distance 2**-k to 1 (k < p), the binade edges,
    around 1/4 (where U*/4 is near 1/16: nothing special, checked anyway) and deep
    exponents."""
    import random

    rng = random.Random(p)
    out = [((1 << p) - 1, -p), (1 << (p - 1), -p), (1 << (p - 1), -p - 1), ((1 << p) - 1, -p - 2)]
    for k in range(1, p):
        for _ in range(6):
            m = (1 << (p - 1 - k)) | rng.getrandbits(p - 1 - k) if k < p - 1 else 1
            out.append(((1 << p) - m, -p))  # 1 − U* in [2**-(k+1), 2**-k)
    for e in [*range(0, 200, 3), 1000, 1074, 5000]:
        out.append(((1 << (p - 1)) | rng.getrandbits(p - 1), -p - e))
    return out


@pytest.mark.parametrize("p", [53, 118, 200])
@pytest.mark.parametrize("wide", ["2p + guard", "p - 2", "p + 40"])
def test_uniform_ln_is_mpfr_log_correctly_rounded(
    p: int, wide: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``uniform_ln`` against MPFR's own log at p bits.  Narrower working precisions
    make the rounding check decide near its bound (p − 2 bits: the P-bit error of
    ln(U*/4) for tiny U* exceeds the p-bit spacing of ln U*) and fail often (the
    fallback answers)."""
    import gmpy2
    from snapcore.backends import mpfr

    if wide == "p - 2":
        monkeypatch.setattr(mpfr, "UNIFORM_LN_GUARD", -p - 2)
    elif wide == "p + 40":
        monkeypatch.setattr(mpfr, "UNIFORM_LN_GUARD", 40 - p)
    ln = mpfr.uniform_ln(p)
    ctx = gmpy2.context(precision=p, round=gmpy2.RoundToNearest, emin=-(1 << 30), emax=1 << 30)
    for um, ue in _unit_draws(p):
        want = ctx.log(ctx.mul_2exp(um, ue))
        got = ln(um, ue)
        assert got == want and got.precision == p, (um, ue)


@pytest.mark.parametrize("p", [24, 53, 118, 200])
def test_padded_decoding_reads_the_same_draws_from_the_same_bytes(p: int) -> None:
    """``decode_draw_raw_padded`` against ``decode_draw_raw``: random rows, and rows whose
    exponent continues for one, two and many words, in one stream; both consume the
    same bytes (the padded one's extra reads are empty)."""
    import random

    from snapcore.randomness._draw import (
        Draw,
        decode_draw_raw,
        decode_draw_raw_padded,
        encode_draw,
    )

    rng = random.Random(p)
    draws = []
    for e in [0, 1, 5, 62, 63, 64, 100, 127, 128, 200, 1000]:
        m = (1 << (p - 1)) | rng.getrandbits(p - 1)
        draws.append(Draw(rng.choice([-1, 1]), m, -p - e))
    stream = b"".join(encode_draw(d, p) for d in draws)
    stream += rng.randbytes(50 * (8 + ((p + 6) >> 3)))

    def reader(data: bytes, sizes: list[int]) -> Any:
        pos = 0

        def read(n: int) -> bytes:
            nonlocal pos
            sizes.append(n)
            out = data[pos : pos + n]
            pos += n
            assert len(out) == n
            return out

        return read

    a_sizes: list[int] = []
    b_sizes: list[int] = []
    ra, rb = reader(stream, a_sizes), reader(stream, b_sizes)
    got_a, got_b = [], []
    while sum(a_sizes) < len(stream):
        got_a.append(decode_draw_raw(ra, p))
        got_b.append(decode_draw_raw_padded(rb, p))
        assert sum(a_sizes) == sum(b_sizes)
    assert got_a == got_b
    assert got_a[: len(draws)] == [(d.sign, d.mantissa, d.exponent) for d in draws]
    assert [n for n in b_sizes if n] == a_sizes  # the extra reads are empty
