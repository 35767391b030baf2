"""CSV and Parquet files (or standard input), read in blocks of records.

One reader for every CSV source, whatever its size: the bytes are cut into pieces
that end on a record boundary (:class:`CsvReader`), each piece is parsed and every
cell is read by one grammar (docs/semantics.md, "Values that enter", "CSV files"):
:func:`cell` for one cell, or a whole column of cells at once where that gives the
same records.  Nothing is held beyond a few pieces, so memory stays bounded for
any number of records, and where a piece ends never changes a record.

Parquet files are read by their declared types, row group by row group
(:func:`parquet_blocks`).

pyarrow (``pip install "snapcore[arrow]"``) parses the pieces when it is installed
and reads Parquet; without it the pieces are parsed by Python's ``csv`` module
under the same grammar (the test suite checks that both give the same records).
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, Literal, cast

import attrs
import numpy as np

from snapcore.data._missing import with_nulls
from snapcore.errors import DataError

__all__ = [
    "BLOCK_BYTES",
    "Block",
    "CsvReader",
    "arrow_columns",
    "cell",
    "join_blocks",
    "parquet_blocks",
    "parquet_columns",
    "pyarrow_available",
    "read_csv",
    "sniff_parquet",
    "spool",
]

#: Bytes of CSV text read at a time; a piece holds the whole records among them.
BLOCK_BYTES = 1 << 20

#: The characters removed around every cell and header name (ASCII space and tab).
BLANKS = " \t"

#: Which parser cuts a piece into cells: pyarrow's, or Python's ``csv`` module.
Engine = Literal["arrow", "python"]

_INT = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# For Arrow's RE2, anchored: an integer of at most 18 digits (within int64).
_RE2_SHORT_INT = r"^[+-]?[0-9]{1,18}$"
# Text that may be a number or a missing cell: a column without any is plain text.
_RE2_NUMBERLIKE = r"^$|^[+-]?\.?[0-9]"

_PARQUET_MAGIC = b"PAR1"
_BOM = b"\xef\xbb\xbf"


def pyarrow_available() -> bool:
    """Whether pyarrow (needed for Parquet, and the fast CSV parser) is importable."""
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


class _Unreadable(Exception):
    """Internal: a cell the grammar refuses (the rule, never the value)."""


def _exact_int(text: str) -> int:
    """Decimal integer text (``_INT``) as an exact ``int`` at any length: GMP's
    conversion, which Python's limit on the digits of ``int(str)`` does not apply to."""
    if len(text) <= 4000:
        return int(text)
    import gmpy2

    return int(gmpy2.mpz(text))


def _read_cell(text: str) -> Any:
    t = text.strip(BLANKS)
    if not t:
        return None
    if _INT.fullmatch(t):
        return _exact_int(t)
    if _NUMBER.fullmatch(t):
        x = float(t)  # correctly rounded: the decimal written, rounded once
        if x - x != 0.0:
            raise _Unreadable(
                "a number beyond the double range (it rounds to infinity) is refused"
            )
        return x
    return t


def cell(text: str, *, where: str = "a CSV cell") -> Any:
    """One CSV cell (or a ``--categories``, ``--keys`` item) read by the grammar of
    docs/semantics.md ("Values that enter", CSV).

    Blanks (ASCII space and tab) around it are removed; then an empty cell is missing
    (``None``); a decimal integer (``[+-]?[0-9]+``, leading zeros allowed) is that
    ``int``, exact at any length; a decimal number (``1.5``, ``.5``, ``1.``, ``2e-3``,
    ``1E5``: ASCII digits, no digit separators) is the double nearest it, correctly
    rounded (underflow gives a zero or a subnormal); anything else, ``inf``, ``nan``
    and ``NA`` included, is text.  The same rule for every cell: no cell changes how
    another is read.

    Raises
    ------
    DataError
        If a number lies beyond the double range (the message names ``where`` and the
        rule, never the text).
    """
    try:
        return _read_cell(text)
    except _Unreadable as exc:
        raise DataError(f"{where}: {exc}") from None


