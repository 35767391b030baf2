"""The MPFR backend leaves the caller's gmpy2 context alone and is safe from threads."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import gmpy2
import pytest

from snapcore import SeededSource, SnappingMechanism

KW = {"epsilon": 0.5, "sensitivity": 3, "clamp_bounds": (-100.0, 250.0)}
VALUES = [0.0, 1.5, -7.25, 99.0, 1e9, -1e9, 42.0, 3.0]


def snapshot(ctx) -> dict:
    keys = [
        "precision",
        "round",
        "emin",
        "emax",
        "subnormalize",
        "trap_inexact",
        "trap_underflow",
        "trap_overflow",
        "inexact",
        "underflow",
        "overflow",
        "divzero",
        "invalid",
        "erange",
    ]
    return {k: getattr(ctx, k) for k in keys}


@pytest.fixture
def odd_context():
    """The caller's thread context set to odd values: 20 bits, round down, narrow
    exponents, flags cleared; restored afterwards."""
    saved = gmpy2.get_context().copy()
    ctx = gmpy2.context(precision=20, round=gmpy2.RoundDown, emin=-200, emax=200)
    gmpy2.set_context(ctx)
    try:
        yield gmpy2.get_context()
    finally:
        gmpy2.set_context(saved)


def sequential(seed: int, n: int) -> list[float]:
    m = SnappingMechanism(**KW, source=SeededSource(seed))
    return [m.release(VALUES[i % len(VALUES)]) for i in range(n)]


def test_caller_context_unchanged(odd_context):
    before = snapshot(odd_context)
    m = SnappingMechanism(**KW, source=SeededSource(1))
    m.release(VALUES)
    m.transform(1.0, Fraction(1, 2**900), -1)
    arith = m.backend.arithmetic(m.precision)
    a = arith.convert(Fraction(1, 3))
    arith.ln(arith.div(a, arith.convert(7)))
    after = snapshot(gmpy2.get_context())
    assert after == before
    assert gmpy2.get_context().precision == 20 and gmpy2.get_context().round == gmpy2.RoundDown
    # Arithmetic in the caller's context still behaves as the caller set it up.
    assert gmpy2.mpfr(1) / 3 < Fraction(1, 3)  # 20 bits, rounded down


def test_caller_context_does_not_change_results(odd_context):
    with_odd = sequential(3, 64)
    u = Fraction(2**130 - 5, 2**140)
    m = SnappingMechanism(**KW, source=SeededSource(0), precision=130)
    t_odd = [m.transform(v, u, s) for v in VALUES for s in (1, -1)]
    gmpy2.set_context(gmpy2.context())  # default: 53 bits, nearest
    assert sequential(3, 64) == with_odd
    assert [m.transform(v, u, s) for v in VALUES for s in (1, -1)] == t_odd


def test_concurrent_releases_equal_sequential():
    n, seeds = 150, [11, 12, 13, 14, 15, 16]
    want = {s: sequential(s, n) for s in seeds}
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave as much as possible
    try:
        barrier = threading.Barrier(len(seeds))

        def work(seed: int) -> list[float]:
            # Each worker also scrambles its own thread's gmpy2 context.
            gmpy2.set_context(gmpy2.context(precision=11, round=gmpy2.RoundUp))
            barrier.wait()
            return sequential(seed, n)

        with ThreadPoolExecutor(len(seeds)) as pool:
            got = dict(zip(seeds, pool.map(work, seeds), strict=True))
    finally:
        sys.setswitchinterval(old)
    assert got == want


def test_one_mechanism_shared_by_threads():
    """Shared mechanism and source: each release takes one whole draw, so the
    outputs are the sequential ones in some order (as a multiset)."""
    n_threads, per = 4, 100
    want = sorted(
        SnappingMechanism(**KW, source=SeededSource(99)).release([42.0] * (n_threads * per))
    )
    shared = SnappingMechanism(**KW, source=SeededSource(99))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(n_threads) as pool:
            parts = list(
                pool.map(lambda _: [shared.release(42.0) for _ in range(per)], range(n_threads))
            )
    finally:
        sys.setswitchinterval(old)
    assert sorted(x for part in parts for x in part) == want


def test_transform_from_threads_is_pure():
    m = SnappingMechanism(**KW, source=SeededSource(0))
    p = m.precision
    draws = [
        (Fraction(2 ** (p - 1) + 7 * k, 2 ** (p - 1 + k % 40 + 1)), 1 - 2 * (k % 2))
        for k in range(200)
    ]
    want = [m.transform(VALUES[k % len(VALUES)], u, s) for k, (u, s) in enumerate(draws)]

    def work(offset: int) -> list[float]:
        gmpy2.set_context(gmpy2.context(precision=30 + offset, round=gmpy2.RoundToZero))
        return [m.transform(VALUES[k % len(VALUES)], u, s) for k, (u, s) in enumerate(draws)]

    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(work, range(4)):
            assert got == want
