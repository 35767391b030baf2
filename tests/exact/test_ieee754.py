"""The IEEE-754 double algorithms (snapcore.exact._ieee754) against exact references.

References, all independent of the bit manipulation under test:

* ``ref_exact``: the mechanism's exact integer snap :func:`snapcore.pipeline._stages.snap` on
  the ``(m, e)`` pair from :meth:`float.as_integer_ratio`, scaled back by ``ldexp``;
* ``ref_fraction``: ``⌊Fraction(x)/Λ + 1/2⌋·Λ`` in rationals, written here;
* ``ref_vec``: a NumPy port of the exact integer snap (``frexp`` → 53-bit int64
  significand, flooring shift, ``ldexp`` back), used for volume.

Results are compared as bit patterns, so ``+0.0`` and ``−0.0`` are distinguished.
"""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from snapcore.calibration._params import ceil_log2
from snapcore.errors import ParameterError, SnapcoreError, SnapOverflowError
from snapcore.exact._ieee754 import (
    granularity_from_double,
    power_of_two_exponent,
    snap_double,
    snap_doubles,
)
from snapcore.pipeline._stages import snap

DBL_MAX = sys.float_info.max
TINY = 5e-324  # 2**-1074
MIN_NORMAL = 2.0**-1022
#: Granularities exercised everywhere: subnormal, around the normal threshold, around
#: 1, and huge (2**971 / 2**972 are where DBL_MAX becomes a tie / overflows).
LS = [-1074, -1073, -1060, -1023, -1022, -1021, -1000, -600, -60, -53, -52, -1, 0, 1, 2]
LS += [30, 52, 53, 100, 500, 900, 971, 972, 973, 1000, 1023]


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(w: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", w))[0]


def ref_exact(x: float, L: int) -> float:
    """``snapcore.pipeline._stages.snap`` on x's exact pair; OverflowError if not a double."""
    n, d = x.as_integer_ratio()
    k = snap(n, -(d.bit_length() - 1), L)
    if k == 0:
        return 0.0
    tz = (k & -k).bit_length() - 1  # k·2**L = (k >> tz)·2**(L + tz), k >> tz odd
    return math.ldexp(float(k >> tz), L + tz)  # exact when finite; raises on overflow


def ref_fraction(x: float, L: int) -> Fraction:
    lam = Fraction(2) ** L
    return math.floor(Fraction(x) / lam + Fraction(1, 2)) * lam


def check_scalar(x: float, L: int) -> None:
    """snap_double(x, 2**L) against both scalar references."""
    try:
        expected = ref_exact(x, L)
    except OverflowError:
        assert abs(ref_fraction(x, L)) >= 2**1024
        with pytest.raises(SnapOverflowError):
            snap_double(x, math.ldexp(1.0, L))
        return
    got = snap_double(x, math.ldexp(1.0, L))
    assert bits(got) == bits(expected), f"snap_double({x!r}, 2**{L}) = {got!r} != {expected!r}"
    assert Fraction(got) == ref_fraction(x, L), f"snap_double({x!r}, 2**{L})"
    if got == 0:
        assert math.copysign(1.0, got) == 1.0, f"snap_double({x!r}, 2**{L}) is -0.0"


def ref_vec(x: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer snap vectorised via frexp; returns (result, overflowed mask)."""
    mant, ex = np.frexp(x)
    m = (mant * 2.0**53).astype(np.int64)  # exact: |m| < 2**53
    s = L - (ex.astype(np.int64) - 53)  # k = floor(m / 2**s + 1/2)
    sc = np.clip(s, 1, 62)
    k = (m + (np.int64(1) << (sc - 1))) >> sc  # arithmetic shift: floor
    k = np.where(s >= 63, 0, k)  # |m|/2**s < 2**-10: floor(… + 1/2) = 0
    with np.errstate(over="ignore"):
        snapped = np.ldexp(k.astype(np.float64), L)
    res = np.where((s <= 0) & (m != 0), x, snapped)  # s <= 0: x is a multiple of Λ
    return res, np.isinf(res)


def check_vec(x: np.ndarray, L: int) -> int:
    """snap_doubles(x, L) against ref_vec, bit for bit; returns the element count."""
    x = np.asarray(x, dtype=np.float64)
    expected, over = ref_vec(x, L)
    if over.any():
        with pytest.raises(SnapOverflowError):
            snap_doubles(x, L)
        x, expected = x[~over], expected[~over]
    got = snap_doubles(x, L)
    bad = np.flatnonzero(got.view(np.uint64) != expected.view(np.uint64))
    if bad.size:
        i = bad[0]
        pytest.fail(
            f"snap_doubles: x = {x[i]!r}, L = {L}: got {got[i]!r}, expected {expected[i]!r} "
            f"({bad.size} mismatches)"
        )
    return x.size


# -- value generators ---------------------------------------------------------------------


def relative(rng: np.random.Generator, n: int, L: int, ylo: int, yhi: int) -> np.ndarray:
    """Random-sign doubles with x/Λ's exponent y uniform in [ylo, yhi] (normal x only)."""
    y = rng.integers(ylo, yhi + 1, n)
    field = y + L + 1023
    frac = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)
    ok = (field >= 1) & (field <= 2046)
    word = sign[ok] | (field[ok].astype(np.uint64) << np.uint64(52)) | frac[ok]
    return word.view(np.float64)


def random_bit_patterns(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True).view(np.float64)
    return x[np.isfinite(x)]


def ties(rng: np.random.Generator, n: int, L: int) -> np.ndarray:
    """k·Λ ± Λ/2 for random k of every size, and one ulp either side of each."""
    kbits = rng.integers(0, 54, n)
    k = np.floor(rng.random(n) * np.exp2(kbits))
    k = np.where(rng.integers(0, 2, n) == 1, -k, k)
    with np.errstate(over="ignore"):
        t = np.ldexp(k + 0.5, L)  # a tie when k + 1/2 and the result are exact doubles
    t = t[np.isfinite(t)]
    return np.concatenate([t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf)])