@attrs.frozen
class Block:
    """Consecutive records of a file: ``rows`` of them, in the named ``columns``."""

    rows: int
    columns: dict[str, np.ndarray]


# -- cutting CSV bytes into pieces of whole records ------------------------------------


def _quote_positions(a: np.ndarray) -> np.ndarray:
    return np.flatnonzero(a == 34)


def _last_boundary(buf: bytes) -> int:
    """The end of the last line terminator (CR or LF) outside quotes in ``buf`` (which
    starts at a record's start), or 0 if there is none."""
    if b'"' not in buf:
        return max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
    outside = _ends_outside_quotes(np.frombuffer(buf, dtype=np.uint8))
    return int(outside[-1]) + 1 if outside.size else 0


def _ends_outside_quotes(a: np.ndarray) -> np.ndarray:
    """The positions of the line terminators (CR or LF) outside quotes in ``a`` (bytes
    that start at a record's start)."""
    ends = np.flatnonzero((a == 10) | (a == 13))
    quotes = _quote_positions(a)
    return ends[np.searchsorted(quotes, ends) % 2 == 0] if quotes.size else ends


_DELIMITS = np.zeros(256, dtype=bool)
_DELIMITS[[10, 13, 34, 44]] = True  # LF, CR, '"', ','


def _check_quotes(piece: bytes, label: str, *, final: bool) -> None:
    """Refuse a quote that is not where RFC 4180 allows it: a quoted field starts at
    the start of a field and its closing quote ends it (``""`` inside it is one
    quote).  With this, a line terminator after an even number of quotes is a record
    boundary, so pieces cut there parse as the whole file would."""
    if b'"' not in piece:
        return
    a = np.frombuffer(piece, dtype=np.uint8)
    q = _quote_positions(a)
    opening, closing = q[0::2], q[1::2]
    before = a[np.maximum(opening - 1, 0)]
    bad_open = (opening > 0) & ~_DELIMITS[before]
    after_pos = closing + 1
    after = a[np.minimum(after_pos, len(a) - 1)]
    bad_close = (after_pos < len(a)) & ~_DELIMITS[after]
    if bad_open.any() or bad_close.any():
        raise DataError(
            f"cannot read {label}: malformed CSV (a quote inside a field that does not "
            "start with one, or text after a closing quote; RFC 4180 quoting only)"
        )
    if final and q.size % 2:
        raise DataError(f"cannot read {label}: malformed CSV (a quoted field is not closed)")


def _pieces(fh: IO[bytes], block_bytes: int, label: str) -> Iterator[bytes]:
    """The bytes of ``fh`` in pieces of whole records (each ends on a record boundary,
    the last at the end of the input), the leading byte-order mark removed, each piece
    checked to be UTF-8 with RFC 4180 quoting."""
    rest = b""
    first = True
    size = block_bytes
    while True:
        data = fh.read(size)
        buf = rest + data if rest else data
        if first:
            if len(buf) < len(_BOM) and data:
                rest = buf
                continue
            if buf.startswith(_BOM):
                buf = buf[len(_BOM) :]
            first = False
        if not data:
            if buf:
                yield _checked(buf, label, final=True)
            return
        cut = _last_boundary(buf)
        if cut == 0:  # no record ends in it yet: read on, twice as much each time
            rest = buf
            size = min(2 * size, 1 << 30)
            continue
        size = block_bytes
        yield _checked(buf[:cut], label, final=False)
        rest = buf[cut:]


def _checked(piece: bytes, label: str, *, final: bool) -> bytes:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"cannot read {label}: not a UTF-8 CSV file") from None
    _check_quotes(piece, label, final=final)
    return piece


def _first_record(piece: bytes) -> tuple[bytes, bytes]:
    """(the first non-empty record of a piece, the bytes after it)."""
    start = len(piece) - len(piece.lstrip(b"\r\n"))
    body = piece[start:]
    outside = _ends_outside_quotes(np.frombuffer(body, dtype=np.uint8))
    if outside.size == 0:
        return body, b""
    cut = int(outside[0])
    return body[:cut], body[cut:]


