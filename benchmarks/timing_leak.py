"""Timing leak of a release: paired tests over randomised complete blocks.

Method (docs/timing.md, "Measuring"): timings taken one after another are not
independent and a machine's speed drifts, so classes are compared **within blocks**,
as in tlsfuzzer's timing analysis (Kario, IACR ePrint 2023/1441).  Each block runs every
class of a group once, in a fresh random order, on one pinned core.  Every call goes
through one call site on inputs laid out by position (the block's values in a list,
their draws' ``snapcore-draw-v1`` bytes one after another in one buffer that a single
source reads), so a class differs from another only in its value and its draw bytes,
never in which lambda, mechanism or source object is read before the call.

For each pair of classes the per-block differences ``d = t_A − t_B`` are tested with
the sign test and Wilcoxon's signed-rank test (two-sided, Bonferroni-corrected over
the group's tests at ``--alpha``); Friedman's test compares all the group's covered
classes at once; the median paired difference gets a bootstrap 95 % interval, in ns
and as a fraction of the release's median time.  dudect's Welch t on cropped timings
(Reparaz, Balasch and Verbauwhede, 2017) is a secondary column.  Every group has an
**A/A control**: one class measured twice under two names; when the control is not
clean (a test rejects, or its interval leaves the ±``--effect`` band) the group's
run is void and the table says so.  The steadiness probe times one release in blocks
before and after the run.

Groups
------
value      scalar release of values of different classes (fresh random draws)
noise      scalar release of the centre with chosen draws
batch      array release of 4096 values: values inside, on the bound, clamped, at
           the grid's half-points; chosen draws the fast path decides, F of them
           forcing its exact fallback (covered), all of them forcing it (not covered)
statistic  ``snapcore.release`` of built-in statistics on equal-size datasets
cost       protected / unprotected time per block (default sources): a scalar
           release, an array release, a statistic's release

Run ``python benchmarks/timing_leak.py --calls 1000000 --batches 1000`` for the
target (docs/timing.md).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import snapcore.backends.mpfr as mpfr
from scipy import stats

import snapcore
from snapcore.padding._pad import fallbacks_covered, noise_draw, tie_row
from snapcore.padding._quanta import statistic_stats
from snapcore.randomness._draw import Draw, encode_draw, row_size
from snapcore.randomness._sources import ByteSource

#: Length of the batch group's arrays, and the number of fallbacks its quantum covers.
BATCH = 4096
FORCED = fallbacks_covered(BATCH)
#: Marks a class outside what the padding's quantum covers (reported, not judged).
OUTSIDE = "[outside] "
#: Suffix of the A/A control's second copy.
TWIN = " (A/A twin)"


# -- the one source every class of a group reads ------------------------------------------
class BufferSource(ByteSource):
    """Reads its bytes from a buffer loaded before each stretch of blocks (:meth:`load`),
    one slice per read whatever the class; built without a buffer (as calibration
    builds a source of the same kind), it reads the OS CSPRNG.  For measurements only."""

    name = "buffer"

    def __init__(self) -> None:
        super().__init__()
        self._buf = b""
        self._pos = 0
        self._fresh = True

    def load(self, data: bytes) -> None:
        self._buf, self._pos, self._fresh = data, 0, False

    def read(self, n: int) -> bytes:
        if self._fresh:
            return os.urandom(n)
        p = self._pos
        self._pos = p + n
        return self._buf[p : p + n]

    @property
    def left(self) -> int:
        return len(self._buf) - self._pos


@dataclass(frozen=True)
class Case:
    """A class: the value released, how its draws' bytes are made (None: fresh random
    rows), and whether the quantum covers it."""

    name: str
    value: Any
    draws: Callable[[int], bytes] | None = None
    covered: bool = True


def draw_near(log2_u: int, p: int, rng: random.Random, sign: int = 1) -> Draw:
    """A p-bit U* in [2**log2_u, 2**(log2_u + 1)) with random mantissa bits."""
    m = (1 << (p - 1)) | rng.getrandbits(p - 1)
    return Draw(sign=sign, mantissa=m, exponent=log2_u - (p - 1))


def repeat(enc: bytes) -> Callable[[int], bytes]:
    """Draw bytes for ``count`` releases (or elements) of the same chosen draw."""
    return lambda count: enc * count


# -- is the machine steady? ----------------------------------------------------------------
STEADY_RATIO = 1.15


def steadiness(seconds: float = 2.0, block: int = 500) -> tuple[float, float, int]:
    """Time the unpadded release of one value in blocks of ``block`` calls for about
    ``seconds``; return (smallest block median ns, largest / smallest, blocks)."""
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
    verdict = "steady" if ratio <= STEADY_RATIO else "NOT steady"
    print(
        f"steadiness probe {when}: release of 50.0 in {n} blocks of 500 calls, fastest "
        f"block median {lo:.0f} ns, slowest / fastest {ratio:.2f} ({verdict})"
    )
    return ratio


# -- measuring -------------------------------------------------------------------------------
def run_blocks(
    call: Callable[[Any], object],
    cases: Sequence[Case],
    blocks: int,
    rng: np.random.Generator,
    source: BufferSource | None,
    row: int,
    per_chunk: int,
) -> np.ndarray:
    """Times (blocks × classes, ns) of ``call(value)``: every block runs every class once
    in a fresh random order.  Inputs are laid out by position for ``per_chunk`` blocks
    at a time: a list of values (a new object per call, :func:`_fresh`) and, with
    ``source``, one buffer of their draw bytes."""
    k = len(cases)
    out = np.empty((blocks, k), np.int64)
    now = time.perf_counter_ns
    for c in cases:  # warm up: first calls calibrate quanta and compile
        for _ in range(3):
            if source is not None:
                source.load(_bytes(c, row, {}))
            call(c.value)
    done = 0
    while done < blocks:
        nb = min(per_chunk, blocks - done)
        order = np.argsort(rng.random((nb, k)), axis=1)
        flat = order.reshape(-1).tolist()
        values = [_fresh(cases[j].value) for j in flat]
        if source is not None:
            parts = []
            for b in range(nb):
                common: dict[int, bytes] = {}  # the block's fresh draws, shared
                parts += [_bytes(cases[j], row, common) for j in flat[b * k : (b + 1) * k]]
            source.load(b"".join(parts))
        times = [0] * len(flat)
        for i in range(len(flat)):
            v = values[i]
            t = now()
            call(v)
            times[i] = now() - t
        if source is not None and source.left:
            raise AssertionError("the releases did not read their draws' bytes exactly")
        t_arr = np.asarray(times, np.int64).reshape(nb, k)
        rows = np.arange(nb)[:, None]
        out[done : done + nb][rows, order] = t_arr
        done += nb
    return out


def _fresh(value: Any) -> Any:
    """A new object equal to ``value`` (a float or an array; anything else as it is).

    Each call gets its own input object, allocated in call order, so where an input
    lies in memory (which cache lines its reference count shares, whether the work
    evicted it) follows its position in the stretch, not its class: a class whose one
    object sat in a busier cache set would otherwise pay for it in every block."""
    if type(value) is float:
        return value * 1.0  # a new float, exactly equal (−0.0 stays −0.0)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _bytes(c: Case, row: int, common: dict[int, bytes]) -> bytes:
    """The draw bytes of one call of ``c``: its chosen draws, or the block's fresh
    ones (``common``, by number of elements), which every class of the block with
    fresh draws shares: common random numbers, so that a paired difference within a
    block compares the values on the same draw, not two draws."""
    n = _elements(c)
    if c.draws is not None:
        return c.draws(n)
    if n not in common:
        common[n] = os.urandom(row * n)
    return common[n]


def _elements(c: Case) -> int:
    return int(np.size(c.value)) if isinstance(c.value, np.ndarray) else 1


# -- statistics ------------------------------------------------------------------------------
def median_ci(d: np.ndarray, rng: np.random.Generator, boots: int = 2000) -> tuple[float, float]:
    """Bootstrap 95 % interval (percentile) of the median of ``d``: resamples drawn as
    multinomial counts over ``d``'s distinct values (the same distribution as resampling
    the values, at a cost in the number of distinct values)."""
    u, c = np.unique(d, return_counts=True)
    n = d.size
    counts = rng.multinomial(n, c / n, size=boots)
    cum = np.cumsum(counts, axis=1)
    lo_i = np.argmax(cum >= (n + 1) // 2, axis=1)  # lower median
    hi_i = np.argmax(cum >= n // 2 + 1, axis=1)  # upper median
    meds = (u[lo_i] + u[hi_i]) / 2.0
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def welch(a: np.ndarray, b: np.ndarray) -> float:
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    return 0.0 if va + vb == 0 else float((a.mean() - b.mean()) / math.sqrt(va + vb))


def cropped_t(a: np.ndarray, b: np.ndarray, pct: float = 90.0) -> float:
    cut = np.percentile(np.concatenate([a, b]), pct)
    return welch(a[a <= cut].astype(np.float64), b[b <= cut].astype(np.float64))


@dataclass
class Pair:
    a: str
    b: str
    covered: bool
    control: bool
    sign_p: float
    sign_frac: float  # share of non-zero differences with A slower
    wilcoxon_p: float
    median: float
    ci: tuple[float, float]
    t: float

    def differs(self, alpha: float) -> bool:
        """A test rejects "no difference" at ``alpha`` (already corrected)."""
        return self.sign_p < alpha or self.wilcoxon_p < alpha

    def within(self, band: float) -> bool:
        """The interval of the median paired difference lies within ``±band``."""
        return -band <= self.ci[0] and self.ci[1] <= band


def pair_stats(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[Any, ...]:
    d = a - b
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    sign_p = float(stats.binomtest(pos, pos + neg).pvalue) if pos + neg else 1.0
    if pos + neg:
        w = float(stats.wilcoxon(d, zero_method="wilcox", method="approx").pvalue)
    else:
        w = 1.0
    frac = pos / (pos + neg) if pos + neg else 0.5
    return sign_p, frac, w, float(np.median(d)), median_ci(d, rng), cropped_t(a, b)


@dataclass
class Verdict:
    group: str
    mode: str
    pairs: int
    differing: int
    outside_band: int
    void: bool
    worst_ci: float
    friedman_p: float
    median_ns: float


def analyse(
    group: str,
    mode: str,
    cases: Sequence[Case],
    times: np.ndarray,
    args: argparse.Namespace,
    rng: np.random.Generator,
    partitions: Callable[[str], str] = lambda name: "",
) -> Verdict:
    """Print one group's table and return its verdict.  Pairs are formed within a
    partition (statistics: one statistic's datasets; the statistic is public)."""
    names = [c.name for c in cases]
    med = float(np.median(times[:, [i for i, c in enumerate(cases) if c.covered]]))
    band = args.effect * med
    combos = [
        (i, j)
        for i, j in itertools.combinations(range(len(cases)), 2)
        if partitions(names[i]) == partitions(names[j])
    ]
    covered_pairs = [(i, j) for i, j in combos if cases[i].covered and cases[j].covered]
    tests = 2 * max(1, len(covered_pairs))
    alpha = args.alpha / tests
    # With the protection on, a call past 1.5 times the group's median left at a later
    # multiple of the quantum (an overrun).  The sign test is also run on the blocks
    # where no call did ("sign p, no overrun"): what separates the classes there is
    # the exit within the quantum, not how often they overran.
    limit = 1.5 * med
    quiet = (times <= limit).all(axis=1)
    pairs: list[Pair] = []
    sign_in: list[float] = []
    for i, j in combos:
        sp, frac, wp, m, ci, t = pair_stats(times[:, i], times[:, j], rng)
        dd = times[quiet, i] - times[quiet, j]
        npos, nneg = int((dd > 0).sum()), int((dd < 0).sum())
        sign_in.append(float(stats.binomtest(npos, npos + nneg).pvalue) if npos + nneg else 1.0)
        control = names[j] == names[i] + TWIN
        pairs.append(
            Pair(
                names[i], names[j], cases[i].covered and cases[j].covered, control,
                sp, frac, wp, m, ci, t,
            )
        )  # fmt: skip
    cov_idx = [i for i, c in enumerate(cases) if c.covered and not c.name.endswith(TWIN)]
    fried = 1.0
    by_part: dict[str, list[int]] = {}
    for i in cov_idx:
        by_part.setdefault(partitions(names[i]), []).append(i)
    fps = [
        float(stats.friedmanchisquare(*(times[:, i] for i in idx)).pvalue)
        for idx in by_part.values()
        if len(idx) >= 3
    ]
    if fps:
        fried = min(1.0, min(fps) * len(fps))  # Bonferroni over the partitions
    print(
        f"\n### {group}, protection {mode}: {times.shape[0]} blocks of {len(cases)} classes; "
        f"release median {med:.0f} ns; α = {args.alpha:g} / {tests} tests; "
        f"band ±{100 * args.effect:g} % = ±{band:.1f} ns\n"
    )
    print("| class | median ns | mean ns | past 1.5 × median |")
    print("|---|---:|---:|---:|")
    for i, c in enumerate(cases):
        col = times[:, i]
        print(
            f"| {c.name} | {np.median(col):.0f} | {col.mean():.0f} "
            f"| {100 * (col > limit).mean():.3f} % |"
        )
    print(
        "\n| class A | class B | A slower | sign p | Wilcoxon p | median d ns "
        "| 95 % CI ns | CI % of median | t (crop) | sign p, no overrun | |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    differing = wide = 0
    void = False
    worst = 0.0
    for pr, sp_in in zip(pairs, sign_in, strict=True):
        bad, inside = pr.differs(alpha), pr.within(band)
        if pr.covered:
            worst = max(worst, abs(pr.ci[0]), abs(pr.ci[1]))
        if pr.control and bad:
            void = True
        if pr.covered and not pr.control:
            differing += bad
            wide += not inside
        flag = "DIFFERS" if bad else ("ok" if inside else "CI past band")
        if pr.control:
            flag = "A/A " + flag
        if not pr.covered:
            flag = flag.lower() + " (outside)"
        print(
            f"| {pr.a} | {pr.b} | {100 * pr.sign_frac:.1f} % | {pr.sign_p:.2g} "
            f"| {pr.wilcoxon_p:.2g} | {pr.median:.1f} | [{pr.ci[0]:.1f}, {pr.ci[1]:.1f}] "
            f"| [{100 * pr.ci[0] / med:+.2f}, {100 * pr.ci[1] / med:+.2f}] "
            f"| {pr.t:.2f} | {sp_in:.2g} | {flag} |"
        )
    print(
        f"\nblocks without a call past 1.5 × median: {100 * quiet.mean():.2f} %; "
        f"Friedman p (covered classes) = {fried:.3g}; covered pairs differing: "
        f"{differing} of {sum(1 for p in pairs if p.covered and not p.control)}; "
        f"intervals past the band: {wide}; widest covered interval ±{worst:.1f} ns = "
        f"±{100 * worst / med:.2f} % of the median"
    )
    if void:
        print("**VOID: the A/A control is not clean; this group's run proves nothing.**")
    return Verdict(group, mode, len(pairs), differing, wide, void, worst / med, fried, med)


# -- groups ----------------------------------------------------------------------------------
MECH: dict[str, Any] = {"epsilon": 1.0, "sensitivity": 0.1, "clamp_bounds": (0.0, 100.0)}


def value_cases(p: int) -> list[Case]:
    vals = {
        "centre 50.0": 50.0,
        "lower bound 0.0": 0.0,
        "upper bound 100.0": 100.0,
        "far outside -1e300": -1e300,
        "far outside +1e300": 1e300,
        "clamped -1.8e308": -1.7976931348623157e308,
        "subnormal 5e-324": 5e-324,
        "33.3 (Δ = 0.1 denom.)": 33.3,
        "integer-valued 42.0": 42.0,
        "non-integer 42.123456789": 42.123456789,
    }
    cases = [Case(k, v) for k, v in vals.items()]
    return [*cases, Case(cases[0].name + TWIN, 50.0)]


def noise_cases(p: int, calibration: Any) -> list[Case]:
    rng = random.Random(12)
    window = ((1 << 14) - 1) << (p - 14) | (rng.getrandbits(p - 15) | 1 << (p - 16))
    draws = {
        "U* typical (≈ 0.3)": draw_near(-2, p, rng),
        "U* upper half (≈ 0.7)": draw_near(-1, p, rng),
        "U* near 1 (1 - 2**-p)": Draw(sign=1, mantissa=(1 << p) - 1, exponent=-p),
        "1 - U* ≈ 2**-14.5": Draw(sign=-1, mantissa=window, exponent=-p),
        "U* ≈ 2**-40": draw_near(-40, p, rng),
        "U* ≈ 2**-62 (last in 1st word)": draw_near(-62, p, rng),
    }
    cases = [Case(k, 50.0, repeat(encode_draw(d, p))) for k, d in draws.items()]
    cases.append(Case(cases[0].name + TWIN, 50.0, cases[0].draws))
    # Draws the compiled scalar path hands to the exact path (a fraction at most
    # 2**-40 of fresh draws): outside the quantum, an overrun (docs/timing.md).
    tie = noise_draw(calibration, Fraction(3, 2) * calibration.granularity)
    rare = {
        "y at a snap tie": tie,
        "U* ≈ 2**-100 (continuation)": draw_near(-100, p, rng),
        "U* ≈ 2**-1000": draw_near(-1000, p, rng, sign=-1),
    }
    cases += [
        Case(OUTSIDE + k, 50.0, repeat(encode_draw(d, p)), covered=False) for k, d in rare.items()
    ]
    return cases


def batch_cases(p: int, calibration: Any, step: float) -> list[Case]:
    row = row_size(p)
    rng = np.random.default_rng(12)
    tie = tie_row(calibration)
    decided = encode_draw(noise_draw(calibration, Fraction(5, 4) * calibration.granularity), p)
    grid = np.arange(BATCH, dtype=np.float64) % 64 * step  # exact grid points near 0

    def forced(count: int) -> bytes:
        data = bytearray(os.urandom(count * row))
        for b in range(count // BATCH):
            for j in random.sample(range(BATCH), FORCED):
                o = (b * BATCH + j) * row
                data[o : o + row] = tie
        return bytes(data)

    cases = [
        Case("all inside (centre)", np.zeros(BATCH)),
        Case("all inside (spread)", rng.uniform(-0.5, 0.5, BATCH)),
        Case("all on the bound", np.ones(BATCH)),
        Case("all clamped (1e300)", np.full(BATCH, 1e300)),
        Case("all at half-points", (np.arange(BATCH) - BATCH // 2 + 0.5) * step),
        Case("grid, draws decided", grid, repeat(decided)),
        Case(f"grid, {FORCED} draws force fallback", grid, forced),
        Case("grid, real draws", grid),
    ]
    cases.append(Case(cases[0].name + TWIN, cases[0].value))
    cases.append(Case(OUTSIDE + "grid, all draws force fallback", grid, repeat(tie), False))
    return cases


def measure_group(
    group: str, timing: str, args: argparse.Namespace, rng: np.random.Generator
) -> tuple[list[Case], np.ndarray, Any]:
    src = BufferSource()
    if group == "batch":
        m = snapcore.SnappingMechanism(
            epsilon=2.0**20, clamp_bounds=(-1.0, 1.0), timing=timing, source=src
        )
        cases = batch_cases(m.precision, m.calibration, float(m.granularity * m.sensitivity))
        blocks, chunk = args.batches, 20
    else:
        m = snapcore.SnappingMechanism(**MECH, timing=timing, source=src)
        if group == "value":
            cases = value_cases(m.precision)
        else:
            cases = noise_cases(m.precision, m.calibration)
        blocks, chunk = args.calls, 2000
    row = row_size(m.precision)
    times = run_blocks(m.release, cases, blocks, rng, src, row, chunk)
    return cases, times, m


def statistic_cases(n: int = 64) -> list[Case]:
    rng = np.random.default_rng(12)
    data = {
        "ones": np.full(n, 1.0),
        "zeros": np.zeros(n),
        "spread": rng.uniform(0, 100, n),
        "outside": np.full(n, 1e300),
        "subnormal": np.full(n, 5e-324),
    }
    cases = []
    for stat in ["count", "sum", "mean", "variance"]:
        extra: dict[str, Any] = {"n": n} if stat == "count" else {"data_bounds": (0.0, 100.0)}
        for dn, d in data.items():
            cases.append(Case(f"{stat}: {dn}", (stat, d, extra)))
        cases.append(Case(f"{stat}: ones{TWIN}", (stat, data["ones"], extra)))
    bins = {"bins": [0.0, 25.0, 50.0, 75.0, 100.0]}
    for dn, d in {"all in bin 0": np.full(n, 1.0), "spread": data["spread"]}.items():
        cases.append(Case(f"histogram: {dn}", ("histogram", d, bins)))
    cases.append(Case(f"histogram: all in bin 0{TWIN}", ("histogram", np.full(n, 1.0), bins)))
    return cases


def measure_statistics(
    timing: str, args: argparse.Namespace, rng: np.random.Generator
) -> tuple[list[Case], np.ndarray]:
    cases = statistic_cases()
    rel = snapcore.release

    def call(v: tuple[str, Any, dict[str, Any]]) -> object:
        return rel(v[0], v[1], epsilon=1.0, timing=timing, **v[2])

    return cases, run_blocks(call, cases, args.statistic_calls, rng, None, 0, 200)


def statistic_of(name: str) -> str:
    return name.split(": ")[0]


# -- cost: protected / unprotected, paired per block -----------------------------------------
def measure_cost(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """Per workload, blocks of its release with the protection off and on (default
    source, ChaCha20) in a random order: the ratio on/off per block, its median and a
    bootstrap 95 % interval of that median; the mechanism's quantum over the unpadded
    median time (the padding's own cost, whatever the machine's pauses) and the share of
    padded calls that overran (each costs one more quantum or more)."""
    data = np.random.default_rng(4).uniform(0.0, 100.0, 1000)
    mech = {t: snapcore.SnappingMechanism(**MECH, timing=t) for t in ("off", "constant")}
    padding = mech["constant"].padding
    assert padding is not None
    workloads: dict[str, tuple[Callable[[str], Callable[[], object]], float, int]] = {
        "scalar": (lambda t: lambda: mech[t].release(50.0), 2.0, args.cost_blocks),
    }
    # The quantum of each of the mechanism's workloads (a statistic's is not shown).
    quanta: dict[str, Callable[[], int]] = {"scalar": lambda: padding.scalar_quantum_ns}
    sizes = [int(s) for s in args.cost_sizes.split(",") if s.strip()]
    for n in sizes:
        quanta[f"array ({n})"] = lambda n=n: padding.array_quantum_ns(n)  # type: ignore[misc]
    for n in sizes:
        arr = np.random.default_rng(3).uniform(0.0, 100.0, n)
        # The same number of elements per size (at least 40 blocks): about the same time.
        blocks = max(40, args.batches * BATCH // n)
        workloads[f"array ({n})"] = (
            lambda t, a=arr: lambda: mech[t].release(a),  # type: ignore[misc]
            1.2,
            blocks,
        )
    workloads |= {
        "mean (1000 records)": (
            lambda t: (
                lambda: snapcore.release(
                    "mean", data, epsilon=1.0, data_bounds=(0.0, 100.0), timing=t
                )
            ),
            1.5,
            args.statistic_calls,
        ),
    }
    print("\n### Cost: protected / unprotected, paired per block, same run\n")
    print(
        "| workload | blocks | off median ns | on median ns | ratio (median) | 95 % CI | target "
        "| quantum / off median | on calls overrunning |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for w, (make, target, blocks) in workloads.items():
        cases = [Case("off", make("off")), Case("on", make("constant"))]
        stats = padding.stats if w in quanta else statistic_stats()
        calls, overruns = stats.calls, stats.overruns
        times = run_blocks(lambda fn: fn(), cases, blocks, rng, None, 0, 1000)
        over = (stats.overruns - overruns) / max(1, stats.calls - calls)
        q = quanta[w]() / np.median(times[:, 0]) if w in quanta else math.nan
        r = times[:, 1] / times[:, 0]
        idx = rng.integers(0, r.size, size=(500, r.size))
        boot = np.median(r[idx], axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        ok = "met" if hi <= target else ("not met" if lo > target else "undecided")
        print(
            f"| {w} | {blocks} | {np.median(times[:, 0]):.0f} | {np.median(times[:, 1]):.0f} "
            f"| {np.median(r):.2f} | [{lo:.2f}, {hi:.2f}] | ≤ {target:g}: {ok} "
            f"| {q:.2f} | {100 * over:.1f} % |"
        )


# -- main ------------------------------------------------------------------------------------
def switch_to_kernel() -> None:
    """Make untimed releases until the process has switched to the compiled scalar
    kernel (its own rule, ``compiled_scalar_after``): the state of a process that has
    released more than a few thousand values, which the benchmark measures."""
    m = snapcore.SnappingMechanism(**MECH, timing="off")
    n = 0
    while not mpfr.scalar_path_stats.loaded and n < 1 << 18:
        m.release(50.0)
        n += 1
    print(f"compiled scalar kernel loaded after {n} untimed releases: {mpfr.scalar_path_stats}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--calls", type=int, default=20_000, help="blocks of the scalar groups")
    ap.add_argument("--batches", type=int, default=300, help="blocks of the batch group")
    ap.add_argument("--statistic-calls", type=int, default=1_000, help="statistic blocks")
    ap.add_argument("--cost-blocks", type=int, default=2_000, help="blocks of the cost group")
    ap.add_argument(
        "--cost-sizes", default=f"{BATCH},65536,1000000", help="array lengths of the cost group"
    )
    ap.add_argument("--protection", choices=["on", "off", "both"], default="both")
    ap.add_argument("--groups", default="value,noise,batch,statistic,cost")
    ap.add_argument("--alpha", type=float, default=0.01, help="family-wise α per group")
    ap.add_argument("--effect", type=float, default=0.01, help="band, fraction of median")
    ap.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last)")
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()

    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    print(
        f"snapcore {snapcore.__version__}; python {platform.python_version()} on "
        f"{platform.machine()}; pinned to cpu {cpu} of {os.cpu_count()}; load average "
        f"{os.getloadavg()[0]:.2f}; argv {' '.join(sys.argv[1:])}"
    )
    switch_to_kernel()
    before = report_steadiness("before")
    rng = np.random.default_rng(args.seed)
    modes = {"on": ["constant"], "off": ["off"], "both": ["off", "constant"]}[args.protection]
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    verdicts: list[Verdict] = []
    for g in groups:
        if g == "cost":
            t0 = time.perf_counter()
            measure_cost(args, rng)
            print(f"({time.perf_counter() - t0:.0f} s)")
            continue
        for mode in modes:
            t0 = time.perf_counter()
            label = "on" if mode == "constant" else "off"
            if g == "statistic":
                cases, times = measure_statistics(mode, args, rng)
                v = analyse(g, label, cases, times, args, rng, statistic_of)
            else:
                cases, times, m = measure_group(g, mode, args, rng)
                v = analyse(g, label, cases, times, args, rng)
                if m.padding is not None:
                    print(f"padding: {m.padding.stats!r}")
            verdicts.append(v)
            print(f"({time.perf_counter() - t0:.0f} s)")
    after = report_steadiness("after")
    print(f"\nscalar path counters: {mpfr.scalar_path_stats}")
    print("\n### Summary\n")
    print(f"steadiness probe: {before:.2f} before, {after:.2f} after (1.00 = steady)\n")
    print(
        "| group | protection | covered pairs differing | CIs past the band "
        "| widest CI, % of median | Friedman p | A/A |"
    )
    print("|---|---|---:|---:|---:|---:|---|")
    for v in verdicts:
        print(
            f"| {v.group} | {v.mode} | {v.differing} | {v.outside_band} "
            f"| ±{100 * v.worst_ci:.2f} | {v.friedman_p:.3g} | {'VOID' if v.void else 'clean'} |"
        )


if __name__ == "__main__":
    main()
