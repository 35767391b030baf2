"""Data frames of any library as snapcore data: pandas, polars, pyarrow and more.

pandas objects, NumPy arrays, Python sequences and mappings are read by
:func:`snapcore.data.as_dataset` directly.  Every other data frame that narwhals
(Gorelli et al., a dependency-free layer over pandas, polars, pyarrow, modin, cuDF
and others) recognises is turned into a mapping of column name to NumPy array:
lazy frames (polars ``LazyFrame``) are narrowed to the columns the statistic reads
and collected, and each column becomes a NumPy array without a copy where the
library allows it (a numeric column without missing values, in one chunk).  Each
column keeps its declared type: an integer column with nulls becomes Python ints
with None at each null (:func:`series_records`), never float64.  pyarrow arrays and
record batches are read as chunked arrays and tables, dictionary-encoded columns as
their values.  The values are then read by the same rules as every other input, so
the same data in any library give the same dataset and, for the same draws, the same
release.

Dask and Spark data frames are not read here: :mod:`snapcore.releases._partials` and
:mod:`snapcore.releases._spark` compute one partial state per partition on the workers
(Spark's executors read their Arrow batches with :func:`arrow_columns`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from snapcore.data._columns import Dataset, as_dataset, column_keys
from snapcore.data._files import arrow_columns
from snapcore.data._missing import with_nulls
from snapcore.errors import ParameterError

__all__ = [
    "arrow_columns",
    "is_dask",
    "is_local_frame",
    "is_spark",
    "read_dataset",
    "series_records",
    "to_columns",
]

# Libraries read directly by as_dataset (no conversion).
_DIRECT = ("pandas", "numpy", "builtins")


def _library(obj: Any) -> str:
    return type(obj).__module__.split(".", 1)[0]


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection (read partition by partition)."""
    return _library(obj) in ("dask", "dask_expr") and hasattr(obj, "to_delayed")


def is_spark(obj: Any) -> bool:
    """Whether ``obj`` is a Spark data frame (classic or Spark Connect), recognised by its
    type's module without importing pyspark."""
    return _library(obj) == "pyspark" and hasattr(obj, "mapInArrow")


def _direct(obj: Any) -> bool:
    """Whether :func:`~snapcore.data.as_dataset` reads ``obj`` as it is (no conversion)."""
    return isinstance(obj, np.ndarray | Mapping | Sequence) or _library(obj) in _DIRECT


def to_columns(data: Any, column: Any = None) -> Any:
    """``data`` itself if :func:`~snapcore.data.as_dataset` reads it, otherwise a
    mapping of column name to NumPy array (only the named columns, if ``column`` is
    given), or a NumPy array for a one-column series.

    Raises
    ------
    ParameterError
        If the object is not a data frame or series narwhals recognises, or a named
        column is missing.
    """
    if _direct(data):
        return data
    data = _arrow_table(data)
    try:
        import narwhals.stable.v1 as nw
    except ImportError:  # pragma: no cover - narwhals is a dependency
        return data
    frame = nw.from_native(data, allow_series=True, pass_through=True)
    if frame is data:
        return data  # not a frame narwhals knows: as_dataset says what it accepts
    if isinstance(frame, nw.Series):
        return series_records(frame)
    keys = column_keys(column)
    names = list(frame.columns)
    if keys is not None:
        missing = [k for k in keys if k not in names]
        if missing:
            raise ParameterError(f"column {missing[0]!r} not found; available columns: {names}")
        frame = frame.select(keys)
        names = keys
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    out = {name: series_records(frame.get_column(name)) for name in names}
    if not names:  # a frame without columns still has a number of records
        return _Sized(len(frame))
    return out


def _arrow_table(data: Any) -> Any:
    """A pyarrow ``Array`` as a ``ChunkedArray`` and a ``RecordBatch`` as a ``Table``
    (the forms narwhals reads), dictionary-encoded columns decoded into their values
    (read by the values' type); anything else as given."""
    if _library(data) != "pyarrow":
        return data
    import pyarrow as pa

    if isinstance(data, pa.Array):
        data = pa.chunked_array([data], type=data.type)
    elif isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.ChunkedArray):
        return _decoded(pa, data)
    if isinstance(data, pa.Table):
        return pa.table({name: _decoded(pa, data.column(name)) for name in data.column_names})
    return data


def _decoded(pa: Any, col: Any) -> Any:
    """A pyarrow ChunkedArray with its dictionary chunks decoded into their values."""
    if not pa.types.is_dictionary(col.type):
        return col
    return pa.chunked_array([c.dictionary_decode() for c in col.chunks], type=col.type.value_type)


def series_records(series: Any) -> np.ndarray:
    """The records of a narwhals series as a 1-D NumPy array, each read by the
    series' declared type.

    An integer series with nulls becomes Python ints with None at each null
    (:func:`~snapcore.data._missing.with_nulls`), never float64 with NaN: the nulls
    reach the missing-value policy, and every other record stays exact.  Integers
    NumPy has no dtype for (polars ``Int128``) are read as Python ints one by one.
    """
    if series.dtype.is_integer():
        try:
            nulls = np.asarray(series.is_null().to_numpy(), dtype=bool)
            values = np.asarray(series.fill_null(0).to_numpy())
        except Exception:  # no NumPy dtype for these integers: Python ints, None at nulls
            out = np.empty(len(series), dtype=object)
            out[:] = series.to_list()
            return out
        if values.dtype.kind not in "iu":
            raise ParameterError(
                f"column {series.name!r}: an integer column read as {values.dtype}, not "
                "as integers"
            )
        return with_nulls(values, nulls)
    return np.asarray(series.to_numpy())


class _Sized(dict[str, Any]):
    """An empty mapping that remembers a number of records."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size


def read_dataset(data: Any, *, column: Any = None, columns: int = 1) -> Dataset:
    """:func:`~snapcore.data.as_dataset` for any data frame (see the module)."""
    if is_dask(data):
        raise ParameterError(
            "a Dask collection is released partition by partition: pass it to "
            "snapcore.release or snapcore.partial"
        )
    if is_spark(data):
        raise ParameterError(
            "a Spark DataFrame is released partition by partition, on the executors: pass "
            "it to snapcore.release or snapcore.partial"
        )
    table = to_columns(data, column)
    if isinstance(table, _Sized):
        if columns:
            raise ParameterError(f"this statistic reads {columns} column(s); the table has 0")
        return Dataset([], [], table.size)
    return as_dataset(table, column=column, columns=columns)


def is_local_frame(obj: Any) -> bool:
    """Whether ``obj`` is a data frame held in this process that :func:`to_columns`
    turns into columns: polars (eager or lazy), pyarrow, or any eager frame narwhals
    knows; not pandas (read as it is), nor a distributed frame (Dask, Spark), which is
    read partition by partition where it lives."""
    if _direct(obj):
        return False
    if _library(obj) in ("polars", "pyarrow"):
        return True
    try:
        import narwhals.stable.v1 as nw
    except ImportError:  # pragma: no cover - narwhals is a dependency
        return False
    return nw.from_native(obj, eager_only=True, pass_through=True) is not obj
