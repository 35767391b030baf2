"""Mergeable statistics: any split into chunks, merged in any order, gives the state and
the value of the whole; states are exact, small and picklable; vector statistics are
released through the array path, bit-identical to one scalar release per value."""

from __future__ import annotations

import itertools
import pickle
import random
from fractions import Fraction

import numpy as np
import pytest
import snapstat_helpers as H
from hypothesis import given, settings, strategies as st

import snapcore
from snapcore.data._columns import as_dataset
from snapcore.errors import ParameterError, WorkerError
from snapcore.plugins._manager import get_registries
from snapcore.plugins._statistic import accumulate
from snapcore.releases._partials import _worker_partial

REPLACE = snapcore.Neighbouring.REPLACE

# (statistic, data bounds, options, columns)
CASES = [
    ("count", None, {}, 0),
    ("sum", ((-3.5, 1e300),), {}, 1),
    ("mean", ((-1.0, 2.0**-1070),), {}, 1),
    ("variance", ((-1e10, 1e-300),), {}, 1),
    ("covariance", ((-2.0, 7.25), (-1e200, 1e-200)), {}, 2),
    ("histogram", None, {"bins": [-1e3, -1.0, 0.0, 2.5, 1e20]}, 1),
]


def _dataset(columns, values):
    if columns == 0:
        return as_dataset(values, columns=0)
    if columns == 1:
        return as_dataset(np.array([v[0] for v in values], dtype=np.float64))
    return as_dataset(np.array(values, dtype=np.float64).reshape(-1, 2), columns=2)


def _random_merge(stat, states, rnd):
    """Merge in a random order and a random tree shape."""
    pool = list(states)
    rnd.shuffle(pool)
    while len(pool) > 1:
        i = rnd.randrange(len(pool) - 1)
        a, b = pool.pop(i), pool.pop(i)
        pool.insert(
            rnd.randrange(len(pool) + 1),
            stat.merge(a, b) if rnd.random() < 0.5 else stat.merge(b, a),
        )
    return pool[0]


@pytest.mark.parametrize(
    ("name", "bounds", "options", "columns"), CASES, ids=[c[0] for c in CASES]
)
@settings(max_examples=15, deadline=None)
@given(
    rows=st.lists(st.tuples(H.finite_floats(), H.finite_floats()), min_size=2, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    seed=st.integers(0, 2**32),
)
def test_any_split_any_merge_order_gives_the_whole(
    name, bounds, options, columns, rows, cuts, seed
):
    stat = get_registries().statistics.get(name)
    whole = _dataset(columns, rows)
    expected = stat.partial(whole, data_bounds=bounds, **options)
    edges = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    states = [
        stat.partial(_dataset(columns, rows[a:b]), data_bounds=bounds, **options)
        for a, b in itertools.pairwise(edges)
    ]
    merged = _random_merge(stat, states, random.Random(seed))
    assert merged == expected
    assert all(type(v) is int for v in merged)
    assert pickle.loads(pickle.dumps(merged)) == merged
    rel, n = stat.relations[0], len(rows)
    p1 = stat.finalize(merged, data_bounds=bounds, n=n, relation=rel, **options)
    p2 = stat.prepare(whole, data_bounds=bounds, n=n, relation=rel, **options)
    assert p1 == p2


def _clamp(v, lo, hi):
    return min(max(v, lo), hi)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(H.finite_floats(), H.finite_floats()), min_size=2, max_size=30))
def test_finalized_values_equal_independent_fraction_formulas(rows):
    """Against the textbook formulas over exact Fractions of the clamped records."""
    reg = get_registries().statistics
    (a, b), (c, d) = (-2.0, 7.25), (-1e200, 1e-200)
    xs = [Fraction(_clamp(x, a, b)) for x, _ in rows]
    ys = [Fraction(_clamp(y, c, d)) for _, y in rows]
    n = len(rows)
    mx, my = sum(xs) / n, sum(ys) / n
    ds1 = _dataset(1, rows)
    ds2 = _dataset(2, rows)
    got = {
        name: reg.get(name)
        .finalize(
            accumulate(reg.get(name), ds.chunks(rows=3), data_bounds=bnd),
            data_bounds=bnd,
            n=None,
            relation=REPLACE,
        )
        .values[0]
        for name, ds, bnd in (
            ("sum", ds1, ((a, b),)),
            ("mean", ds1, ((a, b),)),
            ("variance", ds1, ((a, b),)),
            ("covariance", ds2, ((a, b), (c, d))),
        )
    }
    assert got["sum"] == sum(xs)
    assert got["mean"] == mx
    assert got["variance"] == sum((x - mx) ** 2 for x in xs) / (n - 1)
    assert got["covariance"] == sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / (
        n - 1
    )


