"""How often padded array releases overrun their quantum, and what they cost, as callers
make them: back to back, and after other work; with the array calibration's rules
(rounds after other work, the long-array length ratio) and without them.

For each ``threads=`` setting and array length, in one process:

- the array quantum is calibrated ``--calibrations`` times with the full rule and as
  many times without its rounds after other work and without the length ratio (the
  quantum of ``2**18`` elements scaled by the lengths alone), alternated;
- then blocks time the unprotected release (``timing="off"``) and the padded path's
  own work (the padded mechanism's unpadded copy: what a padded call does before it
  waits) on the same uniform array, in a random order per block, under three
  conditions: ``back to back`` (nothing between the calls); ``after own work``
  (before every timed call, outside the timed region, a sort of a copy of
  ``min(n, 2**18)`` random doubles: the calibration's unrelated work,
  ``snapcore.padding._pad.unrelated_work``); ``after heavy work`` (a sort of a copy
  of ``2**20`` random doubles, about 55 ms on the 2-core development machine).

A padded call whose work takes ``t`` returns at ``ceil(t/q)`` quanta: per rule and
condition, the quantum over the unprotected median, the share of calls that overran
(``t > q``, averaged over the calibrations) and the mean padded time
``ceil(t/q)·q`` over the unprotected median (the cost, overruns included).  Comparing
both rules on the same calls keeps the machine's drift out of the comparison.  The
process is not pinned: ``threads=None`` uses every usable CPU.

Run ``python benchmarks/array_overruns.py --sizes 4096,65536,262144,1000000,10000000
--threads None,1``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

import snapcore
from snapcore.mechanism import _padding
from snapcore.padding._pad import unrelated_work

MECH = {"epsilon": 1.0, "clamp_bounds": (0.0, 100.0)}
#: Elements timed per condition and release (within ``--min-blocks``, ``--max-blocks``).
ELEMENTS = 1 << 23


def sorter(m: int) -> Callable[[], None]:
    """Sorting a copy of ``m`` random doubles (held here, not timed)."""
    spare = np.random.default_rng(7).uniform(0.0, 1.0, m)
    scratch = np.empty_like(spare)

    def work() -> None:
        np.copyto(scratch, spare)
        scratch.sort()

    return work


def quantum(pad: _padding.Padding, n: int, full: bool) -> int:
    """A fresh array quantum of ``n`` elements, with the full rule or without its rounds
    after other work and its length ratio."""
    real = _padding.unrelated_work
    if not full:
        _padding.unrelated_work = lambda length: None  # type: ignore[assignment,return-value]
    try:
        cap = _padding.ARRAY_CALIBRATION_MAX
        q = pad._calibrate_array(min(n, cap), "ndarray", "<f8")
        if n > cap:
            ratio = pad._length_ratio(n, "ndarray", "<f8") if full else 1.0
            q = math.ceil(Fraction(q * n, cap) * Fraction(ratio))
        return q
    finally:
        _padding.unrelated_work = real


def measure(
    threads: int | None, n: int, blocks: int, calibrations: int, rng: np.random.Generator
) -> None:
    on = snapcore.SnappingMechanism(**MECH, threads=threads)
    pad = on.padding
    assert pad is not None
    work = on.unpadded_copy(type(on.source)()).release
    off = snapcore.SnappingMechanism(**MECH, threads=threads, timing="off").release
    x = rng.uniform(0.0, 100.0, n)
    quanta: dict[str, list[int]] = {"full rule": [], "without": []}
    t0 = time.perf_counter()
    for i in range(calibrations):
        for full in (True, False) if i % 2 == 0 else (False, True):
            quanta["full rule" if full else "without"].append(quantum(pad, n, full))
    each = (time.perf_counter() - t0) / (2 * calibrations)
    conditions: dict[str, Callable[[], object] | None] = {
        "back to back": None,
        "after own work": unrelated_work(n),
        "after heavy work": sorter(1 << 20),
    }
    now = time.perf_counter_ns
    work(x)
    off(x)
    times: dict[str, np.ndarray] = {}
    for name, before in conditions.items():
        t = np.empty((blocks, 2), np.int64)
        for b in range(blocks):
            for i in (0, 1) if rng.random() < 0.5 else (1, 0):
                if before is not None:
                    before()
                s = now()
                (off if i == 0 else work)(x)
                t[b, i] = now() - s
        times[name] = t
    base = float(np.median(times["back to back"][:, 0]))
    print(
        f"\n**{n} values, threads={threads}**: unprotected {base / 1e3:.1f} µs back to "
        f"back; a calibration took {each:.2f} s\n"
    )
    print(
        "| rule | quantum / off | condition | blocks | off / back-to-back off | overran | cost |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for rule, qs in quanta.items():
        qa = np.array(qs, np.float64)[:, None]
        for name, t in times.items():
            off_med = float(np.median(t[:, 0]))
            over = float(np.mean(t[None, :, 1] > qa))
            cost = float(np.mean(np.ceil(t[None, :, 1] / qa) * qa)) / off_med
            print(
                f"| {rule} | {np.median(qa) / base:.3f} | {name} | {blocks} "
                f"| {off_med / base:.2f} | {100 * over:.0f} % | {cost:.2f} |"
            )
    print(flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="4096,65536,262144,1000000")
    ap.add_argument("--threads", default="None,1", help="threads= settings, comma-separated")
    ap.add_argument("--calibrations", type=int, default=4, help="quanta per rule")
    ap.add_argument("--min-blocks", type=int, default=5)
    ap.add_argument("--max-blocks", type=int, default=100)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    print(
        f"snapcore {snapcore.__version__}; {os.cpu_count()} CPUs; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    rng = np.random.default_rng(args.seed)
    for th in args.threads.split(","):
        threads = None if th.strip() == "None" else int(th)
        for s in args.sizes.split(","):
            n = int(float(s))
            blocks = min(args.max_blocks, max(args.min_blocks, ELEMENTS // n))
            measure(threads, n, blocks, args.calibrations, rng)


if __name__ == "__main__":
    main()
