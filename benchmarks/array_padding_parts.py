"""Where a padded array release's time goes: its quantum, part by part, in one process.

Interleaved blocks (every block runs every case once, in a fresh random order, on one
pinned core) of:

- the unprotected release of a uniform array (``timing="off"``);
- the array calibration's classes as it runs them: one unpadded copy of the padded
  mechanism drawing from one forcing source (``_ForcedRows``), the six value classes
  with no row forced and the centre with ``F = fallbacks_covered(n)`` near-tie rows
  (the real exact fallbacks), and the centre with ``F`` rows forced that the kernel
  decides (the forcing's own cost, without a real fallback);
- the protected release of the uniform array.

Medians, and paired median differences against the centre class with bootstrap 95 %
intervals.  Then the exact computation a padded array does after the fused loop
(``row_release``), timed right after the loop (cold) and again at once (warm), and
the quantum the mechanism calibrated, over the unprotected median.

Run ``python benchmarks/array_padding_parts.py --size 4096 --blocks 800``.
"""

from __future__ import annotations

import argparse
import os
import time
from fractions import Fraction

import numpy as np

import snapcore
from snapcore.mechanism._padding import _array_classes, _ForcedRows
from snapcore.padding._pad import fallbacks_covered, noise_draw, tie_row
from snapcore.pipeline._engine import release_batch, row_release
from snapcore.randomness._chacha import ChaCha20Source
from snapcore.randomness._draw import encode_draw

MECH = {"epsilon": 1.0, "sensitivity": 0.1, "clamp_bounds": (0.0, 100.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--blocks", type=int, default=800)
    ap.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last)")
    args = ap.parse_args()
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    n = args.size
    off = snapcore.SnappingMechanism(**MECH, timing="off")
    on = snapcore.SnappingMechanism(**MECH, timing="constant")
    cal = on.calibration
    f = fallbacks_covered(n)
    tie = tie_row(cal)
    decided = encode_draw(noise_draw(cal, Fraction(5, 4) * cal.granularity), cal.precision)
    forcing = _ForcedRows(ChaCha20Source(), tie, 0, n)
    copy = on.unpadded_copy(forcing).release
    arrays = _array_classes(cal, n, "ndarray", "<f8")
    uniform = np.random.default_rng(3).uniform(0.0, 100.0, n)

    def cls(a: np.ndarray, count: int, row: bytes) -> object:
        def run() -> None:
            forcing.count, forcing.row = count, row
            copy(a)

        return run

    cases = {f"class {i}": cls(a, 0, tie) for i, a in enumerate(arrays)}
    cases[f"centre, {f} real fallback(s)"] = cls(arrays[4], f, tie)
    cases[f"centre, {f} decided row(s) forced"] = cls(arrays[4], f, decided)
    cases["unprotected (uniform)"] = lambda: off.release(uniform)
    cases["protected (uniform)"] = lambda: on.release(uniform)
    names, fns = list(cases), list(cases.values())
    for fn in fns:
        fn()
        fn()
    rng = np.random.default_rng(1)
    now = time.perf_counter_ns
    times = np.empty((args.blocks, len(fns)))
    for b in range(args.blocks):
        for i in rng.permutation(len(fns)):
            t = now()
            fns[i]()
            times[b, i] = now() - t
    base = times[:, 4]
    print(f"n = {n}, F = {f}, {args.blocks} blocks, cpu {cpu}\n")
    print("| case | median µs | minus the centre class, µs | 95 % CI |")
    print("|---|---:|---:|---:|")
    for i, name in enumerate(names):
        d = times[:, i] - base
        boot = np.median(d[rng.integers(0, d.size, (500, d.size))], axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        print(
            f"| {name} | {np.median(times[:, i]) / 1e3:.1f} | {np.median(d) / 1e3:+.2f} "
            f"| [{lo / 1e3:+.2f}, {hi / 1e3:+.2f}] |"
        )
    # The exact computation after the fused loop (cold) and at once again (warm).
    pipe = on.pipeline
    exact = row_release(pipe)
    centre = np.full(1, float(cal.centre))
    source = ChaCha20Source()
    cold, warm = [], []
    for _ in range(2000):
        release_batch(pipe, uniform, source)
        t = now()
        exact(tie, centre[0])
        cold.append(now() - t)
        t = now()
        exact(tie, centre[0])
        warm.append(now() - t)
    assert on.padding is not None
    q = on.padding.array_quantum_ns(n)
    off_median = np.median(times[:, names.index("unprotected (uniform)")])
    slowest = np.median(times[:, :7], axis=0).max()  # the calibration's seven classes
    print(
        f"\nexact computation after the loop: {np.median(cold) / 1e3:.2f} µs cold, "
        f"{np.median(warm) / 1e3:.2f} µs warm; quantum {q / 1e3:.1f} µs = {q / slowest:.3f} "
        f"× the slowest class's median here, {q / off_median:.3f} × the unprotected median"
    )


if __name__ == "__main__":
    main()
