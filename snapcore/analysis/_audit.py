"""Exact privacy audit of the mechanism as it runs (docs/audit.md).

For fixed parameters, a fixed backend and one input value, the stages after
sampling are a function ``(U*, S) -> output`` (:meth:`SnappingMechanism.transform`).
For each sign this map is **monotone** in ``U*`` (non-decreasing for ``S = +1``,
non-increasing for ``S = -1``): every stage is a correctly rounded monotone operation
(LN, multiplication by λ > 0, addition of x), an exact snap and an exact clamp.  So
the set of ``U*`` giving one output is an interval of consecutive grid points, and
its probability is exact because ``P(U* <= u) = u + ulp(u)`` on the sampling grid.
:func:`audit` walks the outputs of each sign from ``U*`` just below 1 downwards,
finding each interval's lower end by bisection on the exact index of the grid
points, and turns the intervals into the exact output distribution of both
inputs, each probability an integer mantissa times a power of two (Fractions are
built only when :attr:`ExactOutputDistribution.pmf` is read).  The infinite tail of
the grid (``U*`` arbitrarily small) is handled by a proof (see :func:`tail_exponent`
and ``docs/audit.md``), not by truncation.

The worst-case privacy loss ``max_o |ln P(o|v)/P(o|v')|`` is then ``ln R`` for the
exact rational ``R`` (the largest probability ratio), and ``ln R`` is compared with
ε by MPFR interval arithmetic at increasing precision until the comparison is
certain.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

import attrs
import gmpy2

from snapcore._display import DOUBLE_DIGITS, short
from snapcore.calibration._params import Calibration
from snapcore.data._values import read_value
from snapcore.errors import AuditError, AuditLimitError, ParameterError
from snapcore.exact._dyadic import dyadic_add, dyadic_cmp, dyadic_normalise, to_fraction

if TYPE_CHECKING:
    from snapcore.pipeline._stages import Pipeline

__all__ = [
    "DEFAULT_MAX_OUTPUTS",
    "AuditResult",
    "Auditable",
    "ExactOutputDistribution",
    "UGrid",
    "audit",
    "compare_ln",
    "exact_output_distribution",
    "tail_exponent",
]

#: Default limit on the number of outputs one walk may enumerate (about 2·b/Λ + 3).
DEFAULT_MAX_OUTPUTS = 1 << 15
#: The backends guarantee exponents down to -2**30; the tail point 2**-K must fit.
_MAX_TAIL_EXPONENT = 1 << 29


@runtime_checkable
class Auditable(Protocol):
    """What :func:`audit` needs: a :class:`~snapcore.SnappingMechanism`.

    The protocol exists so that the test suite can audit a pipeline built at a tiny
    precision (below the mechanism's 118-bit minimum) where every grid point can be
    enumerated by brute force.
    """

    @property
    def precision(self) -> int: ...

    @property
    def calibration(self) -> Calibration: ...

    @property
    def backend(self) -> Any: ...

    def transform(self, value: Any, u: Fraction | float, sign: int) -> float: ...


# ---------------------------------------------------------------------------------
# The sampling grid
# ---------------------------------------------------------------------------------


@attrs.frozen
class UGrid:
    """The q-bit floats in (0, 1), indexed exactly, with the law of ``U*``.

    Index ``i <= 2**(q-1) - 1`` stands for ``u = (2**(q-1) + m) * 2**(-(q-1) - e)``
    with ``e = 1 - (i >> (q-1))`` and ``m = i mod 2**(q-1)``: indices are all integers
    up to :attr:`top`, increasing with ``u``; ``top`` is ``1 - 2**-q``.  ``U*`` puts
    mass ``ulp_q(u) = 2**(-(q-1) - e)`` on ``u``, so ``P(U* <= u) = u + ulp_q(u)``.

    Parameters
    ----------
    q : int
        Bits of the grid, ``q >= 2``.
    """

    q: int = attrs.field(validator=attrs.validators.ge(2))

    @property
    def top(self) -> int:
        """Index of the largest grid point, ``1 - 2**-q``."""
        return (1 << (self.q - 1)) - 1

    def _split(self, i: int) -> tuple[int, int]:
        if i > self.top:
            raise ValueError(f"grid index {i} > top {self.top}")
        h = self.q - 1
        return 1 - (i >> h), i & ((1 << h) - 1)

    def value(self, i: int) -> Fraction:
        """The grid point with index ``i``, exactly."""
        e, m = self._split(i)
        h = self.q - 1
        return Fraction((1 << h) + m, 1 << (h + e))

    def cdf(self, i: int) -> Fraction:
        """``P(U* <= value(i)) = value(i) + ulp_q(value(i))``, exactly."""
        e, m = self._split(i)
        h = self.q - 1
        return Fraction((1 << h) + m + 1, 1 << (h + e))

    def cdf_dyadic(self, i: int) -> tuple[int, int]:
        """:meth:`cdf` as ``(n, k)``: ``P(U* <= value(i)) = n / 2**k``."""
        e, m = self._split(i)
        h = self.q - 1
        return (1 << h) + m + 1, h + e

    def index_of_power(self, k: int) -> int:
        """Index of ``2**-k`` (``k >= 1``)."""
        return (1 - k) << (self.q - 1)

    def index_floor(self, u: Fraction) -> int:
        """Index of the largest grid point ``<= u`` (``0 < u < 1``)."""
        n, d = u.numerator, u.denominator
        if not 0 < n < d:
            raise ValueError(f"u must be in (0, 1), got {u}")
        e = max(1, d.bit_length() - n.bit_length())
        while (n << e) < d:  # want 2**-e <= u
            e += 1
        while e > 1 and (n << (e - 1)) >= d:
            e -= 1
        h = self.q - 1
        m = ((n << (h + e)) // d) - (1 << h)
        return ((1 - e) << h) + m

    def index_floor_dyadic(self, m: int, e: int) -> int:
        """Index of the largest grid point ``<= m·2**e`` (``m > 0``, ``m·2**e < 1``)."""
        e0 = m.bit_length() + e  # 2**(e0 - 1) <= u < 2**e0
        eg = 1 - e0
        h = self.q - 1
        s = e + h + eg
        t = m << s if s >= 0 else m >> -s
        return ((1 - eg) << h) + (t - (1 << h))


def tail_exponent(cal: Calibration) -> int:
    """A ``K`` such that every ``U* <= 2**-K`` gives the clamp output, for either sign.

    Proof (also in ``docs/audit.md``): let ``u <= 2**-K`` and ``p >= 3``.  Then
    ``ln u <= -K ln 2``, so ``|RN(ln u)| >= K ln 2 (1 - 2**(1-p))`` and
    ``|N| = |RN(λ·RN(ln u))| >= λ K ln 2 (1 - 2**(1-p))**2 >= 0.38·λ·K``.  With
    ``K >= 3·(4b + 4Λ)/λ`` that is ``|N| >= 4b + 4Λ``.  As ``|x| <= b``,
    ``|x + N| >= 3b + 4Λ`` with the sign of ``N``, and rounding to p bits keeps
    ``|y| >= (3b + 4Λ)(1 - 2**(1-p)) >= b + Λ``.  Snapping moves ``y`` by at most
    ``Λ/2``, so ``|k·Λ| > b`` and the clamp returns ``±b``: the output is the same
    for all such ``u`` (the lower endpoint for ``S = +1``, the upper for ``S = -1``).
    """
    b = cal.unit_clamp_bound
    lam = cal.scale
    bound = 3 * (4 * b + 4 * cal.granularity) / lam
    return max(2, math.ceil(bound) + 2)


# ---------------------------------------------------------------------------------
# Walking the outputs of one (value, sign)
# ---------------------------------------------------------------------------------


#: What a walk enumerates: output doubles, or (on the direct path) grid indices k.
_O = TypeVar("_O", float, int)


class _Walker(Generic[_O]):
    """The outputs of ``u -> f(u)`` for one sign, as intervals of grid indices."""

    def __init__(
        self,
        f: Callable[[int], _O],
        grid: UGrid,
        sign: int,
        tail_index: int,
        guess: Callable[[_O], int | None],
        max_outputs: int,
    ) -> None:
        self._f: Callable[[int], _O] = f
        self._grid = grid
        self._sign = sign
        self._tail = tail_index
        self._guess: Callable[[_O], int | None] = guess
        self._max = max_outputs
        self._cache: dict[int, _O] = {}
        self.evaluations = 0

    def f(self, i: int) -> _O:
        r = self._cache.get(i)
        if r is None:
            r = self._f(i)
            self.evaluations += 1
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[i] = r
        return r

    def _check_side(self, other: _O, o: _O) -> None:
        # Below the current interval, outputs are < o for S=+1 and > o for S=-1.
        if (other >= o) if self._sign > 0 else (other <= o):
            raise AuditError(
                f"the map U* -> output is not monotone for sign {self._sign}: found "
                f"output {other!r} below the interval of {o!r}; the backend breaks the "
                "correct-rounding contract"
            )

    def lowest_index(self, o: _O, high: int, g: int | None) -> int:
        """The least index ``l > tail`` with ``f(i) == o`` on ``[l, high]``.

        Requires ``f(high) == o != f(tail)``.  Starts from the guess ``g`` of the
        boundary, gallops to a verified bracket, then bisects: the result depends only
        on evaluations of ``f`` and its monotonicity, never on the guess.
        """
        tail = self._tail
        if g is None or not tail < g <= high:
            g = high
        if self.f(g) == o:
            hi, step = g, 1
            while True:
                lo = hi - step
                if lo <= tail:
                    lo = tail
                    break
                if self.f(lo) != o:
                    break
                hi, step = lo, step * 2
        else:
            lo, step = g, 1
            while True:
                hi = lo + step
                if hi >= high:
                    hi = high
                    break
                if self.f(hi) == o:
                    break
                lo, step = hi, step * 2
        # f(lo) != o (or lo == tail), f(hi) == o
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.f(mid) == o:
                hi = mid
            else:
                lo = mid
        if lo != tail:
            self._check_side(self.f(lo), o)
        return hi

    def walk(self) -> Iterator[tuple[_O, int | None, int]]:
        """The pieces ``(output, low, high)`` from ``U*`` just below 1 downwards;
        ``low`` is None for the last piece, which extends down through the tail."""
        f, guess, check, tail = self.f, self._guess, self._check_side, self._tail
        tail_out = f(tail)
        high = self._grid.top
        o = f(high)
        count = 0
        while True:
            count += 1
            if count > self._max:
                raise AuditLimitError(
                    f"more than max_outputs = {self._max} outputs for sign {self._sign}; "
                    "raise max_outputs"
                )
            if o == tail_out:
                yield (o, None, high)
                return
            g = guess(o)
            # The usual case: the boundary is the guess or the grid point above it,
            # confirmed by evaluating both sides.
            if g is not None and tail < g <= high:
                fg = f(g)
                if fg == o:
                    nxt = f(g - 1)
                    if nxt != o:
                        check(nxt, o)
                        yield (o, g, high)
                        high, o = g - 1, nxt
                        continue
                elif g < high and f(g + 1) == o:
                    check(fg, o)
                    yield (o, g + 1, high)
                    high, o = g, fg
                    continue
            low = self.lowest_index(o, high, g)
            yield (o, low, high)
            high = low - 1
            nxt = f(high)
            check(nxt, o)
            o = nxt


# ---------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------


#: One output with its exact probability ``m·2**e`` (``m`` odd): ``(output, m, e)``.
_Mass = tuple[float, int, int]


def _check_pmf(value: Iterable[tuple[float, Fraction]]) -> tuple[tuple[float, Fraction], ...]:
    pmf = tuple(value)
    outs = [o for o, _ in pmf]
    if outs != sorted(set(outs)):
        raise ValueError("pmf: outputs must be distinct and sorted")
    if any(not isinstance(q, Fraction) or q <= 0 for _, q in pmf):
        raise ValueError("pmf: probabilities must be positive Fractions")
    return pmf


def _as_masses(pmf: tuple[tuple[float, Fraction], ...]) -> tuple[_Mass, ...] | None:
    """The probabilities of ``pmf`` as normalised dyadics, or None if one is not dyadic."""
    out = []
    for o, q in pmf:
        d = q.denominator
        if d & (d - 1):
            return None
        m, e = dyadic_normalise(q.numerator, 1 - d.bit_length())
        out.append((o, m, e))
    return tuple(out)


@attrs.frozen(kw_only=True, init=False, repr=False)
class ExactOutputDistribution:
    """The exact output distribution of the mechanism for one input.

    Attributes
    ----------
    value : float
        The input value ``f(D)``.
    pmf : tuple of (float, Fraction)
        Every possible output (increasing) with its exact probability.
    evaluations : int
        Calls of ``transform`` made to compute it.

    Notes
    -----
    Each probability ``n / 2**k`` is held as the pair ``(n, -k)`` (a ``pmf`` given with
    another probability is kept as given), and :meth:`moments`, :attr:`total` and
    :meth:`probability` work on those pairs.  An output ``j`` grid steps into a tail
    has ``k`` growing linearly in ``j``, so the Fractions of :attr:`pmf` take memory
    quadratic in the number of outputs; they are built on the first access of
    :attr:`pmf` (or :meth:`as_dict`) and kept.
    """

    value: float
    #: The probabilities as dyadics, outputs increasing (from a pmf checked by
    #: ``__init__``, or from the audit's walk); None when one is not dyadic.
    _masses: tuple[_Mass, ...] | None
    #: The pmf as given, when ``_masses`` is None.
    _rational: tuple[tuple[float, Fraction], ...] | None
    evaluations: int = 0
    _pmf: tuple[tuple[float, Fraction], ...] | None = attrs.field(
        init=False, default=None, eq=False
    )

    def __init__(
        self,
        *,
        value: float,
        pmf: Iterable[tuple[float, Fraction]],
        evaluations: int = 0,
    ) -> None:
        given = _check_pmf(pmf)
        masses = _as_masses(given)
        self.__attrs_init__(
            value=value,
            masses=masses,
            rational=given if masses is None else None,
            evaluations=evaluations,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(value={self.value!r}, pmf={self.pmf!r}, "
            f"evaluations={self.evaluations!r})"
        )

    @property
    def pmf(self) -> tuple[tuple[float, Fraction], ...]:
        """Every possible output (increasing) with its exact probability."""
        if self._rational is not None:
            return self._rational
        pmf = self._pmf
        if pmf is None:
            assert self._masses is not None
            pmf = tuple((o, to_fraction(m, e)) for o, m, e in self._masses)
            object.__setattr__(self, "_pmf", pmf)
        return pmf

    def probability(self, output: float) -> Fraction:
        """``P(output | value)``, exactly (0 for an impossible output)."""
        if self._masses is None:
            for o, q in self.pmf:
                if o == output:
                    return q
            return Fraction(0)
        for o, m, e in self._masses:
            if o == output:
                return to_fraction(m, e)
        return Fraction(0)

    def as_dict(self) -> dict[float, Fraction]:
        """The pmf as a new dict ``output -> probability``."""
        return dict(self.pmf)

    @property
    def total(self) -> Fraction:
        """The sum of all probabilities (exactly 1 for a complete distribution)."""
        if self._masses is None:
            return sum((q for _, q in self.pmf), Fraction(0))
        return to_fraction(*dyadic_normalise(*_dyadic_sum((m, e) for _, m, e in self._masses)))

    def __len__(self) -> int:
        return len(self._masses if self._masses is not None else self.pmf)

    def moments(self) -> tuple[Fraction, Fraction]:
        """The exact mean and variance of the output, ``(E[out], Var[out])``.

        Every probability is ``m·2**e`` and every output a double, so the sums of the
        probabilities and of their products with the output and its square are sums of
        dyadics, added exactly (pairwise, smallest exponents first): no rounding, and
        no gcd.
        """
        masses = self._masses
        if masses is None:
            raise AuditError("output probabilities are not dyadic rationals")
        s0 = []
        s1 = []
        s2 = []
        for o, m, e in masses:
            n, d = o.as_integer_ratio()  # o = n·2**f, d = 2**-f
            if d & (d - 1):
                raise AuditError(f"output {o!r} is not a dyadic rational")
            f = 1 - d.bit_length()
            s0.append((m, e))
            s1.append((m * n, e + f))
            s2.append((m * n * n, e + 2 * f))
        total = dyadic_normalise(*_dyadic_sum(s0))
        if total != (1, 0):
            raise AuditError(f"output probabilities sum to {to_fraction(*total)}, not 1")
        a, ea = _dyadic_sum(s1)  # E[out]
        b, eb = _dyadic_sum(s2)  # E[out²]
        var = dyadic_add(b, eb, -a * a, 2 * ea)  # Var = E[out²] − E[out]²
        return to_fraction(*dyadic_normalise(a, ea)), to_fraction(*var)


@attrs.frozen(kw_only=True)
class AuditResult:
    """The exact privacy audit of one pair of neighbouring inputs.

    Attributes
    ----------
    epsilon : Fraction
        The ε the mechanism claims.
    value, neighbour : float
        The two inputs.
    backend : str
        The backend audited.
    precision : int
        The mechanism's working precision p.
    sampler_precision : int
        The bits of the grid ``U*`` was assumed drawn on (p unless the audit was asked
        to model another sampler).
    distribution, neighbour_distribution : ExactOutputDistribution
        The exact output distributions for ``value`` and ``neighbour``.
    max_ratio : Fraction or None
        ``R = max_o max(P(o|v)/P(o|v'), P(o|v')/P(o|v))`` exactly; None when some
        output is possible for one input and impossible for the other.
    loss : float
        ``ln R`` rounded to a double (``inf`` when ``max_ratio`` is None).
    excess : float
        ``ln R − ε`` to about 50 correct bits (its sign is certain); ``inf`` when
        the loss is infinite.
    attained_at : tuple of float
        The outputs where the worst-case loss is attained.
    more_likely_under : str
        ``"value"`` or ``"neighbour"``: which input makes the first output of
        ``attained_at`` more likely (``"neither"`` when the distributions are equal).
    private : bool
        Whether ``loss <= epsilon`` (decided exactly).
    loss_decimal : str
        ``ln R`` to 40 significant digits (``"inf"`` when infinite).
    distance : Fraction
        ``|value − neighbour| / Δ`` exactly; the claim covers only pairs with
        ``distance <= 1`` (see :attr:`neighbouring`).
    """

    epsilon: Fraction
    value: float
    neighbour: float
    backend: str
    precision: int
    sampler_precision: int
    distribution: ExactOutputDistribution
    neighbour_distribution: ExactOutputDistribution
    max_ratio: Fraction | None
    loss: float
    excess: float
    attained_at: tuple[float, ...]
    more_likely_under: str
    private: bool
    distance: Fraction
    loss_decimal: str

    @property
    def neighbouring(self) -> bool:
        """Whether the inputs are at most one sensitivity apart (the claim's scope)."""
        return self.distance <= 1

    @property
    def verdict(self) -> str:
        """One line: the loss against the claimed ε."""
        note = ""
        if not self.neighbouring:
            distance = short(self.distance, digits=DOUBLE_DIGITS)
            note = (
                f" [inputs are {distance} sensitivities apart (more than "
                "1), not neighbours: "
                "the epsilon claim does not cover them]"
            )
        if self.max_ratio is None:
            return note + (
                f"NOT PRIVATE: infinite privacy loss (output {self.attained_at[0]!r} is "
                f"possible only under the {self.more_likely_under})"
            )
        rel = "<=" if self.private else ">"
        word = "private" if self.private else "NOT PRIVATE"
        epsilon = short(self.epsilon, digits=DOUBLE_DIGITS)
        return (
            f"{word}: loss {self.loss_decimal} {rel} epsilon {epsilon} "
            f"(loss - epsilon = {self.excess:.6g})"
        ) + note


# ---------------------------------------------------------------------------------
# Certified comparison of ln R with epsilon
# ---------------------------------------------------------------------------------


def _mpfr_bounds(ctx_down: Any, ctx_up: Any, q: Fraction) -> tuple[Any, Any]:
    n, d = gmpy2.mpz(q.numerator), gmpy2.mpz(q.denominator)
    return ctx_down.div(n, d), ctx_up.div(n, d)


def compare_ln(ratio: Fraction, epsilon: Fraction, *, start_bits: int = 256) -> tuple[int, float]:
    """Compare ``ln(ratio)`` with ``epsilon`` with certainty.

    Encloses ``ln(ratio) − epsilon`` in an interval with MPFR's directed roundings,
    doubling the precision until the interval excludes 0 and is relatively narrower
    than ``2**-50``.  ``ln(ratio) = epsilon`` cannot happen for a rational
    ``epsilon > 0`` (``exp`` of a non-zero rational is irrational), so this ends.

    Returns
    -------
    tuple of (int, float)
        The sign of ``ln(ratio) − epsilon`` (−1 or 1; 0 only if ``ratio == 1`` and
        ``epsilon == 0``) and that difference rounded to a double.
    """
    if ratio <= 0:
        raise ValueError(f"ratio must be > 0, got {ratio}")
    if ratio == 1 and epsilon == 0:
        return 0, 0.0
    bits = start_bits
    while True:
        emax = 1 << 30
        down = gmpy2.context(precision=bits, round=gmpy2.RoundDown, emin=-emax, emax=emax)
        up = gmpy2.context(precision=bits, round=gmpy2.RoundUp, emin=-emax, emax=emax)
        r_lo, r_hi = _mpfr_bounds(down, up, ratio)
        e_lo, e_hi = _mpfr_bounds(down, up, epsilon)
        ln_lo, ln_hi = down.log(r_lo), up.log(r_hi)
        d_lo, d_hi = down.sub(ln_lo, e_hi), up.sub(ln_hi, e_lo)
        if d_lo > 0 or d_hi < 0:
            width = up.sub(d_hi, d_lo)
            mag = min(abs(d_lo), abs(d_hi))
            if width <= mag * gmpy2.mpfr(2) ** -50 or bits > 1 << 16:
                mid = up.div(up.add(d_lo, d_hi), 2)
                return (1 if d_lo > 0 else -1), float(mid)
        if bits > 1 << 20:  # pragma: no cover - would need a ratio within 2**-2**20 of e**eps
            raise AuditError("could not separate ln(ratio) from epsilon")
        bits *= 2


def _ln_decimal(ratio: Fraction, digits: int = 40) -> str:
    """``ln(ratio)`` to ``digits`` significant digits (computed at 512 bits)."""
    if ratio == 1:
        return "0"
    ctx = gmpy2.context(precision=512, emin=-(1 << 30), emax=1 << 30)
    r = ctx.div(gmpy2.mpz(ratio.numerator), gmpy2.mpz(ratio.denominator))
    return format(ctx.log(r), f".{digits}g")


# ---------------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------------


def _index_guesser(
    cal: Calibration, x: tuple[int, int], sign: int, grid: UGrid
) -> Callable[[int], int | None]:
    """A guess of the grid index of the least ``U*`` whose snapped index is at least
    ``j`` (``S = +1``) or at most ``j`` (``S = -1``), for the centred value ``x``.

    Only the speed of the audit depends on it: the walker confirms every boundary by
    evaluating the mechanism on both sides.  The guess inverts the exact semantics
    stage by stage (``docs/semantics.md``): the snap threshold ``t = (j ∓ 1/2)·Λ`` on
    ``y``, then the three p-bit roundings ``y = RN(x + N)``, ``n = RN(λ·l)``,
    ``l = RN(ln U*)`` (``RN(z) >= T`` for a p-bit ``T`` when ``z`` is above the
    midpoint below ``T``, which is the (p+1)-bit float just below ``T``), then
    ``U* = exp(l)`` at ``p + 64`` bits.  It is exact up to ties and the last rounding
    of ``exp``, so a boundary costs about two evaluations whatever ``b/Λ`` is; without
    modelling the roundings of ``y`` and ``l`` the guess would be off by up to about
    ``|y|/λ`` grid points.  MPFR with directed roundings on exact operands throughout.
    """
    p = cal.precision
    L = cal.granularity_log2
    lam_m, lam_e = cal.scale_dyadic
    xn, xd = x
    emax = 1 << 30
    mpz = gmpy2.mpz
    mid = gmpy2.context(precision=p + 1, emin=-emax, emax=emax)  # midpoints of p bits
    up = gmpy2.context(precision=p, round=gmpy2.RoundUp, emin=-emax, emax=emax)
    down = gmpy2.context(precision=p, round=gmpy2.RoundDown, emin=-emax, emax=emax)
    wide = gmpy2.context(precision=p + 64, emin=-emax, emax=emax)
    lam = up.mul_2exp(mpz(lam_m), lam_e)  # exact: λ has p bits
    top = 1 << p
    # gmpy2's mul_2exp of an mpfr costs as much as a logarithm: the threshold below is
    # formed in integers and the precision raised with plus (exact).
    below, plus = mid.next_below, mid.plus
    # Consecutive thresholds differ by D = ±Λ/λ up to a few units in their last place,
    # so exp(a_j) = exp(a_{j∓1})·exp(D)·(1 + ε) with ε = a_j − a_{j∓1} − D tiny (ε²/2 is
    # below 2**-190 while |a| < 2**20): three products instead of an exp.  Every
    # 64th guess starts afresh.
    step = wide.div(wide.mul_2exp(mpz(1), L), lam)
    shift = {1: (step, wide.exp(step)), -1: (-step, wide.exp(-step))}
    last: list[Any] = [None, None, None, 0]  # j, a_j, exp(a_j), guesses since a fresh exp

    def guess(j: int) -> int | None:
        # t = (j ∓ 1/2)·Λ = c·2**(L−1), c odd; a = the (p+1)-bit float below t.
        c = 2 * j - sign
        s = p + 1 - abs(c).bit_length()
        am, ae = c << s, L - 1 - s
        am, ae = ((am << 1) - 1, ae - 1) if am == top else (am - 1, ae)
        # S = +1: RN(x + N) >= t for N >= RU(a − x); S = −1: RN(x + N) < t for
        # n = −N > x − a, i.e. n at least the p-bit float above RD(x − a).
        if ae >= 0:
            num, den = (am << ae) * xd - xn, xd
        else:
            num, den = am * xd - (xn << -ae), xd << -ae
        n = up.div(num, den) if sign > 0 else up.next_above(down.div(-num, den))
        if n >= 0:
            return None
        lo = up.div(below(plus(n)), lam)  # RN(λ·l) >= n: l >= RU(mid below n / λ)
        if lo >= 0:
            return None
        a = below(plus(lo))  # RN(ln U*) >= l: ln U* >= a, the mid below l
        jp, ap, up_, run = last
        if jp is not None and abs(j - jp) == 1 and run < 64 and abs(a) < 1 << 20:
            d, e = shift[sign * (j - jp)]
            v = wide.mul(up_, e)
            u = wide.add(v, wide.mul(v, wide.sub(wide.sub(a, ap), d)))
            last[:] = j, a, u, run + 1
        else:
            u = wide.exp(a)
            last[:] = j, a, u, 0
        if not 0 < u < 1:
            return None
        man, ex = u.as_mantissa_exp()
        return grid.index_floor_dyadic(int(man), int(ex))

    return guess


def _boundary_guesser(
    cal: Calibration, value: Fraction, sign: int, grid: UGrid
) -> Callable[[float], int | None]:
    """:func:`_index_guesser` for an output double ``o`` (the generic walk): the least
    grid index whose snap gives ``o``, from ``k = (o − c)/(Δ·Λ)``."""
    b = cal.unit_clamp_bound
    x = max(-b, min(b, (value - cal.centre) / cal.sensitivity))  # exact, as the pipeline
    core = _index_guesser(cal, (x.numerator, x.denominator), sign, grid)
    unit = cal.sensitivity * cal.granularity

    def guess(o: float) -> int | None:
        k = (Fraction(o) - cal.centre) / unit
        return core(math.ceil(k) if sign > 0 else math.floor(k))

    return guess


def _dyadic_sum(terms: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """The exact sum of the terms ``m·2**e``, as a pair ``(m, e)`` (not normalised).

    Pairwise over the terms sorted by ``e``: a partial sum of neighbours spans their
    range of exponents plus a few bits, so each level of the tree handles about as
    many bits as the terms themselves, and the whole sum costs ``O(bits·log n)``.  A
    running sum would carry the widest mantissa (the tail's ``K`` bits) through every
    step, ``O(n·K)``.
    """
    level = sorted(terms, key=lambda me: me[1])
    if not level:
        return 0, 0
    while len(level) > 1:
        nxt: list[tuple[int, int]] = []
        for i in range(0, len(level) - 1, 2):
            (m1, e1), (m2, e2) = level[i], level[i + 1]  # e1 <= e2
            nxt.append(((m2 << (e2 - e1)) + m1, e1))
        if len(level) & 1:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _estimate_outputs(cal: Calibration) -> int:
    return 2 * math.floor(cal.unit_clamp_bound / cal.granularity) + 3


class _DirectRun:
    """For a plain :class:`~snapcore.SnappingMechanism`: its transform split
    into the grid index ``k`` of a draw and the output of ``k``
    (:meth:`Pipeline.snap_index <snapcore.pipeline.Pipeline.snap_index>` and
    :meth:`~snapcore.pipeline.Pipeline.index_output`, the two halves of ``run``),
    without re-validating the value and ``U*`` at each call (valid by construction).

    The walk enumerates indices instead of outputs: ``k`` is clamped to
    ``[-kend, kend]``, where ``±kend`` are the least indices that the clamp sends to
    ``±b`` (the index map is monotone wherever the output map is).  Outputs are made
    once per index at the end; indices giving the same double are merged there.
    """

    def __init__(self, pipe: Pipeline, value: Fraction, q: int) -> None:
        cal = pipe.calibration
        self.pipe = pipe
        self.x = pipe.centre(value)
        self.p = cal.precision
        self.q = q
        bm, be = cal.unit_clamp_bound_dyadic
        L = cal.granularity_log2
        s = be - L
        kmax = bm << s if s >= 0 else bm >> -s  # |k·Λ| <= b  <=>  |k| <= kmax
        self.kend = kmax if dyadic_cmp(kmax, L, bm, be) == 0 else kmax + 1

    @classmethod
    def of(cls, mechanism: Auditable, value: Fraction, q: int) -> _DirectRun | None:
        from snapcore.mechanism._mechanism import SnappingMechanism

        if type(mechanism) is not SnappingMechanism:
            return None  # wrappers and test doubles keep their own transform
        return cls(mechanism.pipeline, value, q)

    def index_map(self, sign: int) -> Callable[[int], int]:
        """Grid index of ``U*`` -> clamped snap index, for one sign."""
        h = self.q - 1
        mask = (1 << h) - 1
        shift = self.p - self.q
        top = -(self.p - 1) - 1
        kend = self.kend
        x = self.x
        snap_index = self.pipe.snap_index

        def k_of(i: int) -> int:
            k = snap_index(x, sign, ((1 << h) | (i & mask)) << shift, top + (i >> h))
            return kend if k > kend else (-kend if k < -kend else k)

        return k_of


def exact_output_distribution(
    mechanism: Auditable,
    value: Any,
    *,
    sampler_precision: int | None = None,
    max_outputs: int = DEFAULT_MAX_OUTPUTS,
    progress: Callable[[int], None] | None = None,
    fast: bool = True,
) -> ExactOutputDistribution:
    """The exact output distribution of ``mechanism.transform`` for one input.

    Parameters
    ----------
    mechanism : SnappingMechanism
        The mechanism (its backend is the one audited).
    value : real
        The input ``f(D)``.
    sampler_precision : int, optional
        Model ``U*`` as drawn on the q-bit grid (``q <= p``) instead of the p-bit one;
        for the double-sampler demonstration only (``q = 53`` is a double's grid).
    max_outputs : int
        Refuse (:class:`~snapcore.AuditLimitError`) if a walk needs more outputs.
    progress : callable, optional
        Called with 1 after each output found.
    fast : bool, default True
        For a plain :class:`~snapcore.SnappingMechanism`, walk the snapped
        grid indices of the pipeline directly (the same computation as ``transform``,
        without validating each call); False walks ``transform`` itself.  The result
        is the same (``evaluations`` aside); the switch exists to test that.

    Returns
    -------
    ExactOutputDistribution

    Raises
    ------
    AuditLimitError
        If about ``2·b/Λ + 3`` outputs exceed ``max_outputs``, before any work.
    AuditError
        If the map ``U* -> output`` is found not to be monotone, or the probabilities
        do not sum to exactly 1.
    """
    vf, masses, evaluations = _output_masses(
        mechanism,
        value,
        sampler_precision=sampler_precision,
        max_outputs=max_outputs,
        progress=progress,
        fast=fast,
    )
    return _distribution(vf, masses, evaluations)


def _distribution(
    value: float, masses: tuple[_Mass, ...], evaluations: int
) -> ExactOutputDistribution:
    """The :class:`ExactOutputDistribution` of normalised dyadic ``masses`` (its
    Fractions are built on first use)."""
    d = ExactOutputDistribution.__new__(ExactOutputDistribution)
    d.__attrs_init__(value=value, masses=masses, rational=None, evaluations=evaluations)
    return d


def _output_masses(
    mechanism: Auditable,
    value: Any,
    *,
    sampler_precision: int | None,
    max_outputs: int,
    progress: Callable[[int], None] | None,
    fast: bool,
) -> tuple[float, tuple[_Mass, ...], int]:
    """:func:`exact_output_distribution` as ``(value, masses, evaluations)``: every
    output (increasing) with its probability ``m·2**e`` as ``(output, m, e)``, ``m``
    odd."""
    cal = mechanism.calibration
    p = mechanism.precision
    q = p if sampler_precision is None else sampler_precision
    if isinstance(q, bool) or not isinstance(q, int) or not 2 <= q <= p:
        raise ParameterError(f"sampler_precision must be an int in [2, {p}], got {q!r}")
    if isinstance(max_outputs, bool) or not isinstance(max_outputs, int) or max_outputs < 1:
        raise ParameterError(f"max_outputs must be an int >= 1, got {max_outputs!r}")
    est = _estimate_outputs(cal)
    if est > max_outputs:
        raise AuditLimitError(
            f"these parameters have about 2*b/Lambda + 3 = {est} outputs (b = "
            f"{float(cal.unit_clamp_bound)!r}, Lambda = 2**{cal.granularity_log2}); the audit "
            "enumerates "
            f"every output and its limit is max_outputs = {max_outputs}: raise max_outputs "
            "(cost grows linearly), narrow the clamp interval or raise epsilon"
        )
    v = read_value(value)
    vf = float(v)
    grid = UGrid(q)
    K = tail_exponent(cal)
    if K > _MAX_TAIL_EXPONENT:
        raise AuditLimitError(
            f"the clamp tail starts at U* = 2**-{K}, beyond the backends' guaranteed "
            f"exponent range (2**-{_MAX_TAIL_EXPONENT}); narrow the clamp interval or raise "
            "epsilon"
        )
    tail_index = grid.index_of_power(K)
    acc: dict[float, tuple[int, int]] = {}  # output -> (m, e): mass m·2**e
    by_key: dict[Any, tuple[int, int]] = {}  # output, or grid index k (direct) -> mass
    evaluations = 0
    direct = _DirectRun.of(mechanism, v, q) if fast else None
    for sign in (1, -1):
        walker: _Walker[float] | _Walker[int]
        if direct is not None:
            walker = _Walker(
                direct.index_map(sign),
                grid,
                sign,
                tail_index,
                _index_guesser(cal, direct.x, sign, grid),
                max_outputs,
            )
        else:

            def f(i: int, sign: int = sign) -> float:
                return mechanism.transform(value, grid.value(i), sign)

            guess = _boundary_guesser(cal, v, sign, grid)
            walker = _Walker(f, grid, sign, tail_index, guess, max_outputs)
        cdf = grid.cdf_dyadic
        below, below_cdf = None, (0, 0)  # the previous piece's low − 1 and its cdf
        for key, low, high in walker.walk():
            # mass = (cdf(high) − cdf(low − 1)) / 2, in integers over powers of two:
            # Fractions with 2**K denominators would spend most of the audit in gcds.
            hn, hk = below_cdf if high == below else cdf(high)
            if low is None:
                ln_, lk = 0, 0
            else:
                below = low - 1
                ln_, lk = below_cdf = cdf(below)
            k = max(hk, lk)
            mass = dyadic_normalise((hn << (k - hk)) - (ln_ << (k - lk)), -(k + 1))
            old = by_key.get(key)
            by_key[key] = mass if old is None else dyadic_add(*old, *mass)
            if progress is not None:
                progress(1)
        evaluations += walker.evaluations
    if direct is None:
        acc = by_key
    else:  # grid indices to outputs; indices that give the same double are merged
        out = direct.pipe.index_output
        for key, mass in by_key.items():
            o = out(key)
            old = acc.get(o)
            acc[o] = mass if old is None else dyadic_add(*old, *mass)
    total = dyadic_normalise(*_dyadic_sum(acc.values()))
    if total != (1, 0):
        t = to_fraction(*total)
        raise AuditError(f"output probabilities for value {vf!r} sum to {t}, not 1")
    return vf, tuple(sorted((o, m, e) for o, (m, e) in acc.items())), evaluations


def _make_progress(total: int, desc: str) -> tuple[Callable[[int], None] | None, Any]:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - depends on the optional extra
        warnings.warn(
            "progress=True needs tqdm (pip install snapcore[audit]); running without a bar",
            stacklevel=3,
        )
        return None, None
    bar = tqdm(total=total, desc=desc, unit="output", leave=False)
    return bar.update, bar


def audit(
    mechanism: Auditable,
    value: Any,
    neighbour: Any,
    *,
    sampler_precision: int | None = None,
    max_outputs: int = DEFAULT_MAX_OUTPUTS,
    progress: bool = False,
) -> AuditResult:
    """Exact worst-case privacy loss of ``mechanism`` between two inputs.

    Computes both exact output distributions of :meth:`SnappingMechanism.transform`
    (so the backend is audited as it really computes), the largest probability
    ratio ``R`` over all outputs as an exact rational, and decides ``ln R <= ε``
    with certainty.

    Parameters
    ----------
    mechanism : SnappingMechanism
        The mechanism to audit.
    value, neighbour : real
        Two inputs; for a privacy statement, at distance at most the sensitivity.
    sampler_precision : int, optional
        Model ``U*`` on a coarser q-bit grid (``q < p``).  **Demonstration only**:
        ``q = 53`` is a double-precision sampler (as in Mironov 2012), which is not what
        snapcore draws; the default (p) audits snapcore's own sampler.
    max_outputs : int
        Enumeration limit; the audit refuses (:class:`~snapcore.AuditLimitError`) rather than
        truncate.
    progress : bool
        Show a progress bar (needs ``tqdm``: ``pip install snapcore[audit]``).

    Returns
    -------
    AuditResult

    Raises
    ------
    ParameterError
        If ``value`` or ``neighbour`` is not a finite real, or ``sampler_precision``
        is out of range.
    AuditLimitError
        If the parameters have too many outputs to enumerate.
    AuditError
        If the mechanism breaks the audit's assumptions (non-monotone map,
        probabilities not summing to 1).

    Examples
    --------
    >>> from snapcore import SnappingMechanism, audit
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bound=8.0)
    >>> r = audit(m, 0.0, 1.0)
    >>> r.private, len(r.distribution)
    (True, 9)
    """
    v = read_value(value, "value")
    w = read_value(neighbour, "neighbour")
    cal = mechanism.calibration
    bar: Any = None
    cb: Callable[[int], None] | None = None
    if progress:
        # Each input has about 2*b/Lambda + 3 outputs over both signs, and the bar
        # advances once per output: two inputs, twice the estimate.
        cb, bar = _make_progress(2 * _estimate_outputs(cal), "audit")
    try:
        v_masses = _output_masses(
            mechanism,
            v,
            sampler_precision=sampler_precision,
            max_outputs=max_outputs,
            progress=cb,
            fast=True,
        )
        w_masses = _output_masses(
            mechanism,
            w,
            sampler_precision=sampler_precision,
            max_outputs=max_outputs,
            progress=cb,
            fast=True,
        )
    finally:
        if bar is not None:
            bar.total = bar.n  # the estimate is close, not exact: end the bar at 100%
            bar.refresh()
            bar.close()
    dv, dw = _distribution(*v_masses), _distribution(*w_masses)
    pv = {o: (m, e) for o, m, e in v_masses[1]}
    pw = {o: (m, e) for o, m, e in w_masses[1]}
    # Every probability is m·2**e with m odd: a ratio a/c is the integer pair
    # (ma·2**(ea − ec), mc) (shifted the other way when ec > ea), and ratios are
    # compared by cross multiplication.  Deep in a tail |e| grows to about 1.44·b/λ,
    # but |ea − ec| is at most log2 of the ratio plus the mantissas' bits, so the
    # integers have about p bits and the search costs O(p) per output, where
    # Fractions with 2**-e denominators would cost O(|e|).
    bn, bd = 1, 1
    attained: list[float] = []
    under = "value"
    infinite: list[tuple[float, str]] = []
    for o in sorted(set(pv) | set(pw)):
        a, c = pv.get(o), pw.get(o)
        if a is None or c is None:  # every listed probability is > 0
            infinite.append((o, "value" if a is not None else "neighbour"))
            continue
        (ma, ea), (mc, ec) = a, c
        an = ma << max(0, ea - ec)  # a / c = an / cn
        cn = mc << max(0, ec - ea)
        rn, rd, who = (an, cn, "value") if an >= cn else (cn, an, "neighbour")
        lhs, rhs = rn * bd, bn * rd
        if lhs > rhs:
            bn, bd, attained, under = rn, rd, [o], who
        elif lhs == rhs:
            attained.append(o)
    best: Fraction | None = Fraction(bn, bd)
    p = mechanism.precision
    q = p if sampler_precision is None else sampler_precision
    backend = getattr(mechanism.backend, "name", str(mechanism.backend))
    eps = cal.epsilon
    dist = abs(v - w) / cal.sensitivity
    max_ratio: Fraction | None
    if infinite:
        max_ratio, loss, excess, private, decimal = None, math.inf, math.inf, False, "inf"
        attained_at = tuple(o for o, _ in infinite)
        under = infinite[0][1]
    else:
        assert best is not None
        if best == 1:
            under = "neither"
        sgn, excess = compare_ln(best, eps)
        _, loss = compare_ln(best, Fraction(0)) if best != 1 else (0, 0.0)
        max_ratio, private, decimal = best, sgn <= 0, _ln_decimal(best)
        attained_at = tuple(attained)
    return AuditResult(
        epsilon=eps,
        value=float(v),
        neighbour=float(w),
        backend=backend,
        precision=p,
        sampler_precision=q,
        distribution=dv,
        neighbour_distribution=dw,
        max_ratio=max_ratio,
        loss=loss,
        excess=excess,
        attained_at=attained_at,
        more_likely_under=under,
        private=private,
        distance=dist,
        loss_decimal=decimal,
    )