def _header(record: bytes, label: str) -> list[str]:
    """The column names of a header record: blanks around each removed; a name given
    twice is refused (an empty name is a name)."""
    row = next(csv.reader(io.StringIO(record.decode("utf-8"), newline="")))
    names = [h.strip(BLANKS) for h in row]
    if len(set(names)) != len(names):
        raise DataError(f"{label} has duplicate column names")
    return names


def _width_error(label: str) -> DataError:
    return DataError(
        f"cannot read {label}: malformed CSV (a row's number of fields differs from the header's)"
    )


class CsvReader:
    """A CSV source read by the grammar of docs/semantics.md ("Values that enter"),
    in blocks of records.

    Parameters
    ----------
    fh : binary file object
        The CSV bytes (a file, standard input); read ``block_bytes`` at a time.
    label : str
        How errors name the source.
    block_bytes : int
        Bytes read at a time.  A block holds the whole records among them (a record
        longer than that is read on until it ends), so no value depends on it.
    engine : {"arrow", "python"}, optional
        The parser of the pieces: pyarrow's (the default when installed) or Python's
        ``csv`` module.  Both give the same records.

    Attributes
    ----------
    header : list of str
        The column names, from the first non-empty record.

    Raises
    ------
    DataError
        If the source holds no record, is not UTF-8, breaks RFC 4180 quoting, or names
        a column twice.
    """

    def __init__(
        self,
        fh: IO[bytes],
        *,
        label: str,
        block_bytes: int = BLOCK_BYTES,
        engine: Engine | None = None,
    ) -> None:
        if engine is None:
            engine = "arrow" if pyarrow_available() else "python"
        self._label = label
        self._engine: Engine = engine
        self._pieces = _pieces(fh, block_bytes, label)
        self._rest = b""
        for piece in self._pieces:
            if piece.strip(b"\r\n"):
                record, self._rest = _first_record(piece)
                break
        else:
            raise DataError(f"{label} is empty (not even a header line)")
        self.header: list[str] = _header(record, label)

    def blocks(self, columns: Sequence[str]) -> Iterator[Block]:
        """The records after the header, block by block, in ``columns`` (each cell read
        by the grammar; none asked for: the blocks count the records only).

        Raises
        ------
        DataError
            If a column is not in the header, a row's number of fields differs from
            the header's, a number lies beyond the double range (the message names
            the column and the rule, never the value), or the source breaks the rules
            of the constructor further on.
        """
        columns = list(dict.fromkeys(columns))  # each once
        for c in columns:
            if c not in self.header:
                raise DataError(f"column {c!r} not found in {self._label}", parameter="column")
        parse = _parse_arrow if self._engine == "arrow" else _parse_python
        pieces = self._pieces
        first, self._rest = self._rest, b""
        for piece in _chain(first, pieces):
            if not piece.strip(b"\r\n"):
                continue
            rows, cols = parse(piece, self.header, columns, self._label)
            if rows:
                yield Block(rows, cols)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def read_csv(
    fh: IO[bytes],
    columns: Sequence[str] | None = None,
    *,
    label: str,
    block_bytes: int = BLOCK_BYTES,
    engine: Engine | None = None,
) -> tuple[list[str], dict[str, np.ndarray]]:
    """A CSV source's header and its records in ``columns`` (default: all), read
    through :class:`CsvReader` and joined: the records every block gives, in order.

    Raises
    ------
    DataError
        As :class:`CsvReader` and :meth:`CsvReader.blocks`.
    """
    reader = CsvReader(fh, label=label, block_bytes=block_bytes, engine=engine)
    names = list(reader.header if columns is None else columns)
    return reader.header, join_blocks(reader.blocks(names), names)


