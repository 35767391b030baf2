"""The fused release of one double (``Backend.scalar``; MPFR's in backends/mpfr.py)
against the exact composition ``transform(value, U*, S)`` on the same decoded draws,
and against an independent backend (mpmath) reading the same bytes."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from snapcore import SnappingMechanism
from snapcore.sources import ByteSource, SeededSource, decode_draw


class _Bytes(ByteSource):
    """A fixed byte stream, with its read position exposed."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data, self.pos = data, 0

    def read(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        assert len(out) == n, "test stream exhausted"
        self.pos += n
        return out


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


@pytest.mark.parametrize("kw", MECHANISMS)
def test_fused_scalar_release_equals_the_exact_composition(kw):
    data = _stream(3000, seed=len(str(kw)))
    rng = random.Random(1)
    values = VALUES + [rng.uniform(-150.0, 150.0) for _ in range(200)]
    values += [rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(-30, 30) for _ in range(200)]
    src = _Bytes(data)
    m = SnappingMechanism(**kw, source=src, timing="off")
    assert m._scalar is not None  # the fused path is the one under test
    ref = SnappingMechanism(**kw, source=SeededSource(0), timing="off")
    replay = _Bytes(data)
    p = m.precision
    for i in range(len(data) // 60):
        v = values[i % len(values)]
        got = m.release(v)
        d = decode_draw(replay.read, p)
        want = ref.transform(v, Fraction(d.mantissa) * Fraction(2) ** d.exponent, d.sign)
        assert got == want and str(got) == str(want), (kw, v, d)  # -0.0 vs 0.0 too
        assert src.pos == replay.pos  # the same bytes drawn, no more


def test_fused_scalar_release_agrees_with_mpmath_on_the_same_bytes():
    data = _stream(600, seed=9)
    kw = dict(epsilon=Fraction(1, 2), clamp_bounds=(-5.0, 17.0))
    m = SnappingMechanism(**kw, source=_Bytes(data), timing="off")
    other = SnappingMechanism(**kw, backend="mpmath", source=_Bytes(data), timing="off")
    assert m._scalar is not None and other._scalar is None
    for i in range(300):
        v = VALUES[i % len(VALUES)] if i % 2 else (i - 150) / 7
        assert m.release(v) == other.release(v)


def test_fused_path_declines_a_source_that_decodes_itself():
    class Custom(SeededSource):
        def draw_raw(self, precision: int) -> tuple[int, int, int]:
            return super().draw_raw(precision)

    assert SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=Custom(1))._scalar is None
    m = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(1), timing="off")
    assert m._scalar is not None
    a = [m.release(1.5) for _ in range(50)]
    c = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=Custom(1), timing="off")
    assert a == [c.release(1.5) for _ in range(50)]


def test_a_copy_with_another_source_draws_from_its_own():
    """A shallow copy given another source (timing calibration makes such copies) does
    not release through the fused function bound to the original source."""
    import copy

    m = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(5), timing="off")
    sib = copy.copy(m)
    sib._source = SeededSource(6)
    other = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(6), timing="off")
    assert [sib.release(0.5) for _ in range(20)] == [other.release(0.5) for _ in range(20)]
    fresh = SnappingMechanism(epsilon=1.0, clamp_bound=4.0, source=SeededSource(5), timing="off")
    assert m.release(0.5) == fresh.release(0.5)  # m's stream untouched by the copy
