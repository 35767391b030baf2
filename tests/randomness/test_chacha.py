"""The ChaCha20 source's stream, byte for byte, against a plain-Python RFC 8439 reference.

The source's key and nonce come from ``os.urandom``, which the tests replace with a
seeded stand-in while the source keys itself, so every key is known; the expected
stream is then computed by ``tests/helpers/chacha_ref.py`` (independent of the
``cryptography`` package the source uses), itself pinned by the RFC's test vector.
Mixed ``read``/``readinto`` schedules are checked from the very first byte of a fresh
source, and the re-key limit is checked exactly: each key serves its first
``REKEY_BYTES`` keystream bytes, no more and no fewer, when the reads divide the limit.
Two checks run at the source's own block size: reads in place and buffered reads of
up to 100,000 bytes against one piece of the keystream, and re-keying within a limit
of 64 KiB.
"""

from __future__ import annotations

import io
import itertools
import os
import random
import sys
import threading

import numpy as np
import pytest
from chacha_ref import block, keystream
from hypothesis import given, settings, strategies as st

pytest.importorskip("cryptography")

from snapcore.errors import BackendUnavailableError
from snapcore.randomness import _chacha
from snapcore.randomness._chacha import ChaCha20Source
from snapcore.testing.sources import SeededUrandom

LIMIT = 1024  # re-key limit in these tests
BLOCK = 256  # refill block in these tests


def test_reference_is_rfc_8439():
    """RFC 8439 section 2.3.2's block and section 2.4.2's first keystream bytes."""
    key = bytes(range(32))
    want = (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    )
    assert block(key, 1, bytes.fromhex("000000090000004a00000000")).hex() == want
    nonce = bytes.fromhex("000000000000004a00000000")
    assert keystream(key, nonce, 16, counter=1).hex() == "224f51f3401bd9e12fde276fb8631ded"


def fresh_source(mp: pytest.MonkeyPatch, seed: int) -> tuple[ChaCha20Source, SeededUrandom]:
    mp.setattr("snapcore.randomness._chacha.REKEY_BYTES", LIMIT)
    mp.setattr("snapcore.randomness._chacha._BLOCK", BLOCK)
    fake = SeededUrandom(seed)
    mp.setattr(os, "urandom", fake)
    return ChaCha20Source(), fake


def take(src: ChaCha20Source, how: str, n: int) -> bytes:
    if how == "read":
        return src.read(n)
    buf = np.full(n, 0xA5, np.uint8)
    src.readinto(buf)
    return buf.tobytes()


@pytest.mark.parametrize("how", ["read", "readinto", "mixed"])
@pytest.mark.parametrize("size", [1, 64, BLOCK, LIMIT])
def test_each_key_serves_exactly_the_rekey_limit(how, size):
    """Reads whose size divides the limit: the served stream is the first ``LIMIT``
    keystream bytes of key 1, then of key 2, ..., each from its start."""
    total = 5 * LIMIT
    with pytest.MonkeyPatch.context() as mp:
        src, fake = fresh_source(mp, 1000 + size)
        parts = []
        for i in range(total // size):
            kind = how if how != "mixed" else ("read", "readinto")[i % 2]
            parts.append(take(src, kind, size))
        served = b"".join(parts)
        keys = fake.keys()
    want = b"".join(keystream(k, n, LIMIT) for k, n in keys[:5])
    assert served == want
    assert len(keys) in (5, 6)  # the next key may already be drawn, never used


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    ops=st.lists(
        st.tuples(st.sampled_from(["read", "readinto"]), st.integers(0, 3 * BLOCK)),
        min_size=1,
        max_size=15,
    ),
)
def test_mixed_reads_serve_each_keystream_from_its_first_byte(seed, ops):
    """Any schedule of ``read``/``readinto`` from a fresh source: the served bytes are
    key 1's keystream from its first byte, then key 2's from its first byte, ..., each
    key used for at most ``LIMIT`` bytes; nothing repeated or skipped within a key."""
    with pytest.MonkeyPatch.context() as mp:
        src, fake = fresh_source(mp, seed)
        served = b"".join(take(src, how, n) for how, n in ops)
        keys = fake.keys()
    rest = served
    for i, (key, nonce) in enumerate(keys):
        ks = keystream(key, nonce, LIMIT)
        if i == len(keys) - 1:
            assert rest == ks[: len(rest)]
            return
        nxt = keystream(*keys[i + 1], 16)
        seams = [
            j
            for j in range(0, min(len(rest), LIMIT) + 1)
            if rest[:j] == ks[:j] and rest[j : j + 16] == nxt[: len(rest[j : j + 16])]
        ]
        assert seams, f"key {i}: the served bytes are not its keystream up to key {i + 1}'s"
        rest = rest[seams[-1] :]


