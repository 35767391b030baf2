"""The draw and its byte format ``snapcore-draw-v1`` (snapcore.randomness._draw).

**One draw.**  A :class:`~snapcore.randomness._draw.Draw` has a mantissa of exactly
``p`` bits and an exponent ``<= -p``; ``draw_from_u`` must give that normalised form for
every p-bit ``U*`` in (0, 1), whatever its own width, and accept ``U*`` down to the
backends' exponent range ``2**-(MIN_U_LOG2 − 1)``, refusing what lies below.  Checked
with exact ``Fraction``s against the definition, for hypothesis-drawn precisions and
values.  ``encode_draw`` writes what ``decode_draw`` reads back, byte for byte.

**The batch decoder against the scalar one, on crafted rows.**  ``decode_draw_batch``
reads rows of ``8 + ceil((p − 1)/8)`` bytes and decodes them in bulk (with numpy's
``decode_rows`` and ``_bit_length_u63``, or the fast path's compiled row decoder); each
element must be the scalar ``decode_draw`` of the same bytes, in the array types
``DrawBatch`` documents.  The rows are built by hand where bulk decoding can go wrong:
exponent words ``r`` just below a power of two with more than 53 significant bits (the
float conversion in ``_bit_length_u63`` rounds them up to the power of two), exact
powers of two, the extremes ``1`` and ``2**63 − 1``, both signs, and precisions whose
row length is not that of their neighbours (``p ≡ 1 (mod 8)``: ``p = 121`` has 15
mantissa bytes, 120 and 122 have 15 and 16).

**The format by hand.**  Decoding is checked against hand-made byte strings whose
(S, e, m) are derived bit by bit from the format's text (``tests/helpers/draw_format.py``).

**The distribution.**  Draws decoded from fair bytes (a seeded stream) have a fair
sign, a geometric exponent, uniform mantissa bits and ``P(U* <= u) = u + ulp_p(u)``.
The checks run at fixed seeds (deterministic); each statistical assertion has
false-alarm rate ``ALPHA`` = 1e-6: a correct decoder fails one only for a seed that
unlucky.  Large sizes are behind ``@pytest.mark.slow``.
"""

from __future__ import annotations

import hashlib
import io
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from draw_format import bit_decode, check_draw, u_star
from hypothesis import given, settings, strategies as st
from stattests import ALPHA, binomial_two_sided, chi_square, counts

from snapcore.errors import ParameterError
from snapcore.pipeline._compiled import compiled
from snapcore.randomness import _draw
from snapcore.randomness._draw import (
    MIN_U_LOG2,
    Draw,
    DrawBatch,
    decode_draw,
    decode_draw_batch,
    draw_from_u,
    encode_draw,
)
from snapcore.randomness._sources import SeededSource
from snapcore.testing.sources import FixedBytes

TWO = Fraction(2)
FAST, SLOW = 20_000, 1_000_000

# -- one draw ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(p=st.integers(2, 200), data=st.data())
def test_draw_from_u_is_the_normalised_p_bit_draw(p, data):
    bits = data.draw(st.integers(1, p), label="significant bits")
    m = data.draw(st.integers(2 ** (bits - 1), 2**bits - 1)) | 1  # odd: exactly `bits` bits
    k = data.draw(st.integers(bits, bits + 1100), label="u = m / 2**k")
    u = Fraction(m, 1 << k)
    sign = data.draw(st.sampled_from([1, -1]))
    d = draw_from_u(u, sign, p)
    assert 2 ** (p - 1) <= d.mantissa < 2**p and d.exponent <= -p
    assert d.mantissa * TWO**d.exponent == u == d.u and d.sign == sign
    if float(u) == u:  # a double gives the same draw
        assert draw_from_u(float(u), sign, p) == d
    if bits < p:  # one more significant bit than p is refused
        wider = u + Fraction(1, 1 << (k + p - bits + 1))
        assert wider.numerator.bit_length() == p + 1
        with pytest.raises(ParameterError, match="p-bit float"):
            draw_from_u(wider, sign, p)


def test_draw_from_u_accepts_the_smallest_u_and_refuses_below():
    """``2**-(MIN_U_LOG2 − 1)`` is the smallest ``U*`` a backend represents; half of it
    is refused before anything is drawn."""
    smallest = Fraction(1, 1 << (MIN_U_LOG2 - 1))
    d = draw_from_u(smallest, -1, 118)
    assert d.mantissa == 1 << 117 and d.exponent == -(MIN_U_LOG2 - 1) - 117
    with pytest.raises(ParameterError, match="exponent range"):
        draw_from_u(smallest / 2, -1, 118)


