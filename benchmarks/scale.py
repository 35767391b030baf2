"""Exact statistics at data scale: snapcore against numpy and diffprivlib, in one process.

Three parts (each optional):

``table``
    10^7 uniform(0, 100) doubles: mean, variance, covariance; 10^7 integers as
    doubles: mean; 10^6 uniform values in a 10^5-bin histogram.  numpy (not
    private), diffprivlib (float, private) and ``snapcore.release`` (exact, private),
    best of ``--repeat`` runs each (wall clock and CPU time), with snapcore's ratio
    to diffprivlib.  The histogram is also released bin by bin through the scalar
    path (how it was done before the array path), for the speed-up, with the seeded
    source and with ChaCha20 (timing padding off and on).
``dask``
    The mean of 10^7 (``--dask-sizes``) values: one process (numpy array in memory),
    Dask's threaded scheduler, and a ``distributed.LocalCluster`` with 2 worker
    processes (data persisted on the workers first), same draws, same result.
``threads``
    Array releases of 10^6 and 10^7 values (``--sizes``) through the default
    mechanism (MPFR backend, fast path, ChaCha20; timing padding on, as users get
    it, and off) at ``threads=1`` and at every CPU this process may use, against
    numpy's ``Generator.laplace`` (one thread, not private).  Rounds of complete
    blocks: each round runs every class once, in a random order, and gives one
    paired ratio numpy time / snapcore time per class (above 1: faster than numpy);
    numpy runs twice per round, and the ratio of its two runs is the A/A control.
    One more class reads ChaCha20's keystream in the calling thread before the
    threads decode (the source without ``reserve``).
    Printed: the median paired ratio with a distribution-free 95% interval, and
    each class's median time.  ``--decode``: the fused loop alone on draws already in
    memory, one thread against two on a thread pool and two under numba's ``prange``.
``make-csv PATH ROWS``
    Write a CSV file of ROWS uniform values with two decimals (column ``x``) for the
    bounded-memory run of the command line::

        python benchmarks/scale.py make-csv /tmp/big.csv 100000000
        /usr/bin/time -v snapcore release mean /tmp/big.csv -c x -b 0 100 -e 1
``make-parquet PATH ROWS [--full-precision]``
    The same values in a Parquet file (row groups of 2**20 rows); with
    ``--full-precision`` uniform doubles that do not compress (about 830 MB for 10^8)::

        python benchmarks/scale.py make-parquet /tmp/big.parquet 100000000 --full-precision
        /usr/bin/time -v snapcore release mean /tmp/big.parquet -c x --data-bounds 0 100 -e 1

Run::

    PYTHONSAFEPATH=1 nice -n 5 taskset -c 0 python benchmarks/scale.py table [--repeat 5]
    PYTHONSAFEPATH=1 python benchmarks/scale.py threads [--sizes 1e6,1e7] [--rounds 15]
    PYTHONSAFEPATH=1 python benchmarks/scale.py threads --decode
    PYTHONSAFEPATH=1 python benchmarks/scale.py dask [--dask-sizes 10000000,100000000]
"""

from __future__ import annotations

import argparse
import os
import random
import runpy
import statistics
import time
import types
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any

import numpy as np

import snapcore

#: ``bench_statistics.py`` beside this script, run by path (the scripts run with
#: ``PYTHONSAFEPATH=1``, which keeps their directory off ``sys.path``).
_bench_statistics = types.SimpleNamespace(
    **runpy.run_path(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_statistics.py")
    )
)
median_interval = _bench_statistics.median_interval


def best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The smallest wall-clock and the smallest CPU (process) time of ``repeat`` runs.

    On a shared machine the wall clock also counts time spent waiting for a core;
    the process time does not, so its ratios are the steadier ones.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def _diffprivlib() -> Any:
    try:
        import diffprivlib.tools as dp
    except ImportError:
        return None
    warnings.filterwarnings("ignore", module="diffprivlib")
    return dp


Timing = tuple[float, float]


