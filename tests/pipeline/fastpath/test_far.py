"""Values far outside the clamp interval are decided by the fast path's kernel itself,
and only those take that shortcut.

The kernel's first step tests ``|v − c| > far`` (``far = 4Δb``, rounded up; docs/
fastpath.md [E1]) on both sides, so a value far below *or* far above the interval
is clamped without computing ``(v − c)/Δ``, which overflows for tiny ``ΔΛ``.  Such
values are then decided by the bound (no element goes to the exact pipeline) and
release the endpoint's output, exactly as the exact pipeline does.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from snapcore import SnappingMechanism
from snapcore.pipeline import _fastpath as fp
from snapcore.randomness._sources import SeededSource

ENGINES = ["numpy"] + (["numba"] if fp.numba_available() else [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["above", "below"])
def test_far_values_are_decided_by_the_kernel(engine, sign):
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(-1.0, 3.0), sensitivity=1e-3)
    cal = mech.calibration
    pipe = mech._pipeline
    eng = fp.engine_for(cal)
    assert eng.supported
    values = sign * np.array([1e300, 1.7e308, 1e200, 1e20] * 16, dtype=np.float64)
    draws = SeededSource(9).draws(values.size, mech.precision)
    out, stats = eng.run(values, fp.DrawBatch.from_draws(draws, mech.precision), pipe, engine)
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
    pipe = mech._pipeline
    eng = fp.engine_for(mech.calibration)
    assert eng.supported
    values = np.linspace(-120.0, 220.0, 69)
    draws = SeededSource(4).draws(values.size, mech.precision)
    out, _ = eng.run(values, fp.DrawBatch.from_draws(draws, mech.precision), pipe, engine)
    for i, v in enumerate(values.tolist()):
        assert out[i] == pipe.run(pipe.centre(Fraction(v)), draws[i]), (delta, v)
