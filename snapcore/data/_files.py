"""CSV and Parquet files (or standard input): read in blocks of columns, or a small
CSV file read whole.

In blocks the file is never held in memory: pyarrow's streaming CSV reader (or a
Parquet file's row batches) yields one block of records at a time, and only the
columns asked for are converted, each to a NumPy array.  What a block is used for (a
statistic's partial state) is the caller's business.  Every CSV field outside these
blocks (a header, a ``--categories`` item, a key), and every field of a CSV file read
whole (:func:`read_csv_table`, without pyarrow), is read by :func:`cell`, the rule the
blocks follow.

pyarrow is optional (``pip install "snapcore[arrow]"``) and imported only here, when a
file is read in blocks.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, Literal

import attrs
import numpy as np

from snapcore.data._missing import with_nulls
from snapcore.errors import DataError

__all__ = [
    "BLOCK_BYTES",
    "Block",
    "ColumnKind",
    "cell",
    "csv_blocks",
    "csv_header",
    "parquet_blocks",
    "parquet_columns",
    "pyarrow_available",
    "read_csv_table",
    "read_stdin_buffer",
]

#: Bytes of CSV text per block (pyarrow's ``block_size``).
BLOCK_BYTES = 1 << 20

#: How a CSV column is converted: to float64, or kept as text.
ColumnKind = Literal["number", "text"]


def pyarrow_available() -> bool:
    """Whether pyarrow (needed for reading in blocks and for Parquet) is importable."""
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


_INT = re.compile(r"[+-]?[0-9]+")


def cell(text: str) -> Any:
    """One CSV field (or ``--categories``, ``--keys`` item), read on its own.

    Integer text is an ``int`` (exact at any size); other decimal number text is the
    double nearest the decimal written (correctly rounded, as ``float()``, pandas and
    pyarrow's CSV readers parse it, so the block reader gives the same values); an
    empty field or ``nan`` is a missing value (``None``, refused by the release unless
    ``--missing`` says otherwise); anything else stays text.  The same rule for every
    field: no field changes how another is read.  So ``--categories 1,2`` matches the
    fields ``1.0`` and ``2.0`` under exact value matching.
    """
    t = text.strip()
    if not t:
        return None
    if _INT.fullmatch(t):
        return int(t)
    try:
        x = float(t)  # correctly rounded: the decimal written, rounded once
    except ValueError:
        return t
    if math.isnan(x):
        return None
    return x if math.isfinite(x) else t


@attrs.frozen
class Block:
    """Consecutive records of a file: ``rows`` of them, in the named ``columns``."""

    rows: int
    columns: dict[str, np.ndarray]


def csv_header(fh: IO[bytes], label: str) -> list[str]:
    """The column names on the first line of a CSV file (the line is consumed).

    Raises
    ------
    DataError
        If the file is empty, not UTF-8, or names a column twice (``label`` names the
        file in the message).
    """
    line = fh.readline()
    if not line.strip():
        raise DataError(f"{label} is empty")
    try:
        header = next(csv.reader([line.decode("utf-8").rstrip("\r\n")]))
    except UnicodeDecodeError:
        raise DataError(f"cannot read {label}: not a UTF-8 CSV file") from None
    return _column_names(header, label)


def _column_names(header: list[str], label: str) -> list[str]:
    """The names on a CSV header line, blanks around each removed (as around every
    field, :func:`cell`): both CSV readers name a file's columns by this rule.

    Raises
    ------
    DataError
        If a name is given twice.
    """
    names = [h.strip() for h in header]
    if len(set(names)) != len(names):
        raise DataError(f"{label} has duplicate column names")
    return names


def parquet_columns(source: IO[bytes] | str) -> list[str]:
    """The column names of a Parquet file (a path or a seekable buffer)."""
    import pyarrow.parquet as pq

    names: list[str] = pq.ParquetFile(source).schema_arrow.names
    return names


def csv_blocks(
    fh: IO[bytes],
    header: list[str],
    kinds: Mapping[str, ColumnKind],
    *,
    label: str,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[Block]:
    """The records after the header line, block by block, in the columns of ``kinds``.

    Parameters
    ----------
    fh : binary file object
        Positioned after the header line (:func:`csv_header`).
    header : list of str
        The file's columns.
    kinds : mapping
        Column name -> ``"number"`` (float64; an empty field is NaN) or ``"text"``.
    label : str
        How errors name the file.
    block_bytes : int
        CSV bytes per block.

    Raises
    ------
    DataError
        On text in a numeric column or a malformed row (the message names the column,
        never the value).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    types = {c: pa.string() if k == "text" else pa.float64() for c, k in kinds.items()}
    try:
        reader = pacsv.open_csv(
            fh,
            read_options=pacsv.ReadOptions(column_names=header, block_size=block_bytes),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(types), column_types=types, strings_can_be_null=False
            ),
        )
        for batch in reader:
            yield Block(batch.num_rows, _arrow_columns(batch))
    except pa.ArrowInvalid as exc:
        raise DataError(_conversion_message(str(exc), header, label)) from None


