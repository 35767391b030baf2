"""The computed output stage's certificate of correct rounding (docs/fastpath.md, E10).

Without a table, the numpy engine computes ``RN(c + Δ·kΛ)`` in double-double
arithmetic and keeps the result only when a certificate shows the rounding is
correct; other elements go to the exact stage.  An element the certificate must
refuse needs an output sum within about ``2**-100`` (relative) of a midpoint between
doubles with an inexact low part.  Here it is built by hand:

- ``Δ = 1 + 2**-52`` (a double, not a power of two), ``Λ = 2**8``, so
  ``ΔΛ = 2**8 + 2**-44``;
- the clamp interval ``[2**-100, 2**61]``, whose centre ``c = 2**60 + 2**-101`` is
  the double-double ``2**60 + 2**-101``;
- ``k = 2**51``: ``c + Δ·kΛ = 2**60 + 2**59 + 2**7 + 2**-101``, ``2**-101`` above the
  midpoint ``2**60 + 2**59 + 2**7`` of two doubles (ulp ``2**8``).  The correctly
  rounded output is the upper neighbour ``2**60 + 2**59 + 2**8``; the double-double
  sum without its low part is the midpoint itself, which rounds to the even, lower,
  neighbour.

A second case sits next to a power of two, where the gap below is half the gap
above: ``Δ = 2**40 − 2**-13``, ``Λ = 2**8``, bounds ``[−2**-100, 2**61]`` (centre
``2**60 − 2**-101``) and ``k = 2**12``, whose output sum ``2**61 − 2**7 − 2**-101``
lies just below the midpoint ``2**61 − 2**7``: the correct rounding is
``2**61 − 2**8``, the midpoint rounds to ``2**61``.

The reference is the exact pipeline's output stage (``Pipeline.output``) and exact
``Fraction`` arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from snapcore import SnappingMechanism
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _compiled, _engine
from snapcore.pipeline._stages import clamp
from snapcore.randomness._draw import DrawBatch
from snapcore.randomness._sources import SeededSource

KW = dict(
    epsilon=2.0**-8 * (1 + 2**-40), clamp_bounds=(2.0**-100, 2.0**61), sensitivity=1 + 2**-52
)


def _rn(q: Fraction) -> float:
    """Round to nearest double, ties to even (Python's ``float`` of a Fraction)."""
    return float(q)


def test_uncertified_outputs_are_computed_exactly():
    mech = SnappingMechanism(**KW)
    cal, pipe = mech.calibration, mech.pipeline
    eng = _engine.FastEngine(cal)
    assert eng.supported and not eng.use_table and eng.out_dd
    two = Fraction(2)
    assert cal.granularity_log2 == 8 and cal.centre == two**60 + two**-101
    assert eng.kmax > 2**51
    # k = 2**51 lands 2**-101 above a midpoint; the others are near ties of the
    # neighbouring binade or ordinary outputs.
    k = np.array([2**51, 2**51 - 1, 2**51 + 1, -(2**50), 0, 1, -1, 12345], np.int64)
    out, bad = eng.outputs(k, pipe)
    L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
    ref = np.array([pipe.output(clamp(int(kk), L, b)) for kk in k])
    exact = [_rn(cal.centre + cal.sensitivity * int(kk) * two**L) for kk in k]
    assert list(ref) == exact
    # The construction: the sum is just above a midpoint, the correct rounding goes up.
    up = 2.0**60 + 2.0**59 + 2.0**8
    assert exact[0] == up
    assert _rn(two**60 + two**59 + two**7) == up - 2.0**8
    assert np.array_equal(out.view(np.int64), ref.view(np.int64))
    # The near-midpoint element was not certified: the exact stage computed it.
    assert 0 in set(bad.tolist())


#: Next to a power of two (the gap below 2**61 is 2**8, above it 2**9).
KW_POW2 = dict(
    epsilon=2.0**-8 * (1 + 2**-40),
    clamp_bounds=(-(2.0**-100), 2.0**61),
    sensitivity=2.0**40 - 2.0**-13,
)


def test_uncertified_output_below_a_power_of_two():
    mech = SnappingMechanism(**KW_POW2)
    cal, pipe = mech.calibration, mech.pipeline
    eng = _engine.FastEngine(cal)
    assert eng.supported and not eng.use_table and eng.out_dd
    two = Fraction(2)
    assert cal.granularity_log2 == 8 and cal.centre == two**60 - two**-101
    assert eng.clamped_from > 2**12
    k = np.array([2**12, 2**12 - 1, 0, 1, -1], np.int64)
    out, bad = eng.outputs(k, pipe)
    L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
    ref = np.array([pipe.output(clamp(int(kk), L, b)) for kk in k])
    exact = [_rn(cal.centre + cal.sensitivity * int(kk) * two**L) for kk in k]
    assert list(ref) == exact
    sum0 = cal.centre + cal.sensitivity * 2**12 * two**L
    assert sum0 == two**61 - two**7 - two**-101
    assert exact[0] == 2.0**61 - 2.0**8 and _rn(two**61 - two**7) == 2.0**61
    assert np.array_equal(out.view(np.int64), ref.view(np.int64))
    assert 0 in set(bad.tolist())


@pytest.mark.skipif(not numba_available(), reason="the fused loop's stage needs numba")
def test_fused_output_stage_certificate():
    """The fused loop's element-wise stage (``_compiled._output_dd``, the source numba
    compiles): a certified output is the correct rounding, and the near-midpoint
    element is not certified."""
    for kw, ks in [
        (KW, [2**51, 2**51 - 1, 2**51 + 1, -(2**50), 0, 1, -1, 12345]),
        (KW_POW2, [2**12, 2**12 - 1, 0, 1, -1]),
    ]:
        mech = SnappingMechanism(**kw)
        cal, pipe = mech.calibration, mech.pipeline
        eng = _engine.FastEngine(cal)
        L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
        for kk in ks:
            r, cert = _compiled._output_dd(kk, eng.params, L, eng.delta_f)
            if cert:
                assert r == pipe.output(clamp(kk, L, b)), (kw, kk)
        assert not _compiled._output_dd(ks[0], eng.params, L, eng.delta_f)[1]


# -- cancellation: the double-double sum's leading part is tiny or zero ------------------
#
# When c + Δ·kΛ nearly cancels, the leading parts ``ch`` and ``p1 = RN(Δ·kΛ)`` cancel
# exactly (Sterbenz) and the output is decided by the low parts ``cl + p2``, whose own
# rounding error ``t2`` is then large next to the result ``r`` — or ``r`` is 0 while the
# sum is not.  Built by hand, for a binade ``[2**E, 2**(E+1))`` with ulp ``u = 2**(E−52)``,
# an odd ``M ≡ 2 (mod 3)`` with ``2**52 < M < 1.5·2**52`` and a small odd ``j``:
#
# - ``Δ = 3·2**(E−53−L)``, ``Λ = 2**L``, ``k = −(2M − 1)/3`` (an integer): the product
#   ``Δ·kΛ = −(M·u − u/2)`` lies on the midpoint between ``−(M−1)·u`` (even, its
#   rounding ``p1``) and ``−M·u``, so ``p2 = −u/2`` exactly;
# - bounds ``[−(u − j·u·2**-53), 2·M·u]``: the centre ``c = M·u − u/2 + j·u·2**-54`` is the
#   double-double ``ch = M·u``, ``cl = −u/2 + j·u·2**-54``;
# - ``ch + p1 = u`` exactly, and ``cl + p2 = −u + j·u·2**-54`` is a tie between two
#   doubles (spacing ``u·2**-53`` below ``u``): ``t2 = ±u·2**-54``, and
#   ``c + Δ·kΛ = j·u·2**-54`` exactly.  For ``j = 1`` the double-double sum is
#   ``r = 0`` (an inexact sum that rounds to zero); for ``j ≥ 3`` it is
#   ``r = (j ∓ 1)·u·2**-54``, off by ``t2``.
#
# ``k`` is the outermost grid point (``kmax``), inside the interval.  The mirror image
# (bounds negated, ``k`` positive) is checked too.


def _rn_two_sum(a: Fraction, b: Fraction) -> tuple[Fraction, Fraction]:
    s = Fraction(_rn(a + b))
    return s, a + b - s


def _cancelling_case(m: int, j: int, sign: int, e: int, lam_log2: int):
    u = 2.0 ** (e - 52)
    lower, upper = -(u - j * u * 2.0**-53), 2 * m * u
    if sign < 0:
        lower, upper = -upper, -lower
    delta = 3 * 2.0 ** (e - 53 - lam_log2)
    mech = SnappingMechanism(
        epsilon=2.0**-lam_log2 * (1 + 2**-40), clamp_bounds=(lower, upper), sensitivity=delta
    )
    return mech, -sign * ((2 * m - 1) // 3)


@settings(max_examples=12, deadline=None)
@given(
    q=st.integers((2**52 + 1) // 6, (3 * 2**51 - 5) // 6),
    j=st.sampled_from([1, 3, 5, 7, 9, 11]),
    sign=st.sampled_from([1, -1]),
    scale=st.sampled_from([(50, 0), (1, -3), (-40, 7), (20, 30)]),
)
def test_cancelling_sums_are_not_certified(q, j, sign, scale):
    m = 6 * q + 5  # odd and 2 (mod 3)
    assume(2**52 < m < 3 * 2**51)
    e, lam_log2 = scale
    mech, k = _cancelling_case(m, j, sign, e, lam_log2)
    cal, pipe = mech.calibration, mech.pipeline
    eng = _engine.FastEngine(cal)
    assert eng.supported and not eng.use_table and eng.out_dd
    assert cal.granularity_log2 == lam_log2 and abs(k) < eng.clamped_from
    two = Fraction(2)
    L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
    exact = cal.centre + cal.sensitivity * k * two**L
    u = two ** (e - 52)
    assert exact == sign * j * u * two**-54
    # The premise, re-derived with exact arithmetic: the double-double sum of E10 has
    # an inexact low part (t2 != 0) and a leading part r that is not the correct rounding.
    ch = Fraction(_rn(cal.centre))
    cl = cal.centre - ch
    assert Fraction(_rn(cl)) == cl  # c is a double-double
    prod = cal.sensitivity * k * two**L
    p1 = Fraction(_rn(prod))
    p2 = prod - p1
    s1, s2 = _rn_two_sum(ch, p1)
    t1, t2 = _rn_two_sum(cl, p2)
    u1, u2 = _rn_two_sum(s2, t1)
    r, r2 = _rn_two_sum(s1, u1)
    assert s2 == 0 and u2 == 0 and r2 == 0 and t2 != 0
    assert r + t2 == exact
    assert (r == 0) == (j == 1) and _rn(r) != _rn(exact)
    want = pipe.output(clamp(k, L, b))
    assert want == _rn(exact) != 0.0
    ks = np.array([k, 0, k // 2, -k], np.int64)
    out, bad = eng.outputs(ks, pipe)
    ref = np.array([pipe.output(clamp(int(kk), L, b)) for kk in ks])
    assert np.array_equal(out.view(np.int64), ref.view(np.int64))
    assert 0 in set(bad.tolist())
    if numba_available():
        got, cert = _compiled._output_dd(k, eng.params, L, eng.delta_f)
        assert not cert and Fraction(got) == r


def test_output_stage_without_certificate_has_no_fallback():
    """A non-double Δ (here 1/3) with too many grid points for a table: every output
    is ``Pipeline.output``, once per distinct ``k`` (docs/fastpath.md), so no element
    *falls back*: ``BatchStats.fallback_output`` is empty, and intp as documented."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(-1.0, 1e6), sensitivity=Fraction(1, 3))
    cal, pipe = mech.calibration, mech.pipeline
    eng = _engine.FastEngine(cal)
    assert eng.supported and not eng.use_table and not eng.out_dd
    L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
    ks = np.array([0, 1, -1, 7, 7, eng.kmax, -eng.kmax, eng.kmax + 5, -eng.kmax - 5, 12345])
    out, bad = eng.outputs(ks.astype(np.int64), pipe)
    ref = np.array([pipe.output(clamp(int(kk), L, b)) for kk in ks])
    assert np.array_equal(out.view(np.int64), ref.view(np.int64))
    assert bad.size == 0 and bad.dtype == np.intp
    values = np.linspace(-5.0, 1e6 + 5, 64)
    draws = SeededSource(3).draws(values.size, mech.precision)
    out, stats = eng.run(values, DrawBatch.from_draws(draws, mech.precision), pipe, "numpy")
    assert stats.fallback_output.size == 0 and stats.fallback_output.dtype == np.intp
    for i, v in enumerate(values.tolist()):
        assert out[i] == pipe.run(pipe.centre(Fraction(v)), draws[i])
