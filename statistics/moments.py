"""Built-in statistics of the values themselves: sum, mean, sample variance and sample
covariance (docs/statistics.md).

Every value is computed **exactly** from the data clamped to the bounds (the data are
doubles, hence exact rationals; :mod:`snapcore.exact` sums them as integers) and
handed to the mechanism as an exact :class:`fractions.Fraction`.  No floating-point
rounding happens between the data and the mechanism, so each declared sensitivity
is a theorem about the value the mechanism receives (Casacuberta et al. 2022).

Notation: data bounds ``[a, b]`` (covariance: ``[a, b]`` and ``[c, d]``), widths
``w = b − a`` (and ``v = d − c``), ``n`` records.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from snapcore.data._columns import Dataset
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import Column
from snapcore.errors import ParameterError, keyword
from snapcore.exact._sums import (
    DOT_SCALE,
    SUM_SCALE,
    clamped_cross_moments,
    clamped_moments,
)
from snapcore.plugins._hookspecs import hookimpl
from snapcore.plugins._statistic import (
    DataBounds,
    OutputDomain,
    Prepared,
    State,
    Statistic,
    clamp_fraction,
    one_column_bounds,
    resolve_n,
)

if TYPE_CHECKING:
    from snapcore.plugins._registries import StatisticRegistry

__all__ = ["Covariance", "Mean", "Sum", "Variance", "variance_range_bound"]

REPLACE = Neighbouring.REPLACE
ADD_REMOVE = Neighbouring.ADD_REMOVE


_SUM_DEN = Fraction(1, 1 << SUM_SCALE)


def _one_column_state(
    chunk: Dataset, data_bounds: DataBounds | None, name: str, *, squares: bool
) -> State:
    """``(records, Σc·2**1074[, Σc²·2**2148])`` of the clamped values ``c`` (exact)."""
    lo, hi = one_column_bounds(data_bounds, name)
    raw = chunk.float64_view(0)
    if raw is not None:  # one pass: the engines refuse NaN and ±inf themselves
        try:
            fast = clamped_moments(raw, lo, hi, squares=squares)
        except ParameterError:
            pass  # chunk.column(0) raises the error that names the column
        else:
            return (chunk.size, *fast) if squares else (chunk.size, fast[0])
    col = chunk.column(0)
    s: int | Fraction
    q: int | Fraction
    if col.doubles is not None:  # the fast exact engines
        s, q = clamped_moments(col.doubles, lo, hi, squares=squares)
    else:  # records that are exact reals but not doubles: the same sums, in rationals
        c = _clamped_fractions(col, lo, hi)
        s = _scaled(sum(c, Fraction(0)), SUM_SCALE)
        q = _scaled(sum((v * v for v in c), Fraction(0)), DOT_SCALE) if squares else 0
    return (chunk.size, s, q) if squares else (chunk.size, s)


def _clamped_fractions(col: Column, lo: float, hi: float) -> list[Fraction]:
    a, b = Fraction(lo), Fraction(hi)
    return [clamp_fraction(v, a, b) for v in col.fractions()]


def _scaled(q: Fraction, scale: int) -> int | Fraction:
    """``q·2**scale``: an int whenever the values were binary fractions (doubles, ints,
    long doubles), else the exact Fraction (a Decimal 0.1, a Fraction 1/3); states add
    either way, exactly."""
    r = q * (1 << scale)
    return r.numerator if r.denominator == 1 else r


def variance_range_bound(n: int, w: Fraction, v: Fraction | None = None) -> Fraction:
    """The largest sample variance (``v=None``) or ``|sample covariance|`` of ``n >= 2``
    records with ranges of widths ``w`` (and ``v``).

    ``S = Σ(x_i − x̄)²`` is convex in the data, so its maximum over the box
    ``[a, b]^n`` is at a vertex: ``k`` records at ``b`` and ``n − k`` at ``a`` give
    ``S = k(n − k)w²/n``, largest at ``k = ⌊n/2⌋``.  Hence
    ``n/(n−1)·w²/4`` for even n (docs/statistics.md) and ``(n+1)/n·w²/4`` for odd n.  The
    covariance is bounded by Cauchy–Schwarz, ``|cov| <= sqrt(var_x·var_y)``, with the
    same factor times ``w·v/4``; both are reached (see the docs).
    """
    wv = w * w if v is None else w * v
    if n % 2 == 0:
        return Fraction(n, n - 1) * wv / 4
    return Fraction(n + 1, n) * wv / 4


class Sum(Statistic):
    """Sum of the values clamped to ``[a, b]``.

    Relations:

    - ``replace`` (bounded: n public, one record replaced): Δ = b − a; the sum lies
      in ``[n·a, n·b]``, so B′ = ``n·max(|a|, |b|)``.
    - ``add-remove`` (unbounded: add or remove one record): ``Δ = max(|a|, |b|)``, the
      largest value one record contributes.  With a public cap ``N`` on the number of
      records the sum lies in ``[N·min(a, 0), N·max(b, 0)]``; the computed sum is
      clamped to that interval (1-Lipschitz, so Δ still holds), B′ = ``N·max(|a|, |b|)``.
    """

    name = "sum"
    summary = "sum of the values clamped to [a, b]"
    relations = (REPLACE, ADD_REMOVE)

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """The statistic's range, ``prepared.value_range``."""
        return OutputDomain(
            lower=prepared.value_range[0],
            upper=prepared.value_range[1],
            reason="the sum of n values in [a, b] (add-remove: at most N values, clamped there)",
        )

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records, Σ clamped · 2**1074)``."""
        return _one_column_state(chunk, data_bounds, self.name, squares=False)

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        lo, hi = one_column_bounds(data_bounds, self.name)
        a, b = Fraction(lo), Fraction(hi)
        n_used, n_note = resolve_n(int(state[0]), n, relation, self.name)
        total = state[1] * _SUM_DEN
        if relation is REPLACE:
            delta = b - a
            rng = (n_used * a, n_used * b)
            deriv = (
                "replacing one record x by x' in [a, b] changes the sum by x' - x, so "
                "Δ = b − a; n values in [a, b] sum to [n·a, n·b]"
            )
        else:
            delta = max(abs(a), abs(b))
            rng = (n_used * min(a, Fraction(0)), n_used * max(b, Fraction(0)))
            total = clamp_fraction(total, *rng)
            deriv = (
                "adding or removing a record x in [a, b] changes the sum by |x| <= "
                "max(|a|, |b|) = Δ; at most N records sum to [N·min(a,0), N·max(b,0)] "
                "(the computed sum is clamped there, which keeps Δ)"
            )
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(total,),
            labels=(self.name,),
            sensitivity=delta,
            value_range=rng,
            derivation=deriv,
            n=n_used,
            notes=(n_note,),
        )


class Mean(Statistic):
    """Mean of the values clamped to ``[a, b]``.

    Relation ``replace`` (bounded: n public, one record replaced): the mean is the
    exact sum over the public n, Δ = (b − a)/n, and it lies in ``[a, b]``, so
    ``B′ = max(|a|, |b|)`` (docs/statistics.md), reached by n records all at the endpoint of
    larger magnitude.
    """

    name = "mean"
    summary = "mean of the values clamped to [a, b] (n public)"
    relations = (REPLACE,)

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """The statistic's range, ``prepared.value_range``."""
        return OutputDomain(
            lower=prepared.value_range[0],
            upper=prepared.value_range[1],
            reason="the mean of values in [a, b] lies in [a, b]",
        )

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records, Σ clamped · 2**1074)``."""
        return _one_column_state(chunk, data_bounds, self.name, squares=False)

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        lo, hi = one_column_bounds(data_bounds, self.name)
        a, b = Fraction(lo), Fraction(hi)
        n_used, n_note = resolve_n(int(state[0]), n, relation, self.name)
        if n_used < 1:
            raise ParameterError(
                f"statistic 'mean' needs n >= 1 records{_given(n)}", parameter="n"
            )
        mean = Fraction(state[1], n_used << SUM_SCALE)
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(mean,),
            labels=(self.name,),
            sensitivity=(b - a) / n_used,
            value_range=(a, b),
            derivation=(
                "the exact sum changes by at most b − a when one record is replaced, "
                "so the mean changes by at most Δ = (b − a)/n; it lies in [a, b], "
                "B′ = max(|a|, |b|) (docs/statistics.md)"
            ),
            n=n_used,
            notes=(n_note,),
        )


class Variance(Statistic):
    """Sample variance ``Σ(x_i − x̄)²/(n − 1)`` of the values clamped to ``[a, b]``.

    Relation ``replace`` (bounded: n public, one record replaced), ``n >= 2``.

    Δ = (b − a)²/n: with ``S = Σ(x_i − x̄)²`` and the other n − 1 records fixed
    (mean ``m``), ``S = S₋ + (n−1)/n·(x_n − m)²`` and ``0 <= (x_n − m)² <= w²``, so
    replacing ``x_n`` moves S by at most ``(n−1)/n·w²`` and the variance by ``w²/n``
    (reached: n − 1 records at a, the last one moved from a to b).

    B′: ``n/(n−1)·w²/4`` for even n (docs/statistics.md) and ``(n+1)/n·w²/4`` for odd n.
    *Note:* the bound ``w²/4`` sometimes given for odd n is too small: ``(n−1)/2``
    records at a and ``(n+1)/2`` at b reach ``(n+1)/n·w²/4`` (n = 3: w²/3 > w²/4); see
    :func:`variance_range_bound`.
    """

    name = "variance"
    summary = "sample variance (n − 1 denominator) of the values clamped to [a, b]"
    relations = (REPLACE,)

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """The statistic's range, ``prepared.value_range``."""
        return OutputDomain(
            lower=prepared.value_range[0],
            upper=prepared.value_range[1],
            reason="a variance is >= 0 and at most the range bound B′",
        )

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records, Σc · 2**1074, Σc² · 2**2148)`` of the clamped values c."""
        return _one_column_state(chunk, data_bounds, self.name, squares=True)

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        lo, hi = one_column_bounds(data_bounds, self.name)
        w = Fraction(hi) - Fraction(lo)
        n_used, n_note = resolve_n(int(state[0]), n, relation, self.name)
        if n_used < 2:
            raise ParameterError(
                f"statistic 'variance' needs n >= 2 records{_given(n)}", parameter="n"
            )
        _, s, q = state
        # (Σc² − (Σc)²/n)/(n − 1), with both sums over the common scale 2**2148
        var = Fraction(q * n_used - s * s, (n_used * (n_used - 1)) << DOT_SCALE)
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(var,),
            labels=(self.name,),
            sensitivity=w * w / n_used,
            value_range=(Fraction(0), variance_range_bound(n_used, w)),
            derivation=(
                "S = S₋ + (n−1)/n·(x − m)² with (x − m)² in [0, w²], so replacing one "
                "record moves the variance by at most Δ = w²/n; B′ = n/(n−1)·w²/4 "
                "(even n), (n+1)/n·w²/4 (odd n)"
            ),
            n=n_used,
            notes=(n_note,),
        )


class Covariance(Statistic):
    """Sample covariance ``Σ(x_i − x̄)(y_i − ȳ)/(n − 1)`` of two columns clamped to
    ``[a, b]`` and ``[c, d]``.

    Relation ``replace`` (bounded: n public, one record replaced; a record is a pair
    (x, y)), ``n >= 2``.

    Δ = (b − a)(d − c)/n: with the other records fixed (means ``m_x, m_y``),
    ``C = C₋ + (n−1)/n·(x_n − m_x)(y_n − m_y)``.  Writing ``s = (m_x − a)/w`` and
    ``t = (m_y − c)/v``, the product lies between ``−max((1−s)t, s(1−t))·wv`` and
    ``max((1−s)(1−t), st)·wv``; the four terms are non-negative and sum to 1, so the
    product's range has width at most ``wv`` and C moves by at most ``(n−1)/n·wv``.

    B′: ``n/(n−1)·wv/4`` for even n (docs/statistics.md), ``(n+1)/n·wv/4`` for odd n (the
    bound ``wv/4`` for odd n is too small, as for the variance).
    """

    name = "covariance"
    summary = "sample covariance (n − 1 denominator) of two clamped columns"
    relations = (REPLACE,)
    columns = 2

    def output_domain(self, prepared: Prepared) -> OutputDomain:
        """The statistic's range, ``prepared.value_range``."""
        return OutputDomain(
            lower=prepared.value_range[0],
            upper=prepared.value_range[1],
            reason="|covariance| is at most the range bound B′",
        )

    def partial(self, chunk: Dataset, *, data_bounds: DataBounds | None, **options: Any) -> State:
        """``(records, Σx · 2**1074, Σy · 2**1074, Σxy · 2**2148)``, x and y clamped."""
        (a, b), (c, d) = _two_column_bounds(data_bounds)
        rx, ry = chunk.float64_view(0), chunk.float64_view(1)
        if rx is not None and ry is not None:  # one pass, NaN and ±inf refused in it
            try:
                sx, sy, sxy = clamped_cross_moments(rx, ry, (a, b, c, d))
            except ParameterError:
                pass  # chunk.column() raises the error that names the column
            else:
                return (chunk.size, sx, sy, sxy)
        x, y = chunk.column(0), chunk.column(1)
        if x.doubles is not None and y.doubles is not None:
            sx, sy, sxy = clamped_cross_moments(x.doubles, y.doubles, (a, b, c, d))
            return (chunk.size, sx, sy, sxy)
        cx, cy = _clamped_fractions(x, a, b), _clamped_fractions(y, c, d)
        return (
            chunk.size,
            _scaled(sum(cx, Fraction(0)), SUM_SCALE),
            _scaled(sum(cy, Fraction(0)), SUM_SCALE),
            _scaled(sum((u * v for u, v in zip(cx, cy, strict=True)), Fraction(0)), DOT_SCALE),
        )

    def finalize(
        self,
        state: State,
        *,
        data_bounds: DataBounds | None,
        n: int | None,
        relation: Neighbouring,
        **options: Any,
    ) -> Prepared:
        (a, b), (c, d) = _two_column_bounds(data_bounds)
        w, v = Fraction(b) - Fraction(a), Fraction(d) - Fraction(c)
        n_used, n_note = resolve_n(int(state[0]), n, relation, self.name)
        if n_used < 2:
            raise ParameterError(
                f"statistic 'covariance' needs n >= 2 records{_given(n)}", parameter="n"
            )
        _, sx, sy, sxy = state
        cov = Fraction(sxy * n_used - sx * sy, (n_used * (n_used - 1)) << DOT_SCALE)
        bp = variance_range_bound(n_used, w, v)
        return Prepared(
            statistic=self.name,
            relation=relation,
            values=(cov,),
            labels=(self.name,),
            sensitivity=w * v / n_used,
            value_range=(-bp, bp),
            derivation=(
                "C = C₋ + (n−1)/n·(x − m_x)(y − m_y), whose last factor ranges over an "
                "interval of width at most w·v, so Δ = w·v/n; |cov| <= "
                "sqrt(var_x·var_y) gives B′ = n/(n−1)·wv/4 (even n), (n+1)/n·wv/4 (odd n)"
            ),
            n=n_used,
            notes=(n_note,),
        )


def _given(n: int | None) -> str:
    """The declared n for a message; a number of records taken from the data is not shown."""
    return "" if n is None else f", got {keyword('n', n)}"


def _two_column_bounds(data_bounds: DataBounds | None) -> DataBounds:
    if data_bounds is None or len(data_bounds) != 2:
        raise ParameterError(
            f"statistic 'covariance' needs {keyword('data_bounds')}((a, b), (c, d)), one "
            "pair per column",
            parameter="data_bounds",
        )
    return data_bounds


@hookimpl
def snapcore_register_statistics(registry: StatisticRegistry) -> None:
    registry.add(Sum())
    registry.add(Mean())
    registry.add(Variance())
    registry.add(Covariance())