def test_in_memory_chunks_give_the_same_release():
    rng = np.random.default_rng(4)
    x = rng.normal(50, 30, 10_000)
    stat = get_registries().statistics.get("variance")
    ds = as_dataset(x)
    bounds = ((0.0, 100.0),)
    whole = stat.partial(ds, data_bounds=bounds)
    assert accumulate(stat, ds.chunks(rows=777), data_bounds=bounds) == whole
    assert len(pickle.dumps(whole)) < 2000  # small: it does not grow with the records


def test_partial_objects_merge_and_release_like_the_data():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 100, 3000)
    parts = [
        snapcore.partial("mean", x[i : i + 1000], data_bounds=(0, 100)) for i in (0, 1000, 2000)
    ]
    merged = snapcore.merge(parts[::-1])
    assert merged == snapcore.partial("mean", x, data_bounds=(0, 100))
    r1 = snapcore.release("mean", merged, epsilon=1, source=snapcore.SeededSource(9))
    r2 = snapcore.release(
        "mean", x, epsilon=1, data_bounds=(0, 100), source=snapcore.SeededSource(9)
    )
    assert r1 == r2
    with pytest.raises(ParameterError, match="data_bounds"):
        snapcore.release("mean", merged, epsilon=1, data_bounds=(0, 50))
    with pytest.raises(ParameterError, match="statistic 'mean'"):
        snapcore.release("sum", merged, epsilon=1)
    other = snapcore.partial("mean", x, data_bounds=(0, 50))
    with pytest.raises(ParameterError, match="same statistic"):
        snapcore.merge([merged, other])
    # an option the statistic does not take: refused as a release refuses it
    unknown = r"^statistic 'mean' got unknown option\(s\) \['bins'\]"
    with pytest.raises(ParameterError, match=unknown) as e:
        snapcore.partial("mean", x, data_bounds=(0, 100), bins=3)
    with pytest.raises(ParameterError, match=unknown) as e2:
        snapcore.release("mean", x, epsilon=1, data_bounds=(0, 100), bins=3)
    assert e.value.parameter == e2.value.parameter == "bins"


def test_histogram_released_through_the_array_path_equals_scalar_releases():
    """One array release, bit-identical to one scalar release per bin with the same
    draws (the counts are computed independently by numpy)."""
    rng = np.random.default_rng(3)
    k = 2000  # above the fast path's minimum size
    edges = np.linspace(0.0, 1.0, k + 1)
    x = rng.uniform(0, 1, 20_000)
    r = snapcore.release(
        "histogram",
        x,
        epsilon=1,
        bins=edges,
        clamp_bounds=(-5, 60),
        source=snapcore.SeededSource(5),
    )
    counts, _ = np.histogram(x, bins=edges)
    mech = snapcore.SnappingMechanism(
        epsilon=Fraction(1, 2), clamp_bounds=(-5, 60), source=snapcore.SeededSource(5)
    )
    scalar = tuple(mech.release(float(c)) for c in counts.tolist())
    assert r.snapped == scalar
    assert r.labels[0] == "< 0.0005" and r.labels[-1] == "≥ 0.9995"  # clamped edge bins


def test_worker_errors_never_carry_values():
    stat = get_registries().statistics.get("mean")

    class Poisoned:
        """A partition whose reading raises with a private value in the message."""

        columns = ("age",)

        def __getitem__(self, key):
            raise RuntimeError("secret value 123.456")

        def __len__(self):
            return 1

    with pytest.raises(WorkerError) as e:
        _worker_partial(stat, {"age": Poisoned()}, ((0.0, 1.0),), "age", {})
    assert "123.456" not in str(e.value) and "RuntimeError" in str(e.value)
    assert e.value.__cause__ is None
    with pytest.raises(ParameterError, match="missing values") as e2:
        _worker_partial(stat, {"age": [1.5, float("nan")]}, ((0.0, 1.0),), "age", {})
    assert "1.5" not in str(e2.value)