def all_ones(L: int) -> np.ndarray:
    """Fractions whose bits below Λ (or all 52 bits) are ones, for every y in [-2, 53]."""
    out = []
    for y in range(-2, 54):
        field = y + L + 1023
        if not 1 <= field <= 2046:
            continue
        t = max(1, min(52, 52 - y))
        for frac in ((1 << 52) - 1, (1 << t) - 1, (1 << t) - 1 | 1 << 51, (1 << (t - 1))):
            w = field << 52 | frac
            out += [from_bits(w), from_bits(w | 1 << 63)]
    return np.array(out)


def subnormals(rng: np.random.Generator, n: int) -> np.ndarray:
    w = rng.integers(1, 1 << 52, n, dtype=np.uint64)
    w = np.concatenate([w, (np.uint64(1) << np.arange(53, dtype=np.uint64)), w | np.uint64(1)])
    x = w.view(np.float64)
    return np.concatenate([x, -x])


# -- granularity_from_double (docs/ieee754.md) ----------------------------------------------------


def ref_granularity(lam: float) -> Fraction:
    """Smallest power of two >= lam, by exact search on rationals."""
    q = Fraction(lam)
    j = q.numerator.bit_length() - q.denominator.bit_length()  # within 1 of the answer
    while Fraction(2) ** j < q:
        j += 1
    while Fraction(2) ** (j - 1) >= q:
        j -= 1
    return Fraction(2) ** j


def _granularity_cases() -> list[float]:
    out = []
    for j in range(-1074, 1024):
        p = math.ldexp(1.0, j)
        out += [p, math.nextafter(p, math.inf), math.nextafter(p, 0.0)]
    out += [3.0, 0.1, 1 / 3, 1e-310, 3 * TINY, MIN_NORMAL - TINY, 2.0**1023]
    return [v for v in out if 0 < v <= 2.0**1023]


def test_granularity_every_power_of_two_and_neighbours():
    for lam in _granularity_cases():
        got = granularity_from_double(lam)
        assert Fraction(got) == ref_granularity(lam), f"granularity_from_double({lam!r})"


