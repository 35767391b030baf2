"""A statistic's records, or its merged partial state, over a CSV or Parquet file (or
standard input), block by block.

The file is read in blocks of records (:mod:`snapcore.data._files`: one reader and one
grammar for every CSV source, whatever its size), only the columns the statistic
reads, and each block is folded into the statistic's exact partial state
(:mod:`snapcore.releases._partials`).  Peak memory is a few blocks, whatever the
file's size; the state, hence the release for the same draws, is the one of the whole
file read at once.  A statistic that cannot merge partial states gets its columns
joined from the same blocks (:func:`read_columns`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from snapcore.data._files import (
    BLOCK_BYTES,
    Block,
    CsvReader,
    join_blocks,
    parquet_blocks,
    parquet_columns,
)
from snapcore.errors import DataError, ParameterError, keyword

if TYPE_CHECKING:
    from snapcore.data._missing import MissingPolicy
    from snapcore.plugins._statistic import Statistic
    from snapcore.releases._partials import Partial

__all__ = ["read_columns", "stream_group_partials", "stream_partial"]


def _needed(stat: Statistic, column: Any, header: Sequence[str]) -> list[str]:
    """The columns the statistic reads (none for one that counts records only)."""
    if column is None:
        if stat.columns == 0:
            return []  # only the number of records is used
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


#: The column a statistic that reads none is given: one placeholder per record.
RECORDS = "records"


def _open_blocks(
    stat: Statistic,
    source: IO[bytes] | str,
    *,
    label: str,
    file_format: str,
    column: Any,
    block_bytes: int,
    by: str | None = None,
) -> tuple[list[str], Iterator[Block]]:
    """(the statistic's columns, the file's blocks, in those columns and ``by``); a
    statistic that reads no column gets :data:`RECORDS`, one placeholder per record,
    so no cell it does not read can refuse its data."""
    if file_format == "parquet":
        file_columns = parquet_columns(source, label=label)
    else:
        assert not isinstance(source, str)
        reader = CsvReader(source, label=label, block_bytes=block_bytes)
        file_columns = reader.header
    cols = _needed(stat, column, file_columns)
    _has_by(by, file_columns)
    wanted = _with_by(cols, by)
    blocks = (
        parquet_blocks(source, wanted, label=label)
        if file_format == "parquet"
        else reader.blocks(wanted)
    )
    if cols:
        return cols, blocks
    return [RECORDS], _placeholders(blocks)


def _with_by(cols: list[str], by: str | None) -> list[str]:
    """The columns ``cols`` and, if not among them, ``by``."""
    return cols + ([by] if by is not None and by not in cols else [])


def _placeholders(blocks: Iterator[Block]) -> Iterator[Block]:
    for b in blocks:
        yield Block(b.rows, {**b.columns, RECORDS: np.zeros(b.rows, dtype=np.int8)})


def read_columns(
    stat: Statistic,
    source: IO[bytes] | str,
    *,
    label: str,
    file_format: str,
    column: Any,
    block_bytes: int = BLOCK_BYTES,
    by: str | None = None,
    need_records: bool = False,
) -> dict[str, np.ndarray]:
    """The records of the columns ``stat`` reads (and ``by``), joined from the blocks:
    for a statistic that cannot merge partial states (``need_records``: as for
    :func:`stream_partial`).

    Raises
    ------
    DataError
        As :func:`stream_partial`.
    """
    cols, blocks = _open_blocks(
        stat,
        source,
        label=label,
        file_format=file_format,
        column=column,
        block_bytes=block_bytes,
        by=by,
    )
    wanted = _with_by(cols, by)
    out = join_blocks(blocks, wanted)
    if need_records and not len(out[wanted[0]]):
        raise no_records(label)
    return out


def no_records(label: str) -> DataError:
    """The error for a source without records, when the release takes n from the data."""
    return DataError(f"{label} has no records (a header line only): there is nothing to release")


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
    from snapcore.releases._partials import partial

    block = {c: block[c] for c in cols}
    if policy is not None and policy.kind != "error" and stat.columns:
        ds = Dataset([block[c] for c in cols], cols, size).apply_missing(policy)
        block = dict(zip(ds.names, ds.columns_as_given, strict=True))
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
    need_records: bool = False,
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
        release applies it to data held in memory (:meth:`snapcore.data.Dataset.apply_missing`).
    need_records : bool
        Refuse a source without records (a header line only), for a release whose
        number of records comes from the data.

    Raises
    ------
    DataError
        On a missing column, or a value that is not a number in a numeric column
        (the message names the column, never the value).
    """
    cols, blocks = _open_blocks(
        stat,
        source,
        label=label,
        file_format=file_format,
        column=column,
        block_bytes=block_bytes,
    )
    from snapcore.releases._partials import merge, partial

    merged: Partial | None = None
    for block in blocks:
        p = _block_partial(
            stat,
            block.columns,
            cols,
            block.rows,
            column=column,
            data_bounds=data_bounds,
            options=options,
            policy=policy,
        )
        merged = p if merged is None else merge([merged, p], statistic=stat)
    if merged is None:  # no records
        if need_records:
            raise no_records(label)
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
    """One merged partial state per key of ``keys``: the records whose ``by`` record
    equals the key (exact-value matching, :func:`~snapcore.data.category_key`), read
    block by block; a key with no records gets the empty
    state, and records of other keys (or with a missing key) are in no state.  The
    result is what :func:`snapcore.release` takes with ``by=`` and ``keys=``.

    Raises
    ------
    DataError
        As :func:`stream_partial`, and when the ``by`` column is not there.
    """
    from snapcore.data._values import key_positions

    cols, blocks = _open_blocks(
        stat,
        source,
        label=label,
        file_format=file_format,
        column=column,
        block_bytes=block_bytes,
        by=by,
    )
    from snapcore.releases._partials import merge, partial

    merged: list[Partial | None] = [None] * len(keys)
    for block in blocks:
        columns = block.columns
        records = columns[by]
        if records.dtype == object:  # text, or records of several types
            group = key_positions(records, keys)
        else:  # one NumPy type: each distinct value matched once
            uniq, inverse = np.unique(records, return_inverse=True)
            group = key_positions(uniq.astype(object), keys)[inverse.reshape(-1)]
        # the rows of each key, in order: one stable sort of the block, not one scan per key
        order = np.argsort(group, kind="stable")
        edges = np.searchsorted(group[order], np.arange(len(keys) + 1))
        for i in np.flatnonzero(np.diff(edges)).tolist():
            rows = order[edges[i] : edges[i + 1]]
            sub = {c: columns[c][rows] for c in cols}
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
    empty = {c: np.empty(0) for c in cols}
    out: dict[Any, Partial] = {}
    for k, m in zip(keys, merged, strict=True):
        out[k] = (
            m
            if m is not None
            else partial(stat, empty, column=column, data_bounds=data_bounds, **options)
        )
    return out
