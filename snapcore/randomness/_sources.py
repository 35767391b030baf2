"""Randomness sources: the contract (:class:`RandomSource`, and :class:`ByteSource` for
sources defined by a byte stream) and the built-in sources (:class:`SystemSource`,
:class:`SeededSource`, :class:`ReplaySource`).

A source gives draws ``(S, U*)`` (:class:`~snapcore.Draw`); a byte
source's stream is decoded per the format ``snapcore-draw-v1`` of
:mod:`snapcore.randomness._draw`.
"""

from __future__ import annotations

import abc
import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, ClassVar

from snapcore.errors import ParameterError, SourceExhaustedError
from snapcore.randomness._draw import Draw, decode_draw_raw, draw_from_u

__all__ = [
    "ByteSource",
    "RandomSource",
    "ReplaySource",
    "SeededSource",
    "SystemSource",
    "require_draws",
]


class RandomSource(abc.ABC):
    """A source of draws ``(S, U*)`` at a requested precision."""

    #: Registered name of the source kind.
    name: ClassVar[str]
    #: Whether releases made with it are suitable for publication.
    cryptographic: ClassVar[bool] = False

    @abc.abstractmethod
    def draw(self, precision: int) -> Draw:
        """One draw at ``precision`` bits."""

    def draws(self, count: int, precision: int) -> list[Draw]:
        """``count`` independent draws, in stream order."""
        return [self.draw(precision) for _ in range(count)]

    def draw_raw(self, precision: int) -> tuple[int, int, int]:
        """One draw as a plain ``(sign, mantissa, exponent)`` tuple (the hot path)."""
        d = self.draw(precision)
        return (d.sign, d.mantissa, d.exponent)

    def can_draw(self, count: int, precision: int) -> bool:
        """Whether the next ``count`` draws at ``precision`` can be supplied.

        A vector release asks this before drawing anything, so that it draws all its
        noise or none.  The default, True, is right for unbounded streams; a source
        that can run out (a replay, a finite pool) must override it.
        """
        return True

    def draws_raw(self, count: int, precision: int) -> list[tuple[int, int, int]]:
        """``count`` draws as ``(sign, mantissa, exponent)`` tuples, in stream order.

        Optional capability: the default is built from :meth:`draws`; a source may
        override it to skip building :class:`Draw` objects.  Contract: the same draws,
        in the same order, as :meth:`draws` would give.
        """
        return [(d.sign, d.mantissa, d.exponent) for d in self.draws(count, precision)]

    def exclusive(self) -> contextlib.AbstractContextManager[Any]:
        """A context in which no other thread draws from this source.

        Bulk readers (the vectorised fast path) hold it while they read a batch, so
        that the batch's draws are contiguous in the stream, exactly as
        :meth:`draws` would return them.  The base class has no shared state to
        guard and returns a null context; :class:`ByteSource` returns its lock.
        """
        return contextlib.nullcontext()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def require_draws(source: RandomSource, count: int, precision: int) -> None:
    """Raise, before anything is drawn, unless ``source`` can supply ``count`` draws.

    The one check behind "a release draws all its noise or none" (vectors, arrays and
    grouped releases alike).

    Raises
    ------
    SourceExhaustedError
        If ``source.can_draw(count, precision)`` is false; nothing is drawn.
    """
    if not source.can_draw(count, precision):
        left = getattr(source, "remaining", None)
        have = "" if left is None else f" ({left} draws left)"
        raise SourceExhaustedError(
            f"the source cannot supply {count} draws{have}; nothing was drawn (a release "
            "draws all its noise or none)"
        )


