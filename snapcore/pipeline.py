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
        # When Δ is a power of two, (v − c)/Δ is dyadic: x is computed with shifts.
        self._d_log2 = (
            (d.numerator.bit_length() - d.denominator.bit_length())
            if (d.numerator & (d.numerator - 1)) == 0
            and (d.denominator & (d.denominator - 1)) == 0
            else None
        )
        self._cm = c.numerator
        self._ce = 1 - c.denominator.bit_length()  # c's denominator is a power of two
        self._lower = float(cal.lower)
        self._upper = float(cal.upper)
        # |x| < 2**_inside_log2 implies |x| <= b (a cheap test before the exact one).
        self._inside_log2 = self._b[0].bit_length() - 1 + self._b[1]
        # Grid indices k with |k·Λ| <= b, exactly: k in [-_kmax, _kmax].
        bm, be = self._b
        s = be - self._L
        self._kmax = bm << s if s >= 0 else bm >> -s

    # -- step 1 for one value: x = RN((v - c)/Δ), then clamp_b(x) ----------------
    def centre(self, value: Fraction) -> tuple[int, int]:
        """``clamp_b(RN((v − c)/Δ))`` as ``(m, e)``: step 1 and the inner clamp."""
        return self.centre_ratio(value.numerator, value.denominator)

    def centre_ratio(self, vn: int, vd: int) -> tuple[int, int]:
        """:meth:`centre` for the value ``vn / vd`` (``vd > 0``)."""
        if self._trivial:
            if vd & (vd - 1) == 0 and abs(vn).bit_length() <= self._p:
                m, e = vn, 1 - vd.bit_length()  # exact already: no rounding needed
            else:
                m, e = round_ratio(vn, vd, self._p)
        elif self._d_log2 is not None and vd & (vd - 1) == 0:
            # v − c = N·2**E exactly; x = N·2**(E − log2 Δ), rounded only if N is too long.
            ve, ce, cm = 1 - vd.bit_length(), self._ce, self._cm
            E = min(ve, ce)
            n = (vn << (ve - E)) - (cm << (ce - E))
            e = E - self._d_log2
            if n.bit_length() <= self._p:
                m = n
            else:
                m, e2 = round_ratio(n, 1, self._p)
                e += e2
        else:
            cn, cd = self._c
            dn, dd = self._d
            # (v - c) / Δ = (vn·cd − cn·vd)·dd / (vd·cd·dn)
            m, e = round_ratio((vn * cd - cn * vd) * dd, vd * cd * dn, self._p)
        if abs(m).bit_length() + e <= self._inside_log2:
            return (m, e)
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

    def run(self, x: tuple[int, int], draw: tuple[int, int, int] | Draw) -> float:
        """Steps 5-9 for a centred, clamped ``x`` and one draw ``(S, mantissa, exponent)``.

        This is :func:`scale` and :func:`add` (fused in the backend's
        :meth:`~snapcore.backend.Arithmetic.scale_add`), :func:`snap`, :func:`clamp`
        and :meth:`output`, in sequence.
        """
        if isinstance(draw, Draw):
            draw = (draw.sign, draw.mantissa, draw.exponent)
        sign, um, ue = draw
        k = snap(*self.arith.scale_add(self._lam, x, sign, (um, ue)), self._L)
        kmax = self._kmax
        if -kmax <= k <= kmax:  # clamp() would return (k, L) unchanged
            return self.output((k, self._L))
        return self.output(clamp(k, self._L, self._b))

    def run_many(
        self, xs: list[tuple[int, int]], draws: list[tuple[int, int, int]]
    ) -> list[float]:
        """:meth:`run` over paired lists (same results, less per-element overhead)."""
        scale_add, output, lam, L, kmax, b = (
            self.arith.scale_add,
            self.output,
            self._lam,
            self._L,
            self._kmax,
            self._b,
        )
        out = []
        for x, (sign, um, ue) in zip(xs, draws, strict=True):
            k = snap(*scale_add(lam, x, sign, (um, ue)), L)
            out.append(output((k, L) if -kmax <= k <= kmax else clamp(k, L, b)))
        return out

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
