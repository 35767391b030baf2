"""snapcore on Spark against Dask, one process and Tumult Analytics: time, driver memory, error.

The count, sum, mean and variance of ``--rows`` values (uniform on [-10, 110], so the
clamp to the data bounds [0, 100] matters) read from one Parquet file, released with
ε = 1 by

- ``one process``: pyarrow reads the column into a NumPy array, ``snapcore.release``;
- ``dask``: ``dd.read_parquet`` on a ``LocalCluster`` of 2 single-threaded worker
  processes, one partial state per partition (snapcore.releases._partials);
- ``spark``: ``spark.read.parquet`` on Spark ``local[2]``, one partial state per
  partition on the executors (snapcore.releases._spark);
- ``spark sql``: Spark's own aggregate of the clamped column (``F.sum`` and so on), in
  floating point and without noise: the cost of Spark itself, for reference;
- ``tumult``: Tumult Analytics (``tmlt.analytics``) on the same Spark session, when it
  is installed: a ``Session`` with protected change ``AddOneRow`` and the same bounds,
  created for each release (its creation included in the time).

``--stats`` and ``--engines`` choose what runs (one process always runs: it is the
reference of the ratios); ``--driver-memory`` sets ``spark.driver.memory``, the heap of
Spark's one JVM in ``local`` mode (driver and executors), 512 MB by default.

Repetitions are interleaved: in each one every engine releases every statistic, the
engines in a rotated order, so a change of the shared machine's speed falls on all of
them.  The snapcore engines use the same seed in a repetition (a new one in each), and
the benchmark asserts that their releases are identical.  Reported per engine and
statistic: the median wall-clock time, its ratio to one process (the geometric mean of
the per-repetition ratios, with a 95% t-interval on their logarithms), the peak
resident memory of the driver while the release ran (``VmHWM`` of the Python process,
reset before each release through ``/proc/self/clear_refs``; for Spark also the JVM,
which in ``local`` mode holds the executors too: a reset does not shrink it, so its
figure is the largest resident set the session reached by then), and the
root-mean-square error of the released value against the exact value (the exact
rational of the clamped values).

snapcore's count and sum are released under add-remove (as Tumult's ``AddOneRow``),
with the public cap n = 2·rows; its mean and variance exist under replace only (n
public).  Run::

    PYTHONSAFEPATH=1 python benchmarks/spark.py --rows 10000000 --repeat 5 --workdir /tmp/bench

The peak memory of a driver that does nothing else, one process per engine (the whole
process's ``VmHWM``, imports included)::

    for e in "one process" dask spark; do
        PYTHONSAFEPATH=1 python benchmarks/spark.py --rows 100000000 --peak "$e" \\
            --workdir /tmp/bench
    done
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import snapcore

STATS = ("count", "sum", "mean", "variance")
LOW, HIGH = 0.0, 100.0


def make_parquet(path: Path, rows: int) -> None:
    """``rows`` uniform doubles on [-10, 110] (column ``x``), row groups of 2**20 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(30)
    block = 1 << 23
    with pq.ParquetWriter(path, pa.schema([("x", pa.float64())])) as w:
        for start in range(0, rows, block):
            vals = rng.uniform(-10.0, 110.0, min(block, rows - start))
            w.write_table(pa.table({"x": vals}), row_group_size=1 << 20)


def exact_values(path: Path) -> dict[str, Fraction]:
    """The exact count, clamped sum, mean and (population) variance of the file."""
    state = snapcore.partial("variance", _column(path), data_bounds=(LOW, HIGH)).state
    n, s, q = state[0], Fraction(state[1], 2**1074), Fraction(state[2], 2**2148)
    mean = s / n
    return {"count": Fraction(n), "sum": s, "mean": mean, "variance": q / n - mean * mean}


def _column(path: Path) -> np.ndarray:
    import pyarrow.parquet as pq

    return np.asarray(pq.read_table(path, columns=["x"]).column("x").to_numpy())


def _keywords(stat: str, rows: int) -> dict[str, Any]:
    if stat == "count":
        return {"relation": "add-remove", "n": 2 * rows}
    if stat == "sum":
        return {"relation": "add-remove", "n": 2 * rows, "data_bounds": (LOW, HIGH)}
    return {"data_bounds": (LOW, HIGH)}


def _snapcore(data: Any, stat: str, rows: int, seed: int, **kw: Any) -> float:
    r = snapcore.release(
        stat, data, epsilon=1, source=snapcore.SeededSource(seed), **_keywords(stat, rows), **kw
    )
    return float(r.value)


# -- peak memory ----------------------------------------------------------------------