def test_rangecount_example_is_mergeable():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "snapcore-rangecount"
    spec = importlib.util.spec_from_file_location(
        "snapcore_rangecount_t", path / "snapcore_rangecount.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    stat = mod.RangeCount()
    assert stat.mergeable
    x = [15.0, 22.0, 29.0, 30.0, 31.0, 64.0, 18.0]
    opts = {"low": 18, "high": 30}
    parts = [
        stat.partial(as_dataset(x[a:b]), data_bounds=None, **opts) for a, b in ((0, 3), (3, 7))
    ]
    assert stat.merge(*parts) == stat.partial(as_dataset(x), data_bounds=None, **opts) == (7, 4)
    r1 = snapcore.release(stat, x, epsilon=1, source=snapcore.SeededSource(1), **opts)
    r2 = snapcore.release(
        stat,
        snapcore.merge(
            [snapcore.partial(stat, x[:3], **opts), snapcore.partial(stat, x[3:], **opts)],
            statistic=stat,
        ),
        epsilon=1,
        source=snapcore.SeededSource(1),
    )
    assert r1 == r2


def _edges_and_pool(edges, xs, even):
    """The sorted edges (with ``even``: 50 evenly spaced between their ends) and the
    values to bin: ``xs``, the edges and the doubles next to them on both sides; None
    when the evenly spaced edges are not finite and strictly increasing."""
    e = np.array(sorted(edges))
    if even:
        e = np.linspace(e[0], e[-1], 50)
        if not (np.isfinite(e).all() and (np.diff(e) > 0).all()):
            return None
    pool = [
        *xs,
        *e.tolist(),
        *np.nextafter(e, np.inf).tolist(),
        *np.nextafter(e, -np.inf).tolist(),
    ]
    return e, pool


@settings(max_examples=60, deadline=None)
@given(
    edges=st.lists(H.finite_floats(), min_size=2, max_size=12, unique=True),
    xs=st.lists(H.finite_floats(), max_size=40),
    even=st.booleans(),
)
def test_bin_index_is_binary_search(edges, xs, even):
    """The guessed-and-corrected bin index equals an independent binary search (bisect),
    for any edges and for values on, next to and between them."""
    import bisect

    from snapcore.statistics.counting import bin_index

    case = _edges_and_pool(edges, xs, even)
    if case is None:
        return
    e, pool = case
    k = len(e) - 1
    x = np.clip(np.array(pool, dtype=np.float64), e[0], e[-1])
    want = [min(bisect.bisect_right(e.tolist(), v) - 1, k - 1) for v in x.tolist()]
    assert bin_index(e, x).tolist() == want


@pytest.mark.parametrize("engine", ["numpy", "numba"])
@settings(max_examples=40, deadline=None)
@given(
    edges=st.lists(H.finite_floats(), min_size=2, max_size=12, unique=True),
    xs=st.lists(H.finite_floats(), max_size=40),
    even=st.booleans(),
    drop=st.booleans(),
)
def test_bin_counts_against_exact_comparisons(engine, edges, xs, even, drop):
    """Counts per bin from both engines equal counts from exact Fraction comparisons
    (bisect on Fractions), with values on, next to and between the edges, outside
    them (clamped or dropped), and edges spanning the whole double range."""
    import bisect

    from snapcore.exact._sums import bin_counts

    case = _edges_and_pool(edges, xs, even)
    if case is None:
        return
    e, pool = case
    k = len(e) - 1
    pool = [v for v in pool if np.isfinite(v)]
    fe = [Fraction(v) for v in e.tolist()]
    want = [0] * k
    for v in map(Fraction, pool):
        if drop and not fe[0] <= v <= fe[-1]:
            continue
        v = min(max(v, fe[0]), fe[-1])
        want[min(bisect.bisect_right(fe, v) - 1, k - 1)] += 1
    got = bin_counts(e, np.array(pool, dtype=np.float64), drop=drop, engine=engine)
    assert got.tolist() == want


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_bin_counts_refuses_non_finite(engine):
    from snapcore.exact._sums import bin_counts

    for bad in (np.nan, np.inf, -np.inf):
        x = np.full(1000, 0.5)
        x[700] = bad
        with pytest.raises(ParameterError, match="finite"):
            bin_counts(np.array([0.0, 1.0]), x, drop=True, engine=engine)


def test_bin_labels_are_written_when_read_and_equal_the_tuple():
    from snapcore.statistics.counting import BinLabels

    edges = [-0.0, 0.5, 1.0, 2.5]
    want = ("[-0, 0.5)", "[0.5, 1)", "[1, 2.5]")
    labels = BinLabels(edges, clamped=False)
    assert labels == want and want == labels and tuple(labels) == want
    assert len(labels) == 3 and labels[-1] == "[1, 2.5]" and labels[1:] == want[1:]
    assert hash(labels) == hash(want)
    assert pickle.loads(pickle.dumps(labels)) == labels
    assert labels != BinLabels([0.0, 0.5, 1.0, 2.5], clamped=False)  # -0 is not 0
    assert labels != ("[-0, 0.5)", "[0.5, 1)") and labels != "[-0, 0.5)"
    assert tuple(BinLabels(edges, clamped=True)) == ("< 0.5", "[0.5, 1)", "≥ 1")
    assert tuple(BinLabels([0.0, 1.0], clamped=True)) == ("all values",)
    with pytest.raises(IndexError):
        labels[3]
    r = snapcore.release(
        "histogram", [0.1, 0.7, 3.0], bins=edges, epsilon=1, source=snapcore.SeededSource(3)
    )
    assert r.labels == ("< 0.5", "[0.5, 1)", "≥ 1")
    assert r.to_dict()["labels"] == ["< 0.5", "[0.5, 1)", "≥ 1"]


@pytest.mark.parametrize("size", [10, 70_000])
@pytest.mark.parametrize("stat", ["mean", "variance", "covariance"])
def test_float64_columns_in_one_pass_still_refuse_nan_and_inf_by_column(stat, size):
    """The moments read float64 columns in place and refuse NaN and ±inf in the same
    pass; the error is the column's (missing values, or an infinite float), raised
    before any draw, naming the column and no record."""
    from snapcore.errors import DataError, MissingValueError

    two = stat == "covariance"
    bounds = ((0, 100), (0, 100)) if two else (0, 100)
    for bad, error, words in (
        (np.nan, MissingValueError, "missing values"),
        (np.inf, DataError, "infinite"),
        (-np.inf, DataError, "infinite"),
    ):
        x = np.full(size, 31.5)
        x[size // 2] = bad
        data = {"a": np.full(size, 2.5), "b": x} if two else {"b": x}
        source = snapcore.ReplaySource([])  # no draws: the error comes first
        with pytest.raises(error, match=words) as e:
            snapcore.release(
                stat,
                data,
                column=["a", "b"] if two else "b",
                epsilon=1,
                data_bounds=bounds,
                source=source,
            )
        assert "'b'" in str(e.value) and "31.5" not in str(e.value)


# -- options compared as category keys ------------------------------------------------


def test_histogram_states_of_true_and_of_one_never_merge():
    # [True, 2] and [1, 2] are different category sets (a bool is not a number), though
    # True == 1 in Python: merging them would add a count of True records to a count of
    # records equal to 1
    a = snapcore.partial("histogram", [True, 2, True], categories=[True, 2])
    b = snapcore.partial("histogram", [1, 2, 1], categories=[1, 2])
    assert a.state == b.state == (3, 2, 1)  # equal states: only the options tell them apart
    assert a != b
    with pytest.raises(ParameterError, match="same statistic, data_bounds and options"):
        snapcore.merge([a, b])
    with pytest.raises(ParameterError, match="options must be those"):
        snapcore.release("histogram", a, categories=[1, 2], epsilon=1)
    c = snapcore.partial("histogram", ["1", 2], categories=["1", 2])
    with pytest.raises(ParameterError, match="same statistic, data_bounds and options"):
        snapcore.merge([b, c])  # 1 and "1" are different keys


def test_options_equal_as_category_keys_merge():
    # 1, 1.0 and Fraction(1) are one category: states over them merge, in either order
    a = snapcore.partial("histogram", [1, 2, 2], categories=[1, 2])
    b = snapcore.partial("histogram", [1.0, 5], categories=[Fraction(1), 2.0])
    whole = snapcore.partial("histogram", [1, 2, 2, 1.0, 5], categories=[1, 2])
    assert snapcore.merge([a, b]).state == snapcore.merge([b, a]).state == whole.state
    assert whole.state == (5, 2, 2)
    # an array of edges is frozen without rounding its elements to Python floats
    edges = np.array([0.0, 0.5, 1.0])
    p = snapcore.partial("histogram", [0.1, 0.7], bins=edges)
    assert p == snapcore.partial("histogram", [0.1, 0.7], bins=[0.0, 0.5, 1.0])
