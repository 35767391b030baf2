"""The fast path's support limits and the centre's residual term (docs/fastpath.md).

``FastEngine`` refuses (``supported`` is False) the parameters its error bound does
not cover: ``supported`` requires ``−600 <= L <= 600``, ``2**-900 < 1/(ΔΛ) < 2**900``,
``4Δb < 2**990``, ``|c| < 2**990`` and ``p >= 118`` (docs/fastpath.md, the
parameter guards).  The computed double-double output stage (``out_dd``) is used
only without a table, for a double Δ, a double-double centre, ``ΔΛ > 2**-900`` and
``|Δ| < 2**900``.  Each limit is pinned here by parameters exactly at it and just
inside it; and wherever the engine is supported its batch release equals the exact
pipeline, element by element, on the same draws.

The centre ``c = ch + cl + rc``: a residual ``rc`` that is not a double-double is
carried in the bound as ``2·|rc|/(ΔΛ)`` (docs/fastpath.md, E1: ``ex0`` covers
``|rc||ih|`` with a margin of 2).  Midpoints of two doubles are double-doubles, so a
calibration with another exact centre is built directly to measure it.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.calibration._params import calibrate
from snapcore.exact._dyadic import to_fraction
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _engine
from snapcore.pipeline._engine import release_batch
from snapcore.pipeline._stages import Pipeline
from snapcore.randomness._draw import DrawBatch
from snapcore.randomness._sources import SeededSource

ENGINES = ["numpy"] + (["numba"] if numba_available() else [])
TWO = Fraction(2)


def _inv(cal) -> Fraction:
    return 1 / (cal.sensitivity * TWO**cal.granularity_log2)


def _mech(kw):
    return SnappingMechanism(**kw)


def _release_equals_exact(mech, n=120, seed=5):
    """Batch release (every engine) equals the exact pipeline on the same draws."""
    pipe = mech.pipeline
    lo, hi = (float(v) for v in mech.clamp_bounds)
    w = hi - lo
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.uniform(lo - w / 5, hi + w / 5, n - 4), [lo, hi, lo, hi]])
    draws = SeededSource(seed).draws(values.size, mech.precision)
    ref = np.array(
        [pipe.run(pipe.centre(Fraction(float(v))), d) for v, d in zip(values, draws, strict=True)]
    )
    for engine in ENGINES:
        out, st = release_batch(pipe, values, SeededSource(seed), engine=engine, stats=True)
        assert np.array_equal(out.view(np.int64), ref.view(np.int64)), engine
        assert st.engine != "exact"
        assert len(st.fallback_k) < values.size // 2


# (id, calibrate keywords, expected supported, the limit it sits at)
EPS_HI = 2.0**600 * (1 + 2**-52)  # Λ = 2**-600
EPS_LO = 2.0**-600 * (1 + 2**-50)  # Λ = 2**600 (at p = 700)
SUPPORT = [
    # L = −600 is inside, L = −601 outside.
    ("L=-600", dict(epsilon=2.0**601, clamp_bound=2.0**-560), True),
    ("L=-601", dict(epsilon=2.0**601 * (1 + 2**-52), clamp_bound=2.0**-560), False),
    # L = 600 is inside, L = 601 outside.
    ("L=600", dict(epsilon=EPS_LO, clamp_bound=1.0, precision=700), True),
    ("L=601", dict(epsilon=2.0**-600, clamp_bound=1.0, precision=700), False),
    # 1/(ΔΛ) = 2**900 is outside, just below it inside.
    ("inv=2^900", dict(epsilon=EPS_HI, clamp_bound=2.0**-850, sensitivity=2.0**-300), False),
    (
        "inv<2^900",
        dict(epsilon=EPS_HI, clamp_bound=2.0**-850, sensitivity=2.0**-300 * (1 + 2**-52)),
        True,
    ),
    # 1/(ΔΛ) = 2**-900 is outside, just above it inside.
    (
        "inv=2^-900",
        dict(epsilon=EPS_LO, clamp_bound=2.0**400, sensitivity=2.0**300, precision=700),
        False,
    ),
    (
        "inv>2^-900",
        dict(
            epsilon=EPS_LO,
            clamp_bound=2.0**400,
            sensitivity=2.0**300 * (1 - 2**-53),
            precision=700,
        ),
        True,
    ),
    # |c| = 2**990 is outside (either sign), just below it inside.
    (
        "c=2^990",
        dict(
            epsilon=16.0,
            clamp_bounds=(2.0**990 - 2.0**938, 2.0**990 + 2.0**938),
            sensitivity=2.0**890,
        ),
        False,
    ),
    (
        "c=-2^990",
        dict(
            epsilon=16.0,
            clamp_bounds=(-(2.0**990) - 2.0**938, -(2.0**990) + 2.0**938),
            sensitivity=2.0**890,
        ),
        False,
    ),
    (
        "c<2^990",
        dict(epsilon=16.0, clamp_bounds=(2.0**990 - 2.0**938, 2.0**990), sensitivity=2.0**890),
        True,
    ),
    (
        "c>-2^990",
        dict(
            epsilon=16.0, clamp_bounds=(-(2.0**990), -(2.0**990) + 2.0**938), sensitivity=2.0**890
        ),
        True,
    ),
]


@pytest.mark.parametrize(("name", "kw", "expected"), SUPPORT, ids=[s[0] for s in SUPPORT])
def test_support_limits(name, kw, expected):
    cal = calibrate(**kw)
    L, inv, c = cal.granularity_log2, _inv(cal), cal.centre
    far = 4 * cal.sensitivity * cal.unit_clamp_bound
    # The parameters sit where the name says (independently of the engine).
    rule = (
        -600 <= L <= 600
        and TWO**-900 < inv < TWO**900
        and far < TWO**990
        and abs(c) < TWO**990
        and cal.precision >= 118
    )
    assert rule is expected
    at = {
        "L=-600": L == -600,
        "L=-601": L == -601,
        "L=600": L == 600,
        "L=601": L == 601,
        "inv=2^900": inv == TWO**900,
        "inv<2^900": TWO**899 < inv < TWO**900,
        "inv=2^-900": inv == TWO**-900,
        "inv>2^-900": TWO**-900 < inv < TWO**-899,
        "c=2^990": c == TWO**990,
        "c=-2^990": c == -(TWO**990),
        "c<2^990": TWO**989 < c < TWO**990,
        "c>-2^990": -(TWO**990) < c < -(TWO**989),
    }[name]
    assert at, (name, L, float(inv), float(c))
    eng = _engine.FastEngine(cal)
    assert eng.supported is expected
    if expected:
        _release_equals_exact(_mech(kw))


def _with_far(mantissa: int, exponent: int):
    """A directly built calibration (L = 600, Δ = 2**290, so 1/(ΔΛ) = 2**-890) with
    ``Δb = mantissa·2**exponent``: ``calibrate`` keeps ``b <= 2**52·Λ``, under which
    ``4Δb < 2**990`` already follows from ``1/(ΔΛ) > 2**-900``; the engine's own
    guard is pinned on a calibration outside that rule."""
    cal = calibrate(epsilon=EPS_LO, clamp_bound=1.0, precision=700)
    return attrs.evolve(
        cal, sensitivity=TWO**290, unit_clamp_bound_dyadic=(mantissa, exponent - 290)
    )


def test_far_limit():
    at = _with_far(1, 988)  # 4Δb = 2**990
    below = _with_far((1 << 53) - 1, 935)  # 4Δb = 2**990·(1 − 2**-53)
    assert 4 * at.sensitivity * at.unit_clamp_bound == TWO**990
    assert 4 * below.sensitivity * below.unit_clamp_bound == TWO**990 * (1 - TWO**-53)
    assert TWO**-900 < _inv(at) < TWO**900 and at.granularity_log2 == 600
    assert _engine.FastEngine(at).supported is False
    assert _engine.FastEngine(below).supported is True


# The computed output stage: (id, keywords, expected out_dd).
EPS_1K = 2.0**10 * (1 + 2**-50)  # Λ = 2**-10
OUT_DD = [
    # ΔΛ = 2**-900 is outside, just above it inside (no table: kmax = 2**50).
    ("dL=2^-900", dict(epsilon=EPS_HI, clamp_bound=2.0**-850, sensitivity=2.0**-300), False),
    (
        "dL>2^-900",
        dict(epsilon=EPS_HI, clamp_bound=2.0**-850, sensitivity=2.0**-300 * (1 + 2**-52)),
        True,
    ),
    # |Δ| = 2**900 is outside, just below it inside (ΔΛ = 2**890, b/Λ = 2**20).
    ("d=2^900", dict(epsilon=EPS_1K, clamp_bound=2.0**910, sensitivity=2.0**900), False),
    (
        "d<2^900",
        dict(epsilon=EPS_1K, clamp_bound=2.0**910, sensitivity=2.0**900 * (1 - 2**-53)),
        True,
    ),
]


@pytest.mark.parametrize(("name", "kw", "expected"), OUT_DD, ids=[s[0] for s in OUT_DD])
def test_output_stage_limits(name, kw, expected):
    cal = calibrate(**kw)
    d, lam = cal.sensitivity, TWO**cal.granularity_log2
    eng = _engine.FastEngine(cal)
    # Preconditions other than the limit hold: no table, Δ a double, c = 0.
    assert not eng.use_table and Fraction(float(d)) == d and cal.centre == 0
    at = {
        "dL=2^-900": d * lam == TWO**-900,
        "dL>2^-900": TWO**-900 < d * lam < TWO**-899,
        "d=2^900": d == TWO**900,
        "d<2^900": TWO**899 < d < TWO**900,
    }[name]
    assert at
    assert eng.out_dd is expected
    # Λ < 1 here, so Δ/Λ > ΔΛ: the limit is on the product.
    assert d / lam > d * lam
    if eng.supported:
        _release_equals_exact(_mech(kw))


# ----------------------------------------------------------------------------------
# The centre's residual term of the bound
# ----------------------------------------------------------------------------------
#: ``ch = 2**68``, ``cl = 2**13`` and a residual just below ``2**-41`` (half an ulp of cl).
CENTRE = TWO**68 + TWO**13 + TWO**-41 - Fraction(1, 3 << 70)


def _off_centre():
    """Λ = 2**-10, Δ = 3/4 (1/(ΔΛ) = 2**12/3) and the exact centre :data:`CENTRE`,
    which is not a double-double (a midpoint of two doubles always is)."""
    kw = dict(
        epsilon=EPS_1K, clamp_bounds=(2.0**68 - 2.0**40, 2.0**68 + 2.0**40), sensitivity=0.75
    )
    cal = attrs.evolve(calibrate(**kw), centre=CENTRE)
    return cal, Pipeline(cal, SnappingMechanism(**kw).pipeline.arith)


def test_centre_residual_in_the_bound():
    cal, pipe = _off_centre()
    eng = _engine.FastEngine(cal)
    assert eng.supported
    c = cal.centre
    ch = float(c)
    cl = float(c - Fraction(ch))
    rc = c - Fraction(ch) - Fraction(cl)
    inv = _inv(cal)
    ih = float(inv)
    centre_term = abs(rc) * inv
    assert (ch, cl) == (2.0**68, 2.0**13) and TWO**-42 < abs(rc) < TWO**-41
    n = 200
    rng = np.random.default_rng(8)
    values = ch + np.round(rng.uniform(-0.9, 0.9, n) * 2.0**24) * 2.0**16
    draws = SeededSource(21).draws(n, cal.precision)
    sh, sl, err, _ok = eng.diagnose(values, DrawBatch.from_draws(draws, cal.precision))
    L = cal.granularity_log2
    worst = Fraction(0)
    for i in range(n):
        e = -draws[i].exponent - (cal.precision - 1)
        v = float(values[i])
        ym, ye = pipe.stages(Fraction(v), draws[i])["y"]
        exact = to_fraction(ym, ye - L) + Fraction(1, 2)
        error = abs(Fraction(float(sh[i])) + Fraction(float(sl[i])) - exact)
        bound = Fraction(float(err[i]))
        # [E8]: the bound exceeds the error by its factor 2.
        assert 2 * error <= bound, (i, float(error), float(bound))
        worst = max(worst, error)
        # E1: ex0 = ... + 2**-51·|ih|·|d2b| + eabs, where eabs carries |rc|/(ΔΛ) with a
        # margin of 2; E8 doubles the bracket.  v − ch is a double here (d2 = 0), so
        # d2b = −cl.
        assert Fraction(v) - Fraction(ch) == Fraction(v - ch)
        ex0 = TWO**-51 * abs(Fraction(ih)) * Fraction(cl) + 2 * centre_term
        eln = TWO**-73 + TWO**-97 * (e + 2)
        floor = 2 * (eln + ex0 + TWO**-100 + TWO**-900) * (1 - TWO**-48)
        assert bound >= floor, (i, float(bound), float(floor))
    # The residual is really there: the kernel drops it, and the error shows it.
    assert worst >= centre_term / 2, (float(worst), float(centre_term))
    # And the batch release still equals the exact pipeline.
    pipe_vals = np.concatenate([values[:40], [float(cal.lower), float(cal.upper)]])
    d2 = SeededSource(3).draws(pipe_vals.size, cal.precision)
    ref = np.array(
        [pipe.run(pipe.centre(Fraction(float(v))), d) for v, d in zip(pipe_vals, d2, strict=True)]
    )
    out, _st = eng.run(pipe_vals, DrawBatch.from_draws(d2, cal.precision), pipe, "numpy")
    assert np.array_equal(out.view(np.int64), ref.view(np.int64))