def parquet_blocks(
    source: IO[bytes] | str, columns: Sequence[str], *, label: str
) -> Iterator[Block]:
    """The records of a Parquet file (a path or a seekable buffer), row batch by row
    batch, in ``columns``.

    Raises
    ------
    DataError
        When pyarrow finds the data invalid (``label`` names the file).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    file_columns: list[str] = []
    try:
        # pre_buffer=False: pyarrow's default pre-buffers every row group the iterator
        # will read, i.e. the whole column (820 MB of pool for 10**8 doubles); without
        # it the pool holds about one row group.
        file = pq.ParquetFile(source, pre_buffer=False)
        file_columns = file.schema_arrow.names
        for batch in file.iter_batches(columns=list(columns), batch_size=1 << 20):
            yield Block(batch.num_rows, _arrow_columns(batch))
    except pa.ArrowInvalid as exc:
        raise DataError(_conversion_message(str(exc), file_columns, label)) from None


_NUMPY_OF_ARROW = {
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
    item = np.dtype(dtype).itemsize
    values = np.frombuffer(col.buffers()[1], dtype=dtype, count=len(col), offset=col.offset * item)
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


def _arrow_columns(batch: Any) -> dict[str, np.ndarray]:
    """An Arrow record batch as NumPy arrays by column name."""
    return {name: _arrow_column(batch.column(i)) for i, name in enumerate(batch.schema.names)}


def _conversion_message(message: str, file_columns: list[str], label: str) -> str:
    """A conversion error without the offending value (pyarrow's message quotes it)."""
    m = re.search(r"CSV column #(\d+)", message)
    if m is not None and "conversion error" in message:
        idx = int(m.group(1))
        name = file_columns[idx] if idx < len(file_columns) else None
        if name is not None:
            return f"column {name!r}: every record must be a finite real number; got text"
    if "conversion error" in message:
        return f"{label}: every record of a column must be a finite real number; got text"
    return f"cannot read {label}: malformed CSV (a row has the wrong number of fields?)"


def read_stdin_buffer(stdin: IO[bytes]) -> io.BytesIO:
    """Standard input as a seekable buffer (Parquet keeps its footer at the end)."""
    return io.BytesIO(stdin.read())


class _CsvColumns(Mapping[str, list[Any]]):
    """A CSV table's columns by header name, each read with :func:`cell` when first
    asked for: a caller reads only the columns it names, and every column it reads
    holds what reading every field would give."""

    def __init__(self, header: list[str], rows: list[list[str]]) -> None:
        self._index = {h: i for i, h in enumerate(header)}
        self._rows = rows
        self._read: dict[str, list[Any]] = {}

    def __getitem__(self, name: str) -> list[Any]:
        col = self._read.get(name)
        if col is None:
            i = self._index[name]
            col = self._read[name] = [cell(row[i]) for row in self._rows]
        return col

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def read_csv_table(fh: Iterable[str], label: str) -> Mapping[str, list[Any]]:
    """A whole CSV file (text, opened with ``newline=""``) as columns of values by
    header name, each column read with :func:`cell` when first asked for: blank cells
    are missing (None), numbers are numbers, other text stays text.  Needs no pyarrow.

    Raises
    ------
    DataError
        If the file is empty, not UTF-8 CSV, names a column twice, or has a row whose
        number of fields differs from the header's (``label`` names the file).
    """
    try:
        reader = csv.reader(fh)
        try:
            header = _column_names(next(reader), label)
        except StopIteration:
            raise DataError(f"{label} is empty") from None
        rows: list[list[str]] = []
        width = len(header)
        for row in reader:
            if not row:
                continue
            if len(row) != width:
                raise DataError(f"{label}: a row has {len(row)} fields, the header has {width}")
            rows.append(row)
    except (UnicodeDecodeError, csv.Error):
        raise DataError(f"cannot read {label}: not a UTF-8 CSV file") from None
    return _CsvColumns(header, rows)