def test_missing_cryptography_is_a_clear_error(monkeypatch):
    """Without ``cryptography``: a BackendUnavailableError naming the package and the
    command that installs it."""
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers", None)
    with pytest.raises(BackendUnavailableError) as info:
        ChaCha20Source()
    assert str(info.value) == (
        "source 'chacha20' needs the 'cryptography' package; install it with: "
        "pip install cryptography"
    )


@settings(max_examples=30, deadline=None)
@given(a=st.integers(1, BLOCK - 1), b=st.integers(1, LIMIT - BLOCK - 1), how=st.booleans())
def test_a_key_serves_the_whole_limit_across_buffered_and_in_place_reads(a, b, how):
    """``read(a)`` fills one block; ``readinto`` then takes the ``BLOCK − a`` buffered
    bytes and ``b`` more in place; the last request takes the rest of the limit.  The
    key has then produced exactly ``LIMIT`` bytes, all served (a last ``read`` shorter
    than a block would fetch a whole block, so it is a ``readinto`` then): one key
    serves them, and the next byte is the first of key 2's keystream."""
    rest = LIMIT - BLOCK - b
    with pytest.MonkeyPatch.context() as mp:
        src, fake = fresh_source(mp, a * LIMIT + b)
        served = take(src, "read", a)
        served += take(src, "readinto", BLOCK - a + b)
        last = "read" if how and rest >= BLOCK else "readinto"
        served += take(src, last, rest) if rest else b""
        assert len(fake.given) == 2, "re-keyed before the key produced LIMIT bytes"
        served += take(src, "readinto", 1)
        keys = fake.keys()
    assert len(keys) == 2
    assert served == keystream(*keys[0], LIMIT) + keystream(*keys[1], 1)


@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, LIMIT - BLOCK - 1), a=st.integers(1, BLOCK - 1))
def test_a_read_that_empties_the_buffer_fetches_nothing(c, a):
    """``readinto(c)`` in place, ``read(a)`` fills one block, ``read(BLOCK − a)`` takes
    exactly the rest of it, ``readinto`` the rest of the limit in place: the key has
    produced exactly ``LIMIT`` bytes, all served, so one key serves them (a read that
    ends the buffer exactly must not fetch the next block early)."""
    with pytest.MonkeyPatch.context() as mp:
        src, fake = fresh_source(mp, c * LIMIT + a)
        served = take(src, "readinto", c)
        served += take(src, "read", a) + take(src, "read", BLOCK - a)
        served += take(src, "readinto", LIMIT - c - BLOCK)
        served += take(src, "read", 1)
        keys = fake.keys()
    assert len(keys) == 2
    assert served == keystream(*keys[0], LIMIT) + keystream(*keys[1], 1)


# -- at the source's own block size ------------------------------------------------


def _keyed(key: bytes, nonce: bytes) -> ChaCha20Source:
    """A source keyed with ``key`` and the 96-bit ``nonce`` (block counter from 0)."""
    return ChaCha20Source(reader=io.BytesIO(key + nonce).read)


def _keystream(key: bytes, nonce: bytes, n: int) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    cipher = Cipher(algorithms.ChaCha20(key, bytes(4) + nonce), mode=None)
    return cipher.encryptor().update(bytes(n))


