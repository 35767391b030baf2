"""A fast cryptographic randomness source: ChaCha20 keyed from the OS CSPRNG.

:class:`ChaCha20Source` (registered as ``"chacha20"``; the default source) produces
the keystream of ChaCha20 (RFC 8439, through the ``cryptography`` package, i.e.
OpenSSL) under a 256-bit key and a 96-bit nonce drawn from ``os.urandom``.  It
re-keys from the OS after every ``REKEY_BYTES`` bytes and in a forked child
(``os.register_at_fork``: the child also gets a fresh lock, so a fork taken while
another thread was drawing cannot deadlock it).  It is several times faster than
reading ``os.urandom`` and writes in place into the fast path's buffers.  Why it is
as safe as ``os.urandom`` is argued in ``docs/sources.md``.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from snapcore.errors import BackendUnavailableError
from snapcore.randomness._sources import ByteSource

__all__ = ["REKEY_BYTES", "ChaCha20Source"]

#: Bytes of keystream produced under one key before a fresh key is drawn from the OS.
REKEY_BYTES = 1 << 30
_BLOCK = 1 << 16
#: Keystream written into a caller's buffer at a time: the cipher's input of zeros is
#: this long at most, however long the buffer (a release's memory does not grow with
#: its reservation; 64 KiB cost 0.5 % of a release of 10^6 values against 256 KiB,
#: and 0.05 bytes per value less at 10^7).
_SLICE = 1 << 16


class ChaCha20Source(ByteSource):
    """ChaCha20 keystream, keyed from ``os.urandom``; cryptographic and fork-safe.

    Parameters
    ----------
    reader : callable, optional
        Where the key (32 bytes) and the nonce (12 bytes) of each key period are read:
        at the start, after a fork and every ``REKEY_BYTES`` bytes.  ``os.urandom``
        (looked up at each key period) by default; another reader is for tests with a
        known keystream.

    Raises
    ------
    BackendUnavailableError
        If the ``cryptography`` package is not installed.
    """

    name = "chacha20"
    cryptographic = True
    _instances: ClassVar[weakref.WeakSet[ChaCha20Source]] = weakref.WeakSet()

    def __init__(self, reader: Callable[[int], bytes] | None = None) -> None:
        super().__init__()
        self._reader = reader
        try:
            from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
        except ImportError:
            raise BackendUnavailableError(
                "source 'chacha20' needs the 'cryptography' package; install it with: "
                "pip install cryptography"
            ) from None
        self._Cipher = Cipher
        self._algorithms = algorithms
        self._zeros = bytes(_BLOCK)
        self._rekey()
        ChaCha20Source._instances.add(self)

    def _rekey(self) -> None:
        # cryptography's 16-byte nonce is RFC 8439's 32-bit block counter (little
        # endian) and 96-bit nonce.  The counter starts at 0, so the 2**24 blocks
        # produced under one key never wrap it; the key alone makes the stream fresh.
        read = self._reader or os.urandom
        key, nonce = read(32), bytes(4) + read(12)
        self._key, self._nonce = key, nonce[4:]
        self._enc: Any = self._Cipher(self._algorithms.ChaCha20(key, nonce), mode=None).encryptor()
        self._produced = 0
        self._pid = os.getpid()
        self._buf = b""
        self._pos = 0

    def _after_fork(self) -> None:
        # In the child: the parent's lock may be held by a thread that no longer
        # exists here, and the key and buffer are the parent's.
        self._lock = threading.Lock()
        self._rekey()

    def _check(self, n: int) -> None:
        if os.getpid() != self._pid or self._produced + n > REKEY_BYTES:
            self._rekey()
        self._produced += n

    def _zeros_for(self, n: int) -> memoryview:
        # The cipher's input: zeros, grown to the longest request (untouched, backed by
        # the zero page); threads filling a reservation share it read-only.
        zeros = self._zeros
        if n > len(zeros):
            zeros = self._zeros = bytes(n)
        return memoryview(zeros)[:n]

    def _write(self, enc: Any, out: memoryview) -> None:
        """``enc``'s next ``len(out)`` keystream bytes into ``out``, :data:`_SLICE`
        bytes at a time."""
        zeros = self._zeros_for(min(len(out), _SLICE))
        for a in range(0, len(out), _SLICE):
            piece = out[a : a + _SLICE]
            enc.update_into(zeros[: len(piece)], piece)

    def _current(self, n: int) -> Any:
        """The source's encryptor, positioned at the ``n`` bytes just accounted for by
        :meth:`_check` (made there after a :meth:`reserve`, which skips bytes)."""
        if self._enc is None:
            self._enc = self._encryptor_at(self._key, self._nonce, self._produced - n)
        return self._enc

    def _stream(self, n: int) -> bytes:
        self._check(n)
        return bytes(self._current(n).update(self._zeros_for(n)))

    def read(self, n: int) -> bytes:
        if os.getpid() != self._pid:
            self._rekey()
        end = self._pos + n
        if end <= len(self._buf):
            out = self._buf[self._pos : end]
            self._pos = end
            return out
        rest = self._buf[self._pos :]
        need = n - len(rest)
        if need >= _BLOCK:
            self._buf, self._pos = b"", 0
            return rest + self._stream(need)
        self._buf = rest + self._stream(_BLOCK)
        self._pos = n
        return self._buf[:n]

    def readinto(self, buffer: Any) -> None:
        """Write the next ``len(buffer)`` stream bytes into ``buffer`` in place."""
        if os.getpid() != self._pid:
            self._rekey()
        mv = memoryview(buffer).cast("B")
        n = len(mv)
        k = min(n, len(self._buf) - self._pos)
        if k:
            mv[:k] = self._buf[self._pos : self._pos + k]
            self._pos += k
        if k < n:
            self._check(n - k)
            self._write(self._current(n - k), mv[k:])

    def _encryptor_at(self, key: bytes, nonce: bytes, position: int) -> Any:
        """An encryptor whose keystream starts at byte ``position`` of the key's stream:
        RFC 8439's block counter ``position // 64`` (the 16-byte nonce of
        ``cryptography``: the counter in 4 little-endian bytes, then the 96-bit nonce),
        with the block's first ``position % 64`` bytes skipped."""
        counter = (position >> 6).to_bytes(4, "little")
        enc = self._Cipher(self._algorithms.ChaCha20(key, counter + nonce), mode=None).encryptor()
        if position & 63:
            enc.update(bytes(position & 63))
        return enc

    def reserve(self, n: int) -> Callable[[int, Any], None]:
        """Take the next ``n`` stream bytes; ``fill(offset, buffer)`` produces any part
        of them, from any thread (:meth:`ByteSource.reserve
        <snapcore.ByteSource.reserve>`).

        The bytes are those :meth:`readinto` of an ``n``-byte buffer would give: the
        buffered bytes first, then keystream, re-keyed first when the key's
        ``REKEY_BYTES`` would be exceeded.  Each ``fill`` starts one encryptor at
        the block counter of its offset (ChaCha20 is a counter mode), so a thread
        fills its whole part in one call; ``cryptography`` releases the GIL while it
        produces the keystream, so threads produce their parts in parallel.
        """
        if os.getpid() != self._pid:
            self._rekey()
        k = min(n, len(self._buf) - self._pos)
        head = self._buf[self._pos : self._pos + k]
        self._pos += k
        rest = n - k
        start = 0
        if rest:
            self._check(rest)  # may re-key
            start = self._produced - rest
            # The source's own encryptor continues after the reserved bytes: made
            # when the source is next read (:meth:`_current`).
            self._enc = None
        key, nonce = self._key, self._nonce

        def fill(offset: int, buffer: Any) -> None:
            mv = memoryview(buffer).cast("B")
            size = len(mv)
            if offset < 0 or offset + size > n:
                raise ValueError(f"bytes {offset}..{offset + size} are outside the {n} reserved")
            h = min(max(k - offset, 0), size)
            if h:
                mv[:h] = head[offset : offset + h]
            if h < size:
                self._write(self._encryptor_at(key, nonce, start + offset + h - k), mv[h:])

        return fill


def _after_fork_in_child() -> None:
    for src in list(ChaCha20Source._instances):
        src._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
