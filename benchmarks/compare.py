"""Compare snapcore with its peers: releases per second, one run, one machine, one core.

Usage::

    python benchmarks/compare.py [--cpu N] [--batch 1000000] [--seconds 1.0] [--markdown FILE]

Every entry releases a value with ε = 1 and sensitivity 1 (bounds [0, 100] where
the method takes bounds).  Scalar entries time one call per release; batch entries
time one call on an array of ``--batch`` values.  The ratio column is each rate
divided by the rate of numpy's (non-private) Laplace on the same batch in the same
run.  Peers that are not installed are reported as "not installed".  A second
table checks issue 31's targets, protection (timing padding) on, every row measured
in this run: the default mechanism on 10^6 values at ``threads=1`` and on 10^7 at
every usable core against numpy's Laplace; the exact mean, variance and covariance of
10^7 values against diffprivlib's float tools (``bench_statistics.py``'s calls); the
start-up of ``snapcore release mean`` against ``python -c "import numpy"``; the exact
audit at ε = 1; the peak memory of a 10^7 release.  Ratios are medians of paired
rounds (``--rounds``, ``--startup-blocks``) with distribution-free 95% intervals; a
target is met when the whole interval meets it.  Run it unpinned (no ``--cpu``): the
10^7 row uses every CPU the process may run on.
``--startup-only`` measures only the start-up (``--startup-rounds`` runs each),
``--audit-only`` only the audit (B/Λ = 500, 5,000 and 50,000 in one run).

Peers: snapcore's exact backends (scalar) and its fast path (batch); IBM
diffprivlib ``Snapping`` (0.6.6; needs ``crlibm`` and scikit-learn < 1.7); OpenDP
0.16 float Laplace (``make_laplace``, scalar and vector); and
``numpy.random.Generator.laplace`` (not private: the floating-point ceiling).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import runpy
import sys
import time
import types
from collections.abc import Callable
from statistics import median
from typing import Any

# One core, no hidden thread pools: set before numpy / numba are imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

#: ``bench_statistics.py`` beside this script, run by path (the scripts run with
#: ``PYTHONSAFEPATH=1``, which keeps their directory off ``sys.path``).
_bench_statistics = types.SimpleNamespace(
    **runpy.run_path(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_statistics.py")
    )
)
median_interval = _bench_statistics.median_interval


def paired_rounds(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """``bench_statistics.paired_rounds`` in a seeded random order."""
    import random

    return _bench_statistics.paired_rounds(calls, rounds, random.Random(8))


EPS = 1.0
LOWER, UPPER = 0.0, 100.0

#: A target row: what, measured, goal, detail, met ("yes", "**no**", "unresolved", or
#: None for a reference without a goal).
Row = tuple[str, str, str, str, str | None]


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
        from snapcore.plugins._manager import get_registries
    except ImportError as exc:  # pragma: no cover
        return [Result("snapcore", "scalar", None, f"not installed ({exc})")]
    reg = get_registries()
    batch_values = np.random.default_rng(2).uniform(LOWER - 10, UPPER + 10, args.batch)
    bounds = (LOWER, UPPER)
    for name in reg.backends.names():
        if name not in reg.backends.available():
            out.append(Result(f"snapcore {name} (exact)", "scalar", None, "not installed"))
            continue
        # Timing padding (snapcore.mechanism._padding, on by default for cryptographic
        # sources) is a separate, deliberate cost: the scalar target is measured without
        # it, and the padded default is shown on its own row.
        m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds, backend=name, timing="off")
        rate = best_rate(scalar_loop(m.release, 2000), args.seconds)
        note = f"snapcore {snapcore.__version__}, timing off"
        out.append(Result(f"snapcore {name} (exact)", "scalar", rate, note))
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds)
    rate = best_rate(scalar_loop(m.release, 2000), args.seconds)
    out.append(Result("snapcore mpfr (exact, default timing padding)", "scalar", rate, ""))
    from snapcore.exact._sums import numba_available
    from snapcore.pipeline import _engine

    engine = "numba" if numba_available() else "numpy"

    def batch_row(label: str, m: Any, note: str) -> None:
        m.release(batch_values[:5000])  # load the compiled engine

        def run(m: Any = m) -> int:
            m.release(batch_values)
            return int(batch_values.size)

        out.append(Result(label, "batch", best_rate(run, args.seconds), note))

    # The default configuration first: what `pip install snapcore` and the README give.
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds)
    batch_row(
        f"snapcore default (mpfr, source {m.source.name}, {engine}, threads=None)",
        m,
        "default install; bit-identical to MPFR",
    )
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds, timing="off")
    batch_row(
        f"snapcore default without timing padding (timing off, {engine}, threads=None)",
        m,
        "the padding (snapcore.mechanism._padding) is a separate cost",
    )
    for source in ("chacha20", "system"):
        m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds, backend="fast", source=source)
        batch_row(f"snapcore fast path ({engine}), source {source}", m, "bit-identical to MPFR")
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds, backend="fast")
    pipe = m._pipeline

    def run_np(m: Any = m) -> int:
        _engine.release_batch(pipe, batch_values, m.source, engine="numpy")
        return int(batch_values.size)

    rate = best_rate(run_np, args.seconds)
    out.append(Result("snapcore fast path (pure numpy), source chacha20", "batch", rate, ""))
    # the arithmetic alone: draws decoded beforehand (no random bytes, no decoding)
    draws = _engine.batch_draws(m.source, int(batch_values.size), m.precision)
    eng = _engine.engine_for(m.calibration)

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
    m = SnappingMechanism(epsilon=EPS, clamp_bounds=bounds, backend="mpfr")
    small = list(batch_values[:1000])

    def run_exact(m: Any = m) -> int:
        m.release(small)  # a list below the automatic fast-path size
        return len(small)

    rate = best_rate(run_exact, args.seconds)
    out.append(Result("snapcore mpfr exact, element-wise list of 1000", "batch", rate, ""))
    return out


def peak_bytes_per_value(n: int) -> float:
    """Peak memory (tracemalloc, numpy's allocations included) of one default release of
    ``n`` values, beyond the input array, per value."""
    import tracemalloc

    from snapcore import SnappingMechanism

    m = SnappingMechanism(epsilon=EPS, clamp_bounds=(LOWER, UPPER))
    values = np.random.default_rng(4).uniform(LOWER - 10, UPPER + 10, n)
    m.release(values[:5000])
    tracemalloc.start()
    try:
        m.release(values)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / n


def timed_runs(cmds: dict[str, list[str]], blocks: int) -> dict[str, list[tuple[float, float]]]:
    """Per command, ``(wall, CPU)`` seconds of each of ``blocks`` runs, after one warm-up
    run each; CPU is user + system time of the command and the processes it waited for.

    The commands run in blocks (each once per block, the order rotating from block to
    block), so a change of the machine's load affects every command alike and the
    ratios of one block are paired.
    """
    import subprocess

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: cached bytecode
    for cmd in cmds.values():
        subprocess.run(cmd, env=env, check=True, capture_output=True)
    names = list(cmds)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for b in range(blocks):
        for name in names[b % len(names) :] + names[: b % len(names)]:
            cmd = cmds[name]
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise subprocess.CalledProcessError(proc.returncode, cmd)
            runs[name].append((wall, usage.ru_utime + usage.ru_stime))
    return runs


def startup_commands(python: str | None = None) -> dict[str, list[str]]:
    """``import numpy``, ``import snapcore``, the libraries the release imports, and the
    README's ``snapcore release mean``, run by ``python`` (this interpreter by default)
    and the console script beside it."""
    py = python or sys.executable
    cli = os.path.join(os.path.dirname(py), "snapcore")
    return {
        "numpy": [py, "-c", "import numpy"],
        "import": [py, "-c", "import snapcore"],
        # What the release cannot do without: its command line (click), its classes
        # (attrs), the MPFR backend (gmpy2, which reads its version through
        # importlib.metadata), plugins (pluggy) and the timing quanta store (sqlite3).
        "deps": [py, "-c", "import numpy, click, attrs, gmpy2, pluggy, sqlite3"],
        "cli": [cli, "release", "mean", "--column", "age", "--data-bounds", "0", "100",
                "--epsilon", "1"],
    }  # fmt: skip


def startup_rows(blocks: int = 30, python: str | None = None) -> list[Row]:
    """``import snapcore`` and ``snapcore release mean ...`` against ``import numpy``, and
    the libraries the release imports against it (the least the release can cost).

    ``blocks`` blocks of the commands in turns (:func:`timed_runs`); each row gives
    the median of the per-block ratios of wall times with a distribution-free 95%
    interval, the median times, and the same for CPU time.  The CLI finds its bundled
    example data itself; calibrated timing quanta come from the store the CLI keeps
    across runs (``snapcore.padding.QuantaStore``), which the warm-up run fills if it is
    empty.  Met: :func:`verdict`.
    """
    runs = timed_runs(startup_commands(python), blocks)

    def row(name: str, what: str, goal: float | None) -> Row:
        walls = [a[0] / b[0] for a, b in zip(runs[name], runs["numpy"], strict=True)]
        cpus = [a[1] / b[1] for a, b in zip(runs[name], runs["numpy"], strict=True)]
        lo, hi = median_interval(walls)
        clo, chi = median_interval(cpus)
        w = median([r[0] for r in runs[name]])
        w_np = median([r[0] for r in runs["numpy"]])
        c = median([r[1] for r in runs[name]])
        c_np = median([r[1] for r in runs["numpy"]])
        detail = (
            f"median of {blocks} paired blocks [95% interval {lo:.2f}, {hi:.2f}]; "
            f"{w * 1e3:.0f} ms vs {w_np * 1e3:.0f} ms wall; CPU {median(cpus):.2f}x "
            f"[{clo:.2f}, {chi:.2f}], {c * 1e3:.0f} ms vs {c_np * 1e3:.0f} ms"
        )
        mid = median(walls)
        if goal is None:  # a reference, not a target
            return (what, f"{mid:.2f}x", "—", detail, None)
        return (what, f"{mid:.2f}x", f"<= {goal}x", detail, verdict(lo, mid, hi, goal, False))

    return [
        row("import", "`import snapcore` vs `import numpy` (wall)", None),
        row("cli", "`snapcore release mean ...` vs `python -c 'import numpy'` (wall)", 1.5),
        row("deps", "the release's libraries alone, `import numpy, click, attrs, gmpy2, "
            "pluggy, sqlite3`, vs `import numpy` (wall)", None),
    ]  # fmt: skip


def _audit_mechanism(clamp_bound: float) -> tuple[Any, int, float]:
    """The default mechanism at ε = 1 with ``clamp_bound`` B, the ``max_outputs`` its
    audit needs (at least the default), and ``B/Λ``."""
    from snapcore import SnappingMechanism

    m = SnappingMechanism(epsilon=EPS, clamp_bound=clamp_bound)
    cal = m.calibration
    ratio = cal.unit_clamp_bound / cal.granularity
    return m, max(2 * int(ratio) + 3, 1 << 15), float(ratio)


def audit_seconds(clamp_bound: float, repeats: int = 1) -> tuple[float, float, float]:
    """The exact audit ``snapcore.audit(m, 0.0, 1.0)`` at ε = 1 with ``clamp_bound`` B,
    in this process (imports done): the best wall time and the best CPU time of
    ``repeats`` runs, and ``B/Λ``."""
    from snapcore import audit

    m, outputs, ratio = _audit_mechanism(clamp_bound)
    wall = cpu = math.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        r = audit(m, 0.0, 1.0, max_outputs=outputs)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
        del r
    return wall, cpu, ratio


def audit_peak_mb(clamp_bound: float) -> float:
    """The peak of the memory allocated while one audit runs, result included, in MB
    (``tracemalloc``; a separate, untimed run: tracing slows every allocation)."""
    import gc
    import tracemalloc

    from snapcore import audit

    m, outputs, _ = _audit_mechanism(clamp_bound)
    gc.collect()
    tracemalloc.start()
    try:
        r = audit(m, 0.0, 1.0, max_outputs=outputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del r
    return peak / 1e6


def verdict(lo: float, mid: float, hi: float, goal: float, above: bool) -> str:
    """``yes`` when the whole 95% interval meets ``goal`` (``above``: at or above it,
    else at or below it), ``**no**`` when the median misses it, ``unresolved`` when the
    median meets it and the interval does not."""

    def meets(v: float) -> bool:
        return v >= goal if above else v <= goal

    if meets(lo) and meets(hi):
        return "yes"
    return "unresolved" if meets(mid) else "**no**"


def array_rows(rounds: int) -> list[Row]:
    """The default mechanism (protection on) on 10^6 values at ``threads=1`` and on
    10^7 values at ``threads=None`` (every usable CPU), against numpy's
    ``Generator.laplace`` on the same size (one thread, not private): per round the
    ratio numpy time / snapcore time (above 1: faster than numpy), and numpy's second
    run against its first as the A/A control."""
    from snapcore import SnappingMechanism
    from snapcore.pipeline._threads import usable_cpus

    cpus = usable_cpus()
    gen = np.random.default_rng(7)
    rows: list[Row] = []
    for n, threads, what, goal in (
        (10**6, 1, "10^6 array, one thread (threads=1), vs numpy Laplace", 1.0),
        (10**7, None, f"10^7 array, all {cpus} usable cores (threads=None), vs numpy "
         "Laplace (one thread)", 0.8 * cpus),
    ):  # fmt: skip
        x = np.random.default_rng(n).uniform(LOWER - 10, UPPER + 10, n)
        m = SnappingMechanism(epsilon=EPS, clamp_bounds=(LOWER, UPPER), threads=threads)
        times = paired_rounds(
            {
                "numpy": lambda n=n: gen.laplace(0.0, 1.0 / EPS, n),
                "control": lambda n=n: gen.laplace(0.0, 1.0 / EPS, n),
                "snapcore": lambda m=m, x=x: m.release(x),
            },
            rounds,
        )
        ratios = [b / t for b, t in zip(times["numpy"], times["snapcore"], strict=True)]
        aa = [b / t for b, t in zip(times["numpy"], times["control"], strict=True)]
        lo, hi = median_interval(ratios)
        alo, ahi = median_interval(aa)
        mid = median(ratios)
        detail = (
            f"median of {rounds} paired rounds [95% interval {lo:.2f}, {hi:.2f}]; "
            f"{median(times['snapcore']) * 1e3:.1f} ms vs {median(times['numpy']) * 1e3:.1f} ms; "
            f"A/A control {median(aa):.2f}x [{alo:.2f}, {ahi:.2f}]"
        )
        rows.append((what, f"{mid:.2f}x", f">= {goal:g}x", detail,
                     verdict(lo, mid, hi, goal, True)))  # fmt: skip
    return rows


def statistics_rows(rounds: int, n: int = 10**7) -> list[Row]:
    """Exact mean, variance and covariance of ``n`` values (``snapcore.release``)
    against diffprivlib's float ``tools.mean`` / ``tools.var`` and a float covariance,
    the calls of ``benchmarks/bench_statistics.py`` in paired rounds: per round the
    ratio snapcore time / float time (below 1: faster than the float tools)."""
    import warnings

    goal = 1.0
    try:
        table = _bench_statistics.calls(n)
    except ImportError as exc:
        return [(f"exact {stat} of {n:.0e} vs diffprivlib float", "—", f"<= {goal:g}x",
                 f"not measured ({type(exc).__name__})", None)
                for stat in ("mean", "variance", "covariance")]  # fmt: skip
    calls: dict[str, Callable[[], object]] = {}
    for stat, (exact, flt) in table.items():
        calls[f"{stat} snapcore"], calls[f"{stat} float"] = exact, flt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning and the like
        times = paired_rounds(calls, rounds)
    rows: list[Row] = []
    for stat in table:
        snap, flt = times[f"{stat} snapcore"], times[f"{stat} float"]
        ratios = [a / b for a, b in zip(snap, flt, strict=True)]
        lo, hi = median_interval(ratios)
        mid = median(ratios)
        detail = (
            f"median of {rounds} paired rounds [95% interval {lo:.2f}, {hi:.2f}]; "
            f"{median(snap) * 1e3:.1f} ms vs {median(flt) * 1e3:.1f} ms"
        )
        rows.append((f"exact {stat} of {n:.0e} values vs diffprivlib float", f"{mid:.2f}x",
                     f"<= {goal:g}x", detail, verdict(lo, mid, hi, goal, False)))  # fmt: skip
    return rows


def targets(args: argparse.Namespace) -> list[str]:
    """Issue 31's target table, every row measured in this run (protection on)."""
    rows = array_rows(args.rounds)
    rows.extend(statistics_rows(args.rounds))
    rows.extend(startup_rows(args.startup_blocks, args.startup_python))
    if not args.skip_audit:
        rows.extend(audit_rows())
    mem = peak_bytes_per_value(10**7)
    rows.append(("peak memory, 10^7 array (default release)", f"{mem:.1f} B/value",
                 "<= 8.5 B/value", "tracemalloc peak during the release, input not counted",
                 "yes" if mem <= 8.5 else "**no**"))  # fmt: skip
    return target_table(rows)


def audit_parts(clamp_bound: float, repeats: int = 1) -> tuple[float, float]:
    """CPU seconds of one exact output distribution at ε = 1 with ``clamp_bound`` B
    (``snapcore.analysis.exact_output_distribution`` of the input 0: the walk, the
    masses as dyadics), and of the first access of its ``pmf``, which builds the
    Fractions on demand (``audit`` never does): the pair of the fastest of ``repeats``
    runs, each timed with the garbage collector off (as ``timeit`` does), so that no
    collection of earlier objects lands in one part."""
    import gc

    from snapcore.analysis import exact_output_distribution

    m, outputs, _ = _audit_mechanism(clamp_bound)
    best = (math.inf, math.inf)
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            c0 = time.process_time()
            d = exact_output_distribution(m, 0.0, max_outputs=outputs)
            whole = time.process_time() - c0
            c0 = time.process_time()
            pmf = d.pmf
            build = time.process_time() - c0
        finally:
            gc.enable()
        assert len(pmf) == len(d)
        del d, pmf
        best = min(best, (whole, build))
    return best


def audit_rows() -> list[Row]:
    """The audit at B/Λ = 500, 5,000 and 50,000 in one run, in this process: the time
    at 5,000 against 0.5 s (best of 3), the growth of the CPU time and of the peak
    memory per ×10 (linear: about ×10), and one distribution apart from the Fractions
    of its ``pmf``, built on demand (:func:`audit_parts`).  Wall time beyond CPU time
    is the other processes' share of the machine (the load average is printed)."""
    (w1, c1, b1), (w2, c2, b2), (w3, c3, b3) = (
        audit_seconds(1000.0, 3),
        audit_seconds(10000.0, 3),
        audit_seconds(100000.0, 1),
    )
    load = ""
    if hasattr(os, "getloadavg"):
        load = f"; load average {os.getloadavg()[0]:.1f}"
    m1, m2, m3 = (audit_peak_mb(b) for b in (1000.0, 10000.0, 100000.0))
    (d1, f1), (d2, f2), (d3, f3) = (
        audit_parts(1000.0, 3),
        audit_parts(10000.0, 3),
        audit_parts(100000.0),
    )
    return [
        (f"audit, ε = 1, B/Λ = {b2:.0f} (wall, best of 3)", f"{w2:.2f} s", "<= 0.5 s",
         f"CPU {c2:.2f} s{load}", "yes" if w2 <= 0.5 else "**no**"),
        (f"audit CPU time, B/Λ = {b1:.0f} / {b2:.0f} / {b3:.0f}",
         f"{c1:.3f} / {c2:.2f} / {c3:.1f} s", "linear (x10 per x10)",
         f"x{c2 / c1:.1f}, x{c3 / c2:.1f} per x10; wall {w1:.3f} / {w2:.2f} / {w3:.1f} s; "
         f"peak memory {m1:.1f} / {m2:.1f} / {m3:.0f} MB (x{m2 / m1:.1f}, x{m3 / m2:.1f})",
         None),
        ("one distribution / the Fractions of its pmf, on first access (CPU)",
         f"{d1:.3f} / {d2:.2f} / {d3:.2f} s; {f1:.4f} / {f2:.3f} / {f3:.2f} s",
         "linear (x10 per x10)",
         f"distribution x{d2 / d1:.1f}, x{d3 / d2:.1f} per x10; Fractions x{f2 / f1:.0f}, "
         f"x{f3 / f2:.0f} per x10 (their size grows as outputs x bits; audit() builds none)",
         None),
    ]  # fmt: skip


def target_table(rows: list[Row]) -> list[str]:
    lines = ["", "| target | measured | goal | detail | met |", "|---|---:|---|---|---|"]
    for what, measured, goal, detail, met in rows:
        lines.append(f"| {what} | {measured} | {goal} | {detail} | {met or '—'} |")
    return lines


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
    ap.add_argument("--skip-targets", action="store_true", help="only the rate table")
    ap.add_argument("--skip-audit", action="store_true", help="targets without the audit")
    ap.add_argument("--startup-only", action="store_true", help="only the two start-up targets")
    ap.add_argument(
        "--startup-blocks", type=int, default=30, help="paired blocks of the start-up commands"
    )
    ap.add_argument(
        "--startup-python",
        default=None,
        help="interpreter of the environment whose start-up is measured (default: this one)",
    )
    ap.add_argument("--audit-only", action="store_true", help="only the audit target")
    ap.add_argument(
        "--rounds", type=int, default=15, help="paired rounds of the array and statistics targets"
    )
    args = ap.parse_args(argv)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    start_info = machine()
    if args.startup_only or args.audit_only:
        lines = ["Machine:"] + [f"- {m}" for m in start_info]
        lines += target_table(
            startup_rows(args.startup_blocks, args.startup_python)
            if args.startup_only
            else audit_rows()
        )
        print("\n".join(lines))
        return 0
    results: list[Result] = []
    for bench in (bench_snapcore, bench_diffprivlib, bench_opendp, bench_numpy):
        results.extend(bench(args))
    # The reference: numpy's (non-private) Laplace on the same batch size.
    ref_row = next(
        (r for r in results if r.name == "numpy Generator.laplace" and r.kind == "batch"), None
    )
    ref = ref_row.rate if ref_row else None
    lines = ["Machine:"] + [f"- {m}" for m in start_info]
    lines += [
        f"- batch size {args.batch}, epsilon {EPS}, bounds [{LOWER}, {UPPER}], best of 5 rounds "
        f"of >= {args.seconds} s",
        "- ratio: releases/s divided by that of numpy Generator.laplace (batch) in this run",
        "",
        "| method | kind | releases/s | ratio to numpy Laplace (batch) | note |",
        "|---|---|---:|---:|---|",
    ]
    for r in results:
        ratio = f"{r.rate / ref:.3g}" if (r.rate and ref) else "—"
        rate = fmt_rate(r.rate) if r.rate is not None else (r.note or "—")
        note = r.note if r.rate is not None else ""
        lines.append(f"| {r.name} | {r.kind} | {rate} | {ratio} | {note} |")
    if not args.skip_targets:
        lines += targets(args)
    if hasattr(os, "getloadavg"):
        la = os.getloadavg()
        lines.append("")
        lines.append(f"Load average at end: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
