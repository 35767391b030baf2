"""ChaCha20 (RFC 8439, section 2.3-2.4) in plain Python: an independent reference of the
keystream, for tests only (slow: about 10^4 blocks a second)."""

from __future__ import annotations

import struct

_M32 = 0xFFFFFFFF
_CONSTANTS = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k"


def _rotl(x: int, n: int) -> int:
    return ((x << n) | (x >> (32 - n))) & _M32


def _quarter(s: list[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 7)


def block(key: bytes, counter: int, nonce: bytes) -> bytes:
    """The 64-byte block function of RFC 8439 section 2.3 (32-bit counter, 96-bit nonce)."""
    state = [*_CONSTANTS, *struct.unpack("<8L", key), counter & _M32]
    state += struct.unpack("<3L", nonce)
    s = list(state)
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12)
        _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14)
        _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15)
        _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13)
        _quarter(s, 3, 4, 9, 14)
    return struct.pack("<16L", *((x + y) & _M32 for x, y in zip(s, state, strict=True)))


def keystream(key: bytes, nonce: bytes, n: int, counter: int = 0) -> bytes:
    """The first ``n`` keystream bytes under ``key`` and the 96-bit ``nonce``, blocks
    numbered from ``counter``."""
    out = bytearray()
    while len(out) < n:
        out += block(key, counter, nonce)
        counter += 1
    return bytes(out[:n])
