"""Any data frame in: the same records as pandas, polars (eager and lazy), pyarrow,
NumPy and mappings give bit-identical releases for the same draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import snapcore
from snapcore.data._frames import to_columns
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
