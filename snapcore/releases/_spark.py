"""Spark data frames: one partial state per partition, on the executors.

Each partition's records are read where they are: Spark hands them to a Python
function on the executor as Arrow record batches (``mapInArrow``), each batch is read
by the rules of every other input (``arrow_columns`` of :mod:`snapcore.data._frames`,
then :func:`snapcore.data.as_dataset` and the missing-value policy), and the batches'
partial states are merged there (consecutive batches are joined, as Arrow data, into
chunks of up to ``CHUNK_ROWS`` records first: Spark's batches hold 10,000 records by
default).  Each partition sends back one row per group (one in
all without ``by=``): the group's index and its state, written as text
(:func:`encode_state`: hexadecimal integers, so the text is exact and the same for the
same state).  No record and no column leaves an executor.  The driver reads the rows
back, checks them (:func:`decode_state` refuses anything but a state's text), merges
the states of each group, and releases once.  Integer addition is exact, so the
merged state, and for the same draws the release, is the same however Spark split
the records (docs/scaling.md, "Spark").

A failure on an executor comes back as a row too, never as Spark's traceback: a
snapcore error keeps its class (the nearest one snapcore defines), its message (which
never carries data) and its parameter; any other exception is reported by its type
alone (:class:`~snapcore.errors.WorkerError`).  pyspark is imported by the caller's
data frame, never by this module.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from snapcore.data._columns import (
    CHUNK_ROWS,
    Dataset,
    as_dataset,
    column_keys,
    column_records,
)
from snapcore.data._frames import arrow_columns
from snapcore.data._missing import MissingPolicy
from snapcore.data._values import key_positions
from snapcore.errors import (
    BackendUnavailableError,
    DataError,
    MissingValueError,
    ParameterError,
    SnapcoreError,
    WorkerError,
)
from snapcore.plugins._statistic import DataBounds, State, Statistic, accumulate

__all__ = ["decode_state", "encode_state", "spark_group_states", "spark_state"]

#: The rows a partition sends to the driver: per group, its index and state (or the
#: error that stopped the partition, with ``group`` -1).
ROW_SCHEMA = "group long, state string, error string"

#: snapcore's errors a partition's failure is reported as: the first of these among
#: the error's classes (most derived first).
_ERRORS: tuple[type[SnapcoreError], ...] = (
    MissingValueError,
    DataError,
    ParameterError,
    BackendUnavailableError,
    WorkerError,
    SnapcoreError,
)

_INT = re.compile(r"-?[0-9a-f]+")


def encode_state(state: State) -> str:
    """A state as text: a JSON list with one string per item, an int in hexadecimal
    (``"-1f"``), a Fraction as two (``"3/-4"`` never: the denominator is positive).

    Hexadecimal keeps the text exact at any size (Python limits decimal conversion of
    long integers, never hexadecimal) and the same for equal states.
    """
    items: list[str] = []
    for v in state:
        if isinstance(v, bool) or not isinstance(v, int | Fraction):
            raise SnapcoreError(
                f"a partial state holds ints and Fractions, got {type(v).__name__}"
            )
        if isinstance(v, Fraction):
            items.append(f"{v.numerator:x}/{v.denominator:x}")
        else:
            items.append(f"{v:x}")
    return json.dumps(items)


def _bad_state() -> SnapcoreError:
    return SnapcoreError("a partial state sent by a Spark executor could not be read")


def decode_state(text: Any) -> State:
    """The state :func:`encode_state` wrote (a SnapcoreError for any other text)."""
    if not isinstance(text, str):
        raise _bad_state()
    try:
        items = json.loads(text)
    except ValueError:
        raise _bad_state() from None
    if not isinstance(items, list):
        raise _bad_state()
    out: list[int | Fraction] = []
    for item in items:
        if not isinstance(item, str):
            raise _bad_state()
        num, slash, den = item.partition("/")
        if not _INT.fullmatch(num) or (slash and not _INT.fullmatch(den)):
            raise _bad_state()
        if not slash:
            out.append(int(num, 16))
            continue
        d = int(den, 16)
        if d <= 0:
            raise _bad_state()
        q = Fraction(int(num, 16), d)
        if (q.numerator, q.denominator) != (int(num, 16), d):  # not in lowest terms
            raise _bad_state()
        out.append(q)
    return tuple(out)


def _error_text(exc: BaseException, stat: Statistic) -> str:
    """The error a partition reports: a snapcore error's nearest snapcore class, message
    and parameter; any other exception's type name only."""
    if isinstance(exc, SnapcoreError):
        cls = next(c for c in _ERRORS if isinstance(exc, c))
        parameter = exc.parameter if isinstance(exc, ParameterError) else None
        return json.dumps({"type": cls.__name__, "message": str(exc), "parameter": parameter})
    message = (
        f"computing a partial state of statistic {stat.name!r} failed on a Spark executor "
        f"with {type(exc).__name__}; its message is withheld because it may contain data "
        "values"
    )
    return json.dumps({"type": "WorkerError", "message": message, "parameter": None})


