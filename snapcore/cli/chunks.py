"""Read a CSV or Parquet file (or standard input) in chunks into a merged partial state.

The file is never held in memory: pyarrow's streaming CSV reader (or a Parquet file's
row batches) yields one block of records at a time, only the columns the statistic
reads are converted, and each block is folded into the statistic's exact partial
state (:mod:`snapcore.partials`).  Peak memory is a few blocks, whatever the file's
size; the state, hence the release for the same draws, is the one of the whole file
read at once.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np

from snapcore.dataset import Dataset
from snapcore.errors import DataError, ParameterError, keyword
from snapcore.missing import MissingPolicy, apply_missing
from snapcore.partials import Partial, merge, partial
from snapcore.statistic import Statistic

__all__ = ["BLOCK_BYTES", "pyarrow_available", "stream_partial"]

#: Bytes of CSV text per block (pyarrow's ``block_size``).
BLOCK_BYTES = 1 << 20


def pyarrow_available() -> bool:
    """Whether pyarrow (needed for chunked reading and for Parquet) is importable."""
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


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

    yield from pq.ParquetFile(source).iter_batches(columns=cols, batch_size=1 << 20)


def _columns(batch: Any) -> dict[str, np.ndarray]:
    return {
        name: batch.column(i).to_numpy(zero_copy_only=False)
        for i, name in enumerate(batch.schema.names)
    }


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
        release applies it to data held in memory (:func:`snapcore.missing.apply_missing`).

    Raises
    ------
    DataError
        On a missing column, or a value that is not a number in a numeric column
        (the message names the column, never the value).
    """
    import pyarrow as pa

    if file_format == "parquet":
        import pyarrow.parquet as pq

        file_columns = pq.ParquetFile(source).schema_arrow.names
        cols = _needed(stat, column, file_columns)
        batches = _parquet_batches(source, cols)
    else:
        assert not isinstance(source, str)
        file_columns = _header(source, label)
        cols = _needed(stat, column, file_columns)
        # Categories match by value: numbers as numbers (a cell 1.0 is the category 1),
        # so a column is read as text only when some category is text.
        cats = options.get("categories")
        numeric = cats is not None and all(
            isinstance(c, int | float) and not isinstance(c, bool) for c in cats
        )
        text = (cats is not None and not numeric) or stat.columns == 0
        kind = pa.string() if text else pa.float64()
        batches = _csv_batches(source, file_columns, {c: kind for c in cols}, block_bytes)
    merged: Partial | None = None
    try:
        for batch in batches:
            block = _columns(batch)
            if policy is not None and policy.kind != "error" and stat.columns:
                ds = apply_missing(Dataset([block[c] for c in cols], cols, batch.num_rows), policy)
                block = dict(zip(ds.names, ds._cols, strict=True))
            p = partial(stat, block, column=column, data_bounds=data_bounds, **options)
            merged = p if merged is None else merge([merged, p], statistic=stat)
    except pa.ArrowInvalid as exc:
        raise DataError(_conversion_message(str(exc), file_columns, label)) from None
    if merged is None:  # no records
        empty = {c: np.empty(0) for c in cols}
        merged = partial(stat, empty, column=column, data_bounds=data_bounds, **options)
    return merged


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
