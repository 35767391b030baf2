"""The fast path's kernel (snapcore.pipeline._kernel, docs/fastpath.md), against exact
references.

**Building blocks.**  The log reduction's table is exact where the derivation needs it
and accurate to ``2**-106`` (MPFR at 400 bits); TwoSum and TwoProduct are error-free
(exact Fractions).

**The bound keeps its stated safety factor** ([E8]).  docs/fastpath.md derives a
rigorous bound on ``|t̃ − t*|`` (the bracket of [E8]:
``eln + eX + 2**-100·(|Xh| + 4|ph| + |th| + 1) + 2**-900``, with
``eln = 2**-73 + 2**-97·(e + 2)`` from [E4]) and the kernel uses **twice** it, the
factor 2 covering the roundings made while evaluating the bound itself.  Two
properties pin this down, for every sample, against ``t*`` from the exact pipeline:

- the bound exceeds the measured error by the stated factor: ``|t̃ − t*| <= err/2``;
- the bound is at least the factor times the bracket's terms that do not depend on
  the kernel's intermediates: ``err >= 2·(eln + 2**-100 + 2**-900)·(1 − 2**-48)``.

Halving the factor (or dropping a term of the bracket) breaks the second; a bound
that no longer covers the error breaks the first.

**Values far outside the clamp interval are decided by the kernel itself**, and only
those take that shortcut.  The kernel's first step tests ``|v − c| > far``
(``far = 4Δb``, rounded up; [E1]) on both sides, so a value far below *or* far above
the interval is clamped without computing ``(v − c)/Δ``, which overflows for tiny
``ΔΛ``.  Such values are then decided by the bound (no element goes to the exact
pipeline) and release the endpoint's output, exactly as the exact pipeline does.
"""

from __future__ import annotations

import random
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.exact._dyadic import to_fraction
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _engine, _kernel
from snapcore.randomness._draw import Draw, DrawBatch
from snapcore.randomness._sources import SeededSource


# -- building blocks ------------------------------------------------------------------
def fq(x) -> Fraction:
    """An MPFR number as an exact Fraction."""
    return Fraction(*x.as_integer_ratio())


def test_log_table_reduction_is_exact_and_small():
    """``z = m·r_i − 1`` is exact in binary64 and ``|z| < 2**-8`` on each interval."""
    for i, r in enumerate(_kernel.LOG_R):
        rq = Fraction(float(r))
        assert (rq * 512).denominator == 1 and Fraction(1, 2) <= rq <= 1
        lo_m = 1 + Fraction(i, 256)
        hi_m = 1 + Fraction(i + 1, 256) - Fraction(1, 2**52)
        for m in (lo_m, hi_m):
            z = m * rq - 1
            assert abs(z) < Fraction(1, 256), (i, float(z))
            # a multiple of 2**-61 below 2**-8 in magnitude needs at most 53 bits
            assert (z * 2**61).denominator == 1


def test_log_table_and_ln2_accuracy():
    ctx = gmpy2.context(precision=400)
    for r, h, lo in zip(_kernel.LOG_R, _kernel.LOG_NEG_LN_HI, _kernel.LOG_NEG_LN_LO, strict=True):
        ref = -fq(ctx.log(gmpy2.mpq(Fraction(float(r)))))
        assert abs(Fraction(float(h)) + Fraction(float(lo)) - ref) <= Fraction(1, 2**106)
    ln2 = fq(ctx.log(2))
    assert abs(Fraction(_kernel.LN2_HI) + Fraction(_kernel.LN2_LO) - ln2) <= Fraction(1, 2**107)


def test_error_free_transformations_are_exact():
    rng = random.Random(11)
    a = np.array([rng.uniform(-1, 1) * 2.0 ** rng.randint(-300, 300) for _ in range(3000)])
    b = np.array([rng.uniform(-1, 1) * 2.0 ** rng.randint(-300, 300) for _ in range(3000)])
    s, e = _kernel.two_sum(a, b)
    p, f = _kernel.two_prod(a, b)
    for i in range(a.size):
        A, B = Fraction(float(a[i])), Fraction(float(b[i]))
        assert Fraction(float(s[i])) + Fraction(float(e[i])) == A + B
        assert Fraction(float(p[i])) + Fraction(float(f[i])) == A * B
        assert float(s[i]) == float(a[i]) + float(b[i])


# -- the bound's safety factor ----------------------------------------------------------
PARAMS = [
    dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)),
    dict(epsilon=0.5, clamp_bounds=(-1.0, 2.0), sensitivity=Fraction(1, 3)),
    dict(epsilon=1.5, clamp_bounds=(-123456.75, 987654.3), sensitivity=0.7),
    dict(epsilon=1e-6, clamp_bound=1e7),
    dict(epsilon=40.0, clamp_bounds=(-0.001, 0.003)),
]


