"""Every reader reads a record the same way (docs/semantics.md, "Values that enter").

Hypothesis draws tables from the hard corners of the CSV grammar
(tests/helpers/csv_cases.py: whitespace, signs, exponents, digit separators, non-ASCII
digits, every missing token, quoted newlines and quotes, BOM, CRLF, empty lines,
integers at and beyond 2**53 and of more than 4,300 digits, subnormals, overflow,
invalid UTF-8), each with the records the grammar defines.  Then every reader must give
those records, or all must refuse with a DataError:

- the CSV reader with either parser (pyarrow's, Python's csv module), at block sizes
  from a few bytes to more than the file, on the file and on many copies of its rows;
- the command line's reading (``snapcore release``'s input: a path at several
  ``--block-size`` values, standard input; CSV and Parquet);
- the same logical records put into pandas, polars (eager and lazy), pyarrow, NumPy
  and Dask by their own libraries, read by :func:`snapcore.data.read_dataset` (Dask:
  its partial states).

A few statistics are then released (same seed) from every reader: identical outputs.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import snapcore
from snapcore.data._files import read_csv
from snapcore.errors import DataError
from tests.helpers.csv_cases import REFUSED, Table, canon, tables
from tests.helpers.slow_sample import slow_examples

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

INT64 = range(-(2**63), 2**63)

SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def _expected(table: Table, name: str, copies: int = 1) -> list[Any]:
    return [canon(r) for r in table.records(name)] * copies


def _csv_records(
    data: bytes, names: list[str], *, engine: str, block_bytes: int
) -> dict[str, list[Any]] | type[DataError]:
    try:
        _, cols = read_csv(
            io.BytesIO(data), names, label="t", block_bytes=block_bytes, engine=engine
        )
    except DataError:
        return DataError
    return {c: [canon(v) for v in cols[c].tolist()] for c in names}


# -- 1. the CSV reader: both parsers, every block size ---------------------------------


def check_csv_reader(table: Table, block: int) -> None:
    for name in table.names:
        want: Any = DataError if table.refused(name) else {name: _expected(table, name)}
        for engine in ("arrow", "python"):
            got = _csv_records(table.csv_bytes(), [name], engine=engine, block_bytes=block)
            assert got == want, (engine, block, name)


BLOCKS = st.sampled_from([1, 3, 17, 64, 1000, 1 << 20])


@settings(max_examples=25, **SETTINGS)
@given(table=tables(), block=BLOCKS)
def test_csv_reader_agrees_with_the_grammar(table: Table, block: int) -> None:
    check_csv_reader(table, block)


@pytest.mark.slow
@settings(max_examples=slow_examples(1000), **SETTINGS)
@given(table=tables(max_rows=30), block=BLOCKS)
def test_csv_reader_agrees_with_the_grammar_at_length(table: Table, block: int) -> None:
    check_csv_reader(table, block)


def check_many_copies(table: Table, copies: int) -> None:
    """Many blocks: the rows written ``copies`` times, read at small and default block
    sizes."""
    data = table.csv_bytes(copies)
    for name in table.names:
        want: Any = DataError if table.refused(name) else {name: _expected(table, name, copies)}
        for block in (1 << 10, 1 << 20):
            assert _csv_records(data, [name], engine="arrow", block_bytes=block) == want


@settings(max_examples=5, **SETTINGS)
@given(table=tables(max_rows=6))
def test_a_large_file_agrees_with_the_grammar(table: Table) -> None:
    check_many_copies(table, 200)


@pytest.mark.slow
@settings(max_examples=slow_examples(60), **SETTINGS)
@given(table=tables(max_rows=10), copies=st.sampled_from([100, 1000]))
def test_large_files_agree_with_the_grammar(table: Table, copies: int) -> None:
    check_many_copies(table, copies)


# -- 2. the command line's reading -------------------------------------------------------


def _reading_stat() -> Any:
    """A statistic that reads one column and merges nothing: the command line hands it
    the column's records as read."""
    return types.SimpleNamespace(mergeable=False, columns=1, name="records")


def _cli_records(
    source: str | bytes, name: str, *, file_format: str = "auto", block: int | None = None
) -> list[Any] | type[DataError]:
    _release = importlib.import_module("snapcore.cli._release")

    stdin = None
    if isinstance(source, bytes):
        stdin = types.SimpleNamespace(buffer=io.BytesIO(source))
    with contextlib.ExitStack() as stack:
        if stdin is not None:
            stack.enter_context(_patched(sys, "stdin", stdin))
        try:
            data, _, merged = _release._read_input(
                _reading_stat(),
                "-" if stdin is not None else source,
                file_format,
                block,
                name,
                None,
                {},
            )
        except DataError:
            return DataError
    assert not merged
    return [canon(v) for v in data[name].tolist()]


@contextlib.contextmanager
def _patched(obj: Any, attr: str, value: Any) -> Any:
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        setattr(obj, attr, old)


def _parquet_bytes(table: Table, name: str) -> bytes | None:
    """The column's records as a Parquet file written by pyarrow, typed by the records
    (None when Arrow has no type that holds them exactly)."""
    arr = _arrow_array(table.records(name))
    if arr is None:
        return None
    buf = io.BytesIO()
    pq.write_table(pa.table({name: arr}), buf, row_group_size=3)
    return buf.getvalue()


