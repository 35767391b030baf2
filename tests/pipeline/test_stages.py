"""The mechanism's exact stages as one Pipeline (snapcore.pipeline._stages).

The stages' outputs are compared with the independent reference in
``tests/pipeline/test_reference.py``; the centring in ``tests/pipeline/test_centre.py``.
"""

from __future__ import annotations

from param_errors import raises_param

from snapcore.calibration._params import calibrate
from snapcore.pipeline._stages import Pipeline
from snapcore.plugins._manager import get_registries


def test_pipeline_refuses_an_arithmetic_of_another_precision():
    cal = calibrate(epsilon=1.0, clamp_bound=8.0)
    arith = get_registries().backends.create("mpfr").arithmetic(cal.precision + 1)
    with raises_param(["arith", str(cal.precision), str(cal.precision + 1)]):
        Pipeline(cal, arith)