def test_granularity_random_doubles_including_subnormals():
    rng = np.random.default_rng(41)
    w = rng.integers(1, 0x7FE0_0000_0000_0000, 20_000, dtype=np.uint64)  # (0, 2**1023)
    sub = rng.integers(1, 1 << 52, 5_000, dtype=np.uint64)
    for lam in np.concatenate([w, sub]).view(np.float64).tolist():
        got = granularity_from_double(lam)
        ref = ref_granularity(lam)
        assert Fraction(got) == ref, f"granularity_from_double({lam!r})"
        assert got == 2.0 ** ceil_log2(Fraction(lam))  # agrees with the core's calibration


@given(st.floats(min_value=TINY, max_value=2.0**1023))
def test_granularity_hypothesis(lam):
    got = granularity_from_double(lam)
    assert Fraction(got) == ref_granularity(lam)
    assert lam <= got < 2 * lam


def test_granularity_hand_values():
    assert granularity_from_double(1.0) == 1.0
    assert granularity_from_double(3.0) == 4.0
    assert granularity_from_double(4.000000000000001) == 8.0
    assert granularity_from_double(0.1) == 0.125
    assert granularity_from_double(TINY) == TINY
    assert granularity_from_double(3 * TINY) == 4 * TINY
    assert granularity_from_double(MIN_NORMAL - TINY) == MIN_NORMAL  # carry to a normal
    assert granularity_from_double(2.0**1023) == 2.0**1023
    assert granularity_from_double(5) == 8.0  # an int that is a double


@pytest.mark.parametrize("lam", [math.nextafter(2.0**1023, math.inf), 1.5 * 2.0**1023, DBL_MAX])
def test_granularity_overflow_is_refused(lam):
    with pytest.raises(ParameterError, match=r"lam must be <= 2\*\*1023.*got"):
        granularity_from_double(lam)


@pytest.mark.parametrize(
    "lam", [0.0, -0.0, -1.0, -TINY, math.nan, math.inf, -math.inf, True, "1", None, 2**1100]
)
def test_granularity_bad_input(lam):
    with pytest.raises(ParameterError, match="lam"):
        granularity_from_double(lam)


# -- snap_double: hand-derived edges (the four cases) --------------------------------------


def test_zero_and_negative_zero_give_positive_zero():
    for L in LS:
        g = math.ldexp(1.0, L)
        for x in (0.0, -0.0):
            r = snap_double(x, g)
            assert r == 0 and math.copysign(1.0, r) == 1.0
            rv = snap_doubles(np.array([x]), L)
            assert rv.view(np.uint64)[0] == 0


@pytest.mark.parametrize("L", LS)
def test_exact_ties_go_toward_plus_infinity(L):
    g = math.ldexp(1.0, L)
    checked = 0
    for k in (0, 1, 2, 7, 2**20, 2**52 - 1, -1, -2, -3, -(2**30) - 1, -(2**52)):
        tie = (k + Fraction(1, 2)) * Fraction(2) ** L
        if abs(tie) >= 2**1024 or Fraction(float(tie)) != tie:
            continue  # not a double (too large, or more than 53 bits / below 2**-1074)
        x = float(tie)
        checked += 1
        if abs(Fraction(k + 1) * Fraction(2) ** L) >= 2**1024:
            with pytest.raises(SnapOverflowError):
                snap_double(x, g)
            continue
        expected = (k + 1) * Fraction(2) ** L  # tie -> up, for either sign of k
        got = snap_double(x, g)
        assert Fraction(got) == expected, (x, L)
        if expected == 0:
            assert math.copysign(1.0, got) == 1.0
    assert checked >= (0 if L == -1074 else 4)  # at Λ = 2**-1074 no double is a tie


def test_negative_ties_departure_from_seed_text():
    # A magnitude rule would give -1.0 and -2.0; ties toward +inf give 0 and -1.
    assert bits(snap_double(-0.5, 1.0)) == bits(0.0)
    assert snap_double(-1.5, 1.0) == -1.0
    assert snap_double(-2.5, 1.0) == -2.0
    assert snap_double(2.5, 1.0) == 3.0
    assert snap_double(-3.0, 2.0) == -2.0  # y = 0
    assert snap_double(-1.0, 2.0) == 0.0  # y = -1, exact tie
    assert snap_double(-math.nextafter(1.0, 2.0), 2.0) == -2.0  # y = -1, just past the tie


