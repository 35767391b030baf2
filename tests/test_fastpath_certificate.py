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

from snapcore import SnappingMechanism
from snapcore import fastpath as fp
from snapcore.pipeline import clamp

KW = dict(
    epsilon=2.0**-8 * (1 + 2**-40), clamp_bounds=(2.0**-100, 2.0**61), sensitivity=1 + 2**-52
)


def _rn(q: Fraction) -> float:
    """Round to nearest double, ties to even (Python's ``float`` of a Fraction)."""
    return float(q)


def test_uncertified_outputs_are_computed_exactly():
    mech = SnappingMechanism(**KW)
    cal, pipe = mech.calibration, mech._pipeline
    eng = fp.FastEngine(cal)
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
    cal, pipe = mech.calibration, mech._pipeline
    eng = fp.FastEngine(cal)
    assert eng.supported and not eng.use_table and eng.out_dd
    two = Fraction(2)
    assert cal.granularity_log2 == 8 and cal.centre == two**60 - two**-101
    assert eng.khi > 2**12
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


@pytest.mark.skipif(not fp.numba_available(), reason="the fused loop's stage needs numba")
def test_fused_output_stage_certificate():
    """The fused loop's element-wise stage (``_nb_output_dd``, the source numba
    compiles): a certified output is the correct rounding, and the near-midpoint
    element is not certified."""
    for kw, ks in [
        (KW, [2**51, 2**51 - 1, 2**51 + 1, -(2**50), 0, 1, -1, 12345]),
        (KW_POW2, [2**12, 2**12 - 1, 0, 1, -1]),
    ]:
        mech = SnappingMechanism(**kw)
        cal, pipe = mech.calibration, mech._pipeline
        eng = fp.FastEngine(cal)
        L, b = cal.granularity_log2, cal.unit_clamp_bound_dyadic
        for kk in ks:
            r, cert = fp._nb_output_dd(kk, eng.params, L, eng.delta_f)
            if cert:
                assert r == pipe.output(clamp(kk, L, b)), (kw, kk)
        assert not fp._nb_output_dd(ks[0], eng.params, L, eng.delta_f)[1]
