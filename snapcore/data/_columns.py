"""Data as statistics see it: named columns of one length, validated without leaking.

:func:`as_dataset` accepts Python sequences, NumPy arrays, pandas Series and
DataFrames (pandas is never imported: it is recognised by duck typing) and mappings
of column name to values.  Errors about the data name the column and the kind of
problem, never a record, its position or its value.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from snapcore.data._missing import MissingPolicy, missing_mask
from snapcore.data._values import (
    CategoryKey,
    Column,
    category_keys,
    is_masked,
    read_column,
    unmasked,
)
from snapcore.errors import DataError, ParameterError, keyword, parameter_name

__all__ = ["CHUNK_ROWS", "Dataset", "as_dataset"]

#: Records per chunk when a statistic's partial states are accumulated in memory.
CHUNK_ROWS = 1 << 20

_T = TypeVar("_T")


def is_data_frame(obj: Any) -> bool:
    """Whether ``obj`` is a two-dimensional data frame (duck-typed as pandas': ``columns``
    and ``iloc``)."""
    return hasattr(obj, "columns") and hasattr(obj, "iloc") and getattr(obj, "ndim", 2) == 2


def _is_series(obj: Any) -> bool:
    return hasattr(obj, "to_numpy") and hasattr(obj, "iloc") and getattr(obj, "ndim", 1) == 1


def _length(obj: Any) -> int:
    return len(obj)


class Dataset:
    """Named columns of equal length; conversions check values without revealing them.

    Parameters
    ----------
    columns : sequence
        The column objects (array-likes), as given.
    names : sequence of str
        One name per column, used in error messages.
    size : int
        The number of records (also for zero columns).
    """

    __slots__ = ("_cols", "names", "size")

    def __init__(self, columns: Sequence[Any], names: Sequence[str], size: int) -> None:
        self._cols = tuple(columns)
        self.names = tuple(names)
        self.size = int(size)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<Dataset {self.size} records, columns {list(self.names)}>"

    @property
    def columns_as_given(self) -> tuple[Any, ...]:
        """The column objects as given (array-likes, unread), one per name."""
        return self._cols

    def arrays(self) -> list[np.ndarray]:
        """Every column as a 1-D NumPy array, no record converted: a NumPy column as
        given, any other as an array of its records (objects)."""
        return [column_records(c) for c in self._cols]

    def take(self, index: np.ndarray) -> Dataset:
        """The records at ``index`` (an integer array), as a new dataset."""
        return Dataset([arr[index] for arr in self.arrays()], self.names, int(index.size))

    def take_groups(self, group: np.ndarray, count: int) -> list[Dataset]:
        """``[self.take(np.flatnonzero(group == i)) for i in range(count)]`` (``group``
        holds each record's group, -1 for none), with each column converted once and
        the records sorted into their groups once, not once per group."""
        arrays = self.arrays()
        order = np.argsort(group, kind="stable")  # each group's records stay in order
        cuts = np.searchsorted(group[order], np.arange(count + 1)).tolist()
        return [
            Dataset([arr[order[a:b]] for arr in arrays], self.names, b - a)
            for a, b in itertools.pairwise(cuts)
        ]

    def apply_missing(self, policy: MissingPolicy) -> Dataset:
        """The records with the missing-value ``policy`` applied (``"error"`` leaves
        the refusal to the statistic, and returns this dataset): ``"drop"`` removes the
        records with a missing value in any column, ``"impute"`` replaces each missing
        value by the policy's constant."""
        if policy.kind == "error" or not self.names:
            return self
        arrays = self.arrays()  # each column converted once
        masks = [missing_mask(arr) for arr in arrays]
        if policy.kind == "drop":
            keep = ~np.logical_or.reduce(masks) if masks else np.ones(self.size, dtype=bool)
            index = np.flatnonzero(keep)
            return Dataset([arr[index] for arr in arrays], self.names, int(index.size))
        cols = []
        for arr, m in zip(arrays, masks, strict=True):
            if m.any():
                arr = arr.astype(object) if arr.dtype.kind != "O" else arr.copy()
                arr[m] = policy.constant
            cols.append(arr)
        return Dataset(cols, self.names, self.size)

    def chunks(self, rows: int = CHUNK_ROWS) -> Iterator[Dataset]:
        """The records in consecutive chunks of at most ``rows`` (views where possible).

        Statistics accumulate exact partial states chunk by chunk, so a chunk's
        float64 copy is all the extra memory a column needs.
        """
        if self.size <= rows:
            yield self
            return
        for start in range(0, self.size, rows):
            stop = min(start + rows, self.size)
            yield Dataset([_rows(c, start, stop) for c in self._cols], self.names, stop - start)

    def column(self, i: int) -> Column:
        """Column ``i`` read exactly, every record on its own (docs/semantics.md,
        "Values that enter").

        Returns
        -------
        snapcore.data._values.Column
            ``doubles`` (float64) when every record is exactly a double, else the exact
            ``ratios`` of every record.

        Raises
        ------
        ParameterError
            ``column 'x': every element must be a finite real number ...; got str``
            (the type only), or :class:`~snapcore.errors.MissingValueError` for None,
            NaN, pandas NA or NaT; never which record or its value.
        """
        return _as_data_error(read_column, self._cols[i], self.names[i])

    def float64_view(self, i: int) -> np.ndarray | None:
        """Column ``i`` as a read-only view of the caller's float64 array (a 1-D NumPy
        array or a pandas Series of dtype float64), else None.  Nothing is copied.

        **Not checked**: NaN and ±inf may be in it.  For compiled loops that refuse
        them themselves, in the same pass; on a refusal, :meth:`column` raises the
        error (which names the column, never a record).
        """
        obj = self._cols[i]
        if _is_series(obj) and not isinstance(obj, np.ndarray):
            if getattr(obj, "dtype", None) != np.float64:
                return None
            obj = obj.to_numpy()
        if (
            not isinstance(obj, np.ndarray)
            or is_masked(obj)  # its mask is not in the view
            or obj.dtype != np.float64
            or obj.ndim != 1
        ):
            return None
        view = obj.view()
        view.flags.writeable = False
        return view

    def numeric(self, i: int) -> np.ndarray:
        """Column ``i`` as finite float64 values, when every record is exactly a double.

        A record that is an exact real but not a double (an int beyond 2**53, a
        Fraction, a long double) is never rounded: use :meth:`column` to read it
        exactly; this method refuses it.

        Raises
        ------
        ParameterError
            As :meth:`column`, and if some record is not exactly a double.
        """
        col = self.column(i)
        if col.doubles is None:
            raise DataError(
                f"column {self.names[i]!r} holds exact values that are not doubles (ints "
                "beyond 2**53, Fractions, Decimals, long doubles); this statistic reads "
                "doubles and snapcore never rounds a value: give doubles, or read the "
                "column exactly with Dataset.column"
            )
        return col.doubles

    def categorical(self, i: int) -> list[CategoryKey]:
        """Column ``i`` as normalised category keys (:func:`snapcore.data.category_key`):
        numbers by exact value, strings as strings, bools as bools; each record on its own.

        Raises
        ------
        ParameterError
            For a record of any other type (the type only), or
            :class:`~snapcore.errors.MissingValueError` for missing values.
        """
        return _as_data_error(category_keys, self._cols[i], self.names[i])


def _as_data_error(read: Callable[[Any, str], _T], obj: Any, name: str) -> _T:
    """``read(obj, name)``, its ParameterErrors (about the data's content) as DataErrors."""
    try:
        return read(obj, name)
    except DataError:
        raise
    except ParameterError as exc:  # about the data's content: a data error
        message = str(exc)
    raise DataError(message)  # outside the handler: no chained context


def column_records(col: Any) -> np.ndarray:
    """A column's records as a 1-D NumPy array, none converted: a NumPy array as given
    (flattened), any other column as an array of its records (objects)."""
    if hasattr(col, "to_numpy"):
        return np.asarray(col.to_numpy(dtype=object), dtype=object).reshape(-1)
    if is_masked(col):
        return unmasked(col.reshape(-1))
    if isinstance(col, np.ndarray):
        return col.reshape(-1)
    return np.asarray(list(col), dtype=object).reshape(-1)


def _rows(obj: Any, start: int, stop: int) -> Any:
    return obj.iloc[start:stop] if hasattr(obj, "iloc") else obj[start:stop]


def table_column(data: Any, key: str, parameter: str = "column") -> Any:
    """The column ``key`` of ``data`` (a data frame or a mapping of columns), as given.

    Raises
    ------
    DataError
        If there is no such column: the message names the keyword ``parameter`` and
        the available columns.
    """
    try:
        return data[key]
    except (KeyError, IndexError, TypeError):
        pass
    available = list(data.columns) if is_data_frame(data) else list(data)
    raise DataError(
        f"column {key!r} not found ({keyword(parameter, key)}); available columns: {available}",
        parameter=parameter,
    )


def column_keys(column: Any) -> list[str] | None:
    """The column names ``column=`` asks for (a name or a sequence of names), or None."""
    if column is None:
        return None
    if isinstance(column, str):
        return [column]
    if isinstance(column, Sequence) and all(isinstance(c, str) for c in column):
        return list(column)
    raise ParameterError(
        f"{parameter_name('column')} must be a name or a sequence of names, got {column!r}",
        parameter="column",
    )


def as_dataset(data: Any, *, column: Any = None, columns: int = 1) -> Dataset:
    """Validate the shape of ``data`` and pick the columns a statistic reads.

    Parameters
    ----------
    data : sequence, numpy.ndarray, pandas Series or DataFrame, or mapping
        One column: a 1-D sequence/array or a Series.  Several columns: a 2-D
        array-like of shape (n, k), or a DataFrame/mapping with ``column`` naming them.
    column : str or sequence of str, optional
        Column name(s) to read from a DataFrame or mapping.
    columns : int
        How many columns the statistic reads (0: only the number of records).

    Returns
    -------
    Dataset

    Raises
    ------
    ParameterError
        If the shape does not fit; values are not looked at here.
    """
    keys = column_keys(column)
    if isinstance(data, str | bytes):
        raise ParameterError(
            f"data must be a sequence, array, Series, DataFrame or mapping, "
            f"got {type(data).__name__}"
        )
    table = is_data_frame(data) or isinstance(data, Mapping)
    if keys is not None:
        if not table:
            raise ParameterError(
                f"{keyword('column', column)} needs a DataFrame or a mapping of columns, "
                f"got {type(data).__name__}",
                parameter="column",
            )
        if columns and len(keys) != columns:
            raise ParameterError(
                f"this statistic reads {columns} column(s), got {keyword('column', column)}",
                parameter="column",
            )
        cols = [table_column(data, k) for k in keys]
        names = keys
    elif table:
        names = [str(c) for c in (data.columns if is_data_frame(data) else data)]
        if columns and len(names) != columns:
            raise ParameterError(
                f"this statistic reads {columns} column(s); the table has {len(names)}: "
                f"choose with {keyword('column')}...",
                parameter="column",
            )
        cols = [data[c] for c in (data.columns if is_data_frame(data) else data)]
        if not columns:
            size = len(data) if is_data_frame(data) else (_length(cols[0]) if cols else 0)
            return Dataset([], [], size)
    elif _is_series(data):
        cols, names = [data], [str(data.name) if data.name is not None else "data"]
    else:
        if not isinstance(data, np.ndarray | Sequence):
            try:
                data = list(data)
            except TypeError:
                raise ParameterError(
                    "data must be a sequence, array, Series, DataFrame or mapping, "
                    f"got {type(data).__name__}"
                ) from None
        arr = np.asarray(data, dtype=object) if not isinstance(data, np.ndarray) else data
        if arr.ndim == 1:
            cols, names = [data if isinstance(data, np.ndarray) else list(data)], ["data"]
        elif arr.ndim == 2:
            cols = [arr[:, j] for j in range(arr.shape[1])]
            names = [f"column {j}" for j in range(arr.shape[1])]
        else:
            raise ParameterError(f"data must be 1-D or 2-D, got {arr.ndim} dimensions")
    if columns == 0:
        return Dataset([], [], _length(cols[0]) if cols else 0)
    if len(cols) != columns:
        raise ParameterError(f"this statistic reads {columns} column(s), the data has {len(cols)}")
    sizes = {_length(c) for c in cols}
    if len(sizes) != 1:
        raise ParameterError(f"columns {names} must have the same length")
    for c, nm in zip(cols, names, strict=True):
        if getattr(c, "ndim", 1) != 1:
            raise ParameterError(f"column {nm!r} must be one-dimensional")
    return Dataset(cols, names, sizes.pop())
