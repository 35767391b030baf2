"""Reading CSV and Parquet files in blocks of records (snapcore.data._files): the
grammar of one CSV cell (docs/semantics.md, "Values that enter"), the pieces of whole
records, and the refusals.

Numeric Arrow columns without nulls are viewed in place over Arrow's buffers; the view
must honour the column's offset (a sliced batch) and type, and every other column must
go through Arrow's own conversion.
"""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from snapcore.data._files import CsvReader, cell, read_csv, sniff_parquet, spool
from snapcore.errors import DataError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from snapcore.data._files import (  # noqa: E402
    _arrow_columns,
    _records_arrow,
    parquet_blocks,
    parquet_columns,
)

TYPES = ["float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint8"]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("start", [0, 1, 5])
def test_numeric_columns_are_read_exactly_at_any_offset(type_name: str, start: int) -> None:
    typ = getattr(pa, type_name)()
    dtype = np.dtype(type_name)
    values = np.arange(11, dtype=np.float64) * 3 + 1
    if dtype.kind == "f":
        values = values / 4  # dyadic: exact in every float width
    batch = pa.record_batch([pa.array(values.astype(dtype), type=typ)], names=["x"])
    got = _arrow_columns(batch.slice(start, 4))["x"]
    assert got.dtype == dtype
    assert got.tolist() == values.astype(dtype)[start : start + 4].tolist()


def test_columns_with_nulls_or_other_types_use_arrows_conversion() -> None:
    batch = pa.record_batch(
        [pa.array([1.5, None, 2.5]), pa.array(["a", "b", "c"]), pa.array([True, False, True])],
        names=["f", "s", "b"],
    )
    cols = _arrow_columns(batch.slice(1))
    assert np.isnan(cols["f"][0]) and cols["f"][1] == 2.5
    assert cols["s"].tolist() == ["b", "c"]
    assert cols["b"].tolist() == [False, True]


