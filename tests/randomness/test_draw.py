"""Bulk decoding of ``snapcore-draw-v1`` rows against the scalar decoder, on crafted rows.

``decode_draw_batch`` reads rows of ``8 + ceil((p − 1)/8)`` bytes and decodes them in
bulk (numba, or numpy with ``_bit_length_u63``); each element must be the scalar
``decode_draw`` of the same bytes, in the array types ``DrawBatch`` documents.  The
rows are built by hand where bulk decoding can go wrong: exponent words ``r`` just
below a power of two with more than 53 significant bits (the float conversion in
``_bit_length_u63`` rounds them up to the power of two), exact powers of two, the
extremes ``1`` and ``2**63 − 1``, both signs, and precisions whose row length is not
that of their neighbours (``p ≡ 1 (mod 8)``: ``p = 121`` has 15 mantissa bytes, 120
and 122 have 15 and 16).
"""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from snapcore.pipeline import _fastpath as fp
from snapcore.randomness._sources import decode_draw
from snapcore.testing.sources import FixedBytes

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


ENGINES = ["numpy", *(["numba"] if fp.numba_available() else [])]


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
    batch = fp.decode_draw_batch(FixedBytes(data), n, p, engine=engine)
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
    again = fp.DrawBatch.from_draws(want, p)
    assert again.precision == p and len(again) == n
    for name in ("sign", "e", "mhi", "mlo"):
        a, b = getattr(again, name), getattr(batch, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert [again.draw(i) for i in range(n)] == want


def test_bit_length_u63_is_int_bit_length():
    words = np.array(WORDS, dtype=np.uint64)
    got = fp._bit_length_u63(words)
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
    batch = fp.decode_draw_batch(src, n, p, engine=engine)
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
    batch = fp.decode_draw_batch(src, 0, 118, engine=engine)
    assert len(batch) == 0 and batch.precision == 118
    for name, dtype in (("sign", np.float64), ("e", np.float64), ("mhi", np.uint64),
                        ("mlo", np.uint64)):  # fmt: skip
        arr = getattr(batch, name)
        assert arr.shape == (0,) and arr.dtype == dtype, name
