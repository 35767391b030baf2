"""Reading CSV and Parquet files in blocks of records (snapcore.data._files): the
grammar of one CSV cell (docs/semantics.md, "Values that enter"), the pieces of whole
records, and the refusals.

Numeric Arrow columns without nulls are viewed in place over Arrow's buffers; the view
must honour the column's offset (a sliced batch) and type, and every other column must
go through Arrow's own conversion.
"""

from __future__ import annotations

import io
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from snapcore.data._files import CsvReader, cell, read_csv, sniff_parquet, spool
from snapcore.errors import DataError
from tests.helpers.csv_cases import canon, cells

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from snapcore.data._files import (  # noqa: E402
    _records_arrow,
    arrow_columns,
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
    got = arrow_columns(batch.slice(start, 4))["x"]
    assert got.dtype == dtype
    assert got.tolist() == values.astype(dtype)[start : start + 4].tolist()


def test_columns_with_nulls_or_other_types_use_arrows_conversion() -> None:
    batch = pa.record_batch(
        [pa.array([1.5, None, 2.5]), pa.array(["a", "b", "c"]), pa.array([True, False, True])],
        names=["f", "s", "b"],
    )
    cols = arrow_columns(batch.slice(1))
    assert np.isnan(cols["f"][0]) and cols["f"][1] == 2.5
    assert cols["s"].tolist() == ["b", "c"]
    assert cols["b"].tolist() == [False, True]


# -- the grammar of one cell -------------------------------------------------------------

D = Fraction  # a double's exact value, written as the rational it is


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("7", 7),
        (" -12\t", -12),
        ("+5", 5),
        ("007", 7),
        ("-0", 0),
        (str(2**53 + 1), 2**53 + 1),  # integer text stays exact, beyond 2**53
        (str(2**80 + 1), 2**80 + 1),
        ("0.1", D(3602879701896397, 36028797018963968)),  # the double nearest 1/10
        ("1.0", D(1)),
        ("1.", D(1)),
        (".5", D(1, 2)),
        ("+.5e-3", D(1152921504606847, 2305843009213693952)),  # the double nearest 1/2000
        ("1E5", D(100000)),
        ("2.5e-3", D(5764607523034235, 2305843009213693952)),
        ("4.9e-324", D(1, 2**1074)),  # the smallest subnormal
        ("1e-400", D(0)),  # underflow: the nearest double is zero
        ("9007199254740993.0", D(2**53)),  # a decimal, not an integer: rounded (to even)
        ("", None),
        (" \t ", None),
        ("nan", "nan"),  # no spelling of a non-finite number is a number
        ("-Infinity", "-Infinity"),
        ("NA", "NA"),  # nor a missing value: only an empty cell is
        ("NULL", "NULL"),
        ("1_000", "1_000"),  # digit separators: text
        ("١٢", "١٢"),  # non-ASCII digits: text
        ("\u00a01", "\u00a01"),  # a no-break space is not a blank
        ("0x10", "0x10"),
        ("1.0.0", "1.0.0"),
        (" north ", "north"),
    ],
)
def test_cell_reads_each_cell_by_the_grammar(text, want):
    got = cell(text)
    if isinstance(want, Fraction):
        assert type(got) is float and Fraction(got) == want
    else:
        assert got == want and type(got) is type(want)


def test_cell_reads_integers_of_any_length_exactly():
    for digits in (4300, 4301, 5000, 100_000):
        text = "-" + "7" * digits
        assert cell(text) == -(10**digits - 1) * 7 // 9


@pytest.mark.parametrize("text", ["1e400", "-1.7976931348623159e308", "9" * 400 + ".0"])
def test_cell_refuses_a_number_beyond_the_double_range(text):
    with pytest.raises(DataError, match="beyond the double range") as info:
        cell(text, where="--categories")
    assert text not in str(info.value) and str(info.value).startswith("--categories")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["number", "int", "text"]).flatmap(cells), min_size=1))
def test_the_vectorised_path_reads_what_cell_reads(column):
    """The column-at-once path over Arrow strings gives, cell for cell, the records
    of :func:`cell` (or the same refusal)."""
    texts = [t for t, _, _ in column]
    try:
        want = [canon(cell(t)) for t in texts]
    except DataError:
        want = None
    try:
        got = [canon(v) for v in _records_arrow(pa.array(texts, pa.string()), "c", "t")]
    except DataError:
        got = None
    assert got == want


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789+-.eEinfaINFAx_ ", max_size=12))
def test_arrows_conversion_accepts_the_grammars_numbers_and_non_finite_only(text):
    """What the column-at-once path relies on: pyarrow turns a string into a finite
    double exactly when the grammar reads it as a number, and to the same double."""
    import pyarrow.compute as pc

    try:
        x = pc.cast(pa.array([text]), pa.float64())[0].as_py()
    except pa.ArrowInvalid:
        x = None
    try:
        number = cell(text) if text == text.strip(" \t") and text else None
    except DataError:  # beyond the double range
        number = float("inf")
    if x is not None and x - x == 0.0:  # finite
        assert isinstance(number, int | float) and Fraction(x) == Fraction(float(number))
    else:
        assert not isinstance(number, int | float) or abs(float(number)) == float("inf")


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 10**25),
    st.integers(0, 10**25),
    st.integers(-340, 320),
    st.sampled_from(["", "-", "+"]),
)
def test_arrows_conversion_rounds_decimals_correctly(whole, frac, exp, sign):
    """The double nearest the decimal written (exact rationals, rounded once)."""
    import pyarrow.compute as pc

    text = f"{sign}{whole}.{frac}e{exp}"
    exact = Fraction(Decimal(text))
    try:
        want = float(exact)
    except OverflowError:
        want = float("-inf") if exact < 0 else float("inf")
    assert pc.cast(pa.array([text]), pa.float64())[0].as_py() == want