@pytest.mark.parametrize("L", [-1022, -60, 0, 3, 52, 900, 1000])
def test_case3_y_minus_one(L):
    g = math.ldexp(1.0, L)
    half = g / 2
    for x, expected in [
        (half, g),
        (math.nextafter(half, math.inf), g),
        (0.75 * g, g),
        (math.nextafter(g, 0.0), g),
        (-half, 0.0),
        (-math.nextafter(half, math.inf), -g),
        (-0.75 * g, -g),
        (-math.nextafter(g, 0.0), -g),
    ]:
        assert bits(snap_double(x, g)) == bits(expected), (x, L)


@pytest.mark.parametrize("L", [-1021, -1000, -60, 0, 3, 52, 1000, 1023])
def test_case4_y_below_minus_one(L):
    g = math.ldexp(1.0, L)
    for x in (math.nextafter(g / 2, 0.0), g / 4, 0.3 * g, TINY, 1e-310, MIN_NORMAL):
        if x >= g / 2:
            continue
        for v in (x, -x):
            assert bits(snap_double(v, g)) == bits(0.0), (v, L)


@pytest.mark.parametrize("L", [-1000, -1, 0, 7, 500])
def test_mantissa_all_ones_carries_into_exponent(L):
    g = math.ldexp(1.0, L)
    for y in range(0, 51):  # x = (2 - 2**-52)·2**y·Λ: x/Λ = 2**(y+1) - 2**(y-52)
        x = math.ldexp(2 - 2.0**-52, y + L)
        up = math.ldexp(1.0, y + 1 + L)
        assert snap_double(x, g) == up
        assert snap_double(-x, g) == -up
        assert bits(snap_double(x, g)) == bits(up)  # fraction cleared, exponent + 1
    # y = 51: x/Λ = 2**52 - 1/2 is a tie: up for x > 0, toward zero for x < 0.
    x = math.ldexp(2 - 2.0**-52, 51 + L)
    assert snap_double(x, g) == math.ldexp(1.0, 52 + L)
    assert snap_double(-x, g) == -math.ldexp(2**52 - 1, L)
    # y = 52, 53: integers already.
    for y in (52, 53):
        x = math.ldexp(2 - 2.0**-52, y + L)
        assert snap_double(x, g) == x and snap_double(-x, g) == -x


