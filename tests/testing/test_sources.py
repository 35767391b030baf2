"""The shared test doubles of ``snapcore.testing.sources`` do what the tests rely on."""

from __future__ import annotations

import pytest

from snapcore import SeededSource, SnappingMechanism, SourceExhaustedError
from snapcore.randomness import ChaCha20Source, decode_draw, encode_draw
from snapcore.testing.sources import CountingSource, DrawTaken, FixedBytes, NoDraws, SeededUrandom

P = 118


def test_fixed_bytes_serves_its_stream_and_counts_what_was_read():
    draws = SeededSource(3).draws(3, P)
    data = b"".join(encode_draw(d, P) for d in draws)
    src = FixedBytes(data)
    assert src.draws(2, P) == draws[:2]
    assert src.position == len(data) - len(src.rest()) == 2 * len(encode_draw(draws[0], P))
    assert decode_draw(src.read, P) == draws[2]
    assert src.position == len(data) and src.rest() == b""
    with pytest.raises(SourceExhaustedError, match="0 bytes left, 1 were asked for"):
        src.read(1)


def test_fixed_bytes_load_starts_a_new_stream():
    draws = SeededSource(4).draws(2, P)
    src = FixedBytes(encode_draw(draws[0], P))
    m = SnappingMechanism(epsilon=1, clamp_bound=8.0, source=src, timing="off")
    first = m.release(1.0)
    src.load(encode_draw(draws[1], P))
    assert src.position == 0
    m.release(1.0)
    assert src.rest() == b""
    src.load(encode_draw(draws[0], P))
    assert m.release(1.0) == first  # the same bytes, the same output


def test_counting_source_counts_every_draw_and_draws_the_seeded_stream():
    src = CountingSource(7)
    got = [src.draw(P), *src.draws(4, P), src.draw_raw(P)]
    assert src.drawn == 6
    want = SeededSource(7).draws(6, P)
    assert got[:5] == want[:5]
    assert got[5] == (want[5].sign, want[5].mantissa, want[5].exponent)


def test_no_draws_fails_the_test_that_draws():
    m = SnappingMechanism(epsilon=1, clamp_bound=8.0, source=NoDraws())
    assert m.transform(1.0, 0.5, 1) == SnappingMechanism(epsilon=1, clamp_bound=8.0).transform(
        1.0, 0.5, 1
    )
    with pytest.raises(DrawTaken, match="a draw was taken"):
        m.release(1.0)
    assert issubclass(DrawTaken, AssertionError)


def test_seeded_urandom_gives_known_chacha20_keys():
    fake = SeededUrandom(5)
    pytest.importorskip("cryptography")
    ChaCha20Source(reader=fake)
    ChaCha20Source(reader=fake)
    keys = fake.keys()
    assert [(len(k), len(n)) for k, n in keys] == [(32, 12), (32, 12)]
    again = SeededUrandom(5)
    assert [again(32), again(12)] == list(keys[0])
    fake(3)
    with pytest.raises(AssertionError, match="not"):
        fake.keys()
