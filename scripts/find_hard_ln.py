"""Search p-bit inputs whose natural logarithm lies very close to a p-bit rounding midpoint.

Writes ``snapcore/testing/data/hard_ln.json``, the hard-to-round LN cases of the
conformance suite.  Every kept case is verified with the suite's independent MPFR
reference (:mod:`snapcore.testing.reference`): its distance to the midpoint is an
upper bound from an enclosure at ``4p + 128`` bits or more, and its expected result
is the reference's correctly rounded value.

Two families, each much faster than random search (a random input lands within
``2**-20`` ulp of a midpoint with probability ``2**-19``):

*near-one*
    ``u = 1 -+ o * 2**(b - p)`` with ``o`` odd of ``b`` bits.  Then
    ``ln u = -+x - x**2/2 -+ x**3/3 ...`` with ``x = o * 2**(b - p)``; in units of the
    result's ulp (``2**(2b - 2p)``) the first term is an integer, the second is
    ``o**2 / 2`` — exactly half-way — and the rest is about ``2**(4b - p) / 3``.  So
    ``ln u`` sits within about ``2**(4b - p)`` ulp of a midpoint.

*lattice*
    Around a random ``u0 = M0 * 2**E``, ``g(i) = ln((M0 + i) * 2**E) / ulp`` is
    ``g0 + g1*i`` up to a quadratic term kept below ``2**-(T+3)`` by the block length
    ``N``.  Finding ``0 <= i < N`` with ``g0 - 1/2 + g1*i`` closest to an integer is a
    closest-vector problem in a two-dimensional lattice, solved exactly by Gauss
    reduction and Babai rounding with a small neighbourhood; the best ``i`` of a block
    is typically ``~1/N`` from a midpoint.  A fixed number of blocks per binade
    (``--blocks``) is searched from a fixed seed, so the output is reproducible;
    the closest verified cases are kept.

Usage::

    python scripts/find_hard_ln.py            # rewrites the data file (1-2 minutes)
    python scripts/find_hard_ln.py --check    # re-verifies the committed file
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

import gmpy2

from snapcore.testing.reference import ln_midpoint_distance, ln_nearest

PRECISIONS = (53, 64, 118, 200, 400)
#: Keep a case only if it is at least this close to a midpoint (in ulps).
THRESHOLD_LOG2 = -20
DATA = Path(__file__).resolve().parents[1] / "snapcore" / "testing" / "data" / "hard_ln.json"


def near_one_cases(p: int) -> list[tuple[int, int, str]]:
    """``(m, e, family)`` for ``u = 1 -+ o * 2**(b - p)``, b = 3..6, a few odd ``o``."""
    out = []
    for b in (3, 4, 5, 6):
        for o in (1 << (b - 1)) + 1, (1 << b) - 1:
            # u = 1 - o*2**(b-p) in [1/2, 1): mantissa 2**p - o*2**b, exponent -p.
            out.append(((1 << p) - (o << b), -p, "near-one-below"))
            # u = 1 + o*2**(b-p) in [1, 2): mantissa 2**(p-1) + o*2**(b-1), exponent 1-p.
            out.append(((1 << (p - 1)) + (o << (b - 1)), 1 - p, "near-one-above"))
    return out


def _gauss_reduce(u: list[int], v: list[int]) -> tuple[list[int], list[int]]:
    def dot(a: list[int], b: list[int]) -> int:
        return a[0] * b[0] + a[1] * b[1]

    if dot(u, u) > dot(v, v):
        u, v = v, u
    while True:
        mu = round(Fraction(dot(u, v), dot(u, u)))
        v = [v[0] - mu * u[0], v[1] - mu * u[1]]
        if dot(v, v) >= dot(u, u):
            return u, v
        u, v = v, u


def lattice_block(p: int, m0: int, e: int, target_log2: int) -> list[int]:
    """Offsets ``i`` near ``m0`` whose LN the linear model puts near a midpoint."""
    w = 3 * p + 200
    ctx = gmpy2.context(precision=w, round=gmpy2.RoundToNearest)
    l0 = ctx.log(ctx.mul_2exp(gmpy2.mpz(m0), e))
    lm, le = l0.as_mantissa_exp()
    lm, le = int(lm), int(le)
    r = le + abs(lm).bit_length() - p  # exponent of the ulp of ln(u0) at p bits
    g0 = Fraction(lm) * Fraction(2) ** (le - r)
    g1 = Fraction(1, m0) / Fraction(2) ** r
    g2 = abs(g1) / (2 * m0)
    n = min(
        1 << 64, 1 << (p - 2), max(16, math.isqrt(int(Fraction(2) ** -(target_log2 + 3) / g2)))
    )
    nbits = n.bit_length()
    s_log2 = target_log2 + nbits + 48
    s = 1 << s_log2
    a = round(g1 * s)
    c = round((g0 - Fraction(1, 2)) * s)
    k = 1 << (s_log2 - target_log2 - nbits)
    v1, v2 = _gauss_reduce([k, a], [0, s])
    tx, ty = k * n // 2, -c
    det = v1[0] * v2[1] - v1[1] * v2[0]
    x = Fraction(tx * v2[1] - ty * v2[0], det)
    y = Fraction(v1[0] * ty - v1[1] * tx, det)
    found = set()
    for dx in range(-3, 4):
        for dy in range(-3, 4):
            cx, cy = round(x) + dx, round(y) + dy
            vx = cx * v1[0] + cy * v2[0]
            i = vx // k
            if 0 <= i < n:
                found.add(i)

    # Rank by the linear model and keep the best few.
    def model(i: int) -> float:
        t = (a * i + c) % s
        return min(t, s - t) / s

    return sorted(found, key=model)[:3]


def lattice_cases(p: int, e: int, want: int, rng: random.Random, blocks: int) -> list:
    """The ``want`` closest cases found in ``blocks`` lattice blocks."""
    out: list[tuple[int, int, str, float]] = []
    target = min(p // 3, 80)
    for _ in range(blocks):
        m0 = rng.randrange(1 << (p - 1), (1 << p) - (1 << (p - 2)))
        for i in lattice_block(p, m0, e, target):
            m = m0 + i
            d = ln_midpoint_distance(m, e, p)
            if d > 0 and math.log2(d) <= THRESHOLD_LOG2:
                out.append((m, e, "lattice", d))
                break
    out.sort(key=lambda c: c[3])
    return out[:want]


def build(seed: int, per_binade: int, blocks: int) -> dict:
    rng = random.Random(seed)
    cases = []
    for p in PRECISIONS:
        t0 = time.monotonic()
        found: list[tuple[int, int, str, float]] = []
        for m, e, fam in near_one_cases(p):
            found.append((m, e, fam, ln_midpoint_distance(m, e, p)))
        # u in [1/2, 1) (typical U*), deep in the tail (2**-1000), and u > 1.
        for e in (-p, -p - 999, 11 - p):
            found += lattice_cases(p, e, per_binade, rng, blocks)
        for m, e, fam, d in found:
            if not (d > 0 and math.log2(d) <= THRESHOLD_LOG2):
                continue
            ym, ye = ln_nearest(m, e, p)
            cases.append(
                {
                    "p": p,
                    "m": hex(m),
                    "e": e,
                    "ln_m": hex(ym),
                    "ln_e": ye,
                    "log2_distance": round(math.log2(d), 2),
                    "family": fam,
                }
            )
        mine = [c for c in cases if c["p"] == p]
        best = min(c["log2_distance"] for c in mine)
        worst = max(c["log2_distance"] for c in mine)
        lat = [c["log2_distance"] for c in mine if c["family"] == "lattice"]
        print(
            f"p={p}: {len(mine)} cases ({len(lat)} lattice), distance to a midpoint "
            f"2**{worst} .. 2**{best} ulp; lattice best 2**{min(lat) if lat else None}; "
            f"{time.monotonic() - t0:.1f}s",
            file=sys.stderr,
        )
    return {
        "format": "snapcore-hard-ln-v1",
        "description": (
            "p-bit inputs u = m*2**e whose ln lies within 2**log2_distance ulp of a p-bit "
            "rounding midpoint; ln_m*2**ln_e is ln(u) rounded to nearest-even (MPFR "
            "reference with a Ziv check). Generated by scripts/find_hard_ln.py."
        ),
        "seed": seed,
        "blocks_per_binade": blocks,
        "cases": cases,
    }


def check(path: Path) -> int:
    data = json.loads(path.read_text())
    bad = 0
    for c in data["cases"]:
        m, e, p = int(c["m"], 16), c["e"], c["p"]
        ok = ln_nearest(m, e, p) == (int(c["ln_m"], 16), c["ln_e"])
        d = math.log2(ln_midpoint_distance(m, e, p))
        ok = ok and d <= THRESHOLD_LOG2 and abs(d - c["log2_distance"]) < 0.01
        bad += not ok
    print(f"{len(data['cases'])} cases, {bad} bad")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--per-binade", type=int, default=4, help="lattice cases per binade")
    ap.add_argument("--blocks", type=int, default=20000, help="lattice blocks per binade")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--check", action="store_true", help="verify the committed file")
    args = ap.parse_args()
    if args.check:
        return check(args.out)
    data = build(args.seed, args.per_binade, args.blocks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {len(data['cases'])} cases to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