class ByteSource(RandomSource):
    """A source defined by a byte stream, decoded per ``snapcore-draw-v1``.

    Subclasses implement :meth:`read`.  Decoding holds a lock, so one source may be
    shared by several threads; each draw's bytes are contiguous in the stream.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @abc.abstractmethod
    def read(self, n: int) -> bytes:
        """The next ``n`` bytes of the stream."""

    def readinto(self, buffer: Any) -> None:
        """Fill a writable buffer (``bytearray``, ``memoryview``, uint8 array) with
        the next ``len(buffer)`` bytes of the stream, exactly as :meth:`read` would
        return them.  Sources that can write in place (ChaCha20) override it to save
        a copy; callers hold :meth:`exclusive`."""
        mv = memoryview(buffer).cast("B")
        mv[:] = self.read(len(mv))

    def exclusive(self) -> contextlib.AbstractContextManager[Any]:
        """The lock that serialises this source's draws (see
        :meth:`RandomSource.exclusive`)."""
        return self._lock

    def reserve(self, n: int) -> Callable[[int, Any], None] | None:
        """Optional capability: take the next ``n`` stream bytes now, produce them later.

        A source whose stream can be produced from any position (a counter-mode
        keystream) returns ``fill(offset, buffer)``, which writes bytes ``offset`` to
        ``offset + len(buffer)`` of the ``n`` taken into ``buffer`` (a writable uint8
        buffer).  ``fill`` may be called from any thread, in any order and more than
        once.  Contract: the stream advances by ``n`` bytes at once, and the ``n``
        bytes ``fill`` gives are those :meth:`readinto` of an ``n``-byte buffer would
        give in its place, so the threads of the fast path (docs/fastpath.md) each
        produce their own part of the stream.  Callers hold :meth:`exclusive`.
        The default declines (returns None, taking nothing); the caller then reads.
        """
        return None

    def draw(self, precision: int) -> Draw:
        with self._lock:
            return Draw(*decode_draw_raw(self.read, precision))

    def draws(self, count: int, precision: int) -> list[Draw]:
        with self._lock:
            return [Draw(*decode_draw_raw(self.read, precision)) for _ in range(count)]

    def draw_raw(self, precision: int) -> tuple[int, int, int]:
        with self._lock:
            return decode_draw_raw(self.read, precision)

    def draws_raw(self, count: int, precision: int) -> list[tuple[int, int, int]]:
        """``count`` draws as ``(sign, mantissa, exponent)`` tuples, in stream order."""
        read = self.read
        with self._lock:
            return [decode_draw_raw(read, precision) for _ in range(count)]


class SystemSource(ByteSource):
    """The operating system's CSPRNG (``os.urandom``); the default.

    Bytes are read in blocks and buffered in this process.  Every read compares the
    process id with the one the buffer was filled in and drops the buffer when they
    differ, so parent and child never share noise after any ``fork()``, including one
    made by a C extension that bypasses CPython's ``os.register_at_fork`` hooks (those
    hooks also give the child a fresh lock).

    Parameters
    ----------
    reader : callable, optional
        ``reader(n)`` returns ``n`` fresh bytes from the operating system; the default,
        and the only choice for releases, is ``os.urandom``.  Tests pass a reader that
        records or chooses the bytes, to check at the value level that every byte the
        OS returns is decoded once and in order.
    """

    name = "system"
    cryptographic = True
    _BLOCK = 4096
    _instances: ClassVar[weakref.WeakSet[SystemSource]] = weakref.WeakSet()

    def __init__(self, reader: Callable[[int], bytes] = os.urandom) -> None:
        super().__init__()
        self._reader = reader
        self._buf = b""
        self._pos = 0
        self._pid = os.getpid()
        SystemSource._instances.add(self)

    def _after_fork(self) -> None:
        """In a forked child: a new lock (another thread may have held the old one at
        fork time) and no bytes the parent may also have used."""
        self._lock = threading.Lock()
        self._drop_buffer()

    def _drop_buffer(self) -> None:
        self._buf, self._pos = b"", 0
        self._pid = os.getpid()

    def read(self, n: int) -> bytes:
        if os.getpid() != self._pid:  # forked, whatever the route: none of the parent's bytes
            self._drop_buffer()
        end = self._pos + n
        if end > len(self._buf):
            rest = self._buf[self._pos :]
            if n - len(rest) >= self._BLOCK:  # a large read: no copy through the buffer
                self._buf, self._pos = b"", 0
                return rest + self._reader(n - len(rest))
            self._buf = rest + self._reader(max(self._BLOCK, n - len(rest)))
            self._pos, end = 0, n
        out = self._buf[self._pos : end]
        self._pos = end
        return out


def _after_fork_in_child() -> None:
    for src in list(SystemSource._instances):
        src._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class SeededSource(ByteSource):
    """A deterministic stream from a seed, for reproducible tests and simulations.

    **Not for production releases**: anyone who knows its seed knows the noise.
    The stream is BLAKE2b in counter mode: block ``i`` (64 bytes) is
    ``blake2b(i.to_bytes(16, "big"), key=K)`` with the 64-byte key
    ``K = blake2b(b"snapcore-seeded-v1" + raw)``, where ``raw`` is ``b"i"`` followed
    by the int seed in big-endian bytes (as few as possible, at least one), or
    ``b"s"`` followed by the UTF-8 text, or ``b"b"`` followed by the bytes.  The
    blocks are concatenated and decoded per ``snapcore-draw-v1``.  It is stable
    across versions and platforms.

    Parameters
    ----------
    seed : int, bytes or str
        A non-negative int, or bytes, or text (UTF-8 encoded).
    """

    name = "seeded"

    def __init__(self, seed: int | bytes | str) -> None:
        super().__init__()
        if isinstance(seed, bool) or not isinstance(seed, int | bytes | str):
            raise ParameterError(f"seed must be a non-negative int, bytes or str, got {seed!r}")
        if isinstance(seed, int):
            if seed < 0:
                raise ParameterError(f"seed must be a non-negative int, bytes or str, got {seed}")
            raw = b"i" + seed.to_bytes((seed.bit_length() + 7) // 8 or 1, "big")
        elif isinstance(seed, str):
            raw = b"s" + seed.encode("utf-8")
        else:
            raw = b"b" + seed
        self.seed = seed
        import hashlib  # here: a process that never seeds does not load OpenSSL's bindings

        self._key = hashlib.blake2b(b"snapcore-seeded-v1" + raw, digest_size=64).digest()
        self._counter = 0
        self._buf = b""
        self._pos = 0

    def _blocks(self, count: int) -> list[bytes]:
        """Blocks ``counter, ..., counter + count − 1`` (copies of one keyed state: the
        same digests as keying each, in two thirds of the time)."""
        import hashlib

        keyed = hashlib.blake2b(key=self._key)
        out: list[bytes] = []
        append = out.append
        start = self._counter
        for i in range(start, start + count):
            h = keyed.copy()
            h.update(i.to_bytes(16, "big"))
            append(h.digest())
        self._counter = start + count
        return out

    def read(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buf):
            rest = self._buf[self._pos :]
            self._buf = b"".join([rest, *self._blocks(-(-(n - len(rest)) // 64))])
            self._pos, end = 0, n
        out = self._buf[self._pos : end]
        self._pos = end
        return out

    def __repr__(self) -> str:
        return f"<SeededSource seed={self.seed!r}>"


class ReplaySource(RandomSource):
    """Replays given draws, in order; for tests.

    Parameters
    ----------
    draws : iterable of (sign, u)
        ``sign`` is ±1 and ``u`` a Fraction or float that is a p-bit float in (0, 1)
        at the precision the draws are requested at (checked when drawn).
    """

    name = "replay"

    def __init__(self, draws: Iterable[tuple[int, Fraction | float]]) -> None:
        self._pending = list(draws)
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Draws not yet replayed."""
        return len(self._pending) - self._next

    def can_draw(self, count: int, precision: int) -> bool:
        """Whether ``count`` draws remain (:meth:`draws` also refuses invalid ones
        without consuming any)."""
        return self.remaining >= count

    def draw(self, precision: int) -> Draw:
        with self._lock:
            if self._next >= len(self._pending):
                raise SourceExhaustedError("replay source has no draws left")
            sign, u = self._pending[self._next]
            d = draw_from_u(u, sign, precision, name=f"draws[{self._next}].u")
            self._next += 1
            return d

    def draws(self, count: int, precision: int) -> list[Draw]:
        """The next ``count`` draws, all or nothing: an exhausted source or an invalid
        draw raises without consuming any."""
        with self._lock:
            if self.remaining < count:
                raise SourceExhaustedError(
                    f"replay source has {self.remaining} draws left, {count} requested"
                )
            start = self._next
            out = [
                draw_from_u(u, sign, precision, name=f"draws[{start + i}].u")
                for i, (sign, u) in enumerate(self._pending[start : start + count])
            ]
            self._next = start + count
            return out
