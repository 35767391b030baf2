"""The record of a release: :class:`Release`, the private value and everything about how
it was made."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, cast

import attrs

from snapcore._display import short
from snapcore.calibration._guarantee import calibration_accuracy, check_probability
from snapcore.calibration._params import record_calibration
from snapcore.data._neighbouring import Neighbouring
from snapcore.errors import keyword, parameter_name
from snapcore.padding._pad import TimingGuarantee
from snapcore.plugins._statistic import DataBounds

__all__ = ["RatioRelease", "Release", "VarianceRatioRelease"]


def _frac_str(q: Fraction | None) -> str | None:
    return None if q is None else str(q)


@attrs.frozen(kw_only=True)
class Release:
    """The result of :func:`snapcore.release`: the private value and everything about how.

    Attributes
    ----------
    statistic : str
        The statistic released.
    value : float, int or tuple
        The released value; one per coordinate (a tuple) for vector statistics: the
        mechanism's output projected onto the statistic's domain
        (:meth:`~snapcore.Statistic.output_domain`; a count is a whole number in
        ``[0, n]``, a mean lies within the data bounds), which is post-processing and
        costs no privacy.  Whole-number statistics come back as ``int``.
    labels : sequence of str
        Coordinate labels (for a histogram, the bins, written when read); a tuple or an
        immutable sequence equal to one.
    epsilon_spent : Fraction
        The total ε this release spent (what a :class:`~snapcore.Budget` was charged).
    epsilon_per_value : Fraction
        The ε of the mechanism releasing each coordinate.
    composition : str
        How the budget was divided over the coordinates, and why.
    relation : Neighbouring
        The neighbouring relation the guarantee is for.
    sensitivity : Fraction
        Δ per coordinate (data units).
    value_range : (Fraction, Fraction)
        Where f(D) can lie given the data bounds; ``b_prime = max(|lo|, |hi|)``.
    clamp_bounds : (float, float) or None
        The clamp interval ``[c − B, c + B]``; outputs lie in it.  None when nothing
        was noised (Δ = 0).
    half_width : Fraction or None
        B, the half-width of the clamp interval.
    clamp_reason : str
        How the clamp interval was chosen (γ and the formula, or given directly).
    gamma : Fraction or None
        The γ used, if the interval was chosen from γ.
    precision : int or None
        Working precision p in bits.
    granularity : Fraction or None
        Λ, the smallest power of two ``>= λ``, in sensitivity units (as on
        :class:`~snapcore.SnappingMechanism`).
    grid_step : Fraction or None
        Δ·Λ, the output grid's spacing in data units: outputs are multiples of it from
        the centre of the clamp interval.
    backend : str or None
        The arithmetic backend.
    source : str or None
        The randomness source's name (``"seeded"`` is not for production).
    timing_guarantee : TimingGuarantee or None
        What the release's running time reveals, when it was padded as a whole and
        followed by a random delay (:func:`snapcore.padding.random_delay`;
        docs/timing.md): ε_t, δ_t and the timing-stability bound assumed.  ε_t is not
        part of ``epsilon_spent``.
    data_bounds : tuple of (float, float), or None
        The bounds the data were clamped to.
    n : int or None
        The public n used (or the public cap on n under add-remove).
    derivation : str
        Where Δ and the range come from.
    notes : tuple of str
        Anything else worth knowing.
    snapped : float, int or tuple
        The mechanism's output before the projection (the grid point; unbiased when the
        clamp does not bind); equal to :attr:`value` when nothing was moved.
    post_processing : str or None
        What the projection does (None: the statistic declares no domain).
    """

    statistic: str
    value: float | tuple[float, ...]
    labels: Sequence[str]
    epsilon_spent: Fraction
    epsilon_per_value: Fraction
    composition: str
    relation: Neighbouring
    sensitivity: Fraction
    value_range: tuple[Fraction, Fraction]
    clamp_bounds: tuple[float, float] | None
    half_width: Fraction | None
    clamp_reason: str
    gamma: Fraction | None
    precision: int | None
    granularity: Fraction | None
    grid_step: Fraction | None
    backend: str | None
    source: str | None
    timing_guarantee: TimingGuarantee | None = None
    data_bounds: DataBounds | None
    n: int | None
    derivation: str
    notes: tuple[str, ...]
    snapped: float | tuple[float, ...]
    post_processing: str | None = None

    @property
    def b_prime(self) -> Fraction:
        """B′ = ``max(|lo|, |hi|)`` of :attr:`value_range`."""
        return max(abs(self.value_range[0]), abs(self.value_range[1]))

    def accuracy(self, alpha: Any) -> float:
        """The data-independent accuracy at confidence ``alpha``: each released value is
        within this of the exact statistic with probability at least ``1 - alpha``
        (:func:`snapcore.analysis.accuracy` of this record: the guarantee of the
        calibration recomputed from its public parameters; a test checks the two agree).

        Raises
        ------
        ParameterError
            If nothing was noised (no clamp interval), or ``alpha`` is not in (0, 1).
        """
        return calibration_accuracy(record_calibration(self), alpha).bound

    @property
    def grid_explanation(self) -> str:
        """What the output grid means, in one paragraph, and how to get a finer one."""
        if self.grid_step is None:
            return "no grid: nothing was noised (Δ = 0), the value is exact"
        step = short(self.grid_step)
        acc = self.accuracy(0.05)
        return (
            f"outputs lie on a grid of step {step} (data units), centred on the clamp "
            "interval: the noise is rounded to a multiple of it, so repeated releases "
            f"take few distinct values and one can equal the exact value; that is not "
            f"'no noise' (95% accuracy ±{acc:.6g}). The step is Δ·Λ with Λ the power of "
            "two at or above the noise scale λ ≈ 1/ε (ε per value); the clamp interval "
            f"does not change it. A finer grid: {self.finer_grid}"
        )

    @property
    def finer_grid(self) -> str:
        """How to make the output grid finer, for this release: the ε that halves the
        step (Λ halves when ε per value passes the power of two ``2/Λ``; ε′ is a hair
        below ε, so ε = 1 gives Λ = 2 and ε = 1.001 gives Λ = 1), and whether a
        smaller Δ is in the user's hands (narrower data bounds) or fixed."""
        if self.grid_step is None or self.granularity is None:
            return "no grid: nothing was noised"
        lam = self.granularity  # Λ = 2**L
        per_value = 2 / lam  # ε per value must pass this for Λ/2
        total = per_value * self.epsilon_spent / self.epsilon_per_value
        ask = total * Fraction(1001, 1000)
        text = (
            f"{keyword('epsilon', float(ask))} (ε per value above {short(per_value)}) "
            f"halves the step to {short(self.grid_step / 2)}"
        )
        if self.data_bounds is None:
            return text + f"; Δ = {short(self.sensitivity)} is fixed for {self.statistic!r}"
        return (
            text + f"; or a smaller Δ (now {short(self.sensitivity)}): narrower "
            f"{parameter_name('data_bounds')}, or, where Δ shrinks with n (a mean, a "
            "variance), more records"
        )

    @property
    def values(self) -> tuple[float, ...]:
        """The released values as a tuple (one element for a scalar statistic)."""
        return self.value if isinstance(self.value, tuple) else (self.value,)

    def frame_columns(self) -> dict[str, list[Any]]:
        """The columns of :meth:`to_frame`: one row per released value."""
        k = len(self.values)
        snapped = self.snapped if isinstance(self.snapped, tuple) else (self.snapped,)
        acc = None if self.grid_step is None else self.accuracy(0.05)
        return {
            "statistic": [self.statistic] * k,
            "label": list(self.labels),
            "value": list(self.values),
            "snapped": list(snapped),
            "accuracy_95": [acc] * k,
            "epsilon_per_value": [float(self.epsilon_per_value)] * k,
        }

    def to_frame(self, backend: str = "pandas") -> Any:
        """The released values as a data frame of ``backend`` (any eager library
        narwhals supports: ``"pandas"``, ``"polars"``, ``"pyarrow"``), one row per
        value: statistic, label, value, snapped value, 95% accuracy, ε per value.
        Imports the library on first use."""
        import narwhals as nw

        return nw.from_dict(self.frame_columns(), backend=cast(Any, backend)).to_native()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; exact quantities also as ``"p/q"`` strings."""

        def f(q: Fraction | None) -> float | None:
            return None if q is None else float(q)

        return {
            "statistic": self.statistic,
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "labels": list(self.labels),
            "epsilon_spent": f(self.epsilon_spent),
            "epsilon_spent_exact": _frac_str(self.epsilon_spent),
            "epsilon_per_value": f(self.epsilon_per_value),
            "composition": self.composition,
            "relation": self.relation.value,
            "relation_description": self.relation.description,
            "sensitivity": f(self.sensitivity),
            "sensitivity_exact": _frac_str(self.sensitivity),
            "value_range": [f(self.value_range[0]), f(self.value_range[1])],
            "b_prime": f(self.b_prime),
            "clamp_bounds": None if self.clamp_bounds is None else list(self.clamp_bounds),
            "half_width": f(self.half_width),
            "clamp_reason": self.clamp_reason,
            "gamma": f(self.gamma),
            "precision": self.precision,
            "granularity": f(self.granularity),
            "granularity_exact": _frac_str(self.granularity),
            "grid_step": f(self.grid_step),
            "grid_step_exact": _frac_str(self.grid_step),
            "grid_explanation": self.grid_explanation,
            "backend": self.backend,
            "source": self.source,
            "timing_guarantee": None
            if self.timing_guarantee is None
            else self.timing_guarantee.to_dict(),
            "data_bounds": None
            if self.data_bounds is None
            else [list(p) for p in self.data_bounds],
            "n": self.n,
            "derivation": self.derivation,
            "notes": list(self.notes),
            "snapped": list(self.snapped) if isinstance(self.snapped, tuple) else self.snapped,
            "post_processing": self.post_processing,
        }


class _ScalarRatio:
    """What :class:`RatioRelease` and :class:`VarianceRatioRelease` share: one value,
    labelled by its statistic, computed from released sums around ``centre``."""

    __slots__ = ()

    statistic: str
    value: float
    snapped: float | None
    epsilon_spent: Fraction
    relation: Neighbouring
    centre: Fraction
    composition: str
    notes: tuple[str, ...]
    timing_guarantee: TimingGuarantee | None

    @property
    def labels(self) -> tuple[str, ...]:
        """``(statistic,)``."""
        return (self.statistic,)

    @property
    def values(self) -> tuple[float, ...]:
        """``(value,)``."""
        return (self.value,)

    @property
    def epsilon_per_value(self) -> Fraction:
        raise NotImplementedError

    def accuracy(self, alpha: Any) -> float:
        raise NotImplementedError

    def _centred_bound(self, lo: Fraction, hi: Fraction) -> float:
        """``B′ = max(|lo − c|, |hi − c|)``: bounds ``|x − c|`` for ``x`` in ``[lo, hi]``."""
        return float(max(abs(lo - self.centre), abs(hi - self.centre)))

    def _record(self, ranges: dict[str, Any], releases: dict[str, Any]) -> dict[str, Any]:
        """The fields of ``to_dict`` shared by both kinds, around the kind's own
        ``ranges`` and its component ``releases``' records."""
        return {
            "statistic": self.statistic,
            "value": self.value,
            "snapped": self.snapped,
            "labels": list(self.labels),
            "epsilon_spent": float(self.epsilon_spent),
            "epsilon_spent_exact": str(self.epsilon_spent),
            "relation": self.relation.value,
            **ranges,
            "composition": self.composition,
            "accuracy_95": self.accuracy(0.05),
            "notes": list(self.notes),
            "timing_guarantee": None
            if self.timing_guarantee is None
            else self.timing_guarantee.to_dict(),
            **releases,
        }

    def frame_columns(self) -> dict[str, list[Any]]:
        """The columns of :meth:`Release.to_frame` for this value."""
        return {
            "statistic": [self.statistic],
            "label": [self.statistic],
            "value": [self.value],
            "snapped": [self.snapped],
            "accuracy_95": [self.accuracy(0.05)],
            "epsilon_per_value": [float(self.epsilon_per_value)],
        }


