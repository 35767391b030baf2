"""The columns a statistic reads (snapcore.data._columns): :func:`as_dataset` checks the
shape of the data and picks the columns; :class:`Dataset` hands them out exactly, in
chunks or as views, and its errors name a column, never a record or a value.

How each value is read is tested in ``tests/data/test_values.py``; data frames of
other libraries in ``tests/data/test_frames.py``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from snapcore.data._columns import Dataset, as_dataset, column_keys
from snapcore.data._values import category_key
from snapcore.errors import DataError, ParameterError

XS = [3.0, 1.5, -2.0, 7.25, 0.0]


def values(ds: Dataset, i: int = 0) -> list[Fraction]:
    return ds.column(i).fractions()


# -- one column, several, or none ---------------------------------------------------


@pytest.mark.parametrize(
    ("data", "column", "name"),
    [
        (XS, None, "data"),
        (tuple(XS), None, "data"),
        (np.array(XS), None, "data"),
        (iter(XS), None, "data"),  # an iterable that is not a sequence is read once
        (pd.Series(XS, name="age"), None, "age"),
        (pd.Series(XS), None, "data"),
        ({"age": XS, "other": ["a"] * 5}, "age", "age"),
        (pd.DataFrame({"age": XS, "other": ["a"] * 5}), "age", "age"),
        (pd.DataFrame({"age": XS}), None, "age"),
    ],
    ids=["list", "tuple", "array", "iterator", "series", "unnamed", "mapping", "frame", "one"],
)
def test_one_column(data, column, name):
    ds = as_dataset(data, column=column)
    assert ds.names == (name,) and ds.size == len(ds) == 5
    assert values(ds) == [Fraction(x) for x in XS]


def test_several_columns_by_name_or_position():
    rows = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    ds = as_dataset(rows, columns=2)
    assert ds.names == ("column 0", "column 1") and ds.size == 3
    assert values(ds, 0) == [1, 3, 5] and values(ds, 1) == [2, 4, 6]
    table = {"a": [1, 2], "b": [3, 4], "c": [5, 6]}
    ds = as_dataset(table, column=["c", "a"], columns=2)  # in the order asked for
    assert ds.names == ("c", "a") and values(ds, 0) == [5, 6] and values(ds, 1) == [1, 2]
    ds = as_dataset(pd.DataFrame(table), columns=3)
    assert ds.names == ("a", "b", "c")


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (["x", None, 3], 3),  # no column is read, so nothing is checked
        (pd.DataFrame({"a": [1, 2], "b": [3, 4]}), 2),
        ({"a": [1, 2, 3, 4]}, 4),
        ({}, 0),
        (np.zeros((6, 3)), 6),
    ],
    ids=["list", "frame", "mapping", "empty", "array"],
)
def test_no_column_gives_the_number_of_records(data, size):
    ds = as_dataset(data, columns=0)
    assert ds.size == size and ds.names == ()


@pytest.mark.parametrize(
    ("data", "kw", "error", "words"),
    [
        ("abc", {}, ParameterError, ["data must be a sequence", "got str"]),
        (b"abc", {}, ParameterError, ["got bytes"]),
        (42, {}, ParameterError, ["data must be a sequence", "got int"]),
        (XS, {"column": "x"}, ParameterError, ["column='x' needs a DataFrame or a mapping"]),
        ({"x": XS}, {"column": 3}, ParameterError, ["column must be a name or a sequence"]),
        ({"x": XS, "y": XS}, {"column": ("x", "y")}, ParameterError, ["reads 1 column(s)"]),
        ({"x": XS, "y": XS}, {}, ParameterError, ["the table has 2", "choose with column="]),
        ({"x": XS, "y": XS}, {"column": "z"}, DataError, ["'z' not found", "['x', 'y']"]),
        (np.zeros((5, 3)), {"columns": 2}, ParameterError, ["reads 2 column(s)", "has 3"]),
        ({"x": XS, "y": XS[:4]}, {"columns": 2}, ParameterError, ["the same length"]),
        (np.zeros((2, 2, 2)), {}, ParameterError, ["1-D or 2-D, got 3 dimensions"]),
        ({"x": np.zeros((5, 2))}, {"column": "x"}, ParameterError, ["'x' must be one-dim"]),
    ],
    ids=repr,
)
def test_shapes_that_do_not_fit_are_refused(data, kw, error, words):
    with pytest.raises(error) as info:
        as_dataset(data, **kw)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_column_keys():
    assert column_keys(None) is None
    assert column_keys("a") == ["a"]
    assert column_keys(("a", "b")) == ["a", "b"]
    with pytest.raises(ParameterError, match="column must be a name or a sequence of names"):
        column_keys(["a", 1])


# -- the dataset --------------------------------------------------------------------


def test_len_and_repr():
    ds = as_dataset({"age": XS, "income": XS}, column=("age", "income"), columns=2)
    assert len(ds) == 5
    assert repr(ds) == "<Dataset 5 records, columns ['age', 'income']>"


@pytest.mark.parametrize("kind", ["list", "array", "series"])
def test_chunks_are_the_records_in_order(kind):
    xs = [float(i) for i in range(10)]
    data = {"list": xs, "array": np.array(xs), "series": pd.Series(xs, index=range(50, 60))}
    ds = as_dataset(data[kind])
    chunks = list(ds.chunks(rows=3))
    assert [c.size for c in chunks] == [3, 3, 3, 1]
    assert all(c.names == ("data",) for c in chunks)
    assert [v for c in chunks for v in values(c)] == xs
    assert list(ds.chunks(rows=10)) == [ds]


def test_float64_view_is_a_read_only_view_or_none():
    arr = np.array(XS)
    view = as_dataset(arr).float64_view(0)
    assert view is not None and np.shares_memory(view, arr)
    assert not view.flags.writeable and arr.flags.writeable
    series = pd.Series(XS)
    view = as_dataset(series).float64_view(0)
    assert view is not None and view.tolist() == XS and not view.flags.writeable
    for other in (XS, np.array(XS, dtype=np.float32), np.arange(5), pd.Series([1, 2, 3])):
        assert as_dataset(other).float64_view(0) is None
    # unchecked: NaN is handed out as it is (its refusal is the reader's)
    with_nan = np.array([1.0, np.nan])
    assert np.isnan(as_dataset(with_nan).float64_view(0)[1])


def test_numeric_gives_doubles():
    out = as_dataset([1, 2, Fraction(1, 2)]).numeric(0)
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0, 0.5]


def test_categorical_normalises_each_record():
    keys = as_dataset(["a", 1, 1.0, np.float32(1), True]).categorical(0)
    assert keys[1] == keys[2] == keys[3] == category_key(1)
    assert keys[0] == category_key("a") and keys[4] == category_key(True) != keys[1]


@pytest.mark.parametrize("read", ["column", "numeric", "categorical"])
def test_a_bad_record_is_a_data_error_that_names_the_column_only(read):
    ds = as_dataset({"salary": [41.5, 1j, 99.25]}, column="salary")
    with pytest.raises(DataError) as info:
        getattr(ds, read)(0)
    msg = str(info.value)
    assert msg.startswith("column 'salary'") and "complex" in msg
    assert "41.5" not in msg and "99.25" not in msg and "1j" not in msg
    assert info.value.__context__ is None and info.value.__cause__ is None


# -- selecting records ----------------------------------------------------------------


def _with_text() -> Dataset:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = pd.Series(["a", "b", "c", "d", "e"], dtype=object)
    return Dataset([x, y], ["x", "y"], 5)


def test_columns_as_given_are_the_column_objects_unread():
    x, y = np.arange(3.0), [1, "a", None]
    ds = Dataset([x, y], ["x", "y"], 3)
    assert ds.columns_as_given[0] is x and ds.columns_as_given[1] is y


def test_take_keeps_the_records_at_the_index_in_its_order():
    ds = _with_text()
    out = ds.take(np.array([4, 2]))
    assert out.size == 2 and out.names == ("x", "y")
    assert out.column(0).doubles.tolist() == [5.0, 3.0]
    assert out.categorical(1) == [category_key("e"), category_key("c")]
    assert ds.take(np.array([], dtype=np.intp)).size == 0


def test_take_groups_is_take_per_group() -> None:
    rng = np.random.default_rng(7)
    group = rng.integers(-1, 4, size=200)  # group 4 of 5 stays empty
    ds = Dataset([rng.normal(size=200), list(rng.integers(0, 9, size=200))], ["x", "y"], 200)
    subs = ds.take_groups(group, 5)
    assert len(subs) == 5
    assert subs[4].size == 0
    for i, sub in enumerate(subs):
        want = ds.take(np.flatnonzero(group == i))
        assert sub.size == want.size and sub.names == want.names
        for got_col, want_col in zip(sub.columns_as_given, want.columns_as_given, strict=True):
            assert got_col.dtype == want_col.dtype
            assert got_col.tolist() == want_col.tolist()


def test_a_masked_column_drops_its_masked_records_and_not_their_values():
    from snapcore.data._missing import check_missing_policy
    from snapcore.data._neighbouring import Neighbouring

    # the value under the mask (an infinity, a float64 NaN-free view would read it) is
    # never read: the masked record is missing, and goes by the policy
    col = np.ma.array([0.5, np.inf, 0.25, 2.0**60 + 1.0], mask=[False, True, False, False])
    ds = as_dataset(col)
    assert ds.float64_view(0) is None  # a view would show the masked value
    with pytest.raises(DataError, match="missing values"):
        ds.column(0)
    drop = check_missing_policy("drop", None, Neighbouring.ADD_REMOVE)
    kept = ds.apply_missing(drop)
    assert kept.column(0).fractions() == [Fraction(1, 2), Fraction(1, 4), Fraction(2**60)]
    ints = np.ma.array(np.array([2**62 + 1, 5, 3], dtype=np.int64), mask=[False, True, False])
    assert as_dataset(ints).apply_missing(drop).column(0).fractions() == [2**62 + 1, 3]
    assert as_dataset(ints).take(np.array([0, 2])).column(0).fractions() == [2**62 + 1, 3]