def join_blocks(blocks: Iterable[Block], columns: Sequence[str]) -> dict[str, np.ndarray]:
    """The records of ``blocks`` in ``columns``, joined in order (no record changed)."""
    parts: dict[str, list[np.ndarray]] = {c: [] for c in columns}
    for block in blocks:
        for c in columns:
            parts[c].append(block.columns[c])
    return {c: _concat(parts[c]) for c in columns}


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    """Record arrays joined without changing a record: arrays of one NumPy type are
    concatenated; otherwise every record becomes its Python value (never a float64
    detour for an integer)."""
    if not arrays:
        return np.empty(0, dtype=object)
    if all(a.dtype == arrays[0].dtype for a in arrays):
        return np.concatenate(arrays)
    out = np.empty(sum(len(a) for a in arrays), dtype=object)
    i = 0
    for a in arrays:
        out[i : i + len(a)] = a.tolist() if a.dtype != object else a
        i += len(a)
    return out


# -- one piece of whole records, parsed -----------------------------------------------


def _parse_arrow(
    piece: bytes, header: list[str], columns: Sequence[str], label: str
) -> tuple[int, dict[str, np.ndarray]]:
    """The records of one piece, parsed by pyarrow with every option set to the
    grammar: comma, RFC 4180 quotes (doubled inside, no escape character), newlines
    inside quotes, empty lines skipped, every cell a string (no null values, no type
    inference, no truth values; UTF-8 already checked); the cells then read by the
    grammar."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    include = list(columns) or header[:1]  # none asked for: one, to count the rows
    if piece.startswith(_BOM):  # Arrow drops a byte-order mark that starts its input:
        piece = b"\n" + piece  # here it is a cell's text (an empty line is skipped)
    try:
        table = pacsv.read_csv(
            pa.BufferReader(piece),
            read_options=pacsv.ReadOptions(
                column_names=header,
                block_size=min(max(len(piece) + 1, 1 << 16), (1 << 31) - 1),
                use_threads=False,
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=",",
                quote_char='"',
                double_quote=True,
                escape_char=False,
                newlines_in_values=True,
                ignore_empty_lines=True,
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=include,
                column_types=dict.fromkeys(include, pa.string()),
                null_values=[],
                true_values=[],
                false_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                auto_dict_encode=False,
                check_utf8=False,  # every piece is checked once already (_checked)
            ),
        )
    except pa.ArrowInvalid:
        raise _width_error(label) from None
    cols = {c: _records_arrow(table.column(c), c, label) for c in columns}
    return table.num_rows, cols


def _compute() -> Any:
    """pyarrow's compute functions, called by name (``call_function``), and their
    option classes: the module ``pyarrow.compute`` is made of them, and importing it
    also builds a documented Python wrapper for each of its hundreds of functions
    (tens of milliseconds of a command's start-up) where this reader calls eight."""
    import pyarrow._compute as compute

    return compute


def _records_arrow(col: Any, name: str, label: str) -> np.ndarray:
    """A column of cells (Arrow strings) as records, by the grammar: the common
    columns at once (:func:`_arrow_numbers`; text that no number or empty cell is
    among, as str), every other column cell by cell (:func:`cell`)."""
    pc = _compute()
    call = pc.call_function

    x = _arrow_numbers(col)
    if x is not None:
        return x

    def edge(fn: str, text: str) -> Any:
        return call(fn, [col], pc.MatchSubstringOptions(text))

    blank = call(
        "or",
        [
            call("or", [edge("starts_with", " "), edge("starts_with", "\t")]),
            call("or", [edge("ends_with", " "), edge("ends_with", "\t")]),
        ],
    )
    if call("any", [blank]).as_py():
        col = call("utf8_trim", [col], pc.TrimOptions(BLANKS))
        x = _arrow_numbers(col)
        if x is not None:
            return x
    numberlike = call("match_substring_regex", [col], pc.MatchSubstringOptions(_RE2_NUMBERLIKE))
    if not call("any", [numberlike]).as_py():
        out = np.empty(len(col), dtype=object)
        out[:] = col.to_pylist()  # not to_numpy: it imports pandas
        return out
    return _records_python(col.to_pylist(), name, label)


def _arrow_numbers(col: Any) -> np.ndarray | None:
    """The records of a column of numbers and empty cells, without blanks, at once:
    float64 (NaN for an empty cell) when every number is finite and below 2**53 in
    magnitude (where an integer is its double, and a larger one never rounds below),
    int64 when every cell is an integer of at most 18 digits; else None.

    Arrow's conversion of a string to a double accepts exactly the grammar's numbers
    and the spellings of inf and nan (which the finiteness check sends on), and
    rounds correctly (tests/data/test_files.py checks both on the installed pyarrow).
    Casts are safe casts (``CastOptions.safe``, as ``pyarrow.compute.cast``).
    """
    import pyarrow as pa

    pc = _compute()
    call = pc.call_function

    def cast(arr: Any, to: Any) -> Any:
        return call("cast", [arr], pc.CastOptions.safe(to))

    # No Python value is handed to Arrow here (converting one imports pandas).
    present = cast(call("utf8_length", [col]), pa.bool_())
    some_empty = not call("all", [present]).as_py()
    numbers = call("filter", [col, present]) if some_empty else col
    try:
        x = _numpy(cast(numbers, pa.float64()), np.float64)
    except pa.ArrowInvalid:  # a cell that is not a number (or has blanks around)
        return None
    if np.isfinite(x).all() and (np.abs(x) < 2.0**53).all():
        if some_empty:
            full = np.full(len(col), np.nan)
            full[_numpy(cast(present, pa.uint8()), np.uint8).astype(bool)] = x
            x = full
        return x
    if some_empty:
        return None
    short_ints = call("match_substring_regex", [col], pc.MatchSubstringOptions(_RE2_SHORT_INT))
    if not call("all", [short_ints]).as_py():
        return None
    return _numpy(cast(call("utf8_ltrim", [col], pc.TrimOptions("+")), pa.int64()), np.int64)


def _numpy(arr: Any, dtype: type[np.generic]) -> np.ndarray:
    """The values buffer of a numeric Arrow array (or chunked array), of NumPy type
    ``dtype``, viewed as a NumPy array (pyarrow's own conversion imports pandas for a
    chunked array); a null's slot holds whatever the buffer has there."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    size = np.dtype(dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * size)


def _records_python(cells: Sequence[str], name: str, label: str) -> np.ndarray:
    """Cells as records, one by one (:func:`cell`), in an object array."""
    out = np.empty(len(cells), dtype=object)
    try:
        for i, t in enumerate(cells):
            out[i] = _read_cell(t)
    except _Unreadable as exc:
        raise DataError(f"column {name!r} of {label}: {exc}") from None
    return out


def _parse_python(
    piece: bytes, header: list[str], columns: Sequence[str], label: str
) -> tuple[int, dict[str, np.ndarray]]:
    """The records of one piece, parsed by Python's ``csv`` module (RFC 4180
    quoting, strict, empty lines skipped, no limit on a field's size)."""
    text = piece.decode("utf-8")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text) + 1))
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
    except csv.Error:
        raise _width_error(label) from None
    finally:
        csv.field_size_limit(limit)
    width = len(header)
    if any(len(r) != width for r in rows):
        raise _width_error(label)
    index = {h: i for i, h in enumerate(header)}
    cols = {c: _records_python([r[index[c]] for r in rows], c, label) for c in columns}
    return len(rows), cols


