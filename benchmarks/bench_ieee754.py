"""Throughput of the IEEE-754 snap (snapcore.exact._ieee754) against references in the same run.

Reports elements per second and ratios for:

* ``snap_doubles``: the bit-manipulation snap, vectorised (exact);
* ``naive``: ``np.floor(x / Λ + 0.5) * Λ`` in float arithmetic (fast, but ``x/Λ + 0.5``
  rounds, so it is *not* the exact snap; its mismatch count is printed);
* ``snap_double``: the scalar bit-manipulation snap, one Python call per element;
* ``pipeline.snap``: the mechanism's exact integer snap on ``float.as_integer_ratio``.

Usage::

    PYTHONSAFEPATH=1 python benchmarks/bench_ieee754.py [--n 2000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np

from snapcore.exact._ieee754 import snap_double, snap_doubles
from snapcore.pipeline._stages import snap


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_000_000, help="array size (vectorised)")
    ap.add_argument("--n-scalar", type=int, default=100_000, help="values for scalar loops")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--L", type=int, default=-3, help="granularity Λ = 2**L")
    args = ap.parse_args()

    rng = np.random.default_rng(1)
    L = args.L
    lam = math.ldexp(1.0, L)
    # Laplace noise a few hundred Λ wide: cases 2-4 occur, and ties only by chance.
    x = rng.laplace(0.0, 64.0 * lam, args.n)

    t_vec = best_time(lambda: snap_doubles(x, L), args.repeat)
    t_naive = best_time(lambda: np.floor(x / lam + 0.5) * lam, args.repeat)
    exact = snap_doubles(x, L)
    naive = np.floor(x / lam + 0.5) * lam
    mismatches = int(np.count_nonzero(exact.view(np.uint64) != naive.view(np.uint64)))

    # One ulp below the ties (k + 1/2)·Λ, k = 0 … 2**20, both signs: the exact snap
    # rounds the magnitude down; floor(x/Λ + 0.5) can round up when the sum is inexact.
    k = np.arange(2**20, dtype=np.float64) + 0.5
    near = np.concatenate([np.nextafter(k, 0.0), -np.nextafter(k, np.inf)]) * lam
    # Odd multiples k·Λ with 2**52 <= k < 2**53 are already snapped; x/Λ + 0.5 rounds
    # to an even integer there, so the naive formula moves every one of them.
    big = (2.0**52 + 2 * np.arange(2**19, dtype=np.float64) + 1) * lam
    near = np.concatenate([near, big, -big])
    near_bad = int(
        np.count_nonzero(
            snap_doubles(near, L).view(np.uint64)
            != (np.floor(near / lam + 0.5) * lam).view(np.uint64)
        )
    )

    xs = x[: args.n_scalar].tolist()

    def scalar_bits() -> None:
        for v in xs:
            snap_double(v, lam)

    def scalar_exact() -> None:
        for v in xs:
            n, d = v.as_integer_ratio()
            snap(n, 1 - d.bit_length(), L)

    reps = max(1, args.repeat // 2)
    t_sb = best_time(scalar_bits, reps) / len(xs) * args.n
    t_se = best_time(scalar_exact, reps) / len(xs) * args.n

    rows = [
        ("snap_doubles (vectorised, exact)", t_vec),
        ("naive np.floor(x/Λ+0.5)*Λ (inexact)", t_naive),
        ("snap_double, Python loop", t_sb),
        ("pipeline.snap on as_integer_ratio, loop", t_se),
    ]
    print(f"n = {args.n:,} doubles, Λ = 2**{L}, best of {args.repeat}")
    for name, t in rows:
        print(f"  {name:42s} {args.n / t:14,.0f} /s   snap_doubles is {t / t_vec:7.2f}x faster")
    print(f"  naive float formula differs from the exact snap on {mismatches:,} of {args.n:,}")
    print(
        f"  ... and on {near_bad:,} of {near.size:,} values one ulp inside a tie or odd "
        "multiples >= 2**52·Λ (e.g. x = 0.49999999999999994·Λ: naive Λ, exact 0)"
    )


if __name__ == "__main__":
    main()