def test_chacha20_readinto_is_read():
    """In-place reads give the stream's bytes in order, mixed with buffered reads;
    the stream is RFC 8439's ChaCha20 (the reference is cryptography's keystream
    read in one piece, checked against the RFC's own vector)."""
    key = bytes(range(32))
    nonce = bytes.fromhex("000000000000004a00000000")
    ref = _keystream(key, nonce, 300_000)
    assert ref[64:80].hex() == "224f51f3401bd9e12fde276fb8631ded"  # RFC 8439 §2.4.2, block 1
    src = _keyed(key, nonce)
    got = bytearray()
    for n in (3, 70_000, 5, 1, 100_000, 64, 129_927):
        if n % 2:
            got += src.read(n)
        else:
            buf = np.empty(n, np.uint8)
            src.readinto(buf)
            got += buf.tobytes()
    assert bytes(got) == ref


def test_chacha20_rekeys_after_the_limit(monkeypatch):
    monkeypatch.setattr("snapcore.randomness._chacha.REKEY_BYTES", 1 << 16)
    src = ChaCha20Source()
    seen = {id(src._enc)}
    encs = [src._enc]  # keep them alive so ids stay distinct
    for _ in range(10):
        src.read(40_000)
        encs.append(src._enc)
        seen.add(id(src._enc))
        assert src._produced <= 1 << 16
    assert len(seen) >= 5


# -- reserve: parts of the stream produced later, from any thread -------------------


def _fill_in_pieces(fill, n: int, rng: random.Random) -> bytes:
    """The ``n`` reserved bytes, filled in up to four pieces in a random order."""
    cuts = sorted(rng.randrange(0, n + 1) for _ in range(3))
    pieces = list(zip([0, *cuts], [*cuts, n], strict=True))
    rng.shuffle(pieces)
    out = np.full(n, 0xA5, np.uint8)
    for lo, hi in pieces:
        fill(lo, out[lo:hi])
    return out.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    ops=st.lists(
        st.tuples(st.sampled_from(["read", "readinto", "reserve"]), st.integers(0, 3 * BLOCK)),
        min_size=1,
        max_size=12,
    ),
)
def test_reserve_gives_the_bytes_readinto_would(seed, ops):
    """Any schedule of ``read``/``readinto``/``reserve`` from a fresh source, with a
    re-key limit of 1 KiB: each reservation, filled in pieces in any order, gives
    what ``readinto`` of its size gives at that point of the same schedule, and the
    keys are drawn at the same requests (the schedules above pin the keystreams to
    the plain-Python RFC 8439 reference)."""
    rng = random.Random(seed)
    served = {}
    keys = {}
    for mode in ("reserve", "readinto"):
        with pytest.MonkeyPatch.context() as mp:
            src, fake = fresh_source(mp, seed)
            parts = []
            for how, n in ops:
                if how != "reserve":
                    parts.append(take(src, how, n))
                elif mode == "reserve":
                    parts.append(_fill_in_pieces(src.reserve(n), n, rng))
                else:
                    parts.append(take(src, "readinto", n))
            parts.append(take(src, "read", 7))  # the stream continues after them
            served[mode] = b"".join(parts)
            keys[mode] = fake.keys()
    assert served["reserve"] == served["readinto"]
    assert keys["reserve"] == keys["readinto"]
    first = ops[0][1]  # the first request is served by key 1 from its first byte
    assert served["reserve"][:first] == keystream(*keys["reserve"][0], first)


