"""Spark data frames: one partial state per partition on the executors of a real local
Spark (``local[2]``), merged and released once on the driver — bit-identical to the
same records released in one process with the same source and seed, for every built-in
statistic and a third-party one, grouped and not, with 1, 3 and 7 partitions and a
shuffled repartition; bad input refused before anything is drawn or charged.  A Spark
Connect data frame (a client of the Connect server the test session's JVM runs) gives
the same releases too.

One case of each slow test runs by default (tests/conftest.py samples them); the
Spark session starts once for the whole run.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import shutil
import socket
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

import snapcore
from snapcore.errors import (
    DataError,
    MissingValueError,
    ParameterError,
    SnapcoreError,
    WorkerError,
)
from snapcore.plugins._manager import resolve_statistic
from snapcore.releases._spark import _Task, decode_state, encode_state
from snapcore.testing.sources import NoDraws

pytest.importorskip("pyspark")

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")

ROWS = 3001
#: Records per Arrow batch on the executors: each partition reads several batches.
BATCH = 256


def _rangecount():
    """The third-party statistic of examples/snapcore-rangecount, loaded from its file
    (not importable by name, so Spark ships the class to the executors by value)."""
    path = Path(__file__).resolve().parents[2] / "examples" / "snapcore-rangecount"
    spec = importlib.util.spec_from_file_location(
        "snapcore_rangecount_spark", path / "snapcore_rangecount.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.RangeCount()


RANGE_COUNT = _rangecount()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: The Spark Connect server of the test session (a plugin of its JVM) listens here.
CONNECT_PORT = _free_port()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A ``local[2]`` SparkSession for the whole run, stopped at its end; logging quiet.
    Its JVM also serves Spark Connect on ``CONNECT_PORT`` (127.0.0.1)."""
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("Spark needs Java: .ci/run installs OpenJDK 17")
        pytest.skip("Spark needs Java (OpenJDK 17)")
    from pyspark.sql import SparkSession

    folder = tmp_path_factory.mktemp("spark")
    log4j = folder / "log4j2.properties"
    log4j.write_text(
        "rootLogger.level = error\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
    )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("snapcore-tests")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(folder / "warehouse"))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(CONNECT_PORT))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def frame():
    """Doubles over many binades (some outside the data bounds), an int64 column, group
    keys (5 and 9 are not in the key set, 7 has no record), text categories."""
    rng = np.random.default_rng(30)
    return pd.DataFrame(
        {
            "i": np.arange(ROWS, dtype=np.int64),
            "x": rng.uniform(-5, 105, ROWS) * 2.0 ** rng.integers(-30, 1, ROWS),
            "y": rng.normal(0, 500, ROWS),
            "k": rng.integers(-(2**40), 2**40, ROWS, dtype=np.int64),
            "g": rng.choice([0, 1, 2, 3, 5, 9], ROWS),
            "s": rng.choice(["a", "b", "c", "d"], ROWS),
        }
    )


@pytest.fixture(scope="module")
def base(spark, frame):
    return spark.createDataFrame(frame)


def _layout(base, name):
    """The records split as ``name`` says: contiguous ranges of ``i`` (1, 3, 7
    partitions), or a random order hash-partitioned (shuffled)."""
    from pyspark.sql import functions as F

    if name == "shuffled":
        out = base.orderBy(F.rand(seed=11)).repartition(5, F.col("s"), F.col("x"))
        return out, 5
    parts = int(name)
    out = base.coalesce(1) if parts == 1 else base.repartitionByRange(parts, "i")
    return out, parts


LAYOUTS = ["1", "3", "7", "shuffled"]
KEYS = [0, 1, 2, 3, 7]

#: (statistic, column, keywords): every built-in statistic and a third-party one.
RELEASES = [
    ("count", None, {"n": 5000, "relation": "add-remove"}),
    ("count", "x", {"relation": "replace"}),
    ("sum", "x", {"data_bounds": (0, 100)}),
    ("sum", "k", {"data_bounds": (-(2**39), 2**39), "n": 5000, "relation": "add-remove"}),
    ("mean", "x", {"data_bounds": (0, 100)}),
    ("variance", "x", {"data_bounds": (0, 100)}),
    ("covariance", ("x", "y"), {"data_bounds": ((0, 100), (-1e3, 1e3))}),
    ("histogram", "x", {"bins": [0.0, 10.0, 50.0, 99.5, 100.0]}),
    ("histogram", "s", {"categories": ["a", "b", "z"], "other": True}),
    (RANGE_COUNT, "x", {"low": 18.0, "high": 30.0}),
]


