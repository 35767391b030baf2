"""Timing leak of a release: dudect-style Welch t tests between input classes.

Method (Reparaz, Balasch and Verbauwhede, "Dude, is my code constant time?", 2017):
for each group of classes, every call of every class is scheduled in one random
order and run on one pinned core (``os.sched_setaffinity``), timed with
``time.perf_counter_ns``.  For each pair of classes the timings are cropped at a
percentile of the pair's pooled timings (the crop removes the machine's interrupts
and preemptions, which are not data-dependent) and compared with Welch's t.
|t| > 4.5 is dudect's threshold for a leak.  Each pair is printed with both medians,
t on the cropped and on the raw timings.

Groups
------
value      scalar ``release`` of values of different classes (system source)
noise      scalar ``release`` of the centre with chosen draws (their snapcore-draw-v1 bytes)
batch      array ``release`` of 4096 values (ε = 2**20, bounds (−1, 1)): all inside,
           all clamped, all at the grid's half-points (system source), and fixed
           draws that force the fast path's exact fallback vs draws it decides
statistic  ``snapcore.release`` of every built-in statistic on equal-size datasets
           whose values differ

The same run measures with the protection off and on (``--protection both``) and
prints the overhead: the protected median over the unprotected median per class.

Run: ``python benchmarks/timing_leak.py --calls 100000`` (about half an hour for all
groups at 1e5 scalar calls per class); the target on a quiet machine is
``--calls 1000000 --batches 1000``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import random
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

import snapcore
import snapcore.mechanism._padding
import snapcore.releases._padding
from snapcore.mechanism._padding import noise_draw
from snapcore.padding._pad import fallbacks_covered
from snapcore.padding._quanta import statistic_stats
from snapcore.randomness._draw import Draw, encode_draw, row_size
from snapcore.randomness._sources import ByteSource, SystemSource

Call = Callable[[], object]


# -- chosen draws --------------------------------------------------------------------
#: Elements of a batch given a chosen draw in the "forced" class: as many exact fallbacks
#: as the padding covers for the benchmark's batch length.
BATCH = 4096
FORCED = fallbacks_covered(BATCH)


class PatternSource(ByteSource):
    """The OS CSPRNG's bytes, or (when ``draw`` is given) the bytes of ``draw`` repeated,
    or with ``forced``, :data:`FORCED` rows of each read replaced by ``draw``'s bytes.

    Every read also reads as many bytes from the OS (and drops them when replaying),
    so the chosen-draw classes pay exactly the cost of real randomness; the stream is
    decoded per ``snapcore-draw-v1`` as any byte source, also by the fast path's bulk
    decoder.  Not cryptographic when replaying; for measurements only.
    """

    name = "pattern"

    def __init__(
        self, draw: Draw | None = None, precision: int = 118, forced: bool = False
    ) -> None:
        super().__init__()
        self._inner = SystemSource()
        self._pattern = b"" if draw is None else encode_draw(draw, precision)
        self._off = 0
        self._forced = forced or None
        self._precision = precision
        self._rng = random.Random()

    def read(self, n: int) -> bytes:
        # Every read does the same work whatever the class (a copy, FORCED row
        # positions drawn and rewritten), so that classes differ only in the bytes.
        out = bytearray(self._inner.read(n))
        r = row_size(self._precision)
        rows = n // r
        forced = self._forced is not None and n % r == 0
        for j in self._rng.sample(range(rows), min(FORCED, rows)):
            out[j * r : (j + 1) * r] = self._pattern if forced else out[j * r : (j + 1) * r]
        data = bytes(out)
        if not self._pattern or forced:
            # ``forced``: those rows (at random row positions) got the chosen draw,
            # every other row keeps the real one: a batch with FORCED chosen draws.
            return data
        pat = self._pattern
        reps = (self._off + n) // len(pat) + 1
        out = (pat * reps)[self._off : self._off + n]
        self._off = (self._off + n) % len(pat)
        return out


def draw_near(log2_u: int, p: int, rng: random.Random, sign: int = 1) -> Draw:
    """A p-bit U* in [2**log2_u, 2**(log2_u + 1)) with random mantissa bits."""
    m = (1 << (p - 1)) | rng.getrandbits(p - 1)
    return Draw(sign=sign, mantissa=m, exponent=log2_u - (p - 1))


# -- is the machine quiet? -------------------------------------------------------------
#: Block medians of the probe may differ by this factor on a machine called quiet.
STEADY_RATIO = 1.15


def steadiness(seconds: float = 2.0, block: int = 500) -> tuple[float, float, int]:
    """Time the unpadded exact release of one value in blocks of ``block`` calls for
    about ``seconds``; return (smallest block median ns, largest / smallest, blocks).

    The target run needs a machine whose speed does not change while it runs: a
    quantum measured in one moment must fit the others, and the classes must see
    the same machine.  On a machine that changes speed (another tenant on the
    physical core, memory or cache contention from outside the guest), the largest
    block median is far above the smallest, and |t| < 5 cannot be expected."""
    m = snapcore.SnappingMechanism(
        epsilon=1.0, sensitivity=0.1, clamp_bounds=(0.0, 100.0), timing="constant"
    )
    release = m.unpadded_copy(m.source).release  # the padded path, without the padding
    now = time.perf_counter_ns
    for _ in range(block):
        release(50.0)
    meds: list[float] = []
    end = time.perf_counter() + seconds
    buf = np.empty(block, np.int64)
    while time.perf_counter() < end:
        for i in range(block):
            t = now()
            release(50.0)
            buf[i] = now() - t
        meds.append(float(np.median(buf)))
    lo = min(meds)
    return lo, max(meds) / lo, len(meds)


def report_steadiness(when: str) -> float:
    lo, ratio, n = steadiness()
    verdict = "steady" if ratio <= STEADY_RATIO else "NOT steady: not a quiet machine"
    print(
        f"machine speed {when}: exact release of 50.0 in {n} blocks of 500 calls, "
        f"fastest block median {lo:.0f} ns, slowest / fastest {ratio:.2f} ({verdict})"
    )
    return ratio


# -- measurement -----------------------------------------------------------------------
def measure(classes: dict[str, Call], calls: int, seed: int) -> dict[str, np.ndarray]:
    """Times of ``calls`` calls of every class, interleaved in one random order."""
    names = list(classes)
    fns = [classes[n] for n in names]
    for f in fns:  # warm up: first calls compile, fill caches and calibrate quanta
        for _ in range(3):
            f()
    order = np.repeat(np.arange(len(names), dtype=np.int64), calls)
    np.random.default_rng(seed).shuffle(order)
    out = np.empty(order.size, np.int64)
    now = time.perf_counter_ns
    for i, c in enumerate(order.tolist()):
        f = fns[c]
        t = now()
        f()
        out[i] = now() - t
    return {n: out[order == i] for i, n in enumerate(names)}


def welch(a: np.ndarray, b: np.ndarray) -> float:
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return 0.0
    return float((a.mean() - b.mean()) / math.sqrt(va + vb))


def cropped_t(a: np.ndarray, b: np.ndarray, pct: float) -> float:
    cut = np.percentile(np.concatenate([a, b]), pct)
    return welch(a[a <= cut].astype(np.float64), b[b <= cut].astype(np.float64))


def overrun_z(a: np.ndarray, b: np.ndarray, limit: float) -> float:
    """Two-proportion z statistic of the rates of calls longer than ``limit``.

    With the protection on, a call's duration is ``j`` quanta (plus a constant), and
    ``j`` is what an observer learns: the rate of ``j > 1`` per class is the leak."""
    oa, ob = int((a > limit).sum()), int((b > limit).sum())
    pool = (oa + ob) / (a.size + b.size)
    var = pool * (1 - pool) * (1 / a.size + 1 / b.size)
    return 0.0 if var == 0 else (oa / a.size - ob / b.size) / math.sqrt(var)


def table(
    group: str, mode: str, times: dict[str, np.ndarray], pct: float, per: int = 1
) -> tuple[list[float], list[float], list[float]]:
    """Print one group's pairs; return the cropped |t| of the covered pairs and of the
    pairs with a class the padding does not cover (:data:`UNCOVERED`), and (protection
    on) the |z| of the covered pairs' overrun rates."""
    unit = "ns" if per == 1 else f"ns/value ({per} values)"
    on = mode == "on"

    # With the protection on every call lasts j quanta: j > 1 past 1.5 times the
    # shortest class median (that median is one quantum plus the padding's own cost).
    # (Statistics: one quantum per statistic, so per statistic.)
    def key(name: str) -> str:
        return name.split(": ")[0] if ": " in name else ""

    def limit_of(name: str) -> float:
        same = [t for k, t in times.items() if key(k) == key(name)]
        return 1.5 * min(float(np.median(t)) for t in same)

    print(f"\n### {group}, protection {mode}: medians in {unit}, crop at p{pct:g}\n")
    head = f"| {'class A':30s} | {'class B':30s} | {'median A':>10s} | {'median B':>10s} "
    head += f"| {'t (crop)':>9s} | {'t (raw)':>9s} |"
    rule = f"|{'-' * 32}|{'-' * 32}|{'-' * 12}|{'-' * 12}|{'-' * 11}|{'-' * 11}|"
    if on:
        head += f" {'z (j > 1)':>9s} |"
        rule += f"{'-' * 11}|"
    print(head)
    print(rule)
    covered: list[float] = []
    uncovered: list[float] = []
    zs: list[float] = []
    for a, b in itertools.combinations(times, 2):
        if ": " in a and a.split(": ")[0] != b.split(": ")[0]:
            continue  # statistics: only datasets of one statistic (the statistic is public)
        ta, tb = times[a], times[b]
        t = cropped_t(ta, tb, pct)
        inside = UNCOVERED not in a and UNCOVERED not in b
        (covered if inside else uncovered).append(abs(t))
        z = overrun_z(ta, tb, limit_of(a)) if on else 0.0
        if inside and on:
            zs.append(abs(z))
        flag = " !" if abs(t) > 4.5 or abs(z) > 4.5 else ""
        row = (
            f"| {a:30s} | {b:30s} | {np.median(ta) / per:10.1f} | {np.median(tb) / per:10.1f} "
            f"| {t:9.2f} | {welch(ta.astype(float), tb.astype(float)):9.2f} |"
        )
        if on:
            row += f" {z:9.2f} |"
        print(row + flag)
    if on:
        rates = ", ".join(f"{k}: {100 * (v > limit_of(k)).mean():.2f} %" for k, v in times.items())
        print(f"\ncalls past 1.5 quanta (j > 1): {rates}")
    more = f"; pairs with a class not covered: {max(uncovered):.2f}" if uncovered else ""
    more += f"; max |z| of overrun rates = {max(zs):.2f}" if zs else ""
    print(
        f"\nmax |t| (cropped) = {max(covered, default=0.0):.2f}{more}; "
        f"calls per class = {next(iter(times.values())).size}"
    )
    return covered, uncovered, zs


