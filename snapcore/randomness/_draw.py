"""The draw ``(S, U*)``, its byte format ``snapcore-draw-v1`` and both of its decoders.

A *draw* is a sign ``S`` in {-1, +1} and ``U*``, a p-bit float in (0, 1) drawn so
that each value has probability equal to its unit in the last place at p bits
(docs/semantics.md): a geometric exponent ``e >= 1`` and ``p - 1`` uniform mantissa bits,
``U* = (2**(p-1) + m) * 2**(-(p-1) - e)``.  Then ``P(U* <= u) = u + ulp_p(u)``.

Byte format ``snapcore-draw-v1`` (stable; changing it is a breaking change)
-----------------------------------------------------------------------------
Bytes are consumed in order from the source's stream; integers are big-endian.
For one draw at precision ``p``:

1. Read 8 bytes as an integer ``w``.  ``S = -1`` if bit 63 of ``w`` is set, else
   ``+1``.  The low 63 bits are the first fair bits of the geometric exponent,
   most significant first: ``e = 1 + (number of leading zero bits)``.
2. If those 63 bits are all zero (probability ``2**-63``), read further 8-byte words
   until one is non-zero; each all-zero word adds 64 to ``e``, and the first
   non-zero word ``v`` adds ``64 - v.bit_length()``.  Bits after the first one are
   discarded.
3. Read ``ceil((p - 1) / 8)`` bytes as an integer ``t``; the mantissa bits are its
   top ``p - 1`` bits: ``m = t >> (8 * ceil((p - 1) / 8) - (p - 1))``.

At ``p = 118`` a draw takes 23 bytes (in all but a ``2**-63`` fraction of draws).
The exponent is unbounded; the backends' exponent ranges (at least ``2**30``) are
wider than anything a real stream produces.

The decoders
------------
The scalar decoder (:func:`decode_draw`, :func:`decode_draw_raw` and the padded
release's :func:`decode_draw_raw_padded`) reads one draw from a ``read(n) -> bytes``
callable.  The batch decoder (:func:`decode_draw_batch`) reads ``count`` draws of a
byte stream at once into the arrays of a :class:`DrawBatch`: whole rows of
:func:`row_size` bytes, split into fields by :func:`row_fields` (the same source
runs on numpy arrays here and, compiled by numba, element by element in the fast
path's compiled loops), and the rare draw whose exponent continues past its first
word by the scalar decoder, reading exactly the bytes the scalar decoder would.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Protocol

import attrs
import numpy as np
import numpy.typing as npt

from snapcore.errors import ParameterError, show

__all__ = [
    "BATCH_MIN_PRECISION",
    "MIN_U_LOG2",
    "ROW_WORDS",
    "ByteStream",
    "Draw",
    "DrawBatch",
    "decode_draw",
    "decode_draw_batch",
    "decode_draw_raw",
    "decode_draw_raw_padded",
    "decode_rows",
    "draw_from_u",
    "encode_draw",
    "row_fields",
    "row_size",
]

F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

_LOW63 = (1 << 63) - 1
#: U* below 2**-(MIN_U_LOG2 - 1) is refused by transform (backends' exponent range
#: is at least 2**30); a source would need 2**29 zero bits in a row to draw one.
MIN_U_LOG2 = (1 << 29) + 1


# ----------------------------------------------------------------------------------
# One draw.
# ----------------------------------------------------------------------------------
@attrs.frozen
class Draw:
    """One draw ``(S, U*)``: ``U* = mantissa * 2**exponent``.

    ``mantissa`` has exactly ``p`` bits (``2**(p-1) <= mantissa < 2**p``) and
    ``exponent <= -p``, so ``U*`` is a p-bit float in (0, 1).
    """

    sign: int
    mantissa: int
    exponent: int

    @property
    def u(self) -> Fraction:
        """``U*`` as an exact Fraction."""
        return Fraction(self.mantissa, 1 << -self.exponent)


def draw_from_u(u: Fraction | float, sign: int, precision: int, *, name: str = "u") -> Draw:
    """Check that ``u`` is a p-bit float in (0, 1) and ``sign`` is ±1; return the Draw.

    Raises
    ------
    ParameterError
        If ``u`` is not a Fraction or float, not in (0, 1), or needs more than
        ``precision`` bits; or if ``sign`` is not the int ``1`` or ``-1``.
    """
    if type(sign) is not int or sign not in (1, -1):
        raise ParameterError(f"sign must be the int 1 or -1, got {sign!r}")
    if isinstance(u, bool) or not isinstance(u, Fraction | float):
        raise ParameterError(
            f"{name} must be a fractions.Fraction or float in (0, 1), "
            f"got {type(u).__name__} {show(u)}"
        )
    if isinstance(u, float) and (u != u or u in (float("inf"), float("-inf"))):
        raise ParameterError(f"{name} must be a p-bit float in (0, 1), got {show(u)}")
    q = Fraction(u) if isinstance(u, float) else u
    if not 0 < q < 1:
        raise ParameterError(f"{name} must be a p-bit float in (0, 1), got {show(u)}")
    den = q.denominator
    if den.bit_length() > MIN_U_LOG2:
        raise ParameterError(
            f"{name} must be >= 2**-{MIN_U_LOG2 - 1} (the backends' exponent range), got {show(u)}"
        )
    if den & (den - 1):
        raise ParameterError(f"{name} must be a dyadic rational (a p-bit float), got {show(u)}")
    num = q.numerator
    # num is odd (Fraction is reduced), so its bit length is its significant width.
    if num.bit_length() > precision:
        raise ParameterError(
            f"{name} must be a p-bit float with p = {precision}, got {show(u)} "
            f"which needs {num.bit_length()} bits"
        )
    shift = precision - num.bit_length()
    mantissa = num << shift
    exponent = -(den.bit_length() - 1) - shift
    return Draw(sign=sign, mantissa=mantissa, exponent=exponent)


# ----------------------------------------------------------------------------------
# The scalar decoder and the encoder.
# ----------------------------------------------------------------------------------
def row_size(precision: int) -> int:
    """The bytes of one draw whose exponent ends in its first word: the first word
    and the mantissa's ``ceil((p - 1) / 8)`` bytes (all but a ``2**-63`` fraction of
    draws)."""
    return 8 + ((precision + 6) >> 3)


def decode_draw(read: Callable[[int], bytes], precision: int) -> Draw:
    """Decode one draw from ``read(n) -> bytes`` per format ``snapcore-draw-v1``."""
    return Draw(*decode_draw_raw(read, precision))


def encode_draw(draw: Draw, precision: int) -> bytes:
    """The ``snapcore-draw-v1`` bytes of ``draw``: what :func:`decode_draw` reads back
    as ``draw`` (for crafting chosen draws: calibration, tests, benchmarks).

    The geometric exponent ``e = −exponent − (p − 1) >= 1`` is a stream of zero bits
    ending in a one: in the first word's 63 low bits (after the sign bit) when
    ``e <= 63``, else over whole following words; the unused bits are zero.
    """
    p = precision
    nbytes = (p + 6) >> 3
    e = -draw.exponent - (p - 1)
    if e < 1 or draw.mantissa >> (p - 1) != 1:
        raise ParameterError(f"draw must be a p-bit U* in (0, 1) at p = {p}, got {draw!r}")
    out = ((1 << 63 if draw.sign < 0 else 0) | (1 << (63 - e) if e <= 63 else 0)).to_bytes(
        8, "big"
    )
    if e > 63:
        zeros, bit = divmod(e - 64, 64)
        out += bytes(8 * zeros) + (1 << (63 - bit)).to_bytes(8, "big")
    tail = (draw.mantissa & ((1 << (p - 1)) - 1)) << (8 * nbytes - (p - 1))
    return out + tail.to_bytes(nbytes, "big")


def decode_draw_raw(read: Callable[[int], bytes], precision: int) -> tuple[int, int, int]:
    """:func:`decode_draw` as a plain ``(sign, mantissa, exponent)`` tuple (the hot
    path of every byte source)."""
    nbytes = (precision + 6) >> 3  # ceil((p - 1) / 8)
    block = read(8 + nbytes)
    whole = int.from_bytes(block, "big")
    w = whole >> (8 * nbytes)
    r = w & _LOW63
    if r:  # all but a 2**-63 fraction of draws
        e = 64 - r.bit_length()
        t = whole & ((1 << (8 * nbytes)) - 1)
    else:
        extra, t = _past_first_word(block[8:], read, nbytes, True)
        e = 64 + extra
    m = t >> (8 * nbytes - (precision - 1))
    return (-1 if w >> 63 else 1, (1 << (precision - 1)) | m, -(precision - 1) - e)


def _past_first_word(
    rest: bytes, read: Callable[[int], bytes], nbytes: int, more: bool
) -> tuple[int, int]:
    """The part of a draw after its first word, when the exponent continues there
    (``more``): words of 8 bytes until one is not zero, then the mantissa's ``nbytes``,
    taken first from ``rest`` (bytes read but not yet used), reading only what is
    missing.  Returns ``(exponent bits past the first word, mantissa integer)``.

    Without ``more`` (the exponent ended in the first word) it runs the same steps on
    the bytes at hand, with an empty read for the mantissa's, and returns ``(0, 0)``:
    a padded release's decoding (:func:`decode_draw_raw_padded`).
    """
    e = 0
    while True:
        if len(rest) < 8:
            rest += read(8 - len(rest)) if more else bytes(8 - len(rest))
        v = int.from_bytes(rest[:8], "big")
        rest = rest[8:]
        if not more:
            break
        if v:
            e += 64 - v.bit_length()
            break
        e += 64
    if not more:
        read(0)
        return 0, 0
    if len(rest) < nbytes:
        rest += read(nbytes - len(rest))
    return e, int.from_bytes(rest[:nbytes], "big")


def decode_draw_raw_padded(read: Callable[[int], bytes], precision: int) -> tuple[int, int, int]:
    """:func:`decode_draw_raw` for a release padded to a time quantum: the same draw
    from the same bytes, with the same steps whether the exponent ends in the first
    word (all but a ``2**-63`` fraction of draws) or continues for one more
    (:func:`_past_first_word` runs in both cases).  The quantum covers one
    continuation word; two or more (a fraction ``2**-127``) are not covered
    (docs/timing.md)."""
    nbytes = (precision + 6) >> 3
    block = read(8 + nbytes)
    whole = int.from_bytes(block, "big")
    w = whole >> (8 * nbytes)
    r = w & _LOW63
    extra, t = _past_first_word(block[8:], read, nbytes, r == 0)
    if r:
        e = 64 - r.bit_length()
        t = whole & ((1 << (8 * nbytes)) - 1)
    else:
        e = 64 + extra
    m = t >> (8 * nbytes - (precision - 1))
    return (-1 if w >> 63 else 1, (1 << (precision - 1)) | m, -(precision - 1) - e)


# ----------------------------------------------------------------------------------
# The batch decoder: draws as arrays.
# ----------------------------------------------------------------------------------
#: The least precision the batch decoder takes: its rows carry at least the 105
#: mantissa bits a :class:`DrawBatch` holds (and the fast path's bound needs 118).
BATCH_MIN_PRECISION = 118
#: Byte offsets, in a row, of the three big-endian 64-bit words the batch decoders
#: read (:func:`row_fields`): the first word, mantissa bytes 0-7 and mantissa bytes 7-14.
ROW_WORDS = (0, 8, 15)
_M52 = (1 << 52) - 1
_M53 = (1 << 53) - 1


def row_fields(w: Any, w1: Any, w2: Any) -> tuple[Any, Any, Any, Any]:
    """The fields of rows from their three words (:data:`ROW_WORDS`), element-wise
    on scalars or arrays of uint64, the same source compiled by numba in the fast path.

    Returns ``(S, r, mhi, mlo)``: the sign as ±1.0, the first word's 63 exponent bits
    ``r`` (``e = 64 − r.bit_length()``; ``r == 0``: the exponent continues in a further
    word), and the top 52 and the next 53 of the ``p − 1`` mantissa bits.
    """
    u64 = np.uint64
    sign = 1.0 - 2.0 * (w >> u64(63))
    r = w & u64(_LOW63)
    mhi = w1 >> u64(12)
    mlo = ((w1 & u64(0xFFF)) << u64(41)) | ((w2 >> u64(15)) & u64(_M53 >> 12))
    return sign, r, mhi, mlo


class DrawBatch:
    """``count`` draws as arrays, with the exact draw of each element on demand.

    Attributes
    ----------
    sign : ndarray of float64
        ``S`` as ±1.0.
    e : ndarray of float64
        The geometric exponent ``e >= 1`` (``U* = (1 + m·2**-(p-1))·2**-e``).
    mhi, mlo : ndarray of uint64
        The top 52 and the next 53 of the ``p − 1`` mantissa bits.
    """

    def __init__(
        self,
        precision: int,
        sign: F64,
        e: F64,
        mhi: U64,
        mlo: U64,
        exact: Callable[[int], Draw],
    ) -> None:
        self.precision = precision
        self.sign = sign
        self.e = e
        self.mhi = mhi
        self.mlo = mlo
        self._exact = exact

    def __len__(self) -> int:
        return int(self.sign.size)

    def draw(self, i: int) -> Draw:
        """The exact draw of element ``i``."""
        return self._exact(i)

    @classmethod
    def from_draws(cls, draws: list[Draw], precision: int) -> DrawBatch:
        """Arrays from a list of :class:`Draw` objects."""
        p = precision
        n = len(draws)
        sign = np.fromiter((d.sign for d in draws), dtype=np.float64, count=n)
        e = np.fromiter((-d.exponent - (p - 1) for d in draws), dtype=np.float64, count=n)
        mhi = np.fromiter(((d.mantissa >> (p - 53)) & _M52 for d in draws), np.uint64, n)
        mlo = np.fromiter(((d.mantissa >> (p - 106)) & _M53 for d in draws), np.uint64, n)
        kept = list(draws)
        return cls(p, sign, e, mhi, mlo, kept.__getitem__)


class ByteStream(Protocol):
    """What the batch decoder reads: a byte stream and the lock that keeps a batch's
    bytes contiguous in it (as :class:`~snapcore.ByteSource` has)."""

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes of the stream."""
        ...

    def exclusive(self) -> contextlib.AbstractContextManager[Any]:
        """A context in which no other thread reads the stream."""
        ...