def _name(case):
    stat, column, _ = case
    return f"{getattr(stat, 'name', stat)}-{column}"


def _grouped_keywords(stat, kw, frame):
    """The keywords of the grouped form: add-remove with a public cap where the
    statistic has it, else replace with the public group sizes."""
    kw = {k: v for k, v in kw.items() if k not in ("n", "relation")}
    name = getattr(stat, "name", stat)
    if name in ("mean", "variance", "covariance"):  # replace only: no empty group
        sizes = {k: int((frame["g"] == k).sum()) for k in KEYS[:-1]}
        return {**kw, "relation": "replace", "group_sizes": sizes, "keys": KEYS[:-1]}
    return {**kw, "relation": "add-remove", "n": 5000, "keys": KEYS}


def _options(stat, kw):
    """The keywords snapcore.partial takes (the statistic's data bounds and options)."""
    return {k: v for k, v in kw.items() if k not in ("n", "relation", "group_sizes")}


def _check(stat, column, kw, sdf, frame, seed=17):
    got = snapcore.release(
        stat, sdf, column=column, epsilon=1, source=snapcore.SeededSource(seed), **kw
    )
    want = snapcore.release(
        stat, frame, column=column, epsilon=1, source=snapcore.SeededSource(seed), **kw
    )
    if isinstance(want, snapcore.GroupedRelease):  # compared field by field (eq=False)
        assert (got.keys, got.releases, got.epsilon_spent, got.relation) == (
            want.keys,
            want.releases,
            want.epsilon_spent,
            want.relation,
        )
        assert (got.composition, got.group_sizes) == (want.composition, want.group_sizes)
    else:
        assert got == want
    return got


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", RELEASES, ids=_name)
def test_release_is_bit_identical_to_one_process(base, frame, case, layout):
    stat, column, kw = case
    sdf, parts = _layout(base, layout)
    assert sdf.rdd.getNumPartitions() == parts
    _check(stat, column, kw, sdf, frame)
    got = snapcore.partial(stat, sdf, column=column, **_options(stat, kw))
    assert got == snapcore.partial(stat, frame, column=column, **_options(stat, kw))


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", RELEASES, ids=_name)
def test_grouped_release_is_bit_identical_to_one_process(base, frame, case, layout):
    stat, column, kw = case
    sdf, _ = _layout(base, layout)
    kw = _grouped_keywords(stat, kw, frame)
    got = _check(stat, column, {**kw, "by": "g"}, sdf, frame)
    assert list(got.keys) == kw["keys"] and len(got.releases) == len(kw["keys"])


def test_the_state_does_not_depend_on_the_split(base, frame):
    """Independent of the release: the merged exact sum of the clamped values is the
    exact rational sum of the values, clamped (Fractions), for every layout."""
    lo, hi = Fraction(0), Fraction(100)
    want = sum(min(max(Fraction(v), lo), hi) for v in frame["x"].tolist())
    for layout in LAYOUTS:
        sdf, _ = _layout(base, layout)
        p = snapcore.partial("sum", sdf, column="x", data_bounds=(0, 100))
        r = snapcore.release(
            "sum", snapcore.merge([p]), epsilon=1, source=snapcore.SeededSource(1)
        )
        assert r.n == ROWS
        records, exact = p.state[0], p.state[1]
        assert records == ROWS
        assert Fraction(exact, 2**1074) == want