def _hwm_kib(pid: int | str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _reset_hwm(pid: int | str) -> None:
    with contextlib.suppress(OSError):  # the peak restarts from the current resident set
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def _java_children() -> list[int]:
    """The JVM(s) this process started (the Spark driver, with its local executors)."""
    me, out = os.getpid(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError):
            continue
        if ppid == me and comm == "java":
            out.append(int(d.name))
    return out


def measured(fn: Callable[[], float], jvms: list[int]) -> tuple[float, float, int, int]:
    """``fn()``'s value, wall time, and the peak resident KiB of this process and of the
    JVMs during it."""
    _reset_hwm("self")
    for p in jvms:
        _reset_hwm(p)
    t = time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t
    return value, wall, _hwm_kib("self"), sum(_hwm_kib(p) for p in jvms)


# -- engines --------------------------------------------------------------------------


def spark_session(driver_memory: str = "512m") -> Any:
    """Spark ``local[2]``: in local mode one JVM runs the driver and the executors, its
    heap bounded by ``driver_memory`` (``spark.driver.memory``)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("snapcore-bench")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.warehouse.dir", "/tmp/snapcore-spark-bench-warehouse")
        .config("spark.sql.files.maxPartitionBytes", str(32 << 20))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_sql(sdf: Any, stat: str) -> float:
    """Spark's own aggregate of the clamped values, in floating point, without noise: what
    Spark itself costs (not private, not exact)."""
    from pyspark.sql import functions as F

    c = F.least(F.greatest(F.col("x"), F.lit(LOW)), F.lit(HIGH))
    agg = {"count": F.count(F.lit(1)), "sum": F.sum(c), "mean": F.avg(c), "variance": F.var_pop(c)}
    return float(sdf.agg(agg[stat]).collect()[0][0])


def tumult_engine(sdf: Any, rows: int) -> Callable[[str], float] | None:
    """Release a statistic with Tumult Analytics on ``sdf``, or None if not installed."""
    try:
        from tmlt.analytics import AddOneRow, PureDPBudget, QueryBuilder, Session
    except ImportError:
        return None

    def release(stat: str) -> float:
        session = Session.from_dataframe(
            privacy_budget=PureDPBudget(1),
            source_id="data",
            dataframe=sdf,
            protected_change=AddOneRow(),
        )
        q = QueryBuilder("data")
        query = {
            "count": lambda: q.count(),
            "sum": lambda: q.sum("x", LOW, HIGH),
            "mean": lambda: q.average("x", LOW, HIGH),
            "variance": lambda: q.variance("x", LOW, HIGH),
        }[stat]()
        return float(session.evaluate(query, PureDPBudget(1)).collect()[0][0])

    return release


def run(
    rows: int,
    repeat: int,
    workdir: Path,
    stats: tuple[str, ...] = STATS,
    only: tuple[str, ...] | None = None,
    driver_memory: str = "512m",
) -> None:
    """Interleaved repetitions of ``stats`` by every available engine (or those named in
    ``only``; one process always runs, as the reference) and the table of results."""
    import pyspark

    try:
        import dask.dataframe as dd
        import distributed
    except ImportError:  # Tumult Analytics 0.21 pins pandas < 2, which Dask no longer supports
        dd = distributed = None

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"spark-bench-{rows}.parquet"
    if not path.exists():
        make_parquet(path, rows)
    exact = exact_values(path)
    spark = spark_session(driver_memory)
    sdf = spark.read.parquet(str(path))
    jvms = _java_children()
    tumult = tumult_engine(sdf, rows)
    engines: dict[str, Callable[[str, int], float]] = {
        "one process": lambda stat, seed: _snapcore(_column(path), stat, rows, seed),
        "spark": lambda stat, seed: _snapcore(sdf, stat, rows, seed, column="x"),
    }
    engines["spark sql"] = lambda stat, seed: spark_sql(sdf, stat)
    if dd is not None:
        engines["dask"] = lambda stat, seed: _snapcore(
            dd.read_parquet(str(path), columns=["x"]), stat, rows, seed, column="x"
        )
    if tumult is not None:
        engines["tumult"] = lambda stat, seed: tumult(stat)
    if only is not None:
        unknown = set(only) - set(engines)
        if unknown:
            raise SystemExit(f"engines not available here: {sorted(unknown)}")
        engines = {k: v for k, v in engines.items() if k == "one process" or k in only}
    if "dask" not in engines:
        dd = distributed = None
    names = list(engines)
    times: dict[tuple[str, str], list[float]] = {}
    errors: dict[tuple[str, str], list[float]] = {}
    driver: dict[tuple[str, str], int] = {}
    jvm: dict[tuple[str, str], int] = {}
    with contextlib.ExitStack() as stack:
        if distributed is not None:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
                )
            )
            stack.enter_context(distributed.Client(cluster))
        for rep in range(repeat + 1):  # repetition 0 warms every engine up, not counted
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for stat in stats:
                got: dict[str, float] = {}
                for name in order:
                    value, wall, hwm, jhwm = measured(
                        lambda name=name, stat=stat, rep=rep: engines[name](stat, rep), jvms
                    )
                    got[name] = value
                    if rep == 0:
                        continue
                    key = (name, stat)
                    times.setdefault(key, []).append(wall)
                    errors.setdefault(key, []).append(float(Fraction(value) - exact[stat]))
                    driver[key] = max(driver.get(key, 0), hwm)
                    jvm[key] = max(jvm.get(key, 0), jhwm)
                same = {got[n] for n in ("one process", "dask", "spark") if n in got}
                assert len(same) == 1, f"snapcore engines differ on {stat}: {got}"
    spark.stop()
    print(
        f"rows={rows:,} repeat={repeat} pyspark={pyspark.__version__} "
        f"engines={', '.join(names)} spark.driver.memory={driver_memory} cpus={os.cpu_count()}"
    )
    print(
        "| statistic | engine | median time | ratio to one process (95% CI) | "
        "driver peak (Python) | JVM peak | RMSE |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for stat in stats:
        base = times[("one process", stat)]
        for name in names:
            t = times[(name, stat)]
            logs = [math.log(a / b) for a, b in zip(t, base, strict=True)]
            ratio = _interval(logs) if name != "one process" else "1"
            rmse = math.sqrt(statistics.fmean(e * e for e in errors[(name, stat)]))
            jv = f"{jvm[(name, stat)] / 1024:,.0f} MB" if name in ("spark", "tumult") else ""
            print(
                f"| {stat} | {name} | {statistics.median(t):.2f} s | {ratio} | "
                f"{driver[(name, stat)] / 1024:,.0f} MB | {jv} | {rmse:.4g} |"
            )


def _interval(logs: list[float]) -> str:
    """The geometric mean of the ratios and a 95% t-interval, from their logarithms."""
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return f"{math.exp(m):.2f}×"
    t95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
    half = t95.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
    return f"{math.exp(m):.2f}× ({math.exp(m - half):.2f}–{math.exp(m + half):.2f})"


def peak(engine: str, rows: int, workdir: Path, driver_memory: str = "512m") -> None:
    """One release of the mean by ``engine`` in this fresh process; print the peak
    resident memory of the whole Python process (imports included) and of its JVM."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"spark-bench-{rows}.parquet"
    if not path.exists():
        make_parquet(path, rows)
    jvms: list[int] = []
    t = time.perf_counter()
    if engine == "one process":
        value = _snapcore(_column(path), "mean", rows, 1)
    elif engine == "spark":
        spark = spark_session(driver_memory)
        jvms = _java_children()
        value = _snapcore(spark.read.parquet(str(path)), "mean", rows, 1, column="x")
    elif engine == "dask":
        import dask.dataframe as dd
        import distributed

        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster),
        ):
            ddf = dd.read_parquet(str(path), columns=["x"])
            value = _snapcore(ddf, "mean", rows, 1, column="x")
    else:
        raise SystemExit(f"unknown engine {engine!r}")
    wall = time.perf_counter() - t
    jvm = sum(_hwm_kib(p) for p in jvms)
    print(
        f"| {rows:,} | {engine} | {_hwm_kib('self') / 1024:,.0f} MB | "
        f"{f'{jvm / 1024:,.0f} MB' if jvms else ''} | {wall:.1f} s | {value!r} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp"))
    ap.add_argument(
        "--peak",
        metavar="ENGINE",
        help='only one release of the mean by ENGINE ("one process", "dask", "spark") '
        "in this process, and its peak memory",
    )
    ap.add_argument(
        "--stats",
        default=",".join(STATS),
        help="the statistics to release, comma-separated (default: all four)",
    )
    ap.add_argument(
        "--engines",
        help="the engines to run besides one process, comma-separated "
        '(default: every one installed: "spark", "spark sql", "dask", "tumult")',
    )
    ap.add_argument(
        "--driver-memory",
        default="512m",
        help="spark.driver.memory: the heap of Spark's JVM (default 512m)",
    )
    args = ap.parse_args()
    stats = tuple(s.strip() for s in args.stats.split(","))
    if not stats or set(stats) - set(STATS):
        ap.error(f"--stats takes some of {', '.join(STATS)}")
    only = None if args.engines is None else tuple(e.strip() for e in args.engines.split(","))
    if args.peak:
        peak(args.peak, args.rows, args.workdir, args.driver_memory)
    else:
        run(args.rows, args.repeat, args.workdir, stats, only, args.driver_memory)


if __name__ == "__main__":
    main()
