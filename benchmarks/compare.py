"""Compare snapcore with its peers: releases per second, one run, one machine, one core.

Usage::

    python benchmarks/compare.py [--cpu N] [--batch 1000000] [--seconds 1.0] [--markdown FILE]

Every entry releases a value with ε = 1 and sensitivity 1 (bounds [0, 100] where
the method takes bounds).  Scalar entries time one call per release; batch entries
time one call on an array of ``--batch`` values.  The ratio column is each rate
divided by the rate of snapcore's fast path (batch, default ``system`` source) in
the same run.  Peers that are not installed are reported as "not installed".

Peers: snapcore's exact backends (scalar) and its fast path (batch); IBM
diffprivlib ``Snapping`` (0.6.6; needs ``crlibm`` and scikit-learn < 1.7); OpenDP
0.16 float Laplace (``make_laplace``, scalar and vector); and
``numpy.random.Generator.laplace`` (not private: the floating-point ceiling).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

# One core, no hidden thread pools: set before numpy / numba are imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

EPS = 1.0
LOWER, UPPER = 0.0, 100.0


class Result:
    def __init__(self, name: str, kind: str, rate: float | None, note: str = "") -> None:
        self.name, self.kind, self.rate, self.note = name, kind, rate, note


def best_rate(fn: Callable[[], int], seconds: float, rounds: int = 5) -> float:
    """Releases per second: the best of ``rounds`` rounds of at least ``seconds`` each."""
    best = 0.0
    for _ in range(rounds):
        done = 0
        t0 = time.perf_counter()
        while True:
            done += fn()
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        best = max(best, done / dt)
    return best


def scalar_loop(release: Callable[[float], Any], n: int) -> Callable[[], int]:
    values = np.random.default_rng(1).uniform(LOWER - 10, UPPER + 10, n).tolist()

    def run() -> int:
        for v in values:
            release(v)
        return n

    return run


def bench_snapcore(args: argparse.Namespace) -> list[Result]:
    out: list[Result] = []
    try:
        import snapcore
        from snapcore import SnappingMechanism
        from snapcore.plugins import get_registries
    except ImportError as exc:  # pragma: no cover
        return [Result("snapcore", "scalar", None, f"not installed ({exc})")]
    reg = get_registries()
    batch_values = np.random.default_rng(2).uniform(LOWER - 10, UPPER + 10, args.batch)
    for name in reg.backends.names():
        if name not in reg.backends.available():
            out.append(Result(f"snapcore {name} (exact)", "scalar", None, "not installed"))
            continue
        m = SnappingMechanism(epsilon=EPS, clamp_bounds=(LOWER, UPPER), backend=name)
        rate = best_rate(scalar_loop(m.release, 2000), args.seconds)
        out.append(
            Result(f"snapcore {name} (exact)", "scalar", rate, f"snapcore {snapcore.__version__}")
        )
    from snapcore import fastpath as fp

    engine = "numba" if fp.numba_available() else "numpy"
    for source in ("system", "chacha20"):
        try:
            m = SnappingMechanism(
                epsilon=EPS, clamp_bounds=(LOWER, UPPER), backend="fast", source=source
            )
        except Exception as exc:
            out.append(Result(f"snapcore fast path, {source}", "batch", None, str(exc)))
            continue
        m.release(batch_values[:5000])  # compile / warm up

        def run(m: Any = m) -> int:
            m.release(batch_values)
            return int(batch_values.size)

        rate = best_rate(run, args.seconds)
        label = f"snapcore fast path ({engine}), source {source}"
        out.append(Result(label, "batch", rate, "bit-identical to MPFR"))
    if fp.numba_available():
        m = SnappingMechanism(
            epsilon=EPS, clamp_bounds=(LOWER, UPPER), backend="fast", source="chacha20"
        )
        pipe = m._pipeline

        def run_np(m: Any = m) -> int:
            fp.release_batch(pipe, batch_values, m.source, engine="numpy")
            return int(batch_values.size)

        rate = best_rate(run_np, args.seconds)
        out.append(Result("snapcore fast path (pure numpy), source chacha20", "batch", rate, ""))
    # the arithmetic alone: draws decoded beforehand (no random bytes, no decoding)
    m = SnappingMechanism(
        epsilon=EPS, clamp_bounds=(LOWER, UPPER), backend="fast", source="chacha20"
    )
    pipe = m._pipeline
    draws = fp.decode_draw_batch(m.source, int(batch_values.size), m.precision)
    eng = fp.engine_for(m.calibration)

    def run_kernel() -> int:
        eng.run(batch_values, draws, pipe)
        return int(batch_values.size)

    rate = best_rate(run_kernel, args.seconds)
    out.append(
        Result(
            f"snapcore fast path ({engine}), draws pre-decoded", "batch", rate, "arithmetic only"
        )
    )
    # the exact path element by element on an array (what the fast path replaces)
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=(LOWER, UPPER), backend="mpfr")
    small = list(batch_values[:1000])

    def run_exact(m: Any = m) -> int:
        m.release(small)  # a list below the automatic fast-path size
        return len(small)

    rate = best_rate(run_exact, args.seconds)
    out.append(Result("snapcore mpfr exact, element-wise list of 1000", "batch", rate, ""))
    return out


def bench_diffprivlib(args: argparse.Namespace) -> list[Result]:
    try:
        import diffprivlib
        from diffprivlib.mechanisms import Snapping
    except Exception as exc:
        return [
            Result("diffprivlib Snapping", "scalar", None, f"not installed ({type(exc).__name__})")
        ]
    mech = Snapping(epsilon=EPS, sensitivity=1.0, lower=LOWER, upper=UPPER)
    rate = best_rate(scalar_loop(mech.randomise, 2000), args.seconds)
    return [
        Result("diffprivlib Snapping", "scalar", rate, f"diffprivlib {diffprivlib.__version__}"),
        Result("diffprivlib Snapping", "batch", None, "no batch API"),
    ]


def bench_opendp(args: argparse.Namespace) -> list[Result]:
    try:
        from importlib.metadata import version

        import opendp.prelude as dp
    except Exception as exc:
        return [
            Result(
                "OpenDP make_laplace (float)",
                "scalar",
                None,
                f"not installed ({type(exc).__name__})",
            )
        ]
    dp.enable_features("contrib")
    ver = f"opendp {version('opendp')}"
    scale = 1.0 / EPS
    scalar = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale
    )
    out = [
        Result(
            "OpenDP make_laplace (float)",
            "scalar",
            best_rate(scalar_loop(scalar, 500), args.seconds),
            ver,
        )
    ]
    vec = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), scale
    )
    n = min(args.batch, 100_000)
    values = np.random.default_rng(3).uniform(LOWER, UPPER, n).tolist()

    def run() -> int:
        vec(values)
        return n

    out.append(
        Result(
            f"OpenDP make_laplace (float), vector of {n}",
            "batch",
            best_rate(run, args.seconds),
            ver,
        )
    )
    return out


def bench_numpy(args: argparse.Namespace) -> list[Result]:
    gen = np.random.default_rng()
    scale = 1.0 / EPS
    n = args.batch

    def run_batch() -> int:
        gen.laplace(0.0, scale, n)
        return n

    def run_scalar() -> int:
        for _ in range(10000):
            gen.laplace(0.0, scale)
        return 10000

    note = f"numpy {np.__version__}; not private"
    return [
        Result("numpy Generator.laplace", "scalar", best_rate(run_scalar, args.seconds), note),
        Result("numpy Generator.laplace", "batch", best_rate(run_batch, args.seconds), note),
    ]


def machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    lines = [
        f"CPU: {cpu}; {os.cpu_count()} logical cores",
        f"OS: {platform.platform()}",
        f"Python {platform.python_version()}, numpy {np.__version__}",
    ]
    if hasattr(os, "sched_getaffinity"):
        lines.append(f"pinned to CPUs: {sorted(os.sched_getaffinity(0))}")
    if hasattr(os, "getloadavg"):
        la = os.getloadavg()
        lines.append(f"load average (1, 5, 15 min) at start: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    return lines


def fmt_rate(r: float | None) -> str:
    if r is None:
        return "—"
    if r >= 1e6:
        return f"{r / 1e6:.2f} M/s"
    if r >= 1e3:
        return f"{r / 1e3:.1f} k/s"
    return f"{r:.0f} /s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU (Linux)")
    ap.add_argument("--batch", type=int, default=1_000_000, help="batch size (default 10**6)")
    ap.add_argument("--seconds", type=float, default=1.0, help="minimum seconds per round")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    start_info = machine()
    results: list[Result] = []
    for bench in (bench_snapcore, bench_diffprivlib, bench_opendp, bench_numpy):
        results.extend(bench(args))
    # The reference: the fast path with the default (OS CSPRNG) source.
    ref_row = next(
        (r for r in results if r.name.startswith("snapcore fast path") and r.rate), None
    )
    ref = ref_row.rate if ref_row else None
    lines = ["Machine:"] + [f"- {m}" for m in start_info]
    if hasattr(os, "getloadavg"):
        la = os.getloadavg()
        lines.append(f"- load average at end: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    lines += [
        f"- batch size {args.batch}, epsilon {EPS}, bounds [{LOWER}, {UPPER}], best of 5 rounds "
        f"of >= {args.seconds} s",
        f"- ratio: releases/s divided by that of '{ref_row.name if ref_row else '—'}'",
        "",
        "| method | kind | releases/s | ratio to snapcore fast path | note |",
        "|---|---|---:|---:|---|",
    ]
    for r in results:
        ratio = f"{r.rate / ref:.3g}" if (r.rate and ref) else "—"
        rate = fmt_rate(r.rate) if r.rate is not None else (r.note or "—")
        note = r.note if r.rate is not None else ""
        lines.append(f"| {r.name} | {r.kind} | {rate} | {ratio} | {note} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
