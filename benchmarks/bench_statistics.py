"""Cost of exact statistics: snapcore's exact mean/variance against float references.

Reports, for each size, the time of the exact computation (scaled integers, no
rounding) and of the float references measured in the same run (``numpy.mean`` /
``numpy.var`` and ``math.fsum``), and their ratios.  Also the whole
``snapcore.release("mean", ...)`` call, which adds the mechanism's few microseconds.

    PYTHONSAFEPATH=1 python benchmarks/bench_statistics.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

import snapcore
from snapcore.exact._sums import scaled_integers


def best(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(
        f"{'n':>9} {'data':>7} {'exact mean':>11} {'np.mean':>9} {'fsum':>9} "
        f"{'exact/np':>9} {'exact/fsum':>10} {'exact var':>10} {'np.var':>9} "
        f"{'release':>9}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        for kind, x in (
            ("ages", rng.integers(18, 90, n).astype(np.float64)),
            ("mixed", rng.normal(0, 1, n) * 10.0 ** rng.integers(-30, 30, n)),
        ):
            row(n, kind, x)


def row(n: int, kind: str, x: np.ndarray) -> None:
    xs = x.tolist()

    def exact_var() -> object:
        s = scaled_integers(x)
        t = s.total()
        return (s.dot(s) - t * t / n) / (n - 1)

    src = snapcore.SeededSource(1)
    t_exact = best(lambda: scaled_integers(x).total() / n)
    t_np = best(lambda: float(np.mean(x)))
    t_fsum = best(lambda: math.fsum(xs) / n)
    t_var = best(exact_var)
    t_npvar = best(lambda: float(np.var(x, ddof=1)))
    t_rel = best(
        lambda: snapcore.release("mean", x, epsilon=1, data_bounds=(-1e30, 1e30), source=src),
        repeat=3,
    )
    print(
        f"{n:>9} {kind:>7} {t_exact * 1e3:>9.2f}ms {t_np * 1e3:>7.2f}ms "
        f"{t_fsum * 1e3:>7.2f}ms {t_exact / t_np:>9.1f} {t_exact / t_fsum:>10.2f} "
        f"{t_var * 1e3:>8.2f}ms {t_npvar * 1e3:>7.2f}ms {t_rel * 1e3:>7.2f}ms"
    )


if __name__ == "__main__":
    main()