# -- groups ----------------------------------------------------------------------------
def value_group(timing: str) -> tuple[dict[str, Call], Any]:
    m = snapcore.SnappingMechanism(
        epsilon=1.0, sensitivity=0.1, clamp_bounds=(0.0, 100.0), timing=timing
    )
    vals = {
        "centre 50.0": 50.0,
        "on the bound 100.0": 100.0,
        "far outside -1e300": -1e300,
        "far outside +1e300": 1e300,
        "subnormal 5e-324": 5e-324,
        "33.3 (Δ = 0.1 denom.)": 33.3,
        "integer-valued 42.0": 42.0,
        "non-integer 42.123456789": 42.123456789,
    }
    return {k: (lambda v=v: m.release(v)) for k, v in vals.items()}, [m]


def noise_group(timing: str) -> tuple[dict[str, Call], Any]:
    rng = random.Random(12)
    base = snapcore.SnappingMechanism(epsilon=1.0, sensitivity=0.1, clamp_bounds=(0.0, 100.0))
    p = base.precision
    lam_grid = base.granularity
    window = ((1 << 14) - 1) << (p - 14) | (rng.getrandbits(p - 15) | 1 << (p - 16))
    draws = {
        "U* typical (≈ 0.3)": draw_near(-2, p, rng),
        "U* upper half (≈ 0.7)": draw_near(-1, p, rng),
        "U* near 1 (1 - 2**-p)": Draw(sign=1, mantissa=(1 << p) - 1, exponent=-p),
        "1 - U* ≈ 2**-14.5": Draw(sign=-1, mantissa=window, exponent=-p),
        "U* ≈ 2**-40": draw_near(-40, p, rng),
        "U* ≈ 2**-100": draw_near(-100, p, rng),
        "y at a snap tie": noise_draw(base.calibration, Fraction(3, 2) * lam_grid),
        UNCOVERED + "U* ≈ 2**-1000": draw_near(-1000, p, rng, sign=-1),
    }
    classes: dict[str, Call] = {}
    mechs = []
    for name, d in draws.items():
        # The draw's own bytes (snapcore-draw-v1), decoded by the release as any
        # byte source's: the same fused path as a release from the OS source.
        m = snapcore.SnappingMechanism(
            epsilon=1.0,
            sensitivity=0.1,
            clamp_bounds=(0.0, 100.0),
            source=PatternSource(d, p),
            timing=timing,
        )
        mechs.append(m)
        classes[name] = lambda m=m: m.release(50.0)
    return classes, mechs