#: A decoder of whole rows: ``rows(buf, count, row) -> (sign, e, mhi, mlo, stop)``
#: for ``count`` rows of ``row`` bytes in the uint8 array ``buf``, as :func:`decode_rows`.
RowDecoder = Callable[[npt.NDArray[np.uint8], int, int], tuple[F64, F64, U64, U64, int]]


def _bit_length_u63(r: U64) -> npt.NDArray[np.int64]:
    """Bit lengths of non-zero uint64 values below 2**63, exactly."""
    _, ex = np.frexp(r.astype(np.float64))
    ex = ex.astype(np.int64)
    # The conversion may round up to the next power of two: correct by one.
    too_big = (r >> (ex - 1).astype(np.uint64)) == 0
    out: npt.NDArray[np.int64] = ex - too_big
    return out


def decode_rows(
    buf: npt.NDArray[np.uint8], count: int, row: int
) -> tuple[F64, F64, U64, U64, int]:
    """``count`` rows of ``row`` bytes decoded as if none had a continuation word.

    Returns ``(sign, e, mhi, mlo, stop)`` as :class:`DrawBatch` holds them: ``stop``
    is the first row whose 63 exponent bits are all zero (``count`` if none); rows
    from it on are meaningless.
    """

    def words(offset: int) -> U64:
        view = np.ndarray((count,), dtype=">u8", buffer=buf, offset=offset, strides=(row,))
        out: U64 = view.astype(np.uint64)
        return out

    first, hi, lo = ROW_WORDS
    sign, r, mhi, mlo = row_fields(words(first), words(hi), words(lo))
    good = r != 0
    e = (64 - _bit_length_u63(np.where(good, r, np.uint64(1)))).astype(np.float64)
    bad = np.flatnonzero(~good)
    return sign, e, mhi, mlo, int(bad[0]) if bad.size else count