@attrs.frozen(kw_only=True)
class RatioRelease(_ScalarRatio):
    """A mean released as a noisy sum over a noisy count, for a group of private size
    (docs/statistics.md, "Group-by"): the quotient of two releases, each spending half
    of ε (sequential composition), clamped to the data bounds (post-processing).

    Attributes
    ----------
    statistic : str
        ``"mean"``.
    value : float
        ``c + S̃/C̃`` clamped to the data bounds ``[a, b]``; the midpoint ``(a + b)/2``
        when the released count is 0.
    snapped : float or None
        ``c + S̃/C̃`` before the clamp (None when the released count is 0).
    numerator, denominator : Release
        The releases of the sum of ``x − c`` (ε/2, add-remove, Δ = max(|a − c|,
        |b − c|)) and of the count (ε/2, add-remove).
    epsilon_spent : Fraction
        ε of both together.
    relation : Neighbouring
        ``add-remove``: the group's size is private.
    value_range : (Fraction, Fraction)
        The data bounds: where the mean lies.
    centre : Fraction
        ``c``, the middle of the data bounds (0 when the shifted bounds are not
        doubles): the records are summed as ``x − c``.
    composition : str
        How ε is split, in words.
    notes : tuple of str
        Remarks on the release.
    timing_guarantee : TimingGuarantee or None
        The timing claim of the whole group-by call, when it ran within
        :func:`snapcore.padding.random_delay` (docs/timing.md).
    """

    statistic: str
    value: float
    snapped: float | None
    numerator: Release
    denominator: Release
    epsilon_spent: Fraction
    relation: Neighbouring
    value_range: tuple[Fraction, Fraction]
    centre: Fraction = Fraction(0)
    composition: str
    notes: tuple[str, ...] = ()
    timing_guarantee: TimingGuarantee | None = None

    @property
    def epsilon_per_value(self) -> Fraction:
        """ε of each of the two releases (sum and count)."""
        return self.numerator.epsilon_per_value

    def accuracy(self, alpha: Any) -> float:
        """A bound that holds with probability at least ``1 − alpha``.

        With probability ``>= 1 − alpha`` the sum and the count are both within their
        accuracies ``a_S``, ``a_C`` at ``alpha/2`` (union bound).  Then, with
        ``S`` the exact sum of ``x − c`` and ``B′ = max(|a − c|, |b − c|)`` bounding
        ``|S|/C``,
        ``|S̃/C̃ − S/C| = |(S̃ − S)·C − S·(C̃ − C)|/(C̃·C) <= (a_S + B′·a_C)/C̃`` for a
        released count ``C̃ > 0``; the clamp to ``[a, b]`` (which holds the mean) never
        adds error and caps it at ``b − a``; the midpoint, released for ``C̃ = 0``, is
        within ``(b − a)/2``.  The bound depends on the released count only
        (post-processing), not on the private one.
        """
        a = float(check_probability("alpha", alpha)) / 2
        lo, hi = self.value_range
        width = float(hi - lo)
        c = float(self.denominator.value)  # type: ignore[arg-type]
        if c <= 0:
            return width / 2
        b_prime = self._centred_bound(lo, hi)
        bound = (self.numerator.accuracy(a) + b_prime * self.denominator.accuracy(a)) / c
        return min(width, bound)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the sum's and the count's records."""
        return self._record(
            {"value_range": [float(self.value_range[0]), float(self.value_range[1])]},
            {"sum": self.numerator.to_dict(), "count": self.denominator.to_dict()},
        )


@attrs.frozen(kw_only=True)
class VarianceRatioRelease(_ScalarRatio):
    """A variance released from a noisy count, sum and sum of squares, for a group of
    private size (docs/statistics.md, "Group-by"): each of the three spends a third of ε
    (sequential composition); the variance is computed from them and projected onto its
    domain (post-processing).

    Attributes
    ----------
    statistic : str
        ``"variance"``.
    value : float
        ``Q̃/C̃ − (S̃/C̃)²`` projected onto ``[0, ((b − a)/2)²]``; the middle of that
        interval when the released count is 0.
    snapped : float or None
        ``Q̃/C̃ − (S̃/C̃)²`` before the projection (None when the released count is 0).
    noisy_count, noisy_sum, noisy_squares : Release
        The releases (ε/3 each, add-remove, the group's public cap) of the count
        (Δ = 1), of the sum of ``x − c`` (Δ = B′) and of the sum of ``(x − c)²``
        (Δ = B′²), with ``B′ = max(|a − c|, |b − c|)``.
    epsilon_spent : Fraction
        ε of the three together.
    relation : Neighbouring
        ``add-remove``: the group's size is private.
    data_range : (Fraction, Fraction)
        The data bounds ``[a, b]``.
    centre : Fraction
        ``c``, the middle of the data bounds (0 when the shifted bounds are not
        doubles).
    composition : str
        How ε is split, in words.
    notes : tuple of str
        Remarks on the release.
    timing_guarantee : TimingGuarantee or None
        The timing claim of the whole group-by call, when it ran within
        :func:`snapcore.padding.random_delay` (docs/timing.md).
    """

    statistic: str
    value: float
    snapped: float | None
    noisy_count: Release
    noisy_sum: Release
    noisy_squares: Release
    epsilon_spent: Fraction
    relation: Neighbouring
    data_range: tuple[Fraction, Fraction]
    centre: Fraction = Fraction(0)
    composition: str
    notes: tuple[str, ...] = ()
    timing_guarantee: TimingGuarantee | None = None

    @property
    def value_range(self) -> tuple[Fraction, Fraction]:
        """The variance's domain ``[0, ((b − a)/2)²]``."""
        lo, hi = self.data_range
        return (Fraction(0), ((hi - lo) / 2) ** 2)

    @property
    def epsilon_per_value(self) -> Fraction:
        """ε of each of the three releases."""
        return self.noisy_count.epsilon_per_value

    def accuracy(self, alpha: Any) -> float:
        """A bound that holds with probability at least ``1 − alpha``.

        With probability ``>= 1 − alpha`` the count, the sum and the sum of squares are
        within their accuracies ``a_C``, ``a_S``, ``a_Q`` at ``alpha/3`` (union bound).
        Then, for a released count ``C̃ > 0``, with ``B′`` bounding ``|x − c|``:
        the mean of ``x − c`` is off by at most ``e_1 = (a_S + B′·a_C)/C̃`` and the
        mean of ``(x − c)²`` by at most ``e_2 = (a_Q + B′²·a_C)/C̃`` (as for
        :class:`RatioRelease`), and ``|m̃² − m²| <= e_1·(2·B′ + e_1)``, so the variance
        is off by at most ``e_2 + e_1·(2·B′ + e_1)``.  The projection onto the domain
        (which holds the variance) never adds error and caps it at the domain's width
        ``W = ((b − a)/2)²``; the middle of the domain, released for ``C̃ = 0``, is
        within ``W/2``.  The bound reads released values only (post-processing).
        """
        a = float(check_probability("alpha", alpha)) / 3
        width = float(self.value_range[1])
        c = float(self.noisy_count.value)  # type: ignore[arg-type]
        if c <= 0:
            return width / 2
        lo, hi = self.data_range
        b1 = self._centred_bound(lo, hi)
        a_c = self.noisy_count.accuracy(a)
        e1 = (self.noisy_sum.accuracy(a) + b1 * a_c) / c
        e2 = (self.noisy_squares.accuracy(a) + b1 * b1 * a_c) / c
        return min(width, e2 + e1 * (2 * b1 + e1))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the three releases' records."""
        lo, hi = self.value_range
        ranges = {
            "value_range": [float(lo), float(hi)],
            "data_range": [float(self.data_range[0]), float(self.data_range[1])],
            "centre": float(self.centre),
        }
        releases = {
            "count": self.noisy_count.to_dict(),
            "sum": self.noisy_sum.to_dict(),
            "sum_of_squares": self.noisy_squares.to_dict(),
        }
        return self._record(ranges, releases)
