"""Exact statistics at data scale: snapcore against numpy and diffprivlib, in one process.

Three parts (each optional):

``table``
    10^7 uniform(0, 100) doubles: mean, variance, covariance; 10^7 integers as
    doubles: mean; 10^6 uniform values in a 10^5-bin histogram.  numpy (not
    private), diffprivlib (float, private) and ``snapcore.release`` (exact, private),
    best of ``--repeat`` runs each, with snapcore's ratio to diffprivlib.  The
    histogram is also released bin by bin through the scalar path (how it was done
    before the array path), for the speed-up.
``dask``
    The mean of 10^7 (``--dask-sizes``) values: one process (numpy array in memory),
    Dask's threaded scheduler, and a ``distributed.LocalCluster`` with 2 worker
    processes (data persisted on the workers first), same draws, same result.
``make-csv PATH ROWS``
    Write a CSV file of ROWS uniform values with two decimals (column ``x``) for the
    bounded-memory run of the command line::

        python benchmarks/scale.py make-csv /tmp/big.csv 100000000
        /usr/bin/time -v snapcore release mean /tmp/big.csv -c x -b 0 100 -e 1

Run::

    PYTHONSAFEPATH=1 python benchmarks/scale.py table [--repeat 5]
    PYTHONSAFEPATH=1 python benchmarks/scale.py dask [--dask-sizes 10000000,100000000]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

import snapcore


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _diffprivlib() -> Any:
    try:
        import diffprivlib.tools as dp
    except ImportError:
        return None
    warnings.filterwarnings("ignore", module="diffprivlib")
    return dp


def _row(label: str, t_np: float, t_dp: float | None, t_sc: float) -> None:
    dp = "-" if t_dp is None else f"{t_dp * 1e3:10.1f} ms"
    ratio = "-" if t_dp is None else f"{t_sc / t_dp:6.2f}x"
    print(f"{label:<42} {t_np * 1e3:10.1f} ms {dp:>13} {t_sc * 1e3:10.1f} ms {ratio:>8}")


def table(repeat: int) -> None:
    dp = _diffprivlib()
    rng = np.random.default_rng(1)
    n = 10**7
    x = rng.uniform(0, 100, n)
    y = rng.uniform(0, 100, n)
    ints = rng.integers(18, 90, n).astype(np.float64)
    src = snapcore.SeededSource(1)
    snapcore.release("mean", x[:100_000], epsilon=1, data_bounds=(0, 100), source=src)  # warm
    print(
        f"{'data / statistic':<42} {'numpy':>13} {'diffprivlib':>13} {'snapcore':>13} {'sc/dp':>8}"
    )
    xy = np.column_stack([x, y])
    runs: list[tuple[str, Callable[[], object], Callable[[], object] | None, Callable[[], object]]]
    runs = [
        (
            "10^7 uniform(0,100): mean",
            lambda: np.mean(x),
            None if dp is None else lambda: dp.mean(x, epsilon=1, bounds=(0, 100)),
            lambda: snapcore.release("mean", x, epsilon=1, data_bounds=(0, 100), source=src),
        ),
        (
            "10^7 uniform(0,100): variance",
            lambda: np.var(x, ddof=1),
            None if dp is None else lambda: dp.var(x, epsilon=1, bounds=(0, 100)),
            lambda: snapcore.release("variance", x, epsilon=1, data_bounds=(0, 100), source=src),
        ),
        (
            "10^7 uniform(0,100): covariance (dp: var)",
            lambda: np.cov(x, y),
            None if dp is None else lambda: dp.var(x, epsilon=1, bounds=(0, 100)),
            lambda: snapcore.release(
                "covariance", xy, epsilon=1, data_bounds=((0, 100), (0, 100)), source=src
            ),
        ),
        (
            "10^7 integers as float64: mean",
            lambda: np.mean(ints),
            None if dp is None else lambda: dp.mean(ints, epsilon=1, bounds=(0, 100)),
            lambda: snapcore.release("mean", ints, epsilon=1, data_bounds=(0, 100), source=src),
        ),
    ]
    for label, f_np, f_dp, f_sc in runs:
        _row(
            label,
            best(f_np, repeat),
            None if f_dp is None else best(f_dp, repeat),
            best(f_sc, repeat),
        )
    # the histogram
    h = rng.uniform(0, 1, 10**6)
    edges = np.linspace(0, 1, 10**5 + 1)
    t_np = best(lambda: np.histogram(h, bins=edges), repeat)
    t_dp = (
        None
        if dp is None
        else best(lambda: dp.histogram(h, epsilon=1, bins=edges, range=(0, 1)), repeat)
    )
    t_sc = best(
        lambda: snapcore.release("histogram", h, epsilon=1, bins=edges, source=src), repeat
    )
    _row("10^6 uniform, histogram 10^5 bins", t_np, t_dp, t_sc)

    def per_bin() -> object:  # the scalar path, one release per bin (as before)
        r = snapcore.release("histogram", h[:10], epsilon=1, bins=edges, source=src)
        counts, _ = np.histogram(h, bins=edges)
        mech = snapcore.SnappingMechanism(
            epsilon=Fraction(1, 2), clamp_bounds=r.clamp_bounds, source=src
        )
        return [mech.release(Fraction(int(c))) for c in counts.tolist()]

    t_old = best(per_bin, max(1, repeat // 2))
    print(
        f"  histogram bins one by one (scalar path): {t_old * 1e3:.1f} ms; "
        f"array path {t_old / t_sc:.1f}x faster"
    )


def _mean(data: Any, **kw: Any) -> snapcore.Release:
    return snapcore.release(
        "mean", data, epsilon=1, data_bounds=(0, 100), source=snapcore.SeededSource(1), **kw
    )


def dask_part(sizes: list[int]) -> None:
    import distributed

    print(f"{'rows':>11} {'one process':>13} {'dask threads':>13} {'LocalCluster(2)':>16}")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        for n in sizes:
            _dask_row(cluster, n)


def _dask_row(cluster: Any, n: int) -> None:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import distributed

    chunks = max(n // 8, 1)
    bounds = [(i, min(i + chunks, n)) for i in range(0, n, chunks)]
    x = np.concatenate([_part(i, a, b) for i, (a, b) in enumerate(bounds)])
    ref = _mean(x)
    t1 = best(lambda: _mean(x), 3)
    ddf = dd.from_dask_array(da.from_array(x, chunks=chunks), columns=["x"])
    ddf = ddf.persist(scheduler="threads")
    with dask.config.set(scheduler="threads"):
        assert _mean(ddf, column="x") == ref
        t2 = best(lambda: _mean(ddf, column="x"), 3)
    with distributed.Client(cluster) as client:
        # the same values, made on the workers and kept there
        futures = [client.submit(_frame, i, a, b, pure=False) for i, (a, b) in enumerate(bounds)]
        on_workers = dd.from_delayed([dask.delayed(f) for f in futures], meta={"x": "f8"})
        on_workers = on_workers.persist()
        distributed.wait(on_workers)
        assert _mean(on_workers, column="x") == ref
        t3 = best(lambda: _mean(on_workers, column="x"), 3)
    print(f"{n:>11} {t1 * 1e3:>10.0f} ms {t2 * 1e3:>10.0f} ms {t3 * 1e3:>13.0f} ms")


def _part(i: int, start: int, stop: int) -> np.ndarray:
    out: np.ndarray = np.random.default_rng([3, i]).uniform(0, 100, stop - start)
    return out


def _frame(i: int, start: int, stop: int) -> Any:
    import pandas as pd

    return pd.DataFrame({"x": _part(i, start, stop)})


def make_csv(path: str, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(5)
    block = 10**7
    with pacsv.CSVWriter(path, pa.schema([("x", pa.float64())])) as w:
        for start in range(0, rows, block):
            m = min(block, rows - start)
            vals = np.round(rng.uniform(0, 100, m), 2)
            w.write_table(pa.table({"x": vals}))
    print(f"wrote {rows} rows to {path}")


def make_parquet(path: str, rows: int, full: bool = False) -> None:
    """The same values as :func:`make_csv`, in a Parquet file (row groups of 2**20 rows);
    with ``full``, uniform doubles at full precision (which do not compress)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    block = 10**7
    with pq.ParquetWriter(path, pa.schema([("x", pa.float64())])) as w:
        for start in range(0, rows, block):
            m = min(block, rows - start)
            vals = rng.uniform(0, 100, m)
            vals = vals if full else np.round(vals, 2)
            w.write_table(pa.table({"x": vals}), row_group_size=1 << 20)
    print(f"wrote {rows} rows to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("table")
    t.add_argument("--repeat", type=int, default=5)
    d = sub.add_parser("dask")
    d.add_argument("--dask-sizes", default="10000000")
    m = sub.add_parser("make-csv")
    m.add_argument("path")
    m.add_argument("rows", type=int)
    mp = sub.add_parser("make-parquet")
    mp.add_argument("path")
    mp.add_argument("rows", type=int)
    mp.add_argument("--full-precision", action="store_true")
    args = ap.parse_args()
    if args.cmd == "table":
        table(args.repeat)
    elif args.cmd == "dask":
        dask_part([int(s) for s in args.dask_sizes.split(",")])
    elif args.cmd == "make-parquet":
        make_parquet(args.path, args.rows, args.full_precision)
    else:
        make_csv(args.path, args.rows)


if __name__ == "__main__":
    main()