def _raise_error(text: Any) -> None:
    """Raise the error a partition reported (a SnapcoreError if it cannot be read)."""
    try:
        info = json.loads(text)
        cls = {c.__name__: c for c in _ERRORS}[info["type"]]
        message, parameter = info["message"], info["parameter"]
        if not isinstance(message, str) or not isinstance(parameter, str | None):
            raise TypeError
    except (ValueError, TypeError, KeyError):
        raise SnapcoreError("a Spark executor reported an error that could not be read") from None
    if issubclass(cls, ParameterError):
        raise cls(message, parameter=parameter)
    raise cls(message)


@attrs.frozen(kw_only=True)
class _Task:
    """What each partition computes: sent to the executors (pickled by Spark)."""

    stat: Statistic
    data_bounds: DataBounds | None
    column: Any
    options: Mapping[str, Any]
    policy: MissingPolicy
    by: str | None = None
    keys: tuple[Any, ...] = ()
    #: Records read at once: consecutive batches are joined (as Arrow data, their
    #: types kept) up to this many records before their state is computed.
    chunk_rows: int = CHUNK_ROWS

    @property
    def groups(self) -> int:
        """The number of states a partition sends: one per key, or one."""
        return len(self.keys) if self.by is not None else 1

    def empty_state(self) -> State:
        """The state of no records."""
        return accumulate(self.stat, (), data_bounds=self.data_bounds, **dict(self.options))

    def batch_states(self, columns: dict[str, np.ndarray], rows: int) -> list[State]:
        """The states of one batch's records (``columns``: the batch's columns)."""
        stat, opts = self.stat, dict(self.options)
        if self.by is None:
            subs = [_dataset(columns, self.column, stat.columns, rows)]
        else:
            by_arr = column_records(columns[self.by])
            if not stat.columns and self.column is None:
                columns = {}  # only the number of records is read
            ds = _dataset(columns, self.column, stat.columns, rows)
            group = key_positions(by_arr, self.keys)
            subs = ds.take_groups(group, len(self.keys))
        return [
            accumulate(
                stat, s.apply_missing(self.policy).chunks(), data_bounds=self.data_bounds, **opts
            )
            for s in subs
        ]

    def run(self, batches: Iterable[Any]) -> Iterator[Any]:
        """One partition: its batches' states merged, or its error; as one record batch."""
        import pyarrow as pa

        stat = self.stat
        try:
            states: list[State] | None = None
            pending: list[Any] = []
            for batch in itertools.chain(batches, [None]):
                if batch is not None and batch.num_rows:
                    pending.append(batch)
                if not pending:
                    continue
                rows = sum(b.num_rows for b in pending)
                if batch is not None and rows < self.chunk_rows:
                    continue
                got = self.batch_states(_joined(pending), rows)
                states = got if states is None else list(map(stat.merge, states, got))
                pending = []
            if states is None:
                states = [self.empty_state()] * self.groups
            rows = {
                "group": list(range(self.groups)),
                "state": [encode_state(s) for s in states],
                "error": [None] * self.groups,
            }
        except Exception as exc:
            rows = {"group": [-1], "state": [None], "error": [_error_text(exc, stat)]}
        schema = pa.schema([("group", pa.int64()), ("state", pa.string()), ("error", pa.string())])
        yield pa.RecordBatch.from_pydict(rows, schema=schema)


def _joined(batches: list[Any]) -> dict[str, np.ndarray]:
    """The columns of consecutive record batches, joined as Arrow data (each column
    keeps its Arrow type) and read by ``arrow_columns``."""
    if len(batches) == 1 or not batches[0].num_columns:
        return arrow_columns(batches[0]) if len(batches) == 1 else {}
    import pyarrow as pa

    (joined,) = pa.Table.from_batches(batches).combine_chunks().to_batches()
    return arrow_columns(joined)