@pytest.mark.parametrize("L", [-1022, -500, -52, 0, 52, 900])
def test_y_51_52_53(L):
    g = math.ldexp(1.0, L)
    rng = np.random.default_rng(L + 2000)
    for f in rng.integers(0, 1 << 52, 200).tolist():
        sig = (1 << 52) | f
        # y = 51: x/Λ = sig/2; odd sig is a tie.
        x = math.ldexp(sig, L - 1)
        k = (sig + 1) // 2
        assert snap_double(x, g) == math.ldexp(k, L)
        assert snap_double(-x, g) == -math.ldexp(sig // 2, L)
        for y in (52, 53):
            x = math.ldexp(sig, L + y - 52)
            assert snap_double(x, g) == x and snap_double(-x, g) == -x


def test_subnormal_inputs_hand_values():
    assert snap_double(TINY, TINY) == TINY  # Λ = 2**-1074: everything is a multiple
    assert snap_double(TINY, 2 * TINY) == 2 * TINY  # 1/2 -> 1
    assert bits(snap_double(-TINY, 2 * TINY)) == bits(0.0)  # -1/2 -> 0
    assert snap_double(3 * TINY, 2 * TINY) == 4 * TINY  # 3/2 -> 2
    assert snap_double(-3 * TINY, 2 * TINY) == -2 * TINY  # -3/2 -> -1
    largest_sub = MIN_NORMAL - TINY
    assert snap_double(largest_sub, 2.0**-1060) == MIN_NORMAL  # carry into a normal
    assert snap_double(-largest_sub, 2.0**-1060) == -MIN_NORMAL
    assert snap_double(largest_sub, MIN_NORMAL) == MIN_NORMAL  # y = -1 region, above 1/2
    assert bits(snap_double(MIN_NORMAL / 2, MIN_NORMAL)) == bits(MIN_NORMAL)  # tie up
    assert bits(snap_double(-MIN_NORMAL / 2, MIN_NORMAL)) == bits(0.0)  # tie -> +0
    assert bits(snap_double(largest_sub, 2.0**-1021)) == bits(0.0)  # < Λ/2
    assert bits(snap_double(-largest_sub, 2.0**-1021)) == bits(0.0)
    assert bits(snap_double(-TINY, 1.0)) == bits(0.0)


def test_huge_values_and_overflow():
    assert snap_double(DBL_MAX, 2.0**971) == DBL_MAX  # y = 52
    assert snap_double(2.0**1023, 2.0**1023) == 2.0**1023
    assert snap_double(0.75 * 2.0**1023, 2.0**1023) == 2.0**1023  # y = -1
    assert snap_double(-1.5 * 2.0**1023, 2.0**1023) == -(2.0**1023)  # negative tie: inward
    assert snap_double(-DBL_MAX, 2.0**972) == -math.ldexp(2**52 - 1, 972)  # negative tie
    for x, g in [
        (DBL_MAX, 2.0**972),  # positive tie at 2**52 - 1/2 -> 2**1024
        (DBL_MAX, 2.0**973),
        (-DBL_MAX, 2.0**973),
        (DBL_MAX, 2.0**1023),
        (1.5 * 2.0**1023, 2.0**1023),
    ]:
        with pytest.raises(SnapOverflowError, match="2\\*\\*1024") as info:
            snap_double(x, g)
        assert isinstance(info.value, OverflowError) and isinstance(info.value, SnapcoreError)
        with pytest.raises(SnapOverflowError, match="flat index 1"):
            snap_doubles(np.array([0.0, x]), power_of_two_exponent(g))


def test_large_granularity_small_values():
    assert bits(snap_double(1.0, 2.0**1000)) == bits(0.0)
    assert bits(snap_double(-(2.0**999), 2.0**1000)) == bits(0.0)
    assert snap_double(2.0**999, 2.0**1000) == 2.0**1000
    assert snap_double(1e300, 2.0**1000) == 0.0


# -- snap_double against the exact references ----------------------------------------------


@pytest.mark.parametrize("L", LS)
def test_scalar_structured_values_against_exact_references(L):
    rng = np.random.default_rng(2000 + L)
    xs = np.concatenate(
        [
            relative(rng, 2000, L, -3, 55),
            ties(rng, 300, L),
            all_ones(L),
            subnormals(rng, 100),
            [DBL_MAX, -DBL_MAX, MIN_NORMAL, -MIN_NORMAL, TINY, -TINY],
        ]
    )
    for x in xs.tolist():
        check_scalar(x, L)


def test_scalar_random_bit_patterns_against_exact_references():
    rng = np.random.default_rng(7)
    xs = random_bit_patterns(rng, 20_000)
    Ls = rng.integers(-1074, 1024, xs.size)
    for x, L in zip(xs.tolist(), Ls.tolist(), strict=True):
        check_scalar(x, L)
    # Granularity near each x's exponent, where all four cases occur.
    xs = random_bit_patterns(rng, 20_000)
    e = np.frexp(xs)[1] + rng.integers(-56, 3, xs.size)
    for x, L in zip(xs.tolist(), np.clip(e, -1074, 1023).tolist(), strict=True):
        check_scalar(x, L)


def test_scalar_equals_vector_elementwise():
    """Several hundred thousand values: snap_double == snap_doubles bit for bit."""
    rng = np.random.default_rng(11)
    total = 0
    for L in LS:
        xs = np.concatenate(
            [relative(rng, 8000, L, -3, 55), ties(rng, 1500, L), subnormals(rng, 500)]
        )
        if L >= 971:
            xs = xs[np.abs(xs) < 2.0**1023]  # keep clear of overflow here
        vec = snap_doubles(xs, L).view(np.uint64).tolist()
        g = math.ldexp(1.0, L)
        for x, v in zip(xs.tolist(), vec, strict=True):
            assert bits(snap_double(x, g)) == v, (x, L)
        total += xs.size
    assert total > 300_000


@settings(max_examples=400)
@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(-1074, 1023))
def test_hypothesis_any_double_any_granularity(x, L):
    check_scalar(x, L)