def _arrow_array(records: list[Any]) -> Any:
    kind = _kind(records)
    if kind == "int64":
        return pa.array(records, type=pa.int64())
    if kind == "float64":
        return pa.array([None if r is None else float(r) for r in records], type=pa.float64())
    if kind == "text":
        return pa.array(records, type=pa.string())
    return None


def _kind(records: list[Any]) -> str:
    """How a container holds these records exactly: int64, float64, text, or only as
    Python objects ("object")."""
    present = [r for r in records if r is not None]
    if any(r is REFUSED for r in present):
        return "refused"
    if all(isinstance(r, str) for r in present):
        return "text"
    if all(isinstance(r, int) and r in INT64 for r in present):
        return "int64"
    if all(isinstance(r, float) or abs(r) <= 2**53 for r in present):
        return "float64"
    return "object"


def check_command_line(table: Table, copies: int, folder: Path) -> None:
    path = folder / "t.csv"
    raw = table.csv_bytes(copies)
    path.write_bytes(raw)
    for name in table.names:
        want: Any = DataError if table.refused(name) else _expected(table, name, copies)
        for block in (None, 1024, 4096):
            assert _cli_records(str(path), name, block=block) == want, (block, name)
        assert _cli_records(raw, name) == want, ("stdin", name)
        if table.refused(name):
            continue
        pbytes = _parquet_bytes(table, name)
        if pbytes is None:
            continue
        ppath = folder / "t.bin"  # no .parquet suffix: found by its magic bytes
        ppath.write_bytes(pbytes)
        one = _expected(table, name)
        for got in (_cli_records(str(ppath), name), _cli_records(pbytes, name)):
            assert got == one, ("parquet", name)


COPIES = st.sampled_from([1, 300])


@settings(max_examples=8, **SETTINGS)
@given(table=tables(max_rows=6), copies=COPIES)
def test_command_line_reading_agrees(tmp_path_factory: Any, table: Table, copies: int) -> None:
    check_command_line(table, copies, tmp_path_factory.mktemp("cli"))


@pytest.mark.slow
@settings(max_examples=slow_examples(200), **SETTINGS)
@given(table=tables(max_rows=12), copies=COPIES)
def test_command_line_reading_agrees_at_length(
    tmp_path_factory: Any, table: Table, copies: int
) -> None:
    check_command_line(table, copies, tmp_path_factory.mktemp("cli"))


# -- 3. frames built from the same records ----------------------------------------------


def _containers(records: list[Any], name: str) -> dict[str, Any]:
    """The records put into each container by its own library (only those that hold
    them exactly)."""
    kind = _kind(records)
    out: dict[str, Any] = {}
    if kind == "refused":
        return out
    if kind == "int64" and None not in records:
        npcol: Any = np.array(records, dtype=np.int64)
    elif kind == "float64":
        npcol = np.array([np.nan if r is None else float(r) for r in records])
    else:
        npcol = np.array(records, dtype=object)
    out["numpy"] = {name: npcol}
    if kind == "int64" and None in records:
        out["pandas"] = pd.DataFrame({name: pd.array(records, dtype="Int64")})
    else:
        out["pandas"] = pd.DataFrame({name: npcol})
    arr = _arrow_array(records)
    if arr is not None:
        out["pyarrow"] = pa.table({name: arr})
        out["polars"] = pl.from_arrow(pa.table({name: arr}))
        out["polars-lazy"] = out["polars"].lazy()
    return out


def _frame_records(frame: Any, name: str) -> list[Any]:
    from snapcore.data import read_dataset

    ds = read_dataset(frame, column=name)
    return [canon(v) for v in ds.arrays()[0].tolist()]


def check_frames(table: Table) -> None:
    for name in table.names:
        want = _expected(table, name)
        for kind, frame in _containers(table.records(name), name).items():
            assert _frame_records(frame, name) == want, kind


@settings(max_examples=25, **SETTINGS)
@given(table=tables(refusals=False))
def test_frames_agree_with_the_csv_records(table: Table) -> None:
    check_frames(table)


@pytest.mark.slow
@settings(max_examples=slow_examples(500), **SETTINGS)
@given(table=tables(max_rows=30, refusals=False))
def test_frames_agree_with_the_csv_records_at_length(table: Table) -> None:
    check_frames(table)


# -- int64 with nulls: read by their declared type, never through float64 ---------------

INT_WITH_NULL = [2**53 + 1, None, -(2**63), 2**63 - 1, 7]


def _int_null_frames() -> dict[str, Any]:
    arr = pa.array(INT_WITH_NULL, type=pa.int64())
    buf = io.BytesIO()
    pq.write_table(pa.table({"x": arr}), buf)
    return {
        "parquet": buf.getvalue(),
        "pandas": pd.DataFrame({"x": pd.array(INT_WITH_NULL, dtype="Int64")}),
        "pyarrow": pa.table({"x": arr}),
        "polars": pl.from_arrow(pa.table({"x": arr})),
        "polars-lazy": pl.from_arrow(pa.table({"x": arr})).lazy(),
    }


