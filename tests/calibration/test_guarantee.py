"""The data-independent accuracy guarantee of a calibration (snapcore.calibration._guarantee).

Each part of :class:`~snapcore.calibration.Accuracy` is checked against hand-derived
values for ε = 1 on [0, 100] (p = 118, b = 50, Λ = 2), the logarithm against mpmath at
400 bits, and the bound against exact Fractions: it is the least double at or above
the sum of the parts.  The guarantee as the analysis package publishes it, and its
simulation, are in ``tests/analysis/test_guarantees.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from param_errors import raises_param

from snapcore.calibration._guarantee import calibration_accuracy, check_probability
from snapcore.calibration._params import calibrate

ETA = Fraction(1, 2**118)
MP = mpmath.MPContext()
MP.prec = 400


def _mp(q: Fraction) -> mpmath.mpf:
    return MP.mpf(q.numerator) / q.denominator


def test_each_part_by_hand():
    """ε = 1 on [0, 100], α = 1/2: snap Λ/2 = 1, rounding η·(b + 3β) + 2**-53·(100 + η·β)
    with b = β = 50, noise λ·ln 2 up to a relative 2**-110, width 100, no cap."""
    cal = calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    assert cal.precision == 118 and cal.unit_clamp_bound == 50 and cal.granularity == 2
    acc = calibration_accuracy(cal, 0.5)
    assert acc.alpha == Fraction(1, 2)
    assert acc.snap_term == 1
    assert acc.rounding_term == ETA * (50 + 3 * 50) + Fraction(1, 2**53) * (100 + ETA * 50)
    assert acc.width == 100 and not acc.capped
    low = _mp(cal.scale) * MP.log(2)  # λ·ln(1/α)
    assert low <= _mp(acc.noise_term) <= low * (1 + MP.mpf(2) ** -110)
    assert acc.nominal == pytest.approx(1 + math.log(2), rel=1e-15)  # ln(1/α)/ε′ + Λ/2


@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-9, Fraction(1, 3)])
def test_bound_is_the_least_double_at_or_above_the_parts(alpha):
    acc = calibration_accuracy(calibrate(epsilon=0.3, clamp_bounds=(-7.0, 1e4)), alpha)
    total = acc.noise_term + acc.snap_term + acc.rounding_term
    assert not acc.capped and total < acc.width
    assert Fraction(acc.bound) >= total > Fraction(math.nextafter(acc.bound, 0.0))
    assert acc.bound >= acc.nominal


def test_the_parts_scale_with_the_sensitivity():
    """Δ = 4 on [0, 400] has the same b, λ and p as Δ = 1 on [0, 100]: every part, and
    the bound, is exactly four times as large."""
    one = calibration_accuracy(calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0)), 0.05)
    four = calibration_accuracy(
        calibrate(epsilon=1.0, sensitivity=4, clamp_bounds=(0.0, 400.0)), 0.05
    )
    assert four.noise_term == 4 * one.noise_term
    assert four.snap_term == 4 * one.snap_term
    assert four.rounding_term == 4 * one.rounding_term
    assert four.bound == 4 * one.bound and four.width == 4 * one.width


def test_only_the_output_rounding_moves_with_the_interval():
    """[1000, 1100] is [0, 100] moved: the outputs' rounding to a double adds
    2**-53·(1100 − 100); noise and snapping are the same."""
    near = calibration_accuracy(calibrate(epsilon=1.0, clamp_bounds=(0.0, 100.0)), 0.05)
    far = calibration_accuracy(calibrate(epsilon=1.0, clamp_bounds=(1000.0, 1100.0)), 0.05)
    assert far.noise_term == near.noise_term and far.snap_term == near.snap_term
    assert far.rounding_term - near.rounding_term == Fraction(1000, 2**53)


def test_the_bound_is_capped_at_the_width():
    """ε = 0.01 on [-1, 1]: λ ≈ 100, so λ·ln 10 is far above the width 2."""
    acc = calibration_accuracy(calibrate(epsilon=0.01, clamp_bounds=(-1.0, 1.0)), 0.1)
    assert acc.capped and acc.width == 2
    assert acc.noise_term > 200  # the parts are still reported
    assert acc.bound == 2.0 and acc.nominal == 2.0


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0.05, Fraction(0.05)),  # the double, exactly: not 1/20
        (Fraction(1, 3), Fraction(1, 3)),
        (np.float32(0.5), Fraction(1, 2)),
        (5e-324, Fraction(5e-324)),
        (1 - Fraction(1, 2**200), 1 - Fraction(1, 2**200)),
    ],
    ids=repr,
)
def test_check_probability_reads_the_value_exactly(value, want):
    got = check_probability("alpha", value)
    assert got == want and isinstance(got, Fraction)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (0, ["gamma", "in (0, 1)", "0"]),
        (1, ["gamma", "in (0, 1)", "1"]),
        (-0.1, ["gamma", "in (0, 1)", "-0.1"]),
        (1.5, ["gamma", "in (0, 1)", "1.5"]),
        (float("nan"), ["gamma", "nan"]),
        (float("inf"), ["gamma", "inf"]),
        (True, ["gamma", "True"]),
        ("0.1", ["gamma", "'0.1'"]),
        (None, ["gamma", "None"]),
    ],
    ids=repr,
)
def test_check_probability_refuses_and_names_the_parameter(value, words):
    with raises_param(words):
        check_probability("gamma", value)
    with raises_param(["alpha"]):
        calibration_accuracy(calibrate(epsilon=1.0, clamp_bound=1.0), value)
