"""Scalar release rate of the exact MPFR path (issue 2's benchmark).

Measures, in one process and one run, releases per second of
``SnappingMechanism.release(float)`` with the MPFR backend, and reports them against
references timed in the same run: one bare MPFR ``log`` at the same precision
(the floor of any exact scalar path) and numpy's scalar ``Generator.laplace()``
(non-private, for scale).

Run: ``python benchmarks/scalar_release.py [--seconds 2]``; pin to one core with
``taskset -c 0`` for a single-core figure.

``--turns`` instead times, in turns in one process (2000 values in (−10, 110) per
round, the best round of each), the scalar release with ``timing="off"`` (the default
MPFR backend and source: the compiled kernel once the process has switched to it, see
``snapcore.backends.mpfr.compiled_scalar_after``), the exact fused release it replaces,
and diffprivlib's ``Snapping``, ε = 1, bounds [0, 100]: the scalar target of
``benchmarks/compare.py`` without the rest of its run.  It also counts, over
``--draws`` further releases, how many the kernel left to MPFR.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from collections.abc import Callable

import gmpy2
import numpy as np

import snapcore


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn``: best of three timed batches of about ``seconds``/3."""
    n = 1000
    while True:  # calibrate the batch size
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt > seconds / 30:
            break
        n *= 2
    n = max(1, int(n * (seconds / 3) / dt))
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def turns(rounds: int, draws: int) -> None:
    """The scalar release (compiled and exact) and diffprivlib's, timed in turns."""
    from snapcore.backends import mpfr

    values = np.random.default_rng(1).uniform(-10.0, 110.0, 2000).tolist()
    kw = {"epsilon": 1.0, "clamp_bounds": (0.0, 100.0), "timing": "off"}
    fast = snapcore.SnappingMechanism(**kw)
    t0 = time.perf_counter()
    while not mpfr.scalar_path_stats.loaded:  # the process switches after its rule
        for v in values:
            fast.release(v)
    switch = time.perf_counter() - t0
    switched_after = mpfr.scalar_path_stats.exact_untimed
    mpfr.COMPILED_SCALAR_AFTER = None  # mechanisms made from here on stay exact
    exact = snapcore.SnappingMechanism(**kw)
    contenders: list[tuple[str, Callable[[float], object]]] = [
        ("snapcore scalar release (timing off)", fast.release),
        ("snapcore exact fused release (timing off)", exact.release),
    ]
    try:
        from diffprivlib.mechanisms import Snapping

        dpl = Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=100.0)
        contenders.append(("diffprivlib Snapping", dpl.randomise))
    except Exception as exc:  # not installed, or crlibm missing
        print(f"diffprivlib not available ({type(exc).__name__}: {exc})")

    def one_round(fn: Callable[[float], object]) -> float:
        t = time.perf_counter()
        for v in values:
            fn(v)
        return (time.perf_counter() - t) / len(values)

    best = [math.inf] * len(contenders)
    for r in range(rounds + 2):
        for i, (_, fn) in enumerate(contenders):
            dt = one_round(fn)
            if r >= 2:  # two warm-up rounds
                best[i] = min(best[i], dt)
    print(
        f"snapcore {snapcore.__version__}, p = {fast.precision}; load average "
        f"{os.getloadavg()[0]:.2f}; switched to the compiled kernel after "
        f"{switched_after} exact releases ({switch:.2f} s, with the load)"
    )
    print(
        f"{'release (best of ' + str(rounds) + ' rounds of 2000, in turns)':50s} "
        f"{'us/release':>10s} {'vs diffprivlib':>14s}"
    )
    ref = best[2] if len(best) > 2 else math.nan
    for (label, _), b in zip(contenders, best, strict=True):
        print(f"{label:50s} {b * 1e6:10.2f} {ref / b:13.2f}x")
    stats = mpfr.scalar_path_stats
    before = (stats.exact_k, stats.exact_output, stats.continuation)
    gen = np.random.default_rng(7)
    for v in gen.uniform(-10.0, 110.0, draws).tolist():
        fast.release(v)
    k, o, c = (a - b for a, b in zip((stats.exact_k, stats.exact_output, stats.continuation),
                                     before, strict=True))  # fmt: skip
    print(
        f"over {draws:,} more releases the kernel left {k} undecided k, {o} uncertified "
        f"outputs and {c} continued exponents to MPFR (rate {(k + o + c) / draws:.2g})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    ap.add_argument("--turns", action="store_true", help="the scalar target, in turns")
    ap.add_argument("--rounds", type=int, default=15, help="rounds per release (--turns)")
    ap.add_argument("--draws", type=int, default=10**6, help="fallback count (--turns)")
    args = ap.parse_args()
    if args.turns:
        turns(args.rounds, args.draws)
        return

    rows: list[tuple[str, float]] = []
    for label, kwargs in [
        ("release, bounds (0, 100), eps 1, system source", {"clamp_bounds": (0.0, 100.0)}),
        ("release, bound 1e6, eps 0.1, system source", {"clamp_bound": 1e6, "epsilon": 0.1}),
        (
            "release, bounds (0, 100), eps 1, seeded source",
            {"clamp_bounds": (0.0, 100.0), "source": snapcore.SeededSource(1)},
        ),
    ]:
        params = {"epsilon": 1.0, **kwargs}
        m = snapcore.SnappingMechanism(**params)
        rows.append((label, rate(lambda m=m: m.release(42.0), args.seconds)))
    m = snapcore.SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    small = [42.0] * 1000  # below the fast path's threshold: the exact element-wise path
    rows.append(
        (
            "release of a list of 1000 (per element), exact MPFR",
            1000 * rate(lambda: m.release(small), args.seconds),
        )
    )
    arr = np.full(100_000, 42.0)
    m.release(arr)  # warm up (compiles the fast path's kernel when numba is installed)
    t0 = time.perf_counter()
    m.release(arr)
    rows.append(
        ("release of a 1e5 array (per element), auto fast path", 1e5 / (time.perf_counter() - t0))
    )

    ctx = gmpy2.context(precision=m.precision)
    us = [
        ctx.mul_2exp((1 << 117) | int.from_bytes(os.urandom(15), "big") >> 3, -119)
        for _ in range(4096)
    ]
    it = iter(us * 10_000)
    log_rate = rate(lambda: ctx.log(next(it)), args.seconds)
    gen = np.random.default_rng()
    lap_rate = rate(lambda: gen.laplace(0.0, 1.0), args.seconds)

    print(f"snapcore {snapcore.__version__}, {m.backend.version()}, p = {m.precision}")
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print()
    print(f"{'measurement':55s} {'per second':>12s} {'vs bare log':>12s} {'vs numpy':>9s}")
    for label, r in rows:
        print(f"{label:55s} {r:12,.0f} {r / log_rate:12.3f} {r / lap_rate:9.3f}")
    for label, r in [
        ("reference: one bare MPFR log at p bits", log_rate),
        ("reference: numpy Generator.laplace() scalar call", lap_rate),
    ]:
        print(f"{label:55s} {r:12,.0f} {r / log_rate:12.3f} {r / lap_rate:9.3f}")


if __name__ == "__main__":
    main()