@settings(max_examples=40, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    nonce=st.binary(min_size=12, max_size=12),
    skip=st.integers(0, 5000),
    n=st.integers(0, 700),
    offset=st.integers(0, 700),
)
def test_reserved_bytes_are_the_keystream_at_their_block_counter(key, nonce, skip, n, offset):
    """Random keys and nonces, a reservation starting at any stream byte (after
    ``skip`` bytes read): ``fill(offset, ·)`` gives keystream bytes ``skip + offset``
    on, from RFC 8439 blocks numbered from ``(skip + offset) // 64`` (the plain-Python
    reference, which is pinned by the RFC's vectors), whatever the alignment."""
    offset = min(offset, n)
    src = ChaCha20Source(reader=io.BytesIO(key + nonce).read)
    src.read(skip)
    fill = src.reserve(n)
    got = np.empty(n - offset, np.uint8)
    fill(offset, got)
    start = skip + offset
    ref = keystream(key, nonce, start % 64 + n - offset, counter=start // 64)
    assert got.tobytes() == ref[start % 64 :]
    after = keystream(key, nonce, 64 + 16, counter=(skip + n) // 64)
    assert src.read(16) == after[(skip + n) % 64 :][:16]  # the stream resumes after them


def test_reserve_is_rfc_8439_across_counters_and_refuses_other_offsets():
    """RFC 8439 section 2.4.2's key and nonce: the reserved keystream from block 1
    starts with the RFC's bytes; a fill outside the reservation is refused."""
    key = bytes(range(32))
    nonce = bytes.fromhex("000000000000004a00000000")
    src = _keyed(key, nonce)
    src.readinto(np.empty(64, np.uint8))
    fill = src.reserve(100)
    got = np.empty(16, np.uint8)
    fill(0, got)
    assert got.tobytes().hex() == "224f51f3401bd9e12fde276fb8631ded"
    with pytest.raises(ValueError, match="outside the 100 reserved"):
        fill(90, np.empty(11, np.uint8))
    with pytest.raises(ValueError, match="outside the 100 reserved"):
        fill(-1, np.empty(1, np.uint8))


def _count_encryptors(monkeypatch) -> list[int]:
    """The stream positions of the encryptors ChaCha20 sources start from now on."""
    made: list[int] = []
    real = ChaCha20Source._encryptor_at

    def counted(self, key, nonce, position):
        made.append(position)
        return real(self, key, nonce, position)

    monkeypatch.setattr(ChaCha20Source, "_encryptor_at", counted)
    return made


def test_a_fill_starts_one_encryptor_and_writes_in_bounded_slices(monkeypatch):
    """Two threads fill their halves of a reservation longer than several slices, one
    call each, and then refill a piece: the bytes are the keystream read in one piece,
    each call starts exactly one encryptor (at its own position), and the cipher's
    input of zeros never grows past one slice."""
    key = bytes(range(2, 34))
    nonce = bytes(range(3, 15))
    n = 5 * _chacha._SLICE + 13
    ref = _keystream(key, nonce, n + 128)
    src = _keyed(key, nonce)
    src.readinto(np.empty(29, np.uint8))  # unbuffered: every reserved byte is made
    made = _count_encryptors(monkeypatch)
    fill = src.reserve(n)
    out = np.zeros(n, np.uint8)
    half = n // 2
    threads = [
        threading.Thread(target=fill, args=(lo, out[lo:hi])) for lo, hi in ((0, half), (half, n))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    piece = slice(half - 1000, half + 7000)
    out[piece] = 0
    fill(piece.start, out[piece])
    assert out.tobytes() == ref[29 : 29 + n]
    assert sorted(made) == [29, 29 + piece.start, 29 + half]
    assert len(src._zeros) <= _chacha._SLICE
    assert src.read(40) == ref[29 + n : 69 + n]  # the source's own encryptor resumes


def test_fills_from_many_threads_at_once():
    """Eight threads fill parts of one 4 MB reservation at once (``cryptography``
    releases the GIL): the result is the keystream read in one piece."""
    key = bytes(range(1, 33))
    nonce = bytes(range(12))
    n = 4 << 20
    ref = _keystream(key, nonce, n + 64)
    src = _keyed(key, nonce)
    src.read(13)  # a reservation that starts inside a block and inside the buffer
    fill = src.reserve(n)
    out = np.zeros(n, np.uint8)
    bounds = [n * i // 8 + (i * 7 if 0 < i < 8 else 0) for i in range(9)]
    threads = [
        threading.Thread(target=fill, args=(lo, out[lo:hi]))
        for lo, hi in itertools.pairwise(bounds)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out.tobytes() == ref[13 : 13 + n]