# -- Parquet ----------------------------------------------------------------------------


def sniff_parquet(fh: IO[bytes]) -> tuple[bool, IO[bytes]]:
    """Whether a stream starts with Parquet's magic bytes (``PAR1``), and a stream
    that reads it from its start (the bytes looked at put back)."""
    head = fh.read(len(_PARQUET_MAGIC))
    return head == _PARQUET_MAGIC, cast("IO[bytes]", _Prefixed(head, fh))


class _Prefixed(io.RawIOBase):
    """``head`` followed by the rest of ``fh``, as a readable binary stream."""

    def __init__(self, head: bytes, fh: IO[bytes]) -> None:
        self._head = head
        self._fh = fh

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        head, self._head = self._head, b""
        if size is None or size < 0:
            return head + self._fh.read()
        if len(head) >= size:
            self._head = head[size:]
            return head[:size]
        return head + self._fh.read(size - len(head))


def spool(fh: IO[bytes]) -> IO[bytes]:
    """A stream copied to a temporary file (seekable, as Parquet's reader needs: the
    footer is at the end), without holding it in memory."""
    tmp = tempfile.TemporaryFile()  # noqa: SIM115 (the caller closes it)
    shutil.copyfileobj(fh, tmp, 1 << 20)
    tmp.seek(0)
    return tmp