def _draws(mech: SnappingMechanism, n: int, seed: int) -> list[Draw]:
    """Generic draws plus deep-tail ones (large e, where eln grows)."""
    draws = SeededSource(seed).draws(n, mech.precision)
    rng = random.Random(seed)
    p = mech.precision
    for i in range(0, n, 7):
        e = rng.choice([70, 500, 4000, 60_000])
        m = (1 << (p - 1)) | rng.getrandbits(p - 1)
        draws[i] = Draw(sign=rng.choice([1, -1]), mantissa=m, exponent=-(p - 1) - e)
    return draws


@pytest.mark.parametrize("kw", PARAMS, ids=[str(i) for i in range(len(PARAMS))])
def test_bound_has_its_safety_factor(kw):
    mech = SnappingMechanism(**kw)
    pipe = mech.pipeline
    n = 300
    lo, hi = (float(v) for v in mech.clamp_bounds)
    rng = np.random.default_rng(3)
    values = rng.uniform(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo), n)
    draws = _draws(mech, n, 11)
    eng = _engine.engine_for(mech.calibration)
    sh, sl, err, _ok = eng.diagnose(values, DrawBatch.from_draws(draws, mech.precision))
    L = mech.calibration.granularity_log2
    worst = Fraction(0)
    checked = 0
    for i in range(n):
        e = -draws[i].exponent - (mech.precision - 1)
        if e > _kernel.MAX_E or not np.isfinite(err[i]):
            continue
        ym, ye = pipe.stages(Fraction(float(values[i])), draws[i])["y"]
        exact = to_fraction(ym, ye - L) + Fraction(1, 2)
        got = Fraction(float(sh[i])) + Fraction(float(sl[i]))
        error = abs(got - exact)
        bound = Fraction(float(err[i]))
        worst = max(worst, error / bound if bound else Fraction(0))
        assert 2 * error <= bound, (kw, i, float(error), float(bound))
        eln = Fraction(2) ** -73 + Fraction(2) ** -97 * (e + 2)
        floor = 2 * (eln + Fraction(2) ** -100 + Fraction(2) ** -900) * (1 - Fraction(2) ** -48)
        assert bound >= floor, (kw, i, e, float(bound), float(floor))
        checked += 1
    assert checked >= n * 9 // 10
    assert worst <= Fraction(1, 2)


# -- values far outside the interval --------------------------------------------------
ENGINES = ["numpy"] + (["numba"] if numba_available() else [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["above", "below"])
def test_far_values_are_decided_by_the_kernel(engine, sign):
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(-1.0, 3.0), sensitivity=1e-3)
    cal = mech.calibration
    pipe = mech.pipeline
    eng = _engine.engine_for(cal)
    assert eng.supported
    values = sign * np.array([1e300, 1.7e308, 1e200, 1e20] * 16, dtype=np.float64)
    draws = SeededSource(9).draws(values.size, mech.precision)
    out, stats = eng.run(values, DrawBatch.from_draws(draws, mech.precision), pipe, engine)
    assert stats.fallback_k.size == 0, f"{stats.fallback_k.size} far values were not decided"
    # BatchStats' index arrays are intp, as documented, on the table path too
    assert eng.use_table and stats.fallback_output.size == 0
    assert stats.fallback_k.dtype == stats.fallback_output.dtype == np.intp
    for i, v in enumerate(values.tolist()):
        assert out[i] == pipe.run(pipe.centre(Fraction(v)), draws[i])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("delta", [10.0, 0.1, 3.0], ids=["10", "0.1", "3"])
def test_values_inside_are_not_taken_for_far_ones(engine, delta):
    """Only values beyond ``4Δb = 4B`` from the centre may take the far shortcut: values
    inside the interval and just outside it, for Δ above and below 1, give the exact
    pipeline's outputs element for element."""
    mech = SnappingMechanism(epsilon=0.5, clamp_bounds=(-50.0, 150.0), sensitivity=delta)
    pipe = mech.pipeline
    eng = _engine.engine_for(mech.calibration)
    assert eng.supported
    values = np.linspace(-120.0, 220.0, 69)
    draws = SeededSource(4).draws(values.size, mech.precision)
    out, _ = eng.run(values, DrawBatch.from_draws(draws, mech.precision), pipe, engine)
    for i, v in enumerate(values.tolist()):
        assert out[i] == pipe.run(pipe.centre(Fraction(v)), draws[i]), (delta, v)
