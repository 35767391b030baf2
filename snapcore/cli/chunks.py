"""Read a CSV or Parquet file (or standard input) in chunks into a merged partial state.

The file is never held in memory: pyarrow's streaming CSV reader (or a Parquet file's
row batches) yields one block of records at a time, only the columns the statistic
reads are converted, and each block is folded into the statistic's exact partial
state (:mod:`snapcore.releases._partials`).  Peak memory is a few blocks, whatever the file's
size; the state, hence the release for the same draws, is the one of the whole file
read at once.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import re
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from snapcore.errors import DataError, ParameterError, keyword

if TYPE_CHECKING:
    from snapcore.data._missing import MissingPolicy
    from snapcore.plugins._statistic import Statistic
    from snapcore.releases._partials import Partial

__all__ = ["BLOCK_BYTES", "cell", "pyarrow_available", "stream_group_partials", "stream_partial"]

#: Bytes of CSV text per block (pyarrow's ``block_size``).
BLOCK_BYTES = 1 << 20


def pyarrow_available() -> bool:
    """Whether pyarrow (needed for chunked reading and for Parquet) is importable."""
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
    pyarrow's CSV readers parse it, so the chunked reader gives the same values); an
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


def _header(fh: IO[bytes], label: str) -> list[str]:
    line = fh.readline()
    if not line.strip():
        raise DataError(f"{label} is empty")
    try:
        header = next(csv.reader([line.decode("utf-8").rstrip("\r\n")]))
    except UnicodeDecodeError:
        raise DataError(f"cannot read {label}: not a UTF-8 CSV file") from None
    header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        raise DataError(f"{label} has duplicate column names")
    return header


def _needed(stat: Statistic, column: Any, header: Sequence[str]) -> list[str]:
    if column is None:
        if stat.columns == 0:
            return [header[0]]  # only the number of records is used
        if len(header) != stat.columns:
            raise ParameterError(
                f"this statistic reads {stat.columns} column(s); the table has "
                f"{len(header)}: choose with {keyword('column')}...",
                parameter="column",
            )
        return list(header)
    cols = [column] if isinstance(column, str) else list(column)
    for c in cols:
        if c not in header:
            raise DataError(
                f"column {c!r} not found ({keyword('column', c)}); available columns: "
                f"{list(header)}",
                parameter="column",
            )
    return cols


def _csv_batches(
    fh: IO[bytes], header: list[str], types: dict[str, Any], block_bytes: int
) -> Iterator[Any]:
    import pyarrow.csv as pacsv

    reader = pacsv.open_csv(
        fh,
        read_options=pacsv.ReadOptions(column_names=header, block_size=block_bytes),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(types), column_types=types, strings_can_be_null=False
        ),
    )
    yield from reader


def _parquet_batches(source: Any, cols: list[str]) -> Iterator[Any]:
    import pyarrow.parquet as pq

    # pre_buffer=False: pyarrow's default pre-buffers every row group the iterator will
    # read, i.e. the whole column (820 MB of pool for 10**8 doubles); without it the
    # pool holds about one row group.
    file = pq.ParquetFile(source, pre_buffer=False)
    yield from file.iter_batches(columns=cols, batch_size=1 << 20)


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


def _column(col: Any) -> np.ndarray:
    """One Arrow column as a NumPy array: numeric columns without nulls are viewed in
    place (Arrow's own ``to_numpy`` imports pandas, a third of a one-shot run's time);
    any other column goes through ``to_numpy``."""
    dtype = _NUMPY_OF_ARROW.get(str(col.type))
    if dtype is None or col.null_count:
        return np.asarray(col.to_numpy(zero_copy_only=False))
    item = np.dtype(dtype).itemsize
    return np.frombuffer(col.buffers()[1], dtype=dtype, count=len(col), offset=col.offset * item)


def _columns(batch: Any) -> dict[str, np.ndarray]:
    return {name: _column(batch.column(i)) for i, name in enumerate(batch.schema.names)}


def _open_batches(
    stat: Statistic,
    source: IO[bytes] | str,
    *,
    label: str,
    file_format: str,
    column: Any,
    options: dict[str, Any],
    block_bytes: int,
    by: str | None = None,
) -> tuple[list[str], list[str], Iterator[Any]]:
    """(the file's columns, the statistic's columns, the record batches); with ``by``,
    that column is read too, as text (CSV) so each field is read by :func:`cell`."""
    import pyarrow as pa

    if file_format == "parquet":
        import pyarrow.parquet as pq

        file_columns = pq.ParquetFile(source).schema_arrow.names
        cols = _needed(stat, column, file_columns)
        _has_by(by, file_columns)
        wanted = cols + ([by] if by is not None and by not in cols else [])
        return file_columns, cols, _parquet_batches(source, wanted)
    assert not isinstance(source, str)
    file_columns = _header(source, label)
    cols = _needed(stat, column, file_columns)
    _has_by(by, file_columns)
    # Categories match by value: numbers as numbers (a cell 1.0 is the category 1),
    # so a column is read as text only when some category is text.
    cats = options.get("categories")
    numeric = cats is not None and all(
        isinstance(c, int | float) and not isinstance(c, bool) for c in cats
    )
    text = (cats is not None and not numeric) or stat.columns == 0
    kind = pa.string() if text else pa.float64()
    types = {c: kind for c in cols}
    if by is not None:
        types[by] = pa.string()  # keys: each field read as the whole-file reader reads it
    return file_columns, cols, _csv_batches(source, file_columns, types, block_bytes)


def _has_by(by: str | None, file_columns: Sequence[str]) -> None:
    if by is not None and by not in file_columns:
        raise DataError(
            f"column {by!r} not found ({keyword('by', by)}); available columns: "
            f"{list(file_columns)}",
            parameter="by",
        )


def _block_partial(
    stat: Statistic,
    block: dict[str, Any],
    cols: list[str],
    size: int,
    *,
    column: Any,
    data_bounds: Any,
    options: dict[str, Any],
    policy: MissingPolicy | None,
) -> Partial:
    from snapcore.data._columns import Dataset
    from snapcore.data._missing import apply_missing
    from snapcore.releases._partials import partial

    block = {c: block[c] for c in cols}
    if policy is not None and policy.kind != "error" and stat.columns:
        ds = apply_missing(Dataset([block[c] for c in cols], cols, size), policy)
        block = dict(zip(ds.names, ds._cols, strict=True))
    return partial(stat, block, column=column, data_bounds=data_bounds, **options)


def stream_partial(
    stat: Statistic,
    source: IO[bytes] | str,
    *,
    label: str,
    file_format: str,
    column: Any,
    data_bounds: Any,
    options: dict[str, Any],
    block_bytes: int = BLOCK_BYTES,
    policy: MissingPolicy | None = None,
) -> Partial:
    """The merged partial state of ``stat`` over a CSV or Parquet source, block by block.

    Parameters
    ----------
    stat : Statistic
        A mergeable statistic.
    source : binary file object or path
        CSV text with a header line, or a Parquet file (a path or a seekable buffer).
    label : str
        How errors name the source.
    file_format : {"csv", "parquet"}
    column, data_bounds, options
        As for :func:`snapcore.partial`.
    block_bytes : int
        CSV bytes per block.
    policy : MissingPolicy, optional
        A missing-value policy (``drop`` or ``impute``, checked against the relation by
        the caller) applied to each block before its partial state, exactly as a
        release applies it to data held in memory (:func:`snapcore.data.apply_missing`).

    Raises
    ------
    DataError
        On a missing column, or a value that is not a number in a numeric column
        (the message names the column, never the value).
    """
    import pyarrow as pa

    file_columns, cols, batches = _open_batches(
        stat,
        source,
        label=label,
        file_format=file_format,
        column=column,
        options=options,
        block_bytes=block_bytes,
    )
    from snapcore.releases._partials import merge, partial

    merged: Partial | None = None
    try:
        for batch in batches:
            p = _block_partial(
                stat,
                _columns(batch),
                cols,
                batch.num_rows,
                column=column,
                data_bounds=data_bounds,
                options=options,
                policy=policy,
            )
            merged = p if merged is None else merge([merged, p], statistic=stat)
    except pa.ArrowInvalid as exc:
        raise DataError(_conversion_message(str(exc), file_columns, label)) from None
    if merged is None:  # no records
        empty = {c: np.empty(0) for c in cols}
        merged = partial(stat, empty, column=column, data_bounds=data_bounds, **options)
    return merged


def stream_group_partials(
    stat: Statistic,
    source: IO[bytes] | str,
    *,
    by: str,
    keys: Sequence[Any],
    label: str,
    file_format: str,
    column: Any,
    data_bounds: Any,
    options: dict[str, Any],
    block_bytes: int = BLOCK_BYTES,
    policy: MissingPolicy | None = None,
) -> dict[Any, Partial]:
    """One merged partial state per key of ``keys``: the records whose ``by`` field
    equals the key (exact-value matching, each CSV field read by :func:`cell`, as the
    whole-file reader does), read block by block; a key with no records gets the empty
    state, and records of other keys (or with a missing key) are in no state.  The
    result is what :func:`snapcore.release` takes with ``by=`` and ``keys=``.

    Raises
    ------
    DataError
        As :func:`stream_partial`, and when the ``by`` column is not there.
    """
    import pyarrow as pa

    from snapcore.data._values import category_key, is_missing

    file_columns, cols, batches = _open_batches(
        stat,
        source,
        label=label,
        file_format=file_format,
        column=column,
        options=options,
        block_bytes=block_bytes,
        by=by,
    )
    index = {category_key(k): i for i, k in enumerate(keys)}
    from snapcore.releases._partials import merge, partial

    merged: list[Partial | None] = [None] * len(keys)
    try:
        for batch in batches:
            block = _columns(batch)
            uniq, inverse = np.unique(block[by].astype(object).astype(str), return_inverse=True)
            raw = {str(u): u for u in block[by].tolist()}  # parquet: the values themselves
            where = np.full(len(uniq), -1, dtype=np.int64)
            for j, u in enumerate(uniq.tolist()):
                v = raw.get(u, u)
                v = cell(v) if isinstance(v, str) else v
                if v is None or is_missing(v):
                    continue
                with contextlib.suppress(ParameterError):  # a value no key can equal
                    where[j] = index.get(category_key(v), -1)
            group = where[inverse.reshape(-1)]
            for i in range(len(keys)):
                rows = np.flatnonzero(group == i)
                if rows.size == 0:
                    continue
                sub = {c: block[c][rows] for c in cols}
                p = _block_partial(
                    stat,
                    sub,
                    cols,
                    int(rows.size),
                    column=column,
                    data_bounds=data_bounds,
                    options=options,
                    policy=policy,
                )
                got = merged[i]
                merged[i] = p if got is None else merge([got, p], statistic=stat)
    except pa.ArrowInvalid as exc:
        raise DataError(_conversion_message(str(exc), file_columns, label)) from None
    empty = {c: np.empty(0) for c in cols}
    out: dict[Any, Partial] = {}
    for k, m in zip(keys, merged, strict=True):
        out[k] = (
            m
            if m is not None
            else partial(stat, empty, column=column, data_bounds=data_bounds, **options)
        )
    return out


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