@pytest.mark.parametrize(
    "kind",
    ["pandas", "parquet", "pyarrow", "polars", "polars-lazy"],
)
def test_int64_with_nulls_is_read_exactly(kind: str) -> None:
    """An int64 column with a null: every other record exact (2**53 + 1 stays odd),
    the null missing; on the command line (Parquet) and in every frame."""
    source = _int_null_frames()[kind]
    got = _cli_records(source, "x") if kind == "parquet" else _frame_records(source, "x")
    assert got == [canon(v) for v in INT_WITH_NULL]


# -- releases: the same seed gives the same output from every reader ---------------------

I_COL = [2**53 + 1, -(2**62), 7, 0, 2**63 - 1, -5]
F_COL = [0.1, 5e-324, -2.5, 1e-300, 3.0, 0.30000000000000004]
F_TEXT = ["0.1", "4.9e-324", " -2.5", "1e-300", "+3.", ".30000000000000004e0"]
T_COL = ["NA", "nan", "north", "١٢", "south", "north"]
T_TEXT = ["NA", "nan", '"north"', "١٢", "  south\t", "north"]
COPIES = 400  # some thousands of records: many blocks at --block-size 1024


def _release_csv() -> bytes:
    rows = [f"{i},{f},{t}" for i, f, t in zip(I_COL, F_TEXT, T_TEXT, strict=True)]
    return ("\ufeffi, f ,t\r\n" + "\r\n".join(rows * COPIES) + "\r\n").encode()


RELEASES = [
    ("sum", "i", ["-b", "-1e18", "1e18"], {"data_bounds": (-1e18, 1e18)}),
    ("mean", "f", ["-b", "-4", "4"], {"data_bounds": (-4, 4)}),
    (
        "histogram",
        "t",
        ["--categories", "NA,nan,north,south,١٢"],
        {"categories": ["NA", "nan", "north", "south", "١٢"]},
    ),
]


@pytest.mark.parametrize(("name", "column", "argv", "kw"), RELEASES, ids=[r[0] for r in RELEASES])
def test_releases_agree_across_readers(cli, tmp_path: Path, name, column, argv, kw) -> None:
    dd = pytest.importorskip("dask.dataframe")
    records = {"i": I_COL * COPIES, "f": F_COL * COPIES, "t": T_COL * COPIES}
    arrow = pa.table(
        {
            "i": pa.array(records["i"], pa.int64()),
            "f": pa.array(records["f"], pa.float64()),
            "t": pa.array(records["t"], pa.string()),
        }
    )
    pq.write_table(arrow, tmp_path / "d.pq", row_group_size=1000)
    (tmp_path / "d.csv").write_bytes(_release_csv())
    tail = ["-c", column, *argv, "-e", "1", "--seed", "s", "--json"]
    outs = {
        f"csv --block-size {b}": cli.json(
            "release", name, str(tmp_path / "d.csv"), *tail, *(["--block-size", b] if b else [])
        )["value"]
        for b in (None, "1024", "5000")
    }
    outs["stdin"] = cli.json("release", name, "-", *tail, input=_release_csv())["value"]
    outs["parquet"] = cli.json("release", name, str(tmp_path / "d.pq"), *tail)["value"]
    outs["parquet stdin"] = cli.json(
        "release", name, "-", *tail, input=(tmp_path / "d.pq").read_bytes()
    )["value"]
    frame = arrow.to_pandas()
    frames = {
        "numpy": {c: np.array(v, dtype=object if c == "t" else None) for c, v in records.items()},
        "pandas": frame,
        "pyarrow": arrow,
        "polars": pl.from_arrow(arrow),
        "polars-lazy": pl.from_arrow(arrow).lazy(),
        "dask": dd.from_pandas(frame, npartitions=3),
    }
    states = {}
    for kind, data in frames.items():
        r = snapcore.release(
            name, data, column=column, epsilon=1, source=snapcore.SeededSource("s"), **kw
        )
        outs[kind] = list(r.value) if isinstance(r.value, tuple) else r.value
        states[kind] = snapcore.partial(name, data, column=column, **kw)
    first = next(iter(outs.values()))
    assert all(v == first for v in outs.values()), outs
    # the exact partial states (no noise): equal whatever the reader
    from snapcore.cli._chunks import stream_partial
    from snapcore.plugins._manager import get_registries

    stat = get_registries().statistics.get(name)
    options = {k: v for k, v in kw.items() if k != "data_bounds"}
    common = {"column": column, "data_bounds": kw.get("data_bounds"), "options": options}
    for block in (1 << 10, 1 << 20):
        states[f"csv {block}"] = stream_partial(
            stat,
            io.BytesIO(_release_csv()),
            label="t",
            file_format="csv",
            block_bytes=block,
            **common,
        )
    states["parquet"] = stream_partial(
        stat, str(tmp_path / "d.pq"), label="t", file_format="parquet", **common
    )
    one = states["numpy"]
    assert all(p == one for p in states.values()), [k for k, p in states.items() if p != one]