@st.composite
def near_granularity(draw):
    """(x, L) with x/Λ's exponent in [-3, 54], ties and neighbours included."""
    L = draw(st.integers(-1074, 1023))
    y = draw(st.integers(-3, 54))
    field = min(max(y + L + 1023, 0), 2046)
    frac = draw(st.one_of(st.integers(0, (1 << 52) - 1), st.sampled_from([0, (1 << 52) - 1])))
    low = max(0, 52 - y)
    if low and draw(st.booleans()):  # force an exact tie at Λ/2, or one ulp from it
        frac = (frac >> low << low) | (1 << (low - 1) if low <= 52 else 0)
        frac = max(0, min((1 << 52) - 1, frac + draw(st.sampled_from([-1, 0, 1]))))
    w = draw(st.sampled_from([0, 1 << 63])) | field << 52 | frac
    return from_bits(w), L


@settings(max_examples=1500)
@given(near_granularity())
def test_hypothesis_near_granularity(xl):
    x, L = xl
    check_scalar(x, L)
    try:
        expected = bits(snap_double(x, math.ldexp(1.0, L)))
    except SnapOverflowError:
        with pytest.raises(SnapOverflowError):
            snap_doubles(np.array([x]), L)
        return
    assert snap_doubles(np.array([x]), L).view(np.uint64)[0] == expected


# -- snap_doubles in volume against the vectorised exact reference ---------------------------


def test_ref_vec_is_the_exact_snap():
    """The volume reference itself agrees with the scalar references (so it can be trusted)."""
    rng = np.random.default_rng(3)
    for L in LS:
        xs = np.concatenate([relative(rng, 1000, L, -3, 55), ties(rng, 200, L), all_ones(L)])
        res, over = ref_vec(xs, L)
        for x, r, o in zip(xs.tolist(), res.tolist(), over.tolist(), strict=True):
            if o:
                assert abs(ref_fraction(x, L)) >= 2**1024
            else:
                assert bits(r) == bits(ref_exact(x, L)) and Fraction(r) == ref_fraction(x, L)


def test_vector_millions_against_exact_reference():
    rng = np.random.default_rng(2024)
    total = 0
    for L in LS:
        total += check_vec(relative(rng, 150_000, L, -4, 56), L)
        total += check_vec(ties(rng, 25_000, L), L)
        total += check_vec(all_ones(L), L)
        total += check_vec(subnormals(rng, 5_000), L)
    for _ in range(4):
        xs = random_bit_patterns(rng, 250_000)
        for L in (-1074, -1022, -40, 0, 40, 1023):
            total += check_vec(xs, L)
    assert total > 11_000_000


def test_vector_shapes_dtypes_and_no_mutation():
    x = np.array([[0.5, -0.5], [1.5, -1.5]])
    before = x.copy()
    r = snap_doubles(x, 0)
    assert r.shape == (2, 2) and r.dtype == np.float64
    assert r.tolist() == [[1.0, 0.0], [2.0, -1.0]]
    assert np.array_equal(x, before)
    assert snap_doubles(np.float64(2.5), 0).shape == ()
    assert snap_doubles(np.array([2.5], dtype=np.float32), 0).tolist() == [3.0]
    assert snap_doubles(np.arange(10.0)[::3] + 0.5, 1).tolist() == [0.0, 4.0, 6.0, 10.0]
    assert snap_doubles([], 0).shape == (0,)
    assert snap_doubles(np.array([1.0]), np.int64(3)).tolist() == [0.0]


@pytest.mark.parametrize(
    ("x", "L", "match"),
    [
        ([1.0, math.nan], 0, "nan at flat index 1"),
        ([math.inf], 0, "inf at flat index 0"),
        ([-math.inf], 0, "-inf"),
        ([1.0], True, "granularity_log2 must be an int"),
        ([1.0], 1.0, "granularity_log2 must be an int"),
        ([1.0], 1024, "1024"),
        ([1.0], -1075, "-1075"),
        (np.array([1, 2]), 0, "dtype int64"),
        (np.array([1.0], dtype=np.longdouble), 0, "float"),
        (["a"], 0, "dtype"),
    ],
)
def test_vector_bad_input(x, L, match):
    if np.dtype(np.longdouble).itemsize == 8 and match == "float":
        pytest.skip("longdouble is binary64 on this platform")
    with pytest.raises(ParameterError, match=match):
        snap_doubles(x, L)