def _dataset(columns: dict[str, np.ndarray], column: Any, count: int, rows: int) -> Dataset:
    """The dataset a statistic reads from one batch's columns (by the rules of
    :func:`~snapcore.data.as_dataset`); with no column to read, its records alone."""
    if not columns:
        return Dataset([], [], rows)
    return as_dataset(columns, column=column, columns=count)


def _select(sdf: Any, names: list[str]) -> Any:
    """``sdf`` narrowed to ``names`` (in order, each once), each checked to exist."""
    available = list(sdf.columns)
    missing = [c for c in names if c not in available]
    if missing:
        raise ParameterError(
            f"column {missing[0]!r} not found; available columns: {available}",
            parameter="column",
        )
    return sdf.select(*dict.fromkeys(names))


def _check_shape(stat: Statistic, names: list[str], column: Any) -> None:
    """The shape checks of :func:`~snapcore.data.as_dataset` on the columns the
    executors will read, on the driver, before any Spark job runs."""
    as_dataset({n: np.empty(0) for n in names}, column=column, columns=stat.columns)


def _collect(task: _Task, sdf: Any) -> list[State]:
    """Run ``task`` on every partition of ``sdf``; the merged state of each group."""
    rows = sdf.mapInArrow(task.run, ROW_SCHEMA).collect()
    merged: list[State | None] = [None] * task.groups
    for row in rows:
        if row["error"] is not None:
            _raise_error(row["error"])
    for row in rows:
        g = row["group"]
        if not isinstance(g, int) or not 0 <= g < task.groups:
            raise _bad_state()
        s, before = decode_state(row["state"]), merged[g]
        merged[g] = s if before is None else task.stat.merge(before, s)
    empty = task.empty_state()
    return [empty if s is None else s for s in merged]


def spark_state(
    stat: Statistic,
    sdf: Any,
    *,
    data_bounds: DataBounds | None,
    column: Any,
    options: Mapping[str, Any],
    policy: MissingPolicy,
) -> State:
    """Merged state of a Spark data frame: one partial per partition, on the executors.

    Parameters
    ----------
    stat : Statistic
        A mergeable statistic.
    sdf : pyspark.sql.DataFrame
        The records (classic Spark or Spark Connect).
    data_bounds, options
        As for :meth:`Statistic.partial`.
    column : str, sequence of str, or None
        The columns the statistic reads; None: every column of ``sdf`` (as for a
        data frame in memory).
    policy : MissingPolicy
        The missing-value policy, applied to each record on the executors.

    Raises
    ------
    ParameterError
        A column that is not there, the wrong number of columns (before any Spark job
        runs), or any refusal of the data on an executor (its message names a column and
        a rule, never a value).
    """
    keys = column_keys(column)
    names = list(sdf.columns) if keys is None else keys
    _check_shape(stat, names, column)
    if keys is not None:
        sdf = _select(sdf, keys)
    elif not stat.columns and names:
        sdf = _select(sdf, names[:1])  # only the number of records is read
    task = _Task(stat=stat, data_bounds=data_bounds, column=column, options=options, policy=policy)
    return _collect(task, sdf)[0]


def spark_group_states(
    stat: Statistic,
    sdf: Any,
    *,
    by: str,
    keys: tuple[Any, ...],
    data_bounds: DataBounds | None,
    column: Any,
    options: Mapping[str, Any],
    policy: MissingPolicy,
) -> list[State]:
    """The merged state of each key's records of a Spark data frame, in key-set order:
    one partial state per key and partition, on the executors (see
    :func:`spark_state`; records whose ``by`` value is not a key are left out)."""
    if by not in list(sdf.columns):
        raise DataError(
            f"column {by!r} not found (by={by!r}); available columns: {list(sdf.columns)}",
            parameter="by",
        )
    wanted = column_keys(column)
    names = list(sdf.columns) if wanted is None else wanted
    if stat.columns or wanted is not None:
        _check_shape(stat, names, column)
        sdf = _select(sdf, [by, *names])
    else:
        sdf = _select(sdf, [by])
    task = _Task(
        stat=stat,
        data_bounds=data_bounds,
        column=column,
        options=options,
        policy=policy,
        by=by,
        keys=keys,
    )
    return _collect(task, sdf)