def parquet_columns(source: IO[bytes] | str, *, label: str = "the Parquet file") -> list[str]:
    """The column names of a Parquet file (a path or a seekable file object).

    Raises
    ------
    DataError
        If it is not a Parquet file pyarrow can read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names: list[str] = pq.ParquetFile(source).schema_arrow.names
    except (pa.ArrowInvalid, OSError):
        raise DataError(f"cannot read {label}: not a Parquet file") from None
    return names


def parquet_blocks(
    source: IO[bytes] | str, columns: Sequence[str], *, label: str
) -> Iterator[Block]:
    """The records of a Parquet file (a path or a seekable file object), row batch by
    row batch, in ``columns``, by their declared types.

    Raises
    ------
    DataError
        When pyarrow finds the data invalid (``label`` names the file).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # pre_buffer=False: pyarrow's default pre-buffers every row group the iterator
        # will read, i.e. the whole column (820 MB of pool for 10**8 doubles); without
        # it the pool holds about one row group.
        file = pq.ParquetFile(source, pre_buffer=False)
        for batch in file.iter_batches(columns=list(columns), batch_size=1 << 20):
            yield Block(batch.num_rows, arrow_columns(batch))
    except (pa.ArrowInvalid, OSError):
        raise DataError(f"cannot read {label}: invalid Parquet data") from None


_NUMPY_OF_ARROW: dict[str, type[np.generic]] = {
    "double": np.float64,
    "float": np.float32,
    "halffloat": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint64": np.uint64,
    "uint32": np.uint32,
    "uint16": np.uint16,
    "uint8": np.uint8,
}


def _arrow_column(col: Any) -> np.ndarray:
    """One Arrow array as a NumPy array of its records, each read by its declared type.

    Numeric columns are viewed in place (Arrow's own ``to_numpy`` imports pandas, a
    third of a one-shot run's time); with nulls, the validity bitmap says which
    records are missing (:func:`~snapcore.data._missing.with_nulls`: integers stay
    exact Python ints, never a float64 detour, and a null is None).  A dictionary
    column is decoded first; any other column goes through ``to_numpy`` (strings,
    bools and decimals as objects, a null as None).
    """
    if _is_dictionary(col):
        return _arrow_column(col.dictionary_decode())
    dtype = _NUMPY_OF_ARROW.get(str(col.type))
    if dtype is None:
        return np.asarray(col.to_numpy(zero_copy_only=False))
    values = _numpy(col, dtype)
    if not col.null_count:
        return values
    return with_nulls(values, _arrow_nulls(col))


def _is_dictionary(col: Any) -> bool:
    import pyarrow.types as pat

    return bool(pat.is_dictionary(col.type))


def _arrow_nulls(col: Any) -> np.ndarray:
    """The nulls of an Arrow array (bool, True at a null), from its validity bitmap."""
    bitmap = col.buffers()[0]
    if bitmap is None:  # no bitmap: no null
        return np.zeros(len(col), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return ~bits[col.offset : col.offset + len(col)].astype(bool)


def arrow_columns(batch: Any) -> dict[str, np.ndarray]:
    """A pyarrow record batch as NumPy arrays by column name, each column read by its
    declared type (:func:`_arrow_column`)."""
    return {name: _arrow_column(batch.column(i)) for i, name in enumerate(batch.schema.names)}
