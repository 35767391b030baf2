"""The release call: a statistic of private data, ε-differentially private, in one call.

>>> import snapcore
>>> r = snapcore.release("mean", [31, 45, 52, 28, 60], epsilon=1.0, data_bounds=(0, 100),
...                      source=snapcore.SeededSource(3))
>>> r.statistic, r.relation.value, float(r.sensitivity), r.epsilon_spent
('mean', 'replace', 20.0, Fraction(1, 1))
>>> r.clamp_bounds[0] <= r.value <= r.clamp_bounds[1]
True
"""

from __future__ import annotations

import contextlib
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from snapcore.accuracy import accuracy
from snapcore.backend import Backend
from snapcore.bounds import (
    DEFAULT_GAMMA,
    ClampChoice,
    check_gamma,
    choose_clamp_bounds,
    given_clamp_bounds,
)
from snapcore.budget import Budget
from snapcore.dataset import as_dataset
from snapcore.errors import ParameterError, SnapcoreError, show
from snapcore.mechanism import SnappingMechanism
from snapcore.params import check_real
from snapcore.sources import RandomSource
from snapcore.statistic import (
    DataBounds,
    Neighbouring,
    Prepared,
    Statistic,
    check_data_bounds,
    resolve_relation,
    resolve_statistic,
)
from snapcore.values import type_name

__all__ = ["Release", "release"]


def _frac_str(q: Fraction | None) -> str | None:
    return None if q is None else str(q)


@attrs.frozen(kw_only=True)
class Release:
    """The result of :func:`release`: the private value and everything about how.

    Attributes
    ----------
    statistic : str
        The statistic released.
    value : float or tuple of float
        The released value; one per coordinate (a tuple) for vector statistics.
    labels : tuple of str
        Coordinate labels (for a histogram, the bins).
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
        :class:`~snapcore.mechanism.SnappingMechanism`).
    grid_step : Fraction or None
        Δ·Λ, the output grid's spacing in data units: outputs are multiples of it from
        the centre of the clamp interval.
    backend : str or None
        The arithmetic backend.
    source : str or None
        The randomness source's name (``"seeded"`` is not for production).
    data_bounds : tuple of (float, float), or None
        The bounds the data were clamped to.
    n : int or None
        The public n used (or the public cap on n under add-remove).
    derivation : str
        Where Δ and the range come from.
    notes : tuple of str
        Anything else worth knowing.
    """

    statistic: str
    value: float | tuple[float, ...]
    labels: tuple[str, ...]
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
    data_bounds: DataBounds | None
    n: int | None
    derivation: str
    notes: tuple[str, ...]

    @property
    def b_prime(self) -> Fraction:
        """B′ = ``max(|lo|, |hi|)`` of :attr:`value_range`."""
        return max(abs(self.value_range[0]), abs(self.value_range[1]))

    def accuracy(self, alpha: Any) -> float:
        """The data-independent accuracy at confidence ``alpha``: each released value is
        within this of the exact statistic with probability at least ``1 - alpha``
        (see :func:`snapcore.accuracy.accuracy`)."""
        return accuracy(self, alpha)

    @property
    def values(self) -> tuple[float, ...]:
        """The released values as a tuple (one element for a scalar statistic)."""
        return self.value if isinstance(self.value, tuple) else (self.value,)

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
            "backend": self.backend,
            "source": self.source,
            "data_bounds": None
            if self.data_bounds is None
            else [list(p) for p in self.data_bounds],
            "n": self.n,
            "derivation": self.derivation,
            "notes": list(self.notes),
        }


def _check_n(n: Any) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer) or n < 0:
        raise ParameterError(f"n must be an int >= 0, got {type_name(n)} {show(n)}")
    return int(n)


