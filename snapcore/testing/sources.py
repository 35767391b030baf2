"""A byte source that serves a given stream, for crafting draws in tests."""

from __future__ import annotations

from snapcore.errors import SourceExhaustedError
from snapcore.randomness._sources import ByteSource

__all__ = ["FixedBytes"]


class FixedBytes(ByteSource):
    """The bytes ``data``, in order, decoded per ``snapcore-draw-v1`` like any byte
    source: crafted draws (ties, continuation words, chosen exponents) for checking a
    backend or an engine against the exact pipeline.  Not random; never cryptographic.

    Parameters
    ----------
    data : bytes
        The whole stream.  A read past its end raises :class:`SourceExhaustedError`
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

    def rest(self) -> bytes:
        """The bytes not read yet."""
        return self._data[self._pos :]
