"""Test doubles for the randomness layer: a byte stream given in full, a counting
source, a source that must not be drawn from, and a seeded stand-in for
``os.urandom``.  None is random in the cryptographic sense; none is for releases."""

from __future__ import annotations

import random

from snapcore.errors import SourceExhaustedError
from snapcore.randomness._draw import Draw
from snapcore.randomness._sources import ByteSource, RandomSource, SeededSource

__all__ = ["CountingSource", "DrawTaken", "FixedBytes", "NoDraws", "SeededUrandom"]


class FixedBytes(ByteSource):
    """The bytes ``data``, in order, decoded per ``snapcore-draw-v1`` like any byte
    source: crafted draws (ties, continuation words, chosen exponents) for checking a
    backend or an engine against the exact pipeline.

    Parameters
    ----------
    data : bytes
        The whole stream.  A read past its end raises :class:`~snapcore.SourceExhaustedError`
        (a test that reads more bytes than its draws' fails).
    """

    name = "fixed-bytes"

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data = bytes(data)
        self._pos = 0

    def read(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._data):
            raise SourceExhaustedError(
                f"source 'fixed-bytes' has {len(self._data) - self._pos} bytes left, "
                f"{n} were asked for"
            )
        out = self._data[self._pos : end]
        self._pos = end
        return out

    @property
    def position(self) -> int:
        """How many bytes have been read."""
        return self._pos

    def rest(self) -> bytes:
        """The bytes not read yet."""
        return self._data[self._pos :]

    def load(self, data: bytes) -> None:
        """Serve ``data`` from its start, dropping what was not read: one source (and
        the mechanism holding it) reused for many streams."""
        self._data = bytes(data)
        self._pos = 0


class CountingSource(RandomSource):
    """The draws of :class:`~snapcore.randomness.SeededSource` ``(seed)``, counted.

    Only :meth:`draw` is implemented, so every draw, single or in a batch, passes
    through it: :attr:`drawn` is the number of draws taken.

    Parameters
    ----------
    seed : int
        Seed of the underlying source.
    """

    name = "counting"

    def __init__(self, seed: int = 0) -> None:
        self._inner = SeededSource(seed)
        #: Draws taken so far.
        self.drawn = 0

    def draw(self, precision: int) -> Draw:
        self.drawn += 1
        return self._inner.draw(precision)


class DrawTaken(AssertionError):
    """Raised by :class:`NoDraws` when something draws from it."""


class NoDraws(RandomSource):
    """A source for code that must not draw: every draw raises :class:`DrawTaken`
    (checks that bad input is refused before any noise)."""

    name = "no-draws"

    def draw(self, precision: int) -> Draw:
        raise DrawTaken(f"a draw was taken (precision {precision})")


class SeededUrandom:
    """A seeded stand-in for :func:`os.urandom` that keeps every byte string it
    returns, so that a :class:`~snapcore.randomness.ChaCha20Source` keyed from it
    (``ChaCha20Source(reader=SeededUrandom(seed))``) has known keys.

    Parameters
    ----------
    seed : int
        Seed of the bytes returned.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        #: Every byte string returned, in order.
        self.given: list[bytes] = []

    def __call__(self, n: int) -> bytes:
        out = self._rng.randbytes(n)
        self.given.append(out)
        return out

    def keys(self) -> list[tuple[bytes, bytes]]:
        """The ``(32-byte key, 12-byte nonce)`` of each ChaCha20 keying, in order.

        Raises
        ------
        AssertionError
            If the byte strings given are not such pairs.
        """
        sizes = [len(b) for b in self.given]
        assert sizes == [32, 12] * (len(sizes) // 2), f"not (key, nonce) pairs: {sizes}"
        return [(self.given[i], self.given[i + 1]) for i in range(0, len(self.given), 2)]
