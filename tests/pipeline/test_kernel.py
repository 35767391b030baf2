"""The fast path's error bound keeps its stated safety factor (docs/fastpath.md, [E8]).

docs/fastpath.md derives a rigorous bound on ``|t̃ − t*|`` (the bracket of [E8]:
``eln + eX + 2**-100·(|Xh| + 4|ph| + |th| + 1) + 2**-900``, with
``eln = 2**-73 + 2**-97·(e + 2)`` from [E4]) and the kernel uses **twice** it, the
factor 2 covering the roundings made while evaluating the bound itself.  Two
properties pin this down, for every sample, against ``t*`` from the exact pipeline:

- the bound exceeds the measured error by the stated factor: ``|t̃ − t*| <= err/2``;
- the bound is at least the factor times the bracket's terms that do not depend on
  the kernel's intermediates: ``err >= 2·(eln + 2**-100 + 2**-900)·(1 − 2**-48)``.

Halving the factor (or dropping a term of the bracket) breaks the second; a bound
that no longer covers the error breaks the first.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.exact._dyadic import to_fraction
from snapcore.pipeline import _fastpath as fp
from snapcore.randomness._sources import Draw, SeededSource

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
    pipe = mech._pipeline
    n = 300
    lo, hi = (float(v) for v in mech.clamp_bounds)
    rng = np.random.default_rng(3)
    values = rng.uniform(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo), n)
    draws = _draws(mech, n, 11)
    eng = fp.engine_for(mech.calibration)
    sh, sl, err, _ok = eng.diagnose(values, fp.DrawBatch.from_draws(draws, mech.precision))
    L = mech.calibration.granularity_log2
    worst = Fraction(0)
    checked = 0
    for i in range(n):
        e = -draws[i].exponent - (mech.precision - 1)
        if e > fp.MAX_E or not np.isfinite(err[i]):
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
