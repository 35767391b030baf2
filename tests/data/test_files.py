"""Reading CSV and Parquet files in blocks of columns (snapcore.data._files), and the
rule for one CSV field.

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

from snapcore.data._files import cell, csv_header, read_csv_table
from snapcore.errors import DataError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from snapcore.data._files import (  # noqa: E402
    _arrow_columns,
    csv_blocks,
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


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("7", 7),
        (" -12 ", -12),
        (str(2**80 + 1), 2**80 + 1),  # integer text stays exact, beyond 2**53
        ("0.1", Fraction(3602879701896397, 36028797018963968)),  # the double nearest 1/10
        ("1.0", Fraction(1)),
        ("2.5e-3", Fraction(5764607523034235, 2305843009213693952)),
        ("", None),
        ("nan", None),
        ("NaN", None),
        ("inf", "inf"),
        ("1e400", "1e400"),
        ("abc", "abc"),
        ("1.0.0", "1.0.0"),
    ],
)
def test_cell_reads_each_field_on_its_own(text, want):
    got = cell(text)
    if isinstance(want, Fraction):
        assert type(got) is float and Fraction(got) == want
    else:
        assert got == want and type(got) is type(want)


def test_csv_header_refuses_empty_non_utf8_and_duplicate_headers() -> None:
    assert csv_header(io.BytesIO(b" a ,b\n1,2\n"), "f") == ["a", "b"]
    for text, needle in ((b"", "is empty"), (b"\xff,b\n", "UTF-8"), (b"a,a\n", "duplicate")):
        with pytest.raises(DataError, match=needle):
            csv_header(io.BytesIO(text), "f")


def test_csv_blocks_read_the_columns_asked_for_in_blocks() -> None:
    rows = [f"{i * 0.25!r},{i},k{i % 3}" for i in range(5000)]
    fh = io.BytesIO(("x,n,key\n" + "\n".join(rows) + "\n").encode())
    header = csv_header(fh, "f")
    blocks = list(
        csv_blocks(fh, header, {"x": "number", "key": "text"}, label="f", block_bytes=4096)
    )
    assert len(blocks) > 1 and all(set(b.columns) == {"x", "key"} for b in blocks)
    assert sum(b.rows for b in blocks) == 5000
    assert all(len(b.columns["x"]) == b.rows for b in blocks)
    x = np.concatenate([b.columns["x"] for b in blocks])
    assert x.dtype == np.float64 and x.tolist() == [i * 0.25 for i in range(5000)]
    keys = np.concatenate([b.columns["key"] for b in blocks]).tolist()
    assert keys == [f"k{i % 3}" for i in range(5000)]


def test_csv_blocks_name_the_column_never_the_value() -> None:
    fh = io.BytesIO(b"a,b\n1,2\n3,secret\n")
    header = csv_header(fh, "file d.csv")
    with pytest.raises(DataError) as info:
        list(csv_blocks(fh, header, {"a": "number", "b": "number"}, label="file d.csv"))
    assert "'b'" in str(info.value) and "secret" not in str(info.value)
    fh = io.BytesIO(b"a,b\n1,2\n3\n")
    header = csv_header(fh, "file d.csv")
    with pytest.raises(DataError, match=r"cannot read file d\.csv"):
        list(csv_blocks(fh, header, {"a": "number"}, label="file d.csv"))


def test_parquet_blocks_read_the_columns_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    table = pa.table({"x": np.arange(10, dtype=np.float64) / 8, "s": list("abcdefghij")})
    pq.write_table(table, path, row_group_size=3)
    assert parquet_columns(str(path)) == ["x", "s"]
    blocks = list(parquet_blocks(str(path), ["x"], label="d"))
    assert [set(b.columns) for b in blocks] == [{"x"}] * len(blocks)
    assert sum(b.rows for b in blocks) == 10
    assert (
        np.concatenate([b.columns["x"] for b in blocks]).tolist() == (np.arange(10) / 8).tolist()
    )


def test_read_csv_table_reads_a_column_when_asked_for_and_as_every_field_is(tmp_path):
    import csv

    text = "a,b,c\n1,2.5,x\n,nan,  7 \n-3,1e400,0.1\n"
    (tmp_path / "t.csv").write_text(text)
    with (tmp_path / "t.csv").open(newline="") as fh:
        table = read_csv_table(fh, "t")
    assert list(table) == ["a", "b", "c"] and len(table) == 3
    assert table._read == {}  # nothing converted yet
    rows = list(csv.reader(text.splitlines()))[1:]
    for name in ["c", "a", "b"]:
        expected = [cell(r[["a", "b", "c"].index(name)]) for r in rows]
        assert table[name] == expected
        assert table[name] is table[name]  # converted once
    assert table["a"] == [1, None, -3] and table["b"] == [2.5, None, "1e400"]
    with pytest.raises(KeyError):
        table["d"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "t is empty"),
        ("a,a\n1,2\n", "duplicate column names"),
        ("a,b\n1\n", "a row has 1 fields, the header has 2"),
    ],
)
def test_read_csv_table_refuses_what_it_cannot_read(text, message):
    with pytest.raises(DataError, match=message):
        read_csv_table(io.StringIO(text), "t")


def test_both_csv_readers_name_the_columns_alike() -> None:
    text = "x, y ,z\n1,2,3\n"
    assert list(read_csv_table(io.StringIO(text), "t")) == ["x", "y", "z"]
    assert csv_header(io.BytesIO(text.encode()), "t") == ["x", "y", "z"]
    with pytest.raises(DataError, match="duplicate column names"):
        read_csv_table(io.StringIO("a, a\n1,2\n"), "t")


def test_read_csv_table_refuses_text_that_is_not_utf8():
    fh = io.TextIOWrapper(io.BytesIO(b"a\n\xff\n"), encoding="utf-8", newline="")
    with pytest.raises(DataError, match="not a UTF-8 CSV file"):
        read_csv_table(fh, "t")