# -- pieces of whole records ---------------------------------------------------------------

QUOTED = (
    b'\xef\xbb\xbf"i d",note\r\n1,"two\r\nlines"\r\n\r\n2,"say ""hi"", then\nbye"\n3,""\n4,"\n"\n'
)


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_no_block_size_changes_a_record(engine):
    """Quoted newlines, quotes, CRLF, an empty line and a BOM, cut at every block size
    from one byte to the whole file."""
    want = {"i d": [1, 2, 3, 4], "note": ["two\r\nlines", 'say "hi", then\nbye', None, "\n"]}
    for block in range(1, len(QUOTED) + 2):
        header, cols = read_csv(io.BytesIO(QUOTED), label="t", block_bytes=block, engine=engine)
        assert header == ["i d", "note"]
        assert {c: v.tolist() for c, v in cols.items()} == want, block


@pytest.mark.parametrize("engine", ["arrow", "python"])
@pytest.mark.parametrize(
    "data",
    [
        b'a,b\n1,zq"zq\n',  # a quote inside an unquoted field
        b'a,b\n1,"zq"zq\n',  # text after a closing quote
        b'a,b\n1, "zq"\n',  # a blank before an opening quote
        b'a,b\n1,"zq\n',  # a quoted field never closed
        b'a,"b\n1,2\n',  # ... in the header
    ],
)
def test_quotes_outside_rfc_4180_are_refused(engine, data):
    with pytest.raises(DataError, match="malformed CSV") as info:
        read_csv(io.BytesIO(data), ["a"], label="t", block_bytes=4, engine=engine)
    assert "zq" not in str(info.value)


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_invalid_utf8_anywhere_refuses_the_source(engine):
    """Even in a column that is not read, even far beyond the first block."""
    rows = b"".join(b"%d,k\n" % i for i in range(3000))
    for data in (b"a,b\n1,\xff\n" + rows, b"a,b\n" + rows + b"1,\xc3\n", b"a,\xe9\n1,2\n"):
        with pytest.raises(DataError, match="not a UTF-8 CSV file"):
            read_csv(io.BytesIO(data), ["a"], label="t", block_bytes=1024, engine=engine)


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_a_row_of_the_wrong_width_is_refused_without_counts(engine):
    for data in (b"a,b\n1,2\n3\n", b"a,b\n1,2,3\n"):
        with pytest.raises(DataError, match="number of fields differs") as info:
            read_csv(io.BytesIO(data), ["a"], label="t", engine=engine)
        assert not any(ch.isdigit() for ch in str(info.value))


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_a_number_beyond_the_double_range_names_the_column_only(engine):
    data = b"a,b\n1,2\n3,1e999\n"
    with pytest.raises(DataError, match=r"column 'b' of t: a number beyond") as info:
        read_csv(io.BytesIO(data), ["b"], label="t", engine=engine)
    assert "999" not in str(info.value)
    # the column not read is not refused
    assert read_csv(io.BytesIO(data), ["a"], label="t", engine=engine)[1]["a"].tolist() == [1, 3]


def test_header_names():
    reader = CsvReader(io.BytesIO(b'\n\n a ,"b\nc",\t,d\n1,2,3,4\n'), label="t")
    assert reader.header == ["a", "b\nc", "", "d"]  # blanks around removed; empty kept
    for data in (b"a,a\n1,2\n", b"a, a\n1,2\n", b",\n1,2\n"):
        with pytest.raises(DataError, match="duplicate column names"):
            CsvReader(io.BytesIO(data), label="t")
    for data in (b"", b"\n\r\n", b"\xef\xbb\xbf"):
        with pytest.raises(DataError, match="t is empty"):
            CsvReader(io.BytesIO(data), label="t")


def test_a_header_only_source_has_no_blocks_and_counting_reads_no_cell():
    assert list(CsvReader(io.BytesIO(b"a,b\n"), label="t").blocks(["a"])) == []
    reader = CsvReader(io.BytesIO(b"a,b\n1e999,x\n\n2,y\n"), label="t")
    blocks = list(reader.blocks([]))
    assert sum(b.rows for b in blocks) == 2 and all(b.columns == {} for b in blocks)


# -- Parquet ---------------------------------------------------------------------------


def test_parquet_is_found_by_its_magic_bytes_and_spooled(tmp_path: Path):
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": [1.5, 2.5]}), buf)
    is_pq, stream = sniff_parquet(io.BytesIO(buf.getvalue()))
    assert is_pq
    with spool(stream) as fh:
        assert parquet_columns(fh) == ["x"]
        got = [b.columns["x"].tolist() for b in parquet_blocks(fh, ["x"], label="t")]
    assert got == [[1.5, 2.5]]
    is_pq, stream = sniff_parquet(io.BytesIO(b"x\n1\n"))
    assert not is_pq and stream.read(2) == b"x\n" and stream.read() == b"1\n"
    with pytest.raises(DataError, match="cannot read t: not a Parquet file"):
        parquet_columns(io.BytesIO(b"PAR1 and then nothing"), label="t")


@pytest.mark.parametrize("engine", ["arrow", "python"])
def test_a_byte_order_mark_is_removed_at_the_start_of_the_source_only(engine):
    """Inside the data U+FEFF is a character of the text, whichever block it starts."""
    data = b"\xef\xbb\xbfx,y\n\xef\xbb\xbfa,1\n\xef\xbb\xbf,2\n"
    for block in range(1, len(data) + 2):
        header, cols = read_csv(io.BytesIO(data), label="t", block_bytes=block, engine=engine)
        assert header == ["x", "y"]
        assert cols["x"].tolist() == ["\ufeffa", "\ufeff"], block