def _scan_stream(
    stream: ByteStream,
    count: int,
    p: int,
    segment: Callable[[int, bytes, int], int],
    special: Callable[[int, Draw], None],
) -> Callable[[int], Draw]:
    """Walk ``count`` draws of a ``snapcore-draw-v1`` stream in bulk.

    ``segment(start, buf, n)`` processes up to ``n`` rows of ``buf`` (draws
    ``start, start + 1, ...``) and returns how many rows precede the first one with a
    continuation word; that draw is decoded by the scalar decoder and passed to
    ``special(index, draw)``.  Exactly the bytes the scalar decoder would read are
    read.  Returns ``exact(i) -> Draw`` for any of the draws.
    """
    row = row_size(p)
    specials: dict[int, Draw] = {}
    segments: list[tuple[int, bytes]] = []  # (start, buffer)
    done = 0
    with stream.exclusive():
        pending = b""
        while done < count:
            need = (count - done) * row
            if not pending:
                pending = stream.read(need)
            elif len(pending) < need:
                pending = pending + stream.read(need - len(pending))
            buf = pending
            n = count - done
            stop = segment(done, buf, n)
            segments.append((done, buf))
            done += stop
            if stop == n:
                pending = buf[n * row :]
                break
            # Row `stop` has a continuation: decode it with the scalar decoder from
            # the stream position of its first word.
            rest = [buf[stop * row :]]
            state = {"off": 0}

            def read(k: int, rest: list[bytes] = rest, state: dict[str, int] = state) -> bytes:
                off = state["off"]
                if len(rest[0]) - off < k:
                    rest[0] = rest[0] + stream.read(k - (len(rest[0]) - off))
                out = rest[0][off : off + k]
                state["off"] = off + k
                return out

            d = decode_draw(read, p)
            specials[done] = d
            special(done, d)
            done += 1
            pending = rest[0][state["off"] :]
        if pending:  # pragma: no cover - the reads above never over-read
            raise AssertionError("bulk decoder read past its draws")

    seg_starts = [s[0] for s in segments]

    def exact(i: int) -> Draw:
        if i in specials:
            return specials[i]
        j = int(np.searchsorted(seg_starts, i, side="right")) - 1
        start, buf = segments[j]
        o = (i - start) * row
        return decode_draw(io.BytesIO(buf[o : o + row]).read, p)

    return exact