# -- encode_draw: the inverse of decode_draw -------------------------------------------
def test_encode_draw_bytes_by_hand() -> None:
    p = 118  # 15 mantissa bytes
    # U* = 1/2, S = -1: geometric exponent 1 -> sign bit and bit 62 of the first word
    assert encode_draw(Draw(-1, 1 << 117, -118), p) == bytes([0xC0]) + bytes(7 + 15)
    # U* = 2**-64·(1 + 2**-117): e = 64 -> a zero first word, then bit 63 of the next;
    # the mantissa's last bit is the last bit of the tail (118 - 1 = 117 bits in 120)
    got = encode_draw(Draw(1, (1 << 117) | 1, -117 - 64), p)
    assert got == bytes(8) + bytes([0x80]) + bytes(7) + (1 << 3).to_bytes(15, "big")


@given(
    st.sampled_from([53, 118, 121, 200]),
    st.sampled_from([-1, 1]),
    st.integers(1, 400),
    st.integers(0, 2**199),
)
def test_decode_draw_reads_back_what_encode_draw_writes(p, sign, e, bits) -> None:
    d = Draw(sign, (1 << (p - 1)) | (bits % (1 << (p - 1))), -(p - 1) - e)
    data = encode_draw(d, p)
    stream = io.BytesIO(data + b"next")
    assert decode_draw(stream.read, p) == d
    assert stream.read() == b"next"  # exactly the draw's bytes


def test_encode_draw_refuses_what_is_not_a_p_bit_u_star() -> None:
    with pytest.raises(ParameterError, match="p-bit"):
        encode_draw(Draw(1, 1 << 117, -117), 118)  # U* = 1
    with pytest.raises(ParameterError, match="p-bit"):
        encode_draw(Draw(1, 1 << 116, -200), 118)  # a (p-1)-bit mantissa


# -- the batch decoder ---------------------------------------------------------------


#: Exponent words: 2**k − 1 and 2**k − 2**(k−54) − 1 round up to 2**k as doubles (for
#: k > 53); 2**k, 1, 2**63 − 1 and ordinary words.
WORDS = [
    *((1 << k) - 1 for k in range(50, 64)),
    *((1 << k) - (1 << (k - 54)) - 1 for k in range(55, 64)),
    *(1 << k for k in range(0, 63, 7)),
    1,
    (1 << 63) - 1,
    0x1234_5678_9ABC_DEF,
]


def _rows(p: int, seed: int) -> bytes:
    rng = random.Random(seed)
    nb = (p + 6) >> 3
    out = bytearray()
    for i, r in enumerate(WORDS):
        sign = (i % 2) << 63
        out += (sign | r).to_bytes(8, "big") + rng.randbytes(nb)
    return bytes(out)


#: The decoders of whole rows: numpy's and, where numba is installed, the fast path's
#: compiled one (the same arrays).
_COMPILED = compiled()
ROWS = {"numpy": _draw.decode_rows}
if _COMPILED is not None:
    ROWS["numba"] = _COMPILED.decode_rows