def test_no_column_leaves_the_executors(base, frame, monkeypatch):
    """Nothing but one row per partition and group comes back: Spark's collect is
    only ever called on the states' rows, never on the data."""
    sdf, parts = _layout(base, "7")
    cls = type(sdf)
    collected = []
    real = cls.collect

    def spy(self):
        rows = real(self)
        collected.append((list(self.columns), len(rows)))
        return rows

    def refuse(self, *args, **kwargs):
        raise AssertionError("the data were brought to the driver")

    monkeypatch.setattr(cls, "collect", spy)
    for name in ("toArrow", "toPandas", "toLocalIterator", "take", "head", "tail"):
        monkeypatch.setattr(cls, name, refuse)
    snapcore.release("mean", sdf, column="x", data_bounds=(0, 100), epsilon=1)
    snapcore.release("sum", sdf, column="x", data_bounds=(0, 100), by="g", keys=KEYS,
                     n=5000, epsilon=1)  # fmt: skip
    assert collected == [
        (["group", "state", "error"], parts),
        (["group", "state", "error"], parts * len(KEYS)),
    ]


def test_missing_values_follow_the_policy(spark, frame):
    """drop and impute are applied record by record on the executors, exactly as in
    memory; the default refuses."""
    m = frame["x"].copy()
    m[::7] = np.nan
    pdf = frame.assign(m=m)
    sdf = spark.createDataFrame(pdf).repartitionByRange(3, "i")
    for kw in (
        {"missing": "drop", "relation": "add-remove", "n": 5000},
        {"missing": "impute", "impute": 50.0},
    ):
        _check("sum", "m", {"data_bounds": (0, 100), **kw}, sdf, pdf)
        grouped = {"data_bounds": (0, 100), "by": "g", "keys": KEYS, "n": 5000, **kw}
        grouped["relation"] = "add-remove"
        _check("sum", "m", grouped, sdf, pdf)
    budget = snapcore.Budget(1)
    with pytest.raises(MissingValueError, match="'m'"):
        snapcore.release("mean", sdf, column="m", data_bounds=(0, 100), epsilon=1,
                         budget=budget, source=NoDraws())  # fmt: skip
    assert budget.spent == 0


#: Refused on the executors (the values) or on the driver before any Spark job (the
#: columns and the keys): the keywords, and the error's class.
REFUSALS = [
    ({"statistic": "mean", "column": "nan", "data_bounds": (0, 100)}, MissingValueError),
    ({"statistic": "mean", "column": "bad", "data_bounds": (0, 100)}, DataError),
    ({"statistic": "mean", "column": "inf", "data_bounds": (0, 1e6)}, DataError),
    ({"statistic": "sum", "column": "nan", "data_bounds": (0, 100), "by": "g",
      "keys": KEYS, "n": 10}, MissingValueError),
    ({"statistic": RANGE_COUNT, "column": "x", "low": 5.0, "high": 1.0}, ParameterError),
    ({"statistic": "mean", "column": "nope", "data_bounds": (0, 100)}, ParameterError),
    ({"statistic": "mean", "column": None, "data_bounds": (0, 100)}, ParameterError),
    ({"statistic": "mean", "column": ("x", "y"), "data_bounds": (0, 100)}, ParameterError),
    ({"statistic": "sum", "column": "x", "data_bounds": (0, 100), "by": "nope",
      "keys": KEYS, "n": 10}, DataError),
    ({"statistic": "sum", "column": "x", "data_bounds": (0, 100), "by": "g",
      "keys": [], "n": 10}, ParameterError),
    ({"statistic": "sum", "column": "x", "data_bounds": (0, 100), "by": "g",
      "keys": [1, 1.0], "n": 10}, ParameterError),
    ({"statistic": "mean", "column": "x", "data_bounds": (0, 100), "by": "g",
      "keys": KEYS}, ParameterError),  # replace needs group_sizes
]  # fmt: skip