@pytest.mark.parametrize(
    ("x", "g", "match"),
    [
        (math.nan, 1.0, "x must be a finite double, got nan"),
        (math.inf, 1.0, "x must be a finite double, got inf"),
        (True, 1.0, "x must be a finite double, got the bool"),
        ("1", 1.0, "x must be a finite double"),
        (2**53 + 1, 1.0, "exactly representable"),
        (1.0, 3.0, "granularity must be a power of two"),
        (1.0, 0.0, "granularity must be a power of two"),
        (1.0, -2.0, "granularity must be a power of two"),
        (1.0, 3 * TINY, "granularity must be a power of two"),
        (1.0, math.inf, "granularity must be a finite double"),
        (1.0, math.nan, "granularity must be a finite double"),
    ],
)
def test_scalar_bad_input(x, g, match):
    with pytest.raises(ParameterError, match=match):
        snap_double(x, g)


def test_power_of_two_exponent_all():
    for j in range(-1074, 1024):
        assert power_of_two_exponent(math.ldexp(1.0, j)) == j
    assert snap_double(6, 4) == 8.0  # ints that are doubles are accepted


@pytest.mark.slow
def test_vector_sweep_1e8(slow_size):
    """10**8 values across every granularity class against the vectorised reference."""
    rng = np.random.default_rng(10**8)
    total, want, chunk = 0, slow_size(10**8, 10**5), slow_size(100_000, 10_000)
    while total < want:
        L = int(rng.choice(LS + list(range(-1074, 1024, 37))))
        total += check_vec(relative(rng, 7 * chunk, L, -4, 56), L)
        total += check_vec(ties(rng, chunk, L), L)
        total += check_vec(random_bit_patterns(rng, chunk), L)
    assert total >= want


# -- round_up_double / round_down_double against exact Fractions -----------------------


def _check_directed(q: Fraction) -> None:
    from snapcore.exact._ieee754 import round_down_double, round_up_double

    up, down = round_up_double(q), round_down_double(q)
    if q > Fraction(DBL_MAX):
        assert up == math.inf and down == DBL_MAX
    elif q < -Fraction(DBL_MAX):
        assert up == -DBL_MAX and down == -math.inf
    else:  # the least double >= q and the greatest <= q, by exact comparison
        assert Fraction(down) <= q <= Fraction(up)
        assert up == down or Fraction(math.nextafter(down, math.inf)) == Fraction(up)
        assert (up == down) == (Fraction(up) == q)


@given(
    st.integers(-(2**60), 2**60),
    st.integers(1, 2**60),
    st.integers(-1200, 1200),
)
def test_directed_rounding_to_doubles(num: int, den: int, shift: int) -> None:
    _check_directed(Fraction(num, den) * Fraction(2) ** shift)


def test_directed_rounding_to_doubles_at_the_edges() -> None:
    from snapcore.exact._ieee754 import round_down_double, round_up_double

    third = Fraction(1, 3)
    assert Fraction(round_up_double(third)) > third > Fraction(round_down_double(third))
    assert round_up_double(Fraction(0.5)) == 0.5 == round_down_double(Fraction(0.5))
    assert round_up_double(Fraction(1, 10**400)) == TINY
    assert round_down_double(Fraction(1, 10**400)) == 0.0
    assert round_up_double(Fraction(2) ** 1024) == math.inf
    assert round_up_double(Fraction(2) ** 1024 - 1) == math.inf
    assert round_up_double(-(Fraction(2) ** 1024)) == -DBL_MAX
    assert round_down_double(Fraction(2) ** 1024) == DBL_MAX
    big = Fraction(DBL_MAX)
    assert round_up_double(big) == DBL_MAX and round_up_double(big + 1) == math.inf
    for q in (
        Fraction(0),
        Fraction(1, 10),
        Fraction(TINY) / 2,
        Fraction(MIN_NORMAL) - Fraction(TINY) / 3,
        big - 1,
        Fraction(10) ** 400,
        -(Fraction(10) ** 400),
        Fraction(2, 3) * 10**300,
    ):
        _check_directed(q)
        _check_directed(-q)