ENGINES = list(ROWS)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", [118, 120, 121, 122, 129, 200])
def test_bulk_decoding_of_crafted_rows_equals_the_scalar_decoder(p, engine):
    data = _rows(p, seed=p)
    n = len(WORDS)
    want = []
    f = io.BytesIO(data)
    for _ in range(n):
        want.append(decode_draw(f.read, p))
    assert f.read() == b""  # the rows are exactly n draws long
    batch = decode_draw_batch(FixedBytes(data), n, p, ROWS[engine])
    assert batch.precision == p and len(batch) == n
    assert batch.sign.dtype == batch.e.dtype == np.float64
    assert batch.mhi.dtype == batch.mlo.dtype == np.uint64
    for i, d in enumerate(want):
        assert batch.sign[i] == d.sign
        assert batch.e[i] == -d.exponent - (p - 1), (i, hex(WORDS[i]))
        assert int(batch.mhi[i]) == (d.mantissa >> (p - 53)) & ((1 << 52) - 1)
        assert int(batch.mlo[i]) == (d.mantissa >> (p - 106)) & ((1 << 53) - 1)
        assert batch.draw(i) == d
    # from_draws builds the same arrays, in the same types, from the draws themselves
    again = DrawBatch.from_draws(want, p)
    assert again.precision == p and len(again) == n
    for name in ("sign", "e", "mhi", "mlo"):
        a, b = getattr(again, name), getattr(batch, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert [again.draw(i) for i in range(n)] == want


def test_bit_length_u63_is_int_bit_length():
    words = np.array(WORDS, dtype=np.uint64)
    got = _draw._bit_length_u63(words)
    assert got.dtype == np.int64
    assert got.tolist() == [w.bit_length() for w in WORDS]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", [118, 121, 200])
@pytest.mark.parametrize("zeros", [1, 2, 3])
@pytest.mark.parametrize("layout", ["middle-and-last", "then-one-row", "one-row-then-last"])
def test_continuation_rows_in_the_middle_and_last_are_read_exactly(p, engine, zeros, layout):
    """A row whose 63 exponent bits are all zero continues the exponent in the next
    ``zeros`` words: the bulk decoder hands it to the scalar decoder, which reads past
    the row.  When it is the last row, those bytes come from the source itself; the
    batch must read exactly the stream's bytes (the source serves no byte more).  A
    continuation of three words followed by one row needs more bytes than that row
    holds: part comes from the rows read in bulk, the rest from the source."""
    rng = random.Random(p * 10 + zeros)
    nb = (p + 6) >> 3

    def row(word: int) -> bytes:
        return word.to_bytes(8, "big") + rng.randbytes(nb)

    def continuation(sign: int) -> bytes:
        # first word: the sign and 63 zero bits; the mantissa field starts with the
        # continuation words (zeros − 1 zero words, then a non-zero one)
        words = b"\0" * 8 * (zeros - 1) + (1 << 40).to_bytes(8, "big")
        return (sign << 63).to_bytes(8, "big") + words + rng.randbytes(nb)

    if layout == "middle-and-last":
        data = row(5) + continuation(1) + row((1 << 62) - 1) + row(1 << 62) + continuation(0)
        n = 5
    elif layout == "then-one-row":
        data = continuation(1) + row(5)
        n = 2
    else:
        data = row(5) + continuation(0)
        n = 2
    f = io.BytesIO(data)
    want = [decode_draw(f.read, p) for _ in range(n)]
    assert f.read() == b""
    src = FixedBytes(data)
    batch = decode_draw_batch(src, n, p, ROWS[engine])
    assert src.rest() == b""  # every byte read, none past the end
    assert len(batch) == n and batch.precision == p
    assert batch.sign.dtype == batch.e.dtype == np.float64
    assert batch.mhi.dtype == batch.mlo.dtype == np.uint64
    for i, d in enumerate(want):
        assert batch.sign[i] == d.sign and batch.e[i] == -d.exponent - (p - 1)
        assert int(batch.mhi[i]) == (d.mantissa >> (p - 53)) & ((1 << 52) - 1)
        assert int(batch.mlo[i]) == (d.mantissa >> (p - 106)) & ((1 << 53) - 1)
        assert batch.draw(i) == d


@pytest.mark.parametrize("engine", ENGINES)
def test_no_draws_is_an_empty_batch_of_the_documented_types(engine):
    src = FixedBytes(b"")
    batch = decode_draw_batch(src, 0, 118, ROWS[engine])
    assert len(batch) == 0 and batch.precision == 118
    for name, dtype in (("sign", np.float64), ("e", np.float64), ("mhi", np.uint64),
                        ("mlo", np.uint64)):  # fmt: skip
        arr = getattr(batch, name)
        assert arr.shape == (0,) and arr.dtype == dtype, name


def test_the_batch_decoder_refuses_a_precision_below_its_least():
    with pytest.raises(ValueError, match="p >= 118"):
        decode_draw_batch(FixedBytes(bytes(100)), 1, 117)


def test_row_fields_are_the_same_on_scalars_and_arrays():
    """The one source of the rows' fields runs element-wise on uint64 scalars (as numba
    compiles it) and on arrays (numpy's decoder): the same values."""
    rng = random.Random(5)
    words = [np.array([rng.getrandbits(64) for _ in range(50)], np.uint64) for _ in range(3)]
    words[0][:3] = [0, 1 << 63, (1 << 63) - 1]
    arrays = _draw.row_fields(*words)
    for j in range(50):
        scalars = _draw.row_fields(*(np.uint64(w[j]) for w in words))
        for a, x in zip(arrays, scalars, strict=True):
            assert a[j] == x
    assert arrays[0].dtype == np.float64 and set(arrays[0].tolist()) <= {-1.0, 1.0}
    assert [a.dtype for a in arrays[1:]] == [np.uint64] * 3


# -- the format by hand: hand-written vectors ------------------------------------------

ONES = b"\xff" * 32


@pytest.mark.parametrize(
    ("data", "p", "sign", "e", "m", "used"),
    [
        # 1010 0000 ...: S = -1, one zero then a one: e = 2; 15 bytes of ones -> the
        # top 117 of 120 bits: m = 2**117 - 1, U* = (2**118 - 1) / 2**119.
        (bytes([0b1010_0000]) + bytes(7) + ONES[:15], 118, -1, 2, 2**117 - 1, 23),
        # 0111 1111 ...: S = +1, first fair bit is a one: e = 1; mantissa bytes 0x80 then
        # zeros: m = 2**116 (its first bit only).
        (b"\x7f" + b"\xff" * 7 + b"\x80" + bytes(14), 118, 1, 1, 2**116, 23),
        # 0000 ... 0001 in the first word: 62 zeros after the sign, then a one: e = 63.
        # Mantissa 0x01 then 0x00...: bit 8 of 117 is set: m = 2**(117 - 8).
        (bytes(7) + b"\x01" + b"\x01" + bytes(14), 118, 1, 63, 2**109, 23),
        # The 63-zero continuation: sign set, 63 zeros; a zero word (+64); then a word
        # 0x00..0100 (55 zeros, then a one): e = 1 + 63 + 64 + 55 = 183.  Bits after the
        # one are discarded (0x01 0xff below are the rest of that word).  Mantissa: the
        # 15 bytes 0x00 0x00 ... 0x0f: the last 3 of 120 bits are dropped: m = 0b1.
        (
            b"\x80" + bytes(7) + bytes(8) + bytes(6) + b"\x01\xff" + bytes(14) + b"\x0f",
            118,
            -1,
            183,
            1,
            39,
        ),
        # p = 200: 25 bytes = 200 bits for 199 mantissa bits: the last bit is dropped.
        (b"\x20" + bytes(7) + b"\xaa" * 25, 200, 1, 2, int("10" * 99 + "1", 2), 33),
        # p = 119 (odd): ceil(118/8) = 15 bytes, 2 low bits dropped.
        (b"\xc0" + bytes(7) + bytes(14) + b"\x07", 119, -1, 1, 1, 23),
        # p = 125: 16 bytes = 128 bits for 124: 4 bits dropped.
        (b"\x10" + bytes(7) + bytes(15) + b"\x1f", 125, 1, 3, 1, 24),
        # p = 121: 15 bytes = 120 bits exactly: nothing dropped.
        (b"\x08" + bytes(7) + bytes(14) + b"\x03", 121, 1, 4, 3, 23),
    ],
    ids=["p118-e2", "p118-e1", "p118-e63", "p118-continuation", "p200", "p119", "p125", "p121"],
)
def test_hand_vectors(data, p, sign, e, m, used):
    # The bit-level reading of the text agrees with the hand derivation ...
    assert bit_decode(data, p) == (sign, e, m, used)
    # ... and so does snapcore's decoder, consuming exactly the same bytes.
    src = FixedBytes(data)
    check_draw(src.draw(p), sign, e, m, p)
    assert src.position == used == len(data)


def test_continuation_over_many_zero_words():
    """Five all-zero continuation words: e = 1 + 63 + 5·64 + (64 - 1) = 447."""
    data = b"\x00" * 8 + b"\x00" * 40 + b"\x00" * 7 + b"\x01" + bytes(15)
    assert bit_decode(data, 118)[:3] == (1, 447, 0)
    check_draw(FixedBytes(data).draw(118), 1, 447, 0, 118)


def test_consecutive_draws_use_contiguous_bytes():
    rnd = hashlib.sha512(b"vectors").digest() * 4
    src = FixedBytes(rnd[:69])
    pos = 0
    for _ in range(3):
        sign, e, m, used = bit_decode(rnd, 118, pos)
        check_draw(src.draw(118), sign, e, m, 118)
        pos += used
    assert src.position == pos == 69


# -- the distribution of a draw from fair bytes: S and U* ------------------------------


def _draws(n: int, p: int, seed: int) -> list[Draw]:
    return SeededSource(seed).draws(n, p)


def check_u_star_distribution(n: int, p: int, seed: int) -> None:
    ds = _draws(n, p, seed)
    # S is a fair bit.
    plus = sum(d.sign == 1 for d in ds)
    assert binomial_two_sided(plus, n, Fraction(1, 2)) > ALPHA
    # e ~ Geometric(1/2): P(e = k) = 2**-k; cells 1..K and a tail e > K.
    es = [-(p - 1) - d.exponent for d in ds]
    K = max(1, int(math.log2(n)) - 3)
    obs = counts([min(e, K + 1) for e in es])
    probs = {k: Fraction(1, 2**k) for k in range(1, K + 1)} | {K + 1: Fraction(1, 2**K)}
    assert chi_square(obs, probs)[1] > ALPHA
    # Mantissa bits uniform: the top 4 and the bottom 4 of the p - 1 drawn bits.
    ms = [d.mantissa - 2 ** (p - 1) for d in ds]
    uniform16 = {k: Fraction(1, 16) for k in range(16)}
    assert chi_square(counts([m >> (p - 5) for m in ms]), uniform16)[1] > ALPHA
    assert chi_square(counts([m & 15 for m in ms]), uniform16)[1] > ALPHA
    # S independent of the exponent's first cell (2x2 table as 4 cells).
    joint = counts([(d.sign, -(p - 1) - d.exponent == 1) for d in ds])
    quarter = {(s, f): Fraction(1, 4) for s in (1, -1) for f in (True, False)}
    assert chi_square(joint, quarter)[1] > ALPHA


@pytest.mark.parametrize("p", [118, 119, 200])
def test_u_star_distribution(p):
    check_u_star_distribution(FAST, p, seed=20240)


@pytest.mark.slow
@pytest.mark.parametrize("p", [118, 200])
def test_u_star_distribution_large(p, slow_size):
    check_u_star_distribution(slow_size(SLOW, FAST), p, seed=20241)


def exact_cdf(u: Fraction, p: int) -> Fraction:
    """P(U* <= u) for a p-bit u in (0, 1), summed from the definition
    P(U* = v) = ulp_p(v) = 2**-e · 2**-(p-1) for v in [2**-e, 2**(1-e))."""
    e = 1
    while u < Fraction(1, 2**e):
        e += 1
    below = Fraction(1, 2**e)  # all binades under 2**-e have total mass 2**-e
    m = (u * 2**e - 1) * 2 ** (p - 1)
    assert m.denominator == 1
    return below + (m + 1) * Fraction(1, 2**e) / 2 ** (p - 1)


def test_exact_cdf_identity_small_precision():
    """P(U* <= u) = u + ulp_p(u): checked on every 3-bit float down to 2**-12."""
    p = 3
    for e in range(1, 13):
        for m in range(4):
            u = u_star(e, m, p)
            ulp = Fraction(1, 2**e) / 2 ** (p - 1)
            assert exact_cdf(u, p) == u + ulp


@pytest.mark.parametrize(
    "n", [pytest.param(FAST, id="fast"), pytest.param(SLOW, id="large", marks=pytest.mark.slow)]
)
def test_u_star_cell_probabilities_at_three_bits(n, slow_size):
    """At p = 3 every value's probability (its ulp) is large enough to see: a
    chi-square over all values, and binomial tests of P(U* <= u) = u + ulp_p(u)
    (at u = 1/2 the ulp term is 1/8, which a wrong CDF u would miss by 25%)."""
    p = 3
    n = slow_size(n, FAST)
    src = SeededSource(31337)
    vals = [d.u for d in src.draws(n, p)]
    cells = {}
    for e in range(1, 40):
        for m in range(4):
            cells[u_star(e, m, p)] = Fraction(1, 2**e) / 4
    leftover = 1 - sum(cells.values())
    obs = counts([v if v in cells else "tail" for v in vals])
    cells["tail"] = leftover
    assert chi_square(obs, cells)[1] > ALPHA
    for u in [Fraction(1, 2), Fraction(5, 8), Fraction(7, 8), Fraction(3, 16), Fraction(1, 64)]:
        k = sum(v <= u for v in vals)
        assert binomial_two_sided(k, n, exact_cdf(u, p)) > ALPHA, u