def batch_group(timing: str) -> tuple[dict[str, Call], Any]:
    kw: dict[str, Any] = {"epsilon": 2.0**20, "clamp_bounds": (-1.0, 1.0), "timing": timing}
    # Every class reads its randomness the same way (PatternSource: OS bytes, replayed
    # or not), so only the value or the draw differs between classes.
    m = snapcore.SnappingMechanism(**kw, source=PatternSource())
    step = float(m.granularity * m.sensitivity)
    rng = np.random.default_rng(12)
    arrays = {
        "all inside (centre)": np.zeros(BATCH),
        "all inside (spread)": rng.uniform(-0.5, 0.5, BATCH),
        "all on the bound": np.ones(BATCH),
        "all clamped (1e300)": np.full(BATCH, 1e300),
        "all at half-points": (np.arange(BATCH) - BATCH // 2 + 0.5) * step,
    }
    classes: dict[str, Call] = {k: (lambda a=a: m.release(a)) for k, a in arrays.items()}
    mechs = [m]
    # Chosen draws: y = x + N near a snap tie forces the fast path's exact fallback, N at
    # a quarter-step lets it decide.  The padding covers up to F = fallbacks_covered(n)
    # exact elements per array (more occur with probability below 2**-64 with a CSPRNG):
    # a batch with F forced elements is covered, one made only of them is not.
    grid = np.arange(BATCH, dtype=np.float64) % 64 * step  # exact grid points near 0
    forced = FORCED
    tie = noise_draw(m.calibration, Fraction(3, 2) * m.granularity)
    sources: dict[str, ByteSource] = {
        "draws decided": PatternSource(noise_draw(m.calibration, Fraction(5, 4) * m.granularity)),
        f"{forced} draws force fallback": PatternSource(tie, m.precision, forced=True),
        "real draws on grid points": PatternSource(),
        f"{UNCOVERED}all draws force fallback": PatternSource(tie, m.precision),
    }
    for name, src in sources.items():
        mf = snapcore.SnappingMechanism(**kw, source=src)
        if timing == "off":
            from snapcore.pipeline._engine import release_batch

            _, st = release_batch(mf.pipeline, grid, src, stats=True)
            print(f"  [batch] {name}: exact fallbacks {len(st.fallback_k)} of {BATCH}")
        mechs.append(mf)
        classes[name] = lambda mf=mf: mf.release(grid)
    return classes, mechs


#: Classes outside what the padding covers (reported, not counted in the max |t|).
UNCOVERED = "[not covered] "


def statistic_group(timing: str, n: int = 64) -> tuple[dict[str, Call], Any]:
    rng = np.random.default_rng(12)
    kw: dict[str, Any] = {"epsilon": 1.0, "timing": timing}
    data = {
        "ones": np.full(n, 1.0),
        "zeros": np.zeros(n),
        "spread": rng.uniform(0, 100, n),
        "outside": np.full(n, 1e300),
        "subnormal": np.full(n, 5e-324),
    }
    classes: dict[str, Call] = {}
    for stat in ["count", "sum", "mean", "variance"]:
        for dn, d in data.items():
            extra: dict[str, Any] = {"n": n} if stat == "count" else {"data_bounds": (0.0, 100.0)}
            classes[f"{stat}: {dn}"] = lambda s=stat, d=d, e=extra: snapcore.release(
                s, d, **kw, **e
            )
    pairs = {"equal": np.column_stack([data["spread"]] * 2), "mixed": rng.uniform(0, 100, (n, 2))}
    for dn, d in pairs.items():
        classes[f"covariance: {dn}"] = lambda d=d: snapcore.release(
            "covariance", d, data_bounds=[(0.0, 100.0), (0.0, 100.0)], **kw
        )
    for dn, d in {"all in bin 0": np.full(n, 1.0), "spread": data["spread"]}.items():
        classes[f"histogram: {dn}"] = lambda d=d: snapcore.release(
            "histogram", d, bins=[0.0, 25.0, 50.0, 75.0, 100.0], **kw
        )
    return classes, []


GROUPS = {
    "value": value_group,
    "noise": noise_group,
    "batch": batch_group,
    "statistic": statistic_group,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20_000, help="scalar calls per class")
    ap.add_argument("--batches", type=int, default=300, help="batch calls per class")
    ap.add_argument("--statistic-calls", type=int, default=2_000, help="per class")
    ap.add_argument("--protection", choices=["on", "off", "both"], default="both")
    ap.add_argument(
        "--groups", default=",".join(GROUPS), help="comma-separated: " + ",".join(GROUPS)
    )
    ap.add_argument("--crop", type=float, default=90.0, help="crop percentile")
    ap.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument(
        "--margin",
        type=float,
        default=None,
        help="calibrate every quantum with this margin instead of the mechanism's and the "
        "statistic's padding's own (an experiment: how much slack a machine needs)",
    )
    args = ap.parse_args()
    if args.margin is not None:
        snapcore.mechanism._padding.SCALAR_MARGIN = args.margin
        snapcore.mechanism._padding.ARRAY_MARGIN = args.margin
        snapcore.releases._padding.STATISTIC_MARGIN = args.margin

    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    print(
        f"snapcore {snapcore.__version__}; python {platform.python_version()} on "
        f"{platform.machine()}; pinned to cpu {cpu} of {os.cpu_count()}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"margins: scalar {snapcore.mechanism._padding.SCALAR_MARGIN:g}, "
        f"array {snapcore.mechanism._padding.ARRAY_MARGIN:g}, "
        f"statistic {snapcore.releases._padding.STATISTIC_MARGIN:g}"
    )
    before = report_steadiness("before")
    modes = {"on": ["constant"], "off": ["off"], "both": ["off", "constant"]}[args.protection]
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    medians: dict[tuple[str, str, str], float] = {}
    summary = []
    for g in groups:
        count = {"batch": args.batches, "statistic": args.statistic_calls}.get(g, args.calls)
        for mode in modes:
            classes, mechs = GROUPS[g](mode)
            t0 = time.perf_counter()
            times = measure(classes, count, args.seed)
            secs = time.perf_counter() - t0
            per = BATCH if g == "batch" else 1
            ts, unc, zs = table(g, "on" if mode == "constant" else "off", times, args.crop, per)
            for k, v in times.items():
                medians[(g, mode, k)] = float(np.median(v))
            if g in ("value", "noise") and mode == "constant" and mechs:
                print(f"scalar quantum {mechs[0].padding.scalar_quantum_ns} ns")
            over = [m.padding.stats for m in mechs if m.padding is not None]
            if over:
                calls_ = sum(s.calls for s in over)
                print(
                    f"padded calls {calls_}, overruns {sum(s.overruns for s in over)} "
                    f"({100 * sum(s.overruns for s in over) / max(calls_, 1):.2f} %), "
                    f"largest multiple {max(s.max_multiple for s in over)}"
                )
            if g == "statistic" and mode == "constant":
                print(f"statistic padding: {statistic_stats()}")
            print(f"({secs:.1f} s)")
            summary.append((g, mode, max(ts, default=0.0), max(unc, default=None), zs))
    if len(modes) == 2:
        print("\n### Overhead: protected median / unprotected median, same run\n")
        print(f"| {'group':9s} | {'class':30s} | {'off':>10s} | {'on':>10s} | {'ratio':>6s} |")
        print(f"|{'-' * 11}|{'-' * 32}|{'-' * 12}|{'-' * 12}|{'-' * 8}|")
        for (g, mode, k), v in medians.items():
            if mode != "off":
                continue
            on = medians[(g, "constant", k)]
            print(f"| {g:9s} | {k:30s} | {v:10.0f} | {on:10.0f} | {on / v:6.2f} |")
    after = report_steadiness("after")
    print("\n### Summary: max |t| (cropped) per group\n")
    if max(before, after) > STEADY_RATIO:
        print(
            f"(the machine's speed changed by up to {max(before, after):.2f}x within two "
            "seconds: not the quiet machine the target asks for)\n"
        )
    for g, mode, t, u, zs in summary:
        more = "" if u is None else f" (classes not covered: {u:.2f})"
        more += f"; max |z| of overrun rates {max(zs):.2f}" if zs else ""
        print(f"- {g}, protection {'on' if mode == 'constant' else 'off'}: {t:.2f}{more}")


if __name__ == "__main__":
    main()