def decode_draw_batch(
    stream: ByteStream, count: int, precision: int, rows: RowDecoder = decode_rows
) -> DrawBatch:
    """``count`` draws of ``stream``, exactly the scalar decoder's on the same bytes.

    The stream is decoded in bulk (format ``snapcore-draw-v1``) under its
    ``exclusive()`` lock, consuming exactly the bytes the scalar decoder would; the
    rare draw with a continuation word (all 63 exponent bits zero) is decoded by the
    scalar decoder.

    Parameters
    ----------
    stream : ByteStream
        A byte source.
    count : int
        Draws to read.
    precision : int
        ``p >= BATCH_MIN_PRECISION``.
    rows : RowDecoder
        The decoder of whole rows: :func:`decode_rows`, or the fast path's compiled
        one (the same arrays).

    Raises
    ------
    ValueError
        If ``precision`` is below :data:`BATCH_MIN_PRECISION`.
    """
    p = precision
    if p < BATCH_MIN_PRECISION:
        raise ValueError(f"the batch decoder needs p >= {BATCH_MIN_PRECISION}, got {p}")
    signs: list[Any] = []
    es: list[Any] = []
    his: list[Any] = []
    los: list[Any] = []
    row = row_size(p)

    def segment(start: int, buf: bytes, n: int) -> int:
        sign, e, mhi, mlo, stop = rows(np.frombuffer(buf, np.uint8), n, row)
        signs.append(sign[:stop])
        es.append(e[:stop])
        his.append(mhi[:stop])
        los.append(mlo[:stop])
        return int(stop)

    def special(i: int, d: Draw) -> None:
        one = DrawBatch.from_draws([d], p)
        signs.append(one.sign)
        es.append(one.e)
        his.append(one.mhi)
        los.append(one.mlo)

    exact = _scan_stream(stream, count, p, segment, special)

    def join(parts: list[Any], dtype: Any) -> Any:
        if len(parts) == 1:  # the usual case: no copy
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    return DrawBatch(
        p,
        join(signs, np.float64),
        join(es, np.float64),
        join(his, np.uint64),
        join(los, np.uint64),
        exact,
    )
