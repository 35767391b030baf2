"""Any data frame in: the same records as pandas, polars (eager and lazy), pyarrow,
NumPy and mappings give bit-identical releases for the same draws."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from slow_sample import slow_examples

import snapcore
from snapcore.data._frames import to_columns
from snapcore.data._missing import is_missing
from snapcore.errors import ParameterError

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def _data():
    rng = np.random.default_rng(11)
    n = 5000
    return {
        "age": rng.uniform(-10, 110, n) * 2.0 ** rng.integers(-40, 3, n),
        "income": rng.normal(4e4, 3e4, n),
        "visits": rng.integers(0, 50, n),  # an integer column
    }


def _forms(d):
    return {
        "mapping": d,
        "pandas": pd.DataFrame(d),
        "polars": pl.DataFrame(d),
        "lazy": pl.DataFrame(d).lazy(),
        "pyarrow": pa.table(d),
        "pyarrow-chunked": pa.concat_tables([pa.table(d).slice(0, 1234), pa.table(d).slice(1234)]),
    }


RELEASES = [
    ("mean", "age", {"data_bounds": (0, 100)}),
    ("variance", "income", {"data_bounds": (0, 1e5)}),
    ("sum", "visits", {"data_bounds": (0, 40)}),
    ("covariance", ("age", "income"), {"data_bounds": ((0, 100), (0, 1e5))}),
    ("histogram", "age", {"bins": [0.0, 1e-6, 1.0, 18.0, 65.0, 100.0]}),
    ("count", None, {"n": 10_000}),
]


@pytest.mark.parametrize(("stat", "column", "kw"), RELEASES, ids=[r[0] for r in RELEASES])
def test_every_frame_library_gives_the_same_release(stat, column, kw):
    d = _data()
    results = {}
    states = {}
    opts = {k: v for k, v in kw.items() if k != "n"}
    for name, frame in _forms(d).items():
        r = snapcore.release(
            stat, frame, column=column, epsilon=1, source=snapcore.SeededSource(21), **kw
        )
        results[name] = r
        # the exact state too: a release rounds to the snapping grid, the state does not
        states[name] = snapcore.partial(stat, frame, column=column, **opts).state
    assert len(set(states.values())) == 1, states.keys()
    if column is not None:  # NumPy: the columns themselves
        cols = [column] if isinstance(column, str) else list(column)
        arr = d[cols[0]] if len(cols) == 1 else np.column_stack([d[c] for c in cols])
        results["numpy"] = snapcore.release(
            stat, arr, epsilon=1, source=snapcore.SeededSource(21), **kw
        )
    ref = results["pandas"]
    for name, r in results.items():
        assert r.values == ref.values, name
        assert r.n == ref.n == (10_000 if stat == "count" else 5000)


def test_columns_are_read_without_a_copy_where_the_library_allows():
    d = _data()
    df = pl.DataFrame(d)
    cols = to_columns(df, "age")
    assert np.shares_memory(cols["age"], df["age"].to_numpy())
    t = pa.table(d)
    cols = to_columns(t, ["age", "income"])
    assert np.shares_memory(cols["income"], t.column("income").chunk(0).to_numpy())
    assert set(to_columns(pl.DataFrame(d).lazy(), "visits")) == {"visits"}  # only what is read


def test_missing_values_and_unknown_columns_are_refused_without_values():
    df = pl.DataFrame({"x": [1.5, None, 3.0]})
    with pytest.raises(ParameterError, match="missing values") as e:
        snapcore.release("mean", df, column="x", epsilon=1, data_bounds=(0, 5))
    assert "1.5" not in str(e.value)
    with pytest.raises(ParameterError, match="column 'y' not found"):
        snapcore.release("mean", df.lazy(), column="y", epsilon=1, data_bounds=(0, 5))
    t = pa.table({"x": pa.array([1.5, None], type=pa.float64())})
    with pytest.raises(ParameterError, match="missing values"):
        snapcore.release("mean", t, column="x", epsilon=1, data_bounds=(0, 5))


def test_polars_partials_merge_like_pandas():
    d = _data()
    a = snapcore.partial("variance", pl.DataFrame(d)[:2000], column="income", data_bounds=(0, 1e5))
    b = snapcore.partial(
        "variance", pa.table(d).slice(2000), column="income", data_bounds=(0, 1e5)
    )
    assert snapcore.merge([a, b]) == snapcore.partial(
        "variance", pd.DataFrame(d), column="income", data_bounds=(0, 1e5)
    )


# -- integer columns with nulls: read by their declared types --------------------------

_TWO53 = 2**53
# values above 2**53 that float64 rounds (odd, and more than 53 bits apart from a power),
# next to a null: a float64 detour would change every one of them
_BIG = [_TWO53 + 1, None, 2**62 - 1, -(2**62) - 3, 7, _TWO53 + 3]
_BIG_U = [2**64 - 1, None, _TWO53 + 1, 0, 2**63 + 5]


def _int_containers(values, kind):
    """The same column (``values``, None for a null) in every container snapcore reads."""
    pa_type = {"int64": pa.int64(), "uint64": pa.uint64()}[kind]
    pl_type = {"int64": pl.Int64, "uint64": pl.UInt64}[kind]
    pd_type = {"int64": "Int64", "uint64": "UInt64"}[kind]
    arr = pa.array(values, type=pa_type)
    nulls = [v is None for v in values]
    filled = [0 if v is None else v for v in values]
    forms = {
        "pyarrow-array": (arr, None),
        "pyarrow-sliced": (pa.array([5, *values], type=pa_type).slice(1), None),
        "pyarrow-chunked": (pa.chunked_array([arr.slice(0, 2), arr.slice(2)]), None),
        "pyarrow-table": (pa.table({"x": arr}), "x"),
        "pyarrow-batch": (pa.record_batch({"x": arr}), "x"),
        "pyarrow-dictionary": (pa.table({"x": arr.dictionary_encode()}), "x"),
        "polars": (pl.DataFrame({"x": pl.Series(values, dtype=pl_type)}), "x"),
        "polars-lazy": (pl.DataFrame({"x": pl.Series(values, dtype=pl_type)}).lazy(), "x"),
        "polars-series": (pl.Series("x", values, dtype=pl_type), None),
        "pandas-nullable": (pd.DataFrame({"x": pd.array(values, dtype=pd_type)}), "x"),
        "pandas-arrow": (pd.DataFrame({"x": pd.Series(values, dtype=f"{kind}[pyarrow]")}), "x"),
        "pandas-object": (pd.DataFrame({"x": pd.Series(values, dtype=object)}), "x"),
        "numpy-masked": (np.ma.array(np.array(filled, dtype=kind), mask=nulls), None),
        "numpy-object": (np.array(values, dtype=object), None),
        "mapping-masked": ({"x": np.ma.array(np.array(filled, dtype=kind), mask=nulls)}, "x"),
    }
    if kind == "int64":
        forms["polars-int128"] = (pl.DataFrame({"x": pl.Series(values, dtype=pl.Int128)}), "x")
    return forms


@pytest.mark.parametrize("kind", ["int64", "uint64"])
def test_an_integer_column_with_a_null_stays_exact_in_every_container(kind):
    values = _BIG if kind == "int64" else _BIG_U
    present = [v for v in values if v is not None]
    assert any(float(v) != v for v in present)  # a float64 detour would show
    for name, (obj, column) in _int_containers(values, kind).items():
        ds = snapcore.data.read_dataset(obj, column=column)
        records = ds.arrays()[0]
        # the null is missing, on its own record; every other record is its exact int
        assert [is_missing(v) for v in records] == [v is None for v in values], name
        assert [v for v in records if not is_missing(v)] == present, name
        assert all(type(v) is int for v in records if not is_missing(v)), name
        with pytest.raises(snapcore.errors.MissingValueError):
            ds.column(0)
        dropped = ds.apply_missing(_policy("drop"))
        assert dropped.column(0).fractions() == [Fraction(v) for v in present], name
        assert dropped.categorical(0) == [("number", Fraction(v)) for v in present], name
        imputed = ds.apply_missing(_policy("impute", 11))
        assert imputed.column(0).fractions() == [
            Fraction(11 if v is None else v) for v in values
        ], name


def _policy(kind, constant=None):
    from snapcore.data._missing import check_missing_policy
    from snapcore.data._neighbouring import Neighbouring

    impute = constant if kind == "impute" else None
    return check_missing_policy(kind, impute, Neighbouring.ADD_REMOVE)


def test_a_release_with_a_null_equals_the_release_of_the_exact_ints():
    present = [v for v in _BIG if v is not None]
    common = {"epsilon": 1, "n": 10, "relation": "add-remove"}
    bounds = (-(2.0**63), 2.0**63)
    cats = [_TWO53 + 1, _TWO53, _TWO53 + 3, _TWO53 + 4]  # float64 merges each pair
    options = {"sum": {"data_bounds": bounds}, "histogram": {"categories": cats}}
    for statistic, opts in options.items():
        ref = snapcore.release(
            statistic, present, source=snapcore.SeededSource(5), **opts, **common
        )
        for name, (obj, column) in _int_containers(_BIG, "int64").items():
            r = snapcore.release(
                statistic,
                obj,
                column=column,
                missing="drop",
                source=snapcore.SeededSource(5),
                **opts,
                **common,
            )
            assert r.value == ref.value, (statistic, name)


def test_a_parquet_batch_with_a_null_keeps_its_integers_exact(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from snapcore.data._files import parquet_blocks

    path = tmp_path / "big.parquet"
    pq.write_table(
        pa.table(
            {"x": pa.array(_BIG, type=pa.int64()), "u": pa.array([*_BIG_U, 1], type=pa.uint64())}
        ),
        path,
    )
    (block,) = parquet_blocks(str(path), ["x", "u"], label="big.parquet")
    assert list(block.columns["x"]) == _BIG
    assert list(block.columns["u"]) == [*_BIG_U, 1]


def test_a_dask_frame_with_nullable_integers_stays_exact():
    dd = pytest.importorskip("dask.dataframe")
    present = [v for v in _BIG if v is not None]
    bounds = (-(2.0**63), 2.0**63)
    frame = pd.DataFrame({"x": pd.array(_BIG, dtype="Int64")})
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(snapcore.errors.MissingValueError):
        snapcore.partial("sum", ddf, column="x", data_bounds=bounds)
    got = snapcore.partial("sum", ddf.dropna(), column="x", data_bounds=bounds)
    assert got == snapcore.partial("sum", present, data_bounds=bounds)


@pytest.mark.parametrize("backend", ["numpy_nullable", "pyarrow"])
def test_dask_parquet_read_with_nullable_dtypes_stays_exact(tmp_path, backend):
    dd = pytest.importorskip("dask.dataframe")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"x": pa.array(_BIG, type=pa.int64())}), path)
    bounds = (-(2.0**63), 2.0**63)
    ddf = dd.read_parquet(path, dtype_backend=backend)
    with pytest.raises(snapcore.errors.MissingValueError):
        snapcore.partial("sum", ddf, column="x", data_bounds=bounds)
    got = snapcore.partial("sum", ddf.dropna(), column="x", data_bounds=bounds)
    assert got == snapcore.partial("sum", [v for v in _BIG if v is not None], data_bounds=bounds)


_INT64 = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([_TWO53 + 1, -_TWO53 - 1, 2**63 - 1, -(2**63), 0]),
)


def _check_read_alike(values):
    present = [v for v in values if v is not None]
    for name, (obj, column) in _int_containers(values, "int64").items():
        records = snapcore.data.read_dataset(obj, column=column).arrays()[0]
        assert [is_missing(v) for v in records] == [v is None for v in values], name
        assert [v for v in records if not is_missing(v)] == present, name


@settings(max_examples=30, derandomize=True)
@given(st.lists(st.one_of(st.none(), _INT64), min_size=1, max_size=10))
def test_int64_columns_with_nulls_are_read_alike_in_every_container(values):
    _check_read_alike(values)


@pytest.mark.slow
@settings(max_examples=slow_examples(600), derandomize=True)
@given(st.lists(st.one_of(st.none(), _INT64), min_size=1, max_size=40))
def test_int64_columns_with_nulls_are_read_alike_in_every_container_slow(values):
    _check_read_alike(values)


def test_only_frames_held_here_are_turned_into_columns():
    from snapcore.data._frames import is_local_frame

    d = {"g": [1, 2], "x": [0.5, 0.25]}
    for frame in (pl.DataFrame(d), pl.DataFrame(d).lazy(), pa.table(d), pa.record_batch(d)):
        assert is_local_frame(frame), type(frame)
    for other in (pd.DataFrame(d), d, np.array([1.0]), [1.0]):
        assert not is_local_frame(other), type(other)
    dd = pytest.importorskip("dask.dataframe")
    assert not is_local_frame(dd.from_pandas(pd.DataFrame(d), npartitions=1))