def _ms(t: Timing | None) -> str:
    return "-" if t is None else f"{t[0] * 1e3:8.1f} ({t[1] * 1e3:6.1f})"


def _row(label: str, t_np: Timing, t_dp: Timing | None, t_sc: Timing) -> None:
    ratio = "-" if t_dp is None else f"{t_sc[0] / t_dp[0]:5.2f}x ({t_sc[1] / t_dp[1]:5.2f}x)"
    print(f"{label:<42} {_ms(t_np):>18} {_ms(t_dp):>18} {_ms(t_sc):>18} {ratio:>16}")


def table(repeat: int) -> None:
    dp = _diffprivlib()
    rng = np.random.default_rng(1)
    n = 10**7
    x = rng.uniform(0, 100, n)
    y = rng.uniform(0, 100, n)
    ints = rng.integers(18, 90, n).astype(np.float64)
    src = snapcore.SeededSource(1)
    snapcore.release("mean", x[:100_000], epsilon=1, data_bounds=(0, 100), source=src)  # warm
    print("best of", repeat, "runs; wall-clock ms (CPU ms); ratio snapcore/diffprivlib")
    print(
        f"{'data / statistic':<42} {'numpy':>18} {'diffprivlib':>18} {'snapcore':>18} "
        f"{'sc/dp':>16}"
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
    histogram(rng, dp, repeat)


def histogram(rng: np.random.Generator, dp: Any, repeat: int) -> None:
    """10^6 uniform values in 10^5 bins: one array release against one scalar release
    per bin (how it was done before), with the seeded source and with ChaCha20."""
    h = rng.uniform(0, 1, 10**6)
    edges = np.linspace(0, 1, 10**5 + 1)
    t_np = best(lambda: np.histogram(h, bins=edges), repeat)
    t_dp = (
        None
        if dp is None
        else best(lambda: dp.histogram(h, epsilon=1, bins=edges, range=(0, 1)), repeat)
    )
    src = snapcore.SeededSource(1)

    def hist(source: Any, **kw: Any) -> Callable[[], object]:
        return lambda: snapcore.release("histogram", h, epsilon=1, bins=edges, source=source, **kw)

    hist(src)()
    hist("chacha20")()  # warm: compile, calibrate the array padding
    t_sc = best(hist(src), repeat)
    _row("10^6 uniform, histogram 10^5 bins (seeded)", t_np, t_dp, t_sc)
    clamp = snapcore.release("histogram", h[:10], epsilon=1, bins=edges, source=src)

    def per_bin(source: Any, **kw: Any) -> Callable[[], object]:
        mech = snapcore.SnappingMechanism(
            epsilon=Fraction(1, 2), clamp_bounds=clamp.clamp_bounds, source=source, **kw
        )

        def run() -> object:  # the scalar path, one release per bin (as before)
            counts, _ = np.histogram(h, bins=edges)
            return [mech.release(Fraction(int(c))) for c in counts.tolist()]

        return run

    rows = [
        ("seeded", per_bin(src), hist(src)),
        (
            "chacha20, timing off",
            per_bin("chacha20", timing="off"),
            hist("chacha20", timing="off"),
        ),
        ("chacha20, timing default", per_bin("chacha20"), hist("chacha20")),
    ]
    for name, old, new in rows:
        t_old = best(old, max(1, repeat // 2))
        t_new = best(new, repeat)
        print(
            f"  histogram, {name}: one scalar release per bin {_ms(t_old)} ms, array path "
            f"{_ms(t_new)} ms: {t_old[0] / t_new[0]:.1f}x ({t_old[1] / t_new[1]:.1f}x) faster"
        )


class _Unreserved(snapcore.ByteSource):
    """A byte source's stream without its ``reserve`` capability: read in place."""

    name = "unreserved"
    cryptographic = True

    def __init__(self, inner: snapcore.ByteSource) -> None:
        super().__init__()
        self.inner = inner

    def read(self, n: int) -> bytes:
        return self.inner.read(n)

    def readinto(self, buffer: Any) -> None:
        self.inner.readinto(buffer)


def threads_part(sizes: list[int], rounds: int) -> None:
    """Array releases at one thread and at every usable CPU against numpy's Laplace,
    in rounds of complete blocks (see the module docstring)."""
    from snapcore.pipeline._threads import usable_cpus

    cpus = usable_cpus()
    gen = np.random.default_rng(7)
    order = random.Random(8)
    print(f"usable CPUs: {cpus}; {rounds} rounds; ratio = numpy time / snapcore time\n")
    print("| n | class | median time | paired ratio to numpy (median) | 95% interval |")
    print("| ---: | --- | ---: | ---: | --- |")
    for n in sizes:
        x = np.random.default_rng(n).uniform(0.0, 100.0, n)
        mechs = {
            f"snapcore, padding {pad}, threads={t}": snapcore.SnappingMechanism(
                epsilon=1, clamp_bounds=(0.0, 100.0), timing=timing, threads=t
            )
            for pad, timing in (("on", None), ("off", "off"))
            for t in (1, cpus)
        }
        # The keystream produced in the calling thread before the threads decode
        # (ChaCha20 without its reserve capability), to measure what producing it in
        # the threads gains.
        sequential = snapcore.SnappingMechanism(
            epsilon=1,
            clamp_bounds=(0.0, 100.0),
            timing="off",
            threads=cpus,
            source=_Unreserved(snapcore.ChaCha20Source()),
        )
        mechs[f"snapcore, padding off, threads={cpus}, keystream in one thread"] = sequential
        calls: dict[str, Callable[[], object]] = {
            "numpy Generator.laplace": lambda n=n: gen.laplace(0.0, 1.0, n),
            "numpy (A/A control)": lambda n=n: gen.laplace(0.0, 1.0, n),
        }
        for name, m in mechs.items():
            calls[name] = lambda m=m, x=x: m.release(x)
        times = _bench_statistics.paired_rounds(calls, rounds, order)
        base = times["numpy Generator.laplace"]
        for name, ts in times.items():
            med = statistics.median(ts) * 1e3
            if name == "numpy Generator.laplace":
                print(f"| {n:.0e} | {name} | {med:.1f} ms | 1 | |")
                continue
            ratios = [b / t for b, t in zip(base, ts, strict=True)]
            lo, hi = median_interval(ratios)
            print(
                f"| {n:.0e} | {name} | {med:.1f} ms | {statistics.median(ratios):.2f} "
                f"| {lo:.2f}–{hi:.2f} |"
            )


def decode_part(rounds: int) -> None:
    """The fused loop alone on 10^6 draws already in memory (no keystream, no exact
    fallbacks): one thread; two runs on a thread pool (what snapcore does); the same
    two runs under numba's ``prange`` (its threading layer).  Paired ratios to one
    thread, in rounds of complete blocks."""
    # GNU OpenMP's threads spin for a while after each parallel region: they would take
    # the second core from the class that runs next.  Passive waiting keeps the classes
    # apart (it does not slow prange here: 1.77 against 1.78 with spinning).
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import numba

    from snapcore.pipeline._compiled import compiled
    from snapcore.pipeline._engine import engine_for

    fns = compiled()
    if fns is None:
        print("numba is not installed")
        return
    fused_run = fns.fused_run
    m = snapcore.SnappingMechanism(epsilon=1, clamp_bounds=(0.0, 100.0), timing="off")
    pipe = m.pipeline
    eng = engine_for(pipe.calibration)
    n, row, chunk = 10**6, 23, 8192
    v = np.random.default_rng(1).uniform(0.0, 100.0, n)
    buf = np.empty(n * row, np.uint8)
    snapcore.ChaCha20Source().readinto(buf)
    out = np.empty(n)
    table = eng.table(pipe)
    ends = np.array([eng.lower, eng.upper, eng.delta_f, *eng.end_outputs(pipe)])
    kmax, params, L = np.int64(eng.kmax), eng.params, eng.L
    scratch = np.empty((2, 4, chunk))
    kbuf = np.empty((2, chunk), np.int64)
    okbuf = np.empty((2, chunk), np.bool_)
    fb = np.empty((2, 2 * chunk), np.int64)
    fbk = np.empty((2, 2 * chunk), np.int64)
    bounds = np.array([0, n // chunk // 2 * chunk, n])

    def one(w: int) -> None:
        lo, hi = bounds[w], bounds[w + 1]
        fused_run(
            buf[lo * row : hi * row], hi - lo, row, chunk, v[lo:hi], out[lo:hi], params,
            table, 0, kmax, False, L, ends, scratch[w], kbuf[w], okbuf[w], fb[w], fbk[w],
        )  # fmt: skip

    @numba.njit(parallel=True, nogil=True)  # type: ignore[misc]
    def par(buf, bounds, v, out, params, table, kmax, L, ends, scratch, kbuf, okbuf, fb, fbk):  # type: ignore[no-untyped-def]
        for w in numba.prange(bounds.size - 1):
            lo, hi = bounds[w], bounds[w + 1]
            fused_run(
                buf[lo * row : hi * row], hi - lo, row, chunk, v[lo:hi], out[lo:hi],
                params, table, 0, kmax, False, L, ends, scratch[w], kbuf[w], okbuf[w],
                fb[w], fbk[w],
            )  # fmt: skip

    pool = ThreadPoolExecutor(1)

    def pooled() -> None:
        f = pool.submit(one, 1)
        one(0)
        f.result()

    args = (buf, bounds, v, out, params, table, kmax, L, ends, scratch, kbuf, okbuf, fb, fbk)
    calls: dict[str, Callable[[], object]] = {
        "one thread": lambda: (one(0), one(1)),
        "thread pool, 2 runs": pooled,
        "numba prange, 2 runs": lambda: par(*args),
    }
    times = _bench_statistics.paired_rounds(calls, rounds, random.Random(3))
    print(f"numba threading layer: {numba.threading_layer()}; {rounds} rounds\n")
    print("| decoding 10^6 draws | median time | speed-up over one thread (median) | 95% |")
    print("| --- | ---: | ---: | --- |")
    for name, ts in times.items():
        ratios = [a / b for a, b in zip(times["one thread"], ts, strict=True)]
        lo, hi = median_interval(ratios)
        print(
            f"| {name} | {statistics.median(ts) * 1e3:.2f} ms | "
            f"{statistics.median(ratios):.2f} | {lo:.2f}–{hi:.2f} |"
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
    t1 = best(lambda: _mean(x), 3)[0]
    ddf = dd.from_dask_array(da.from_array(x, chunks=chunks), columns=["x"])
    ddf = ddf.persist(scheduler="threads")
    with dask.config.set(scheduler="threads"):
        assert _mean(ddf, column="x") == ref
        t2 = best(lambda: _mean(ddf, column="x"), 3)[0]
    with distributed.Client(cluster) as client:
        # the same values, made on the workers and kept there
        futures = [client.submit(_frame, i, a, b, pure=False) for i, (a, b) in enumerate(bounds)]
        on_workers = dd.from_delayed([dask.delayed(f) for f in futures], meta={"x": "f8"})
        on_workers = on_workers.persist()
        distributed.wait(on_workers)
        assert _mean(on_workers, column="x") == ref
        t3 = best(lambda: _mean(on_workers, column="x"), 3)[0]
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
    th = sub.add_parser("threads")
    th.add_argument("--sizes", default="1e6,1e7")
    th.add_argument("--rounds", type=int, default=15)
    th.add_argument(
        "--decode", action="store_true", help="the fused loop alone: thread pool vs prange"
    )
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
    elif args.cmd == "threads":
        if args.decode:
            decode_part(max(args.rounds, 25))
        else:
            threads_part([int(float(v)) for v in args.sizes.split(",")], args.rounds)
    elif args.cmd == "dask":
        dask_part([int(s) for s in args.dask_sizes.split(",")])
    elif args.cmd == "make-parquet":
        make_parquet(args.path, args.rows, args.full_precision)
    else:
        make_csv(args.path, args.rows)


if __name__ == "__main__":
    main()