def release(
    statistic: str | Statistic,
    data: Any,
    *,
    epsilon: Any,
    data_bounds: Any = None,
    gamma: Any = None,
    clamp_bounds: Any = None,
    n: int | None = None,
    relation: str | Neighbouring | None = None,
    column: str | tuple[str, ...] | None = None,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    budget: Budget | None = None,
    precision: int | None = None,
    **options: Any,
) -> Release:
    """Release ``statistic`` of ``data`` with the snapping mechanism, ε-DP.

    Parameters
    ----------
    statistic : str or Statistic
        A registered statistic name (``count``, ``sum``, ``mean``, ``variance``,
        ``covariance``, ``histogram``, or a plugin's) or a statistic object.
    data : sequence, numpy.ndarray, pandas Series/DataFrame, or mapping
        The private data (see :func:`snapcore.dataset.as_dataset`).
    epsilon : real
        The total ε this release spends.
    data_bounds : (lower, upper), or one pair per column
        Data bounds: every value is clamped to them before the statistic is computed.
    gamma : real in (0, 1], optional
        Choose the clamp interval so that it binds with probability at most γ (seed
        §6.5).  The default, when ``clamp_bounds`` is not given, is 0.05.
    clamp_bounds : (lower, upper), optional
        The clamp interval for the statistic, given directly instead of ``gamma``.
    n : int, optional
        Public n: under ``replace`` the number of records (taken from the data when
        omitted); under ``add-remove`` a public upper bound on it.
    relation : {"replace", "add-remove"}, optional
        The neighbouring relation; default: the statistic's first.
    column : str or tuple of str, optional
        Column name(s) in a DataFrame or mapping.
    backend : str or Backend
        Arithmetic backend (default ``"mpfr"``).
    source : str or RandomSource, optional
        Randomness (default: the OS CSPRNG).
    budget : Budget, optional
        Charged ``epsilon`` (sequential composition); checked before any noise.
    precision : int, optional
        Working precision, at least the required one.
    **options
        The statistic's own options (for ``histogram``: ``bins`` or ``categories``).

    Returns
    -------
    Release

    Raises
    ------
    ParameterError
        On invalid arguments or data (never naming a record or value), before noise.
    BudgetExceededError
        If ``budget`` cannot cover ``epsilon``; nothing is drawn or spent.
    """
    stat = resolve_statistic(statistic)
    eps = check_real("epsilon", epsilon, positive=True)
    rel = resolve_relation(stat, relation)
    if gamma is not None and clamp_bounds is not None:
        raise ParameterError("give at most one of gamma= and clamp_bounds=")
    given = given_clamp_bounds(clamp_bounds) if clamp_bounds is not None else None
    if given is None:
        gamma = check_gamma(DEFAULT_GAMMA if gamma is None else gamma)
    n_pub = _check_n(n)
    unknown = sorted(set(options) - set(stat.options))
    if unknown:
        valid = sorted(stat.options) or "none"
        raise ParameterError(
            f"statistic {stat.name!r} got unknown option(s) {unknown}; valid options: {valid}"
        )
    if budget is not None and not isinstance(budget, Budget):
        raise ParameterError(f"budget must be a snapcore.Budget, got {type_name(budget)}")
    checked_bounds = check_data_bounds(data_bounds, stat)
    ds = as_dataset(data, column=column, columns=stat.columns)
    prep = stat.prepare(ds, data_bounds=checked_bounds, n=n_pub, relation=rel, **options)
    if not isinstance(prep, Prepared) or prep.relation is not rel:
        raise SnapcoreError(
            f"statistic {stat.name!r} returned {type(prep).__name__} for relation "
            f"{rel.value!r}; expected a Prepared for that relation"
        )
    common: dict[str, Any] = {
        "statistic": stat.name,
        "labels": prep.labels,
        "relation": rel,
        "sensitivity": prep.sensitivity,
        "value_range": prep.value_range,
        "data_bounds": checked_bounds,
        "n": prep.n,
        "derivation": prep.derivation,
    }
    if prep.sensitivity == 0:
        # f(D) is the same for every neighbour: it is public, released exactly.
        with _reserve(budget, Fraction(0), stat.name):
            outs = tuple(float(v) for v in prep.values)
        return Release(
            value=outs if prep.is_vector else outs[0],
            epsilon_spent=Fraction(0),
            epsilon_per_value=Fraction(0),
            composition="nothing to compose: the value does not depend on any one record",
            clamp_bounds=None,
            half_width=None,
            clamp_reason="no clamp: nothing was noised (Δ = 0)",
            gamma=None,
            precision=None,
            granularity=None,
            grid_step=None,
            backend=None,
            source=None,
            notes=(*prep.notes, "Δ = 0 under this relation: released exactly, ε spent = 0"),
            **common,
        )
    eps_each = eps * prep.epsilon_share
    choice: ClampChoice = (
        given
        if given is not None
        else choose_clamp_bounds(prep.value_range, prep.sensitivity, eps_each, gamma)
    )
    mech = SnappingMechanism(
        epsilon=eps_each,
        sensitivity=prep.sensitivity,
        clamp_bounds=(choice.lower, choice.upper),
        backend=backend,
        source=source,
        precision=precision,
    )
    # All or nothing: every coordinate's draw is available before any is drawn (and
    # before the budget is charged); the vector is released in one call, each value
    # exactly as the Fraction it is.
    mech.check_can_draw(len(prep.values))
    with _reserve(budget, eps, stat.name):
        outs = tuple(float(o) for o in mech.release(list(prep.values)))
    notes = list(prep.notes)
    if mech.source.name == "seeded":
        notes.append("seeded source: deterministic noise, NOT for production releases")
    return Release(
        value=outs if prep.is_vector else outs[0],
        epsilon_spent=eps,
        epsilon_per_value=eps_each,
        composition=prep.composition,
        clamp_bounds=(choice.lower, choice.upper),
        half_width=choice.half_width,
        clamp_reason=choice.reason,
        gamma=choice.gamma,
        precision=mech.precision,
        granularity=mech.granularity,
        grid_step=mech.grid_step,
        backend=mech.backend.name,
        source=mech.source.name,
        notes=tuple(notes),
        **common,
    )


def _reserve(budget: Budget | None, eps: Fraction, label: str) -> Any:
    if budget is None:
        return contextlib.nullcontext()
    return budget.reserve(eps, label=label)
