"""The snapping mechanism's stages, top to bottom (docs/semantics.md [S4]–[S9]).

``sample -> noise -> add -> snap -> clamp -> output``.  Each stage is a small
function; :class:`Pipeline` binds them to one calibration and one backend.  The
p-bit arithmetic of *noise* (LN and the product with λ) goes through the backend's
:class:`~snapcore.Arithmetic`; *add* rounds the exact sum once with the
core's integer rounding; snapping and clamping are exact integer operations on
``(mantissa, exponent)`` pairs, so no rounding happens there.

The centred value ``x = clamp_b((v − c)/Δ)`` is kept **exact** (a rational), not
rounded to p bits first: rounding it could stretch the distance between
neighbouring inputs beyond 1 (by up to ``2·b·η``), which no term of Mironov's bound
covers.  ``y = RN(x + N)`` is then the one rounding of step 6.  When ``(v − c)/Δ`` is
a p-bit float (always when Δ = 1 and the value and centre are doubles within 2**64
of each other), this is the same as rounding x first.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from fractions import Fraction

from snapcore.calibration._params import Calibration
from snapcore.errors import ParameterError
from snapcore.exact._dyadic import dyadic_cmp, round_dyadic, round_ratio
from snapcore.exact._ieee754 import round_down_double, round_up_double
from snapcore.pipeline._arithmetic import Arithmetic, Num
from snapcore.randomness._draw import Draw

__all__ = ["Pipeline", "add", "clamp", "noise", "snap"]


def noise(arith: Arithmetic, lam: Num, draw: Draw) -> tuple[int, int]:
    """Stage 5, *noise*: ``N = S · RN(λ · RN(ln U*))`` as ``(m, e)``; the sign flip is exact."""
    return arith.noise(lam, draw.sign, (draw.mantissa, draw.exponent))


def add(x: tuple[int, int], noise: tuple[int, int], precision: int) -> tuple[int, int]:
    """Stage 6, *add*: ``y = RN(x + N)`` for the exact, clamped ``x = xn/xd`` (``xd > 0``).

    The sum is formed exactly in integers and rounded once to ``precision`` bits,
    to nearest, ties to even.
    """
    xn, xd = x
    nm, ne = noise
    if xd & (xd - 1) == 0:  # x is dyadic: xn·2**xe
        xe = 1 - xd.bit_length()
        e = min(xe, ne)
        total = (xn << (xe - e)) + (nm << (ne - e))
        return round_dyadic(total, e, precision)
    if ne >= 0:
        return round_ratio(xn + (nm << ne) * xd, xd, precision)
    return round_ratio((xn << -ne) + nm * xd, xd << -ne, precision)


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
            raise ParameterError(
                f"arith must work at the calibration's precision {calibration.precision}, "
                f"got an arithmetic at {arith.precision} bits"
            )
        cal = calibration
        self.calibration = cal
        self.arith = arith
        self._p = cal.precision
        self._L = cal.granularity_log2
        self._b = cal.unit_clamp_bound_dyadic
        self._lam = arith.from_dyadic(*cal.scale_dyadic)
        # Exact integer forms of c, Δ, lower, upper for the fast exact paths.
        c, d = cal.centre, cal.sensitivity
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
        # Every k at or beyond ±kmax gives one of four outputs: computed once here, so
        # that a clamped release costs no more than one inside the interval.
        kmax, L = self._kmax, self._L
        self._ends = (
            self.output(clamp(-kmax - 1, L, self._b)),
            self.output(clamp(-kmax, L, self._b)),
            self.output(clamp(kmax, L, self._b)),
            self.output(clamp(kmax + 1, L, self._b)),
        )

    # -- the constants the stages use, read-only ------------------------------------
    @property
    def noise_scale(self) -> Num:
        """λ, the Laplace scale, as a number of :attr:`arith`."""
        return self._lam

    @property
    def granularity_log2(self) -> int:
        """``L``: the grid spacing is ``Λ = 2**L``."""
        return self._L

    @property
    def grid_index_bound(self) -> int:
        """``kmax``: the grid indices ``k`` with ``|k·Λ| <= b`` are ``[-kmax, kmax]``."""
        return self._kmax

    # -- step 1 for one value: x = clamp_b((v - c)/Δ), exact ----------------------
    def centre(self, value: Fraction) -> tuple[int, int]:
        """``x = clamp_b((v − c)/Δ)``, exactly, as ``(numerator, denominator)``."""
        return self.centre_ratio(value.numerator, value.denominator)

    def centre_ratio(self, vn: int, vd: int) -> tuple[int, int]:
        """:meth:`centre` for the value ``vn / vd`` (``vd > 0``)."""
        if self._trivial:
            n, d = vn, vd
        elif self._d_log2 is not None and vd & (vd - 1) == 0:
            # v − c = n·2**E exactly and Δ = 2**d_log2: stay with powers of two.
            ve, ce, cm = 1 - vd.bit_length(), self._ce, self._cm
            E = min(ve, ce)
            n = (vn << (ve - E)) - (cm << (ce - E))
            E -= self._d_log2
            if E >= 0:
                n, d = n << E, 1
            else:
                d = 1 << -E
        else:
            cn, cd = self._c
            dn, dd = self._d
            # (v - c) / Δ = (vn·cd − cn·vd)·dd / (vd·cd·dn)
            n, d = (vn * cd - cn * vd) * dd, vd * cd * dn
        # Clamp exactly: |n/d| < 2**(bitlen(n) - bitlen(d) + 1), cheap test first.
        if n.bit_length() - d.bit_length() + 1 <= self._inside_log2:
            return (n, d)
        bm, be = self._b
        bn, bd = (bm << be, 1) if be >= 0 else (bm, 1 << -be)
        if n * bd > bn * d:
            return (bn, bd)
        if n * bd < -bn * d:
            return (-bn, bd)
        return (n, d)

    def uniform_stages(
        self,
    ) -> tuple[
        Callable[[float], tuple[int, int]],
        Callable[[tuple[int, int], tuple[int, int]], tuple[int, int]],
        Callable[[int], float],
    ]:
        """``(centre, add, index_output)``: the centring, add and output stages of a
        release padded to a time quantum (``docs/timing.md``), computing the same
        values as :meth:`centre_ratio`, ``add`` and :meth:`index_output` with
        integers whose sizes do not depend on the value.

        ``centre(v)``: every double ``v`` is a multiple of ``2**-1074``, so
        ``x = clamp_b((v − c)/Δ)`` is exactly ``N / D`` for the one denominator
        ``D = 2**E·cd·dn`` (``E >= 1074``, also large enough for ``b·D`` to be an
        integer); it returns ``(N, D)``, the same rational as :meth:`centre_ratio`
        (not in lowest terms).  ``v`` is first clipped to ``[t_lo, t_hi]``, the
        doubles nearest ``c ∓ Δ·b`` on or beyond them (every value beyond clamps to
        the same ``±b``), and offset by a power of two above them, so that the
        products have the same sizes for a subnormal, the centre and ``±1.8e308``.

        ``add(x, noise)``: ``add`` for such an ``x``, by :func:`~snapcore.exact.round_ratio`
        on ``N + K`` with ``K = 2·b·D`` (so the operand never shrinks to zero, at the
        centre) and ``K`` taken off again.

        ``index_output(k)``: :meth:`index_output`, computing the grid output of the
        nearest index inside for a ``k`` at or beyond ``±kmax`` too (then discarded
        for the precomputed endpoint), with the index offset by ``2·kmax``.
        """
        cal = self.calibration
        c, d = cal.centre, cal.sensitivity
        cn, cd = c.numerator, c.denominator
        dn, dd = d.numerator, d.denominator
        p, L, kmax = self._p, self._L, self._kmax
        bm, be = self._b
        E = max(1074, -be)
        D = (cd * dn) << E
        bD = (bm * D) << be if be >= 0 else (bm * D) >> -be  # exact: D has 2**E
        b = cal.unit_clamp_bound
        t_hi = min(round_up_double(c + d * b), sys.float_info.max)
        t_lo = max(round_down_double(c - d * b), -sys.float_info.max)
        reach = max(abs(Fraction(t_lo)), abs(Fraction(t_hi)), Fraction(1))
        offset = 1 << (E + math.ceil(math.log2(reach)) + 2)  # > 2·|v|·2**E
        cddd = cd * dd
        C = offset * cddd + (cn << E) * dd

        def centre(v: float) -> tuple[int, int]:
            v = t_lo if v < t_lo else (t_hi if v > t_hi else v)
            vn, vd = v.as_integer_ratio()
            n = (((vn << (E + 1 - vd.bit_length())) + offset) * cddd) - C
            n = -bD if n < -bD else (bD if n > bD else n)
            return (n, D)

        K = 2 * bD

        def add_uniform(x: tuple[int, int], noise: tuple[int, int]) -> tuple[int, int]:
            n = x[0] + K
            nm, ne = noise
            if ne < 0:
                s = -ne
                return round_ratio((n << s) + nm * D - (K << s), D << s, p)
            return round_ratio(n + (nm << ne) * D - K, D, p)

        # c + Δ·k·Λ = (cn·dd·2**-L + cd·dn·k) / (cd·dd·2**-L), or with 2**L upstairs.
        M = 2 * kmax
        cddn = cd * dn
        if L >= 0:
            top, den = cn * dd, cd * dd
            off = (cddn * M) << L
        else:
            top, den = (cn * dd) << -L, (cd * dd) << -L
            off = cddn * M
        top -= off
        end = self.clamped_output

        def index_output(k: int) -> float:
            kc = min(max(k, 1 - kmax), kmax - 1) + M
            g = (top + cddn * (kc << L if L >= 0 else kc)) / den
            inside = -kmax < k < kmax
            e = end(kmax if inside else k)  # looked up whether used or not
            return g if inside else e

        return centre, add_uniform, index_output

    def output(self, z: tuple[int, int]) -> float:
        """Step 9: ``c + Δ·z′`` rounded once to the nearest double, then clamped to
        ``[lower, upper]``; a clamped ``z′ = ±b`` gives the endpoint itself."""
        zm, ze = z
        bm, be = self._b
        if zm and dyadic_cmp(abs(zm), ze, bm, be) == 0:
            return self._upper if zm > 0 else self._lower
        return self.grid_output(zm, ze)

    def grid_output(self, zm: int, ze: int) -> float:
        """``c + Δ·zm·2**ze`` rounded once to the nearest double, for a grid point
        ``|zm·2**ze| < b`` (an endpoint ``±b`` goes through :meth:`output`).

        The clamp of step 9 ([S9]) to ``[lower, upper]`` never acts here, so it is not
        written.  Proof: let ``u = 2**(E − p + 1)`` be the unit in the last place of
        ``b`` (``2**E <= b < 2**(E+1)``).  The upper condition ``b <= 2**52·Λ`` gives
        ``Λ >= 2**(E − 52) >= u`` (``p >= 118``), so both ``b`` and every grid point
        ``z = k·Λ`` are multiples of ``u``, and ``0 <= z < b`` implies ``z <= b − u``.
        ``b = RN_p(B/Δ)`` is within ``u/2`` of ``B/Δ``, so ``z < B/Δ``; likewise for
        ``z < 0``.  Hence ``c + Δ·z`` lies strictly inside ``(lower, upper)``, whose
        ends are doubles, and rounding to nearest is monotone: the double lies in
        ``[lower, upper]``.  ``tests/exact/test_dyadic.py`` checks the premise and the
        conclusion on the outermost grid points.
        """
        cn, cd = self._c
        dn, dd = self._d
        # c + Δ·zm·2**ze = (cn·dd·2**-ze + cd·dn·zm) / (cd·dd·2**-ze)   (ze may be >= 0)
        if ze >= 0:
            num = cn * dd + cd * dn * (zm << ze)
            den = cd * dd
        else:
            num = (cn * dd << -ze) + cd * dn * zm
            den = (cd * dd) << -ze
        return num / den  # CPython int true division is correctly rounded

    def run(self, x: tuple[int, int], draw: tuple[int, int, int] | Draw) -> float:
        """Steps 5-9 for a centred, clamped ``x`` and one draw ``(S, mantissa, exponent)``:
        ``noise``, ``add``, ``snap``, ``clamp`` and :meth:`output`."""
        if isinstance(draw, Draw):
            draw = (draw.sign, draw.mantissa, draw.exponent)
        sign, um, ue = draw
        y = add(x, self.arith.noise(self._lam, sign, (um, ue)), self._p)
        return self.index_output(snap(*y, self._L))

    def clamped_output(self, k: int) -> float:
        """``output(clamp(k))`` for ``|k| >= kmax``, from the four precomputed outputs."""
        kmax = self._kmax
        if k >= kmax:
            return self._ends[2] if k == kmax else self._ends[3]
        return self._ends[1] if k == -kmax else self._ends[0]

    def snap_index(self, x: tuple[int, int], sign: int, um: int, ue: int) -> int:
        """Steps 5-7 for one draw: the grid index ``k = snap(RN(x + N))``, before the
        clamp; ``run(x, (sign, um, ue)) == index_output(snap_index(x, sign, um, ue))``."""
        return snap(*add(x, self.arith.noise(self._lam, sign, (um, ue)), self._p), self._L)

    def index_output(self, k: int) -> float:
        """Steps 8-9 for the grid index ``k``: the clamp and the output double."""
        kmax = self._kmax
        if -kmax < k < kmax:  # strictly inside: neither clamped nor an endpoint
            return self.grid_output(k, self._L)
        return self.clamped_output(k)

    def run_many(
        self, xs: list[tuple[int, int]], draws: list[tuple[int, int, int]]
    ) -> list[float]:
        """:meth:`run` over paired lists (same results, less per-element overhead)."""
        noise, end, grid, lam, L, kmax, p = (
            self.arith.noise,
            self.clamped_output,
            self.grid_output,
            self._lam,
            self._L,
            self._kmax,
            self._p,
        )
        out = []
        for x, (sign, um, ue) in zip(xs, draws, strict=True):
            k = snap(*add(x, noise(lam, sign, (um, ue)), p), L)
            out.append(grid(k, L) if -kmax < k < kmax else end(k))
        return out

    def stages(self, value: Fraction, draw: Draw) -> dict[str, object]:
        """Every intermediate of one run, exactly, for inspection and teaching."""
        x = self.centre(value)
        n = noise(self.arith, self._lam, draw)
        y = add(x, n, self._p)
        k = snap(*y, self._L)
        z = clamp(k, self._L, self._b)
        return {
            "x": Fraction(*x),
            "noise": n,
            "y": y,
            "k": k,
            "z": z,
            "output": self.output(z),
        }
