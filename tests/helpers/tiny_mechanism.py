"""TEST-ONLY: the snapping pipeline at a tiny precision, for brute-force checks.

:class:`snapcore.SnappingMechanism` refuses precisions below 118 bits (exact LN
rounding needs them, and the privacy analysis assumes them).  The audit's own
correctness, however, does not depend on p: it relies only on monotonicity and on
``P(U* <= u) = u + ulp_p(u)``.  At p = 6..10 every grid point of ``U*`` down to the
clamp tail can be enumerated, so the audit can be checked against brute force.
:class:`TinyMechanism` builds the same :class:`~snapcore.calibration._params.Calibration`
formulas (docs/semantics.md [S1]–[S3]) without the precision floor and the upper
condition, and runs the real :class:`~snapcore.pipeline._stages.Pipeline` on a registered
backend.  It is **not private** at these precisions and must never be used outside
tests.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from snapcore.analysis._audit import tail_exponent
from snapcore.calibration._params import Calibration, derive_calibration
from snapcore.pipeline._stages import Pipeline
from snapcore.plugins._manager import get_registries
from snapcore.randomness._draw import draw_from_u

__all__ = ["TinyMechanism", "brute_force", "tiny_calibration"]


def tiny_calibration(
    *, epsilon: Fraction, lower: Fraction, upper: Fraction, sensitivity: Fraction, precision: int
) -> Calibration:
    """docs/semantics.md [S1]–[S3] at any precision (no floor, no upper condition)."""
    return derive_calibration(
        epsilon=epsilon, lower=lower, upper=upper, sensitivity=sensitivity, precision=precision
    )


class TinyMechanism:
    """TEST-ONLY stand-in for SnappingMechanism at a tiny precision (see module doc)."""

    def __init__(
        self,
        *,
        epsilon: Any,
        lower: Any,
        upper: Any,
        sensitivity: Any = 1,
        precision: int,
        backend: str = "mpfr",
    ) -> None:
        self.calibration = tiny_calibration(
            epsilon=Fraction(epsilon),
            lower=Fraction(lower),
            upper=Fraction(upper),
            sensitivity=Fraction(sensitivity),
            precision=precision,
        )
        self.precision = precision
        self.backend = get_registries().backends.create(backend)
        self._pipe = Pipeline(self.calibration, self.backend.arithmetic(precision))

    def transform(self, value: Any, u: Fraction | float, sign: int) -> float:
        draw = draw_from_u(u, sign, self.precision)
        return self._pipe.run(self._pipe.centre(Fraction(value)), draw)


def brute_force(mech, value, q, extra=4):
    """Every q-bit float U* in (0,1) down to 2**-E, by direct enumeration.

    Checks monotonicity on the way and that the last ``extra`` binades give one
    output, then gives the remaining mass P(U* < 2**-E) = 2**-E to that output.
    """
    E = tail_exponent(mech.calibration) + extra
    pmf: dict[float, Fraction] = {}
    for sign in (1, -1):
        prev = None
        tail_outputs = set()
        for e in range(1, E + 1):
            ulp = Fraction(1, 1 << (q - 1 + e))
            for m in range((1 << q) - 1, (1 << (q - 1)) - 1, -1):  # decreasing u
                o = mech.transform(value, m * ulp, sign)
                if prev is not None:
                    assert (o <= prev) if sign > 0 else (o >= prev), "not monotone"
                prev = o
                pmf[o] = pmf.get(o, Fraction(0)) + ulp / 2
                if e > E - extra:
                    tail_outputs.add(o)
        assert len(tail_outputs) == 1
        (o,) = tail_outputs
        pmf[o] += Fraction(1, 1 << E) / 2
    assert sum(pmf.values()) == 1
    return dict(sorted(pmf.items()))