@pytest.fixture(scope="module")
def bad_frame(spark, frame):
    """Planted values that must appear in no message: text in a numeric column, a NaN,
    an infinity next to a distinctive number."""
    pdf = frame.assign(
        bad=[str(v) if i % 3 else "text-31415" for i, v in enumerate(frame["x"])],
        nan=np.where(np.arange(ROWS) == 1234, np.nan, frame["x"]),
        inf=np.where(np.arange(ROWS) == 7, np.inf, 123456.789012),
    )
    return spark.createDataFrame(pdf).repartition(3)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if i in (2, 3, 4) else c
     for i, c in enumerate(REFUSALS)],
    ids=lambda c: "-".join(f"{k}={getattr(v, 'name', v)}" for k, v in c[0].items()),
)  # fmt: skip
def test_refusals_before_anything_is_drawn_or_charged(bad_frame, case):
    kw, kind = case
    budget = snapcore.Budget(5)
    with pytest.raises(ParameterError) as e:
        snapcore.release(data=bad_frame, epsilon=1, budget=budget, source=NoDraws(), **kw)
    assert budget.spent == 0
    assert isinstance(e.value, kind), (kw, e.value)
    text = str(e.value)
    for secret in ("31415", "123456", "1234"):
        assert secret not in text, (kw, text)
    assert "Traceback" not in text and "Py4J" not in text


def test_a_worker_failure_keeps_only_its_type():
    """An unexpected exception in a statistic comes back as a WorkerError naming its
    type, without its message (which may quote data)."""
    from snapcore.data._missing import MissingPolicy
    from snapcore.releases._spark import _raise_error

    class Poisoned(snapcore.Statistic):
        name = "poisoned"
        relations = (snapcore.Neighbouring.REPLACE,)

        def partial(self, chunk, *, data_bounds, **options):
            raise RuntimeError("the value 98765.4321 leaked")

        def finalize(self, state, **kw):  # pragma: no cover - never reached
            raise AssertionError

    task = _Task(stat=Poisoned(), data_bounds=None, column="x", options={},
                 policy=MissingPolicy(kind="error"))  # fmt: skip
    batch = pa.RecordBatch.from_pydict({"x": [1.0, 98765.4321]})
    (out,) = task.run([batch])
    row = out.to_pylist()[0]
    assert row["group"] == -1 and row["state"] is None
    with pytest.raises(WorkerError, match="RuntimeError") as e:
        _raise_error(row["error"])
    assert "98765" not in str(e.value)
    # a snapcore error keeps its class, message and parameter
    task = _Task(stat=resolve_statistic("mean"), data_bounds=((0.0, 1.0),),
                 column="x", options={}, policy=MissingPolicy(kind="error"))  # fmt: skip
    (out,) = task.run([pa.RecordBatch.from_pydict({"x": [0.5, float("nan")]})])
    with pytest.raises(MissingValueError, match="'x'"):
        _raise_error(out.to_pylist()[0]["error"])
    for junk in ("", "[]", '{"type": "os.system", "message": "x", "parameter": null}', None):
        with pytest.raises(SnapcoreError, match="could not be read"):
            _raise_error(junk)


#: (statistic, column, data bounds, options, by, keys) of the joining test.
JOINED = [
    ("sum", "k", (-(2.0**61), 2.0**61), {}, None, ()),
    ("histogram", "s", None, {"categories": ("a", "c")}, None, ()),
    ("sum", "k", (-(2.0**61), 2.0**61), {}, "s", ("c", "a", "z")),
    ("count", None, None, {}, "s", ("a", "b")),
]


@pytest.mark.parametrize("chunk_rows", [1, 7, 100, 10**6])
def test_batches_are_joined_into_chunks_exactly(chunk_rows):
    """However a partition's batches are joined, its state is the state of all its
    records: int64 values above 2**53 and text keys included."""
    from snapcore.data._missing import MissingPolicy

    rng = np.random.default_rng(5)
    k = rng.integers(-(2**62), 2**62, 250, dtype=np.int64).tolist()
    s = rng.choice(["a", "b", "c"], 250).tolist()
    cuts = np.cumsum([0, 0, 3, 50, 1, 0, 96, 100]).tolist()
    batches = [
        pa.RecordBatch.from_pydict({"k": k[a:b], "s": s[a:b]}) for a, b in itertools.pairwise(cuts)
    ]
    for stat, column, bounds, opts, by, keys in JOINED:
        task = _Task(
            stat=resolve_statistic(stat),
            data_bounds=None if bounds is None else (bounds,),
            column=column,
            options=opts,
            policy=MissingPolicy(kind="error"),
            by=by,
            keys=keys,
            chunk_rows=chunk_rows,
        )
        (out,) = task.run(iter(batches))
        got = [decode_state(t) for t in out.column("state").to_pylist()]
        groups = [(k, s)] if by is None else [
            ([v for v, g in zip(k, s, strict=True) if g == key], [key] * s.count(key))
            for key in keys
        ]  # fmt: skip
        want = [
            snapcore.partial(
                stat, {"k": kk, "s": ss}, column=column, data_bounds=bounds, **opts
            ).state
            for kk, ss in groups
        ]
        assert got == want, (stat, by)


