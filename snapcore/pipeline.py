"""The snapping mechanism's stages, top to bottom (DESIGN.md §1, steps 4-9).

``sample -> scale -> add -> snap -> clamp -> output``.  Each stage is a small
function; :class:`Pipeline` binds them to one calibration and one backend.  All
p-bit arithmetic goes through the backend's :class:`~snapcore.backend.Arithmetic`;
snapping and clamping are exact integer operations on ``(mantissa, exponent)``
pairs, so no rounding happens there.
"""

from __future__ import annotations

from fractions import Fraction

from snapcore.backend import Arithmetic, Num
from snapcore.dyadic import dyadic_cmp, round_ratio
from snapcore.params import Calibration
from snapcore.sources import Draw, RandomSource

__all__ = ["Pipeline", "add", "clamp", "sample", "scale", "snap"]


def sample(source: RandomSource, precision: int) -> Draw:
    """Stage 4, *sample*: a sign ``S`` and ``U*`` on the p-bit grid."""
    return source.draw(precision)


def scale(arith: Arithmetic, lam: Num, draw: Draw) -> Num:
    """Stage 5, *scale*: ``N = S · RN(λ · RN(ln U*))``; the sign flip is exact."""
    u = arith.from_dyadic(draw.mantissa, draw.exponent)
    n = arith.mul(lam, arith.ln(u))
    return n if draw.sign > 0 else arith.neg(n)


def add(arith: Arithmetic, x: Num, noise: Num) -> Num:
    """Stage 6, *add*: ``y = RN(clamp_b(x) + N)`` (``x`` is already clamped)."""
    return arith.add(x, noise)


def snap(m: int, e: int, granularity_log2: int) -> int:
    """Stage 7, *snap*: ``k = floor(y/Λ + 1/2)`` for ``y = m·2**e``, ``Λ = 2**L``, exactly.

    The nearest multiple of Λ, ties toward +∞.  Dividing by Λ is a shift; adding
    one half and flooring is an integer add and an arithmetic (flooring) shift.
    """
    s = granularity_log2 - e
    if s <= 0:
        return m << -s
    return (m + (1 << (s - 1))) >> s


def clamp(k: int, granularity_log2: int, b: tuple[int, int]) -> tuple[int, int]:
    """Stage 8, *clamp*: ``z′ = clamp_b(k·Λ)`` as an exact ``(m, e)`` pair."""
    bm, be = b
    if dyadic_cmp(k, granularity_log2, bm, be) > 0:
        return (bm, be)
    if dyadic_cmp(k, granularity_log2, -bm, be) < 0:
        return (-bm, be)
    return (k, granularity_log2)


class Pipeline:
    """The stages bound to one calibration and one arithmetic.

    Parameters
    ----------
    calibration : Calibration
        The exact constants.
    arith : Arithmetic
        The backend's arithmetic at ``calibration.precision`` bits.
    """

    def __init__(self, calibration: Calibration, arith: Arithmetic) -> None:
        if arith.precision != calibration.precision:
            raise ValueError("arithmetic precision differs from the calibration's")
        cal = calibration
        self.calibration = cal
        self.arith = arith
        self._p = cal.precision
        self._L = cal.granularity_log2
        self._b = cal.clamp_bound
        self._lam = arith.from_dyadic(*cal.scale)
        # Exact integer forms of c, Δ, lower, upper for the fast exact paths.
        c, d = cal.center, cal.sensitivity
        self._c = (c.numerator, c.denominator)
        self._d = (d.numerator, d.denominator)
        self._trivial = c == 0 and d == 1
        self._lower = float(cal.lower)
        self._upper = float(cal.upper)

    # -- step 1 for one value: x = RN((v - c)/Δ), then clamp_b(x) ----------------
    def centre(self, value: Fraction) -> tuple[int, int]:
        """``clamp_b(RN((v − c)/Δ))`` as ``(m, e)``: step 1 and the inner clamp."""
        if self._trivial:
            num, den = value.numerator, value.denominator
        else:
            cn, cd = self._c
            dn, dd = self._d
            # (v - c) / Δ = (vn·cd − cn·vd)·dd / (vd·cd·dn)
            vn, vd = value.numerator, value.denominator
            num = (vn * cd - cn * vd) * dd
            den = vd * cd * dn
        m, e = round_ratio(num, den, self._p)
        bm, be = self._b
        if dyadic_cmp(m, e, bm, be) > 0:
            return (bm, be)
        if dyadic_cmp(m, e, -bm, be) < 0:
            return (-bm, be)
        return (m, e)

    def output(self, z: tuple[int, int]) -> float:
        """Step 9: ``c + Δ·z′`` rounded once to the nearest double, then clamped to
        ``[lower, upper]``."""
        zm, ze = z
        cn, cd = self._c
        dn, dd = self._d
        # c + Δ·zm·2**ze = (cn·dd·2**-ze + cd·dn·zm) / (cd·dd·2**-ze)   (ze may be >= 0)
        if ze >= 0:
            num = cn * dd + cd * dn * (zm << ze)
            den = cd * dd
        else:
            num = (cn * dd << -ze) + cd * dn * zm
            den = (cd * dd) << -ze
        out = num / den  # CPython int true division is correctly rounded
        if out < self._lower:
            return self._lower
        if out > self._upper:
            return self._upper
        return out

    def run(self, x: tuple[int, int], draw: Draw) -> float:
        """Steps 5-9 for a centred, clamped ``x`` and one draw."""
        arith = self.arith
        noise = scale(arith, self._lam, draw)
        y = add(arith, arith.from_dyadic(*x), noise)
        k = snap(*arith.to_dyadic(y), self._L)
        return self.output(clamp(k, self._L, self._b))

    def stages(self, value: Fraction, draw: Draw) -> dict[str, object]:
        """Every intermediate of one run, exactly, for inspection and teaching."""
        arith = self.arith
        x = self.centre(value)
        noise = scale(arith, self._lam, draw)
        y = add(arith, arith.from_dyadic(*x), noise)
        ym, ye = arith.to_dyadic(y)
        k = snap(ym, ye, self._L)
        z = clamp(k, self._L, self._b)
        return {
            "x": x,
            "noise": arith.to_dyadic(noise),
            "y": (ym, ye),
            "k": k,
            "z": z,
            "output": self.output(z),
        }

