"""Exact statistics against diffprivlib's float ones, in the same run.

For each size, the whole release of a mean, a variance and a covariance
(``snapcore.release``: exact sums of the clamped values, the snapping mechanism)
against ``diffprivlib.tools.mean`` / ``diffprivlib.tools.var`` and a float covariance
(``numpy.clip`` of both columns, ``numpy.cov``, Laplace noise from numpy), one thread.
The six calls run in interleaved rounds (round r runs every call once, in an order
that rotates with r), so a change of the machine's load hits both sides of a ratio
alike; each round gives one paired ratio snapcore / float per statistic.  Printed:
the median paired ratio and a distribution-free 95% interval for it (order
statistics of the binomial), and each side's median time.

    PYTHONSAFEPATH=1 python benchmarks/bench_statistics.py [--sizes 1e7,1e8] [--rounds 15]

Before the rounds, each side runs once (numba's kernels compile on first use).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np

EPS = 1.0
LO, HI = 0.0, 100.0


def median_interval(xs: list[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval for the median of ``xs``' population: the order
    statistics ``(j, n + 1 − j)`` with the largest ``j`` whose binomial coverage is at
    least ``level``."""
    s = sorted(xs)
    n = len(s)
    best = (s[0], s[-1])
    for j in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(j)) / 2**n
        if 1 - 2 * tail < level:
            break
        best = (s[j - 1], s[n - j])
    return best


def paired_rounds(
    calls: dict[str, Callable[[], object]], rounds: int, order: random.Random
) -> dict[str, list[float]]:
    """Wall seconds of each call in ``rounds`` rounds, after one warm-up call each
    (compiling, measuring the timing quanta): every round runs every call once, in an
    order shuffled by ``order``, so a change of the machine's load hits every call of a
    round alike and the ratios of one round are paired."""
    for f in calls.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        names = list(calls)
        order.shuffle(names)
        for name in names:
            t0 = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def calls(n: int) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Per statistic, (snapcore's release, the float reference) on the same data."""
    import diffprivlib.tools as dpt

    import snapcore

    rng = np.random.default_rng(1)
    x = rng.uniform(LO - 5, HI + 5, n)
    y = 2 * x + rng.normal(0, 10, n)
    records = np.column_stack([x, y])
    src = snapcore.SeededSource(1)
    gen = np.random.default_rng(2)
    bounds2 = ((LO, HI), (2 * LO, 2 * HI))

    def float_cov() -> float:
        cx, cy = np.clip(x, LO, HI), np.clip(y, 2 * LO, 2 * HI)
        c = float(np.cov(cx, cy, ddof=1)[0, 1])
        return c + gen.laplace(0.0, (HI - LO) * 2 * (HI - LO) / n / EPS)

    return {
        "mean": (
            lambda: snapcore.release("mean", x, epsilon=EPS, data_bounds=(LO, HI), source=src),
            lambda: dpt.mean(x, epsilon=EPS, bounds=(LO, HI)),
        ),
        "variance": (
            lambda: snapcore.release("variance", x, epsilon=EPS, data_bounds=(LO, HI), source=src),
            lambda: dpt.var(x, epsilon=EPS, bounds=(LO, HI)),
        ),
        "covariance": (
            lambda: snapcore.release(
                "covariance", records, epsilon=EPS, data_bounds=bounds2, source=src
            ),
            float_cov,
        ),
    }


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(n: int, rounds: int) -> list[str]:
    table = calls(n)
    jobs = [(stat, side, fn) for stat, pair in table.items() for side, fn in enumerate(pair)]
    for _, _, fn in jobs:  # warm-up: compilation, caches
        fn()
    times: dict[tuple[str, int], list[float]] = {(s, i): [] for s, i, _ in jobs}
    for r in range(rounds):
        k = r % len(jobs)
        for stat, side, fn in jobs[k:] + jobs[:k]:
            times[stat, side].append(timed(fn))
    lines = []
    for stat in table:
        ratios = [a / b for a, b in zip(times[stat, 0], times[stat, 1], strict=True)]
        lo, hi = median_interval(ratios)
        lines.append(
            f"| {stat} | {n:.0e} | {statistics.median(times[stat, 0]) * 1e3:.1f} ms | "
            f"{statistics.median(times[stat, 1]) * 1e3:.1f} ms | "
            f"{statistics.median(ratios):.2f}x | [{lo:.2f}, {hi:.2f}] |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e7", help="comma-separated sizes, e.g. 1e7,1e8")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning and the like
    print(
        "| statistic | n | snapcore (median) | float (median) | paired ratio (median) | 95% CI |"
    )
    print("|---|---|---:|---:|---:|---|")
    for n in (int(float(s)) for s in args.sizes.split(",")):
        for line in run(n, args.rounds):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