def test_an_empty_partition_has_the_empty_state():
    from snapcore.data._missing import MissingPolicy

    stat = resolve_statistic("mean")
    task = _Task(stat=stat, data_bounds=((0.0, 1.0),), column="x", options={},
                 policy=MissingPolicy(kind="error"))  # fmt: skip
    (out,) = task.run([])
    (row,) = out.to_pylist()
    want = snapcore.partial("mean", [], data_bounds=(0, 1)).state
    assert decode_state(row["state"]) == want and row["error"] is None


STATES = st.lists(
    st.one_of(
        st.integers(min_value=-(2**3000), max_value=2**3000),
        st.fractions().filter(lambda q: q.denominator > 1),
    ),
    max_size=6,
).map(tuple)


@given(STATES, STATES)
def test_state_text_is_exact_and_canonical(a, b):
    assert decode_state(encode_state(a)) == a
    assert all(type(x) is type(y) for x, y in zip(decode_state(encode_state(a)), a, strict=True))
    assert (encode_state(a) == encode_state(b)) == (a == b)


@pytest.mark.parametrize(
    "text",
    [None, 5, "", "{}", '"ff"', "[1]", '["0x1f"]', '["1F"]', '["+1"]', '["2/4"]',
     '["1/0"]', '["1/-2"]', '["1/"]', '["/2"]', '[" 1"]', '["1_0"]'],
)  # fmt: skip
def test_state_text_refuses_anything_else(text):
    with pytest.raises(SnapcoreError, match="could not be read"):
        decode_state(text)


def test_a_spark_frame_is_not_read_whole(spark):
    """The in-memory readers refuse a Spark frame instead of collecting it."""
    from snapcore.data._frames import read_dataset

    sdf = spark.createDataFrame(pd.DataFrame({"x": [1.0, 2.0]}))
    with pytest.raises(ParameterError, match="partition by partition"):
        read_dataset(sdf, column="x")


def test_the_example_in_the_docs_runs(spark, capsys):
    """The Spark example of docs/scaling.md, as written (its session is the test's)."""
    page = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
    text = page.read_text(encoding="utf-8")
    marker = "<!-- the block below is run by tests/releases/test_spark.py -->\n```python\n"
    start = text.index(marker) + len(marker)
    code = text[start : text.index("```", start)]
    ns: dict[str, object] = {}
    exec(compile(code, str(page), "exec"), ns)
    assert isinstance(ns["r"], snapcore.Release) and ns["r"].n == 5
    assert list(ns["g"].keys) == ["north", "south", "west"]
    assert capsys.readouterr().out.strip()


@pytest.fixture
def connect(spark):
    """A Spark Connect client session of the test session's server (its data frames are
    ``pyspark.sql.connect`` ones, their ``mapInArrow`` runs on the server's executors)."""
    try:
        import grpc  # noqa: F401  (the Connect client's transport, pyspark[connect])
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Spark Connect needs pyspark[connect] (grpcio), in the test extra")
        pytest.skip("Spark Connect needs pyspark[connect] (grpcio)")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(f"sc://127.0.0.1:{CONNECT_PORT}").create()
    yield session
    session.stop()


def test_a_spark_connect_frame_is_released_as_in_one_process(connect, frame):
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    sdf = connect.createDataFrame(frame[["x", "g"]]).repartition(3)
    assert isinstance(sdf, ConnectFrame)
    _check("mean", "x", {"data_bounds": (0, 100)}, sdf, frame)
    kw = {"relation": "add-remove", "n": 5000, "keys": KEYS}
    got = _check("count", None, {**kw, "by": "g"}, sdf, frame)
    assert list(got.keys) == KEYS
