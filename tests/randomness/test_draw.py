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
"""

from __future__ import annotations

import io
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from snapcore.testing.sources import FixedBytes

TWO = Fraction(2)

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
