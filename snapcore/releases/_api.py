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
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

import attrs
import numpy as np

from snapcore.calibration._clamp import (
    DEFAULT_GAMMA,
    ClampChoice,
    check_gamma,
    choose_clamp_bounds,
    given_clamp_bounds,
)
from snapcore.calibration._params import check_real
from snapcore.data._frames import is_dask, is_spark, read_dataset
from snapcore.data._missing import check_missing_policy
from snapcore.data._neighbouring import Neighbouring
from snapcore.data._values import type_name
from snapcore.errors import ParameterError, SnapcoreError, keyword, parameter_name
from snapcore.mechanism._mechanism import SnappingMechanism
from snapcore.padding._pad import check_timing
from snapcore.pipeline._backend import Backend
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import (
    DataBounds,
    Prepared,
    Statistic,
    check_data_bounds,
    check_n,
    resolve_relation,
)
from snapcore.randomness._sources import RandomSource, require_draws
from snapcore.releases._grouped import GroupedRelease, check_grouping, plan_groups
from snapcore.releases._padding import padded_statistic
from snapcore.releases._record import Release
from snapcore.releases._request import ReleaseRequest, check_options

if TYPE_CHECKING:
    from snapcore.releases._budget import Budget

__all__ = ["SYSTEM_SOURCE_MAX_VALUES", "release"]


@attrs.frozen(kw_only=True)
class _Plan:
    """Everything one release (of a statistic, or of one group) needs, checked, before
    any noise is drawn."""

    request: ReleaseRequest
    prep: Prepared
    #: The data bounds the values were clamped to.
    data_bounds: DataBounds | None
    #: The ε this release spends: 0 when nothing is noised.
    epsilon: Fraction
    mech: SnappingMechanism | None
    choice: ClampChoice | None


#: A statistic release that draws fewer values than this, with no ``source=`` given, reads
#: its noise from the OS CSPRNG (``"system"``); a longer one uses the mechanism's default,
#: ChaCha20 keyed from the OS.  Below it the values take the element-wise path, where a
#: fresh ``os.urandom`` buffer is at least as fast as a fresh ChaCha20 stream, and a
#: one-shot process need not import ``cryptography`` for a few dozen bytes
#: (docs/sources.md, "Which source a release uses").
SYSTEM_SOURCE_MAX_VALUES = 1024


def _default_source(source: str | RandomSource | None, count: int) -> str | RandomSource | None:
    """The source a release of ``count`` values uses: the one given, else ``"system"``
    for fewer than ``SYSTEM_SOURCE_MAX_VALUES`` values, else the mechanism's default."""
    if source is None and count < SYSTEM_SOURCE_MAX_VALUES:
        return "system"
    return source


def _plan(request: ReleaseRequest, prep: Prepared, data_bounds: DataBounds | None) -> _Plan:
    stat, rel = request.statistic, request.relation
    if not isinstance(prep, Prepared) or prep.relation is not rel:
        raise SnapcoreError(
            f"statistic {stat.name!r} returned {type(prep).__name__} for relation "
            f"{rel.value!r}; expected a Prepared for that relation"
        )
    if prep.sensitivity == 0:
        return _Plan(
            request=request,
            prep=prep,
            data_bounds=data_bounds,
            epsilon=Fraction(0),
            mech=None,
            choice=None,
        )
    eps_each = request.epsilon * prep.epsilon_share
    choice: ClampChoice = (
        request.clamp_bounds
        if request.clamp_bounds is not None
        else choose_clamp_bounds(prep.value_range, prep.sensitivity, eps_each, request.gamma)
    )
    mech = SnappingMechanism(
        epsilon=eps_each,
        sensitivity=prep.sensitivity,
        clamp_bounds=(choice.lower, choice.upper),
        backend=request.backend,
        source=_default_source(request.source, len(prep.values)),
        precision=request.precision,
        timing=request.timing,
    )
    return _Plan(
        request=request,
        prep=prep,
        data_bounds=data_bounds,
        epsilon=request.epsilon,
        mech=mech,
        choice=choice,
    )


def _integral(stat: Statistic, choice: ClampChoice, grid_step: Fraction) -> bool:
    """Whether every output is an integer: an integer-valued statistic on an integral
    grid between integral clamp bounds (outputs are grid points or a clamp bound)."""
    lo, hi = float(choice.lower), float(choice.upper)
    return (
        stat.integer_valued
        and grid_step.denominator == 1
        and lo.is_integer()
        and hi.is_integer()
        and (int(lo) + int(hi)) % 2 == 0  # an integral centre
    )


def _described(plan: _Plan) -> dict[str, Any]:
    """The fields of a release's record that describe what was released and how it may
    vary: the same whether it was noised or not."""
    prep = plan.prep
    return {
        "statistic": plan.request.statistic.name,
        "labels": prep.labels,
        "relation": plan.request.relation,
        "sensitivity": prep.sensitivity,
        "value_range": prep.value_range,
        "data_bounds": plan.data_bounds,
        "n": prep.n,
        "derivation": prep.derivation,
    }


def _draw(plan: _Plan) -> Release:
    prep, mech, choice = plan.prep, plan.mech, plan.choice
    stat = plan.request.statistic
    if mech is None or choice is None:
        # f(D) is the same for every neighbour: it is public, released exactly.
        exact = tuple(
            int(v) if stat.integer_valued and Fraction(v).denominator == 1 else float(v)
            for v in prep.values
        )
        return Release(
            value=exact if prep.is_vector else exact[0],
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
            **_described(plan),
        )
    outs = _release_values(mech, prep.values, integral=_integral(stat, choice, mech.grid_step))
    notes = list(prep.notes)
    if mech.source.name == "seeded":
        notes.append("seeded source: deterministic noise, NOT for production releases")
    return Release(
        value=outs if prep.is_vector else outs[0],
        epsilon_spent=plan.epsilon,
        epsilon_per_value=plan.epsilon * prep.epsilon_share,
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
        **_described(plan),
    )


# The two forms by their result: without ``by=`` a Release, with it a GroupedRelease.
@overload
def release(
    statistic: str | Statistic,
    data: Any,
    *,
    by: None = None,
    keys: None = None,
    group_sizes: None = None,
    epsilon: Any,
    **kwargs: Any,
) -> Release: ...


@overload
def release(
    statistic: str | Statistic,
    data: Any,
    *,
    by: str,
    keys: Iterable[Any],
    group_sizes: Mapping[Any, int] | None = None,
    epsilon: Any,
    **kwargs: Any,
) -> GroupedRelease: ...


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
    by: str | None = None,
    keys: Iterable[Any] | None = None,
    group_sizes: Mapping[Any, int] | None = None,
    missing: str = "error",
    impute: Any = None,
    backend: str | Backend = "mpfr",
    source: str | RandomSource | None = None,
    budget: Budget | None = None,
    precision: int | None = None,
    timing: str | None = None,
    **options: Any,
) -> Release | GroupedRelease:
    """Release ``statistic`` of ``data`` with the snapping mechanism, ε-DP.

    Parameters
    ----------
    statistic : str or Statistic
        A registered statistic name (``count``, ``sum``, ``mean``, ``variance``,
        ``covariance``, ``histogram``, or a plugin's) or a statistic object.
    data : sequence, array, data frame, mapping, Dask or Spark data frame, or Partial
        The private data: a sequence, NumPy array, mapping of columns, or a data frame
        of pandas, polars (eager or lazy), pyarrow or any library narwhals reads
        (:mod:`snapcore.data`); a Dask data frame (one partial state per partition,
        computed on the workers, :func:`snapcore.partial`); a Spark data frame (one
        partial state per partition and key, computed on the executors; docs/scaling.md);
        or a merged :class:`~snapcore.Partial` (its data bounds and options are used).
        With ``by=``: a data frame or mapping held in memory, a Spark data frame, or
        ``{key: Partial}`` with the merged partial state of every key's records (read in
        chunks).
    epsilon : real
        The total ε this release spends.
    data_bounds : (lower, upper), or one pair per column
        Data bounds: every value is clamped to them before the statistic is computed.
    gamma : real in (0, 1], optional
        Choose the clamp interval so that it binds with probability at most γ
        (docs/bounds-and-gamma.md).  The default, when ``clamp_bounds`` is not given,
        is 0.05.
    clamp_bounds : (lower, upper), optional
        The clamp interval for the statistic, given directly instead of ``gamma``.
    n : int, optional
        Public n: under ``replace`` the number of records (taken from the data when
        omitted); under ``add-remove`` a public upper bound on it (for ``count``:
        required, a cap such as the population size).  With ``by=``, per group.
    relation : {"replace", "add-remove"}, optional
        The neighbouring relation; default: the statistic's first, or ``add-remove``
        with ``by=`` and no ``group_sizes=`` when the statistic supports it.
    column : str or tuple of str, optional
        Column name(s) in a DataFrame or mapping.
    by : str, optional
        Group by this column: one release per key in ``keys``, a
        :class:`~snapcore.GroupedRelease` (docs/statistics.md, "Group-by").
    keys : iterable, optional
        The public key set (required with ``by``): every key is released, present in
        the data or not; records with other keys are left out and never revealed.
    group_sizes : mapping key -> int, optional
        Public group sizes; needed under ``replace`` with ``by`` (each record's key is
        then public and a neighbour replaces one record within its group).
    missing : {"error", "drop", "impute"}
        What missing values (None, NaN) in the data do: refuse (the default); drop
        their records (only under ``add-remove``, where removing a record is a
        neighbour); or replace them by the public constant ``impute``.
    impute : real or value, optional
        The public constant for ``missing="impute"``.
    backend : str or Backend
        Arithmetic backend (default ``"mpfr"``).
    source : str or RandomSource, optional
        Randomness.  Default: the OS CSPRNG (``"system"``) for a release of fewer than
        ``SYSTEM_SOURCE_MAX_VALUES`` values, else ChaCha20 keyed from the OS
        (``"chacha20"``, the mechanism's default); docs/sources.md.
    budget : Budget, optional
        Charged ``epsilon`` (sequential composition); checked before any noise.
    precision : int, optional
        Working precision, at least the required one.
    timing : {None, "constant", "off"}
        ``"constant"`` pads the whole call to a whole number of time quanta that depend
        only on the statistic, its public parameters and the public n
        (``docs/timing.md``); ``"off"`` does not.  Default: ``"constant"`` for
        cryptographic sources, ``"off"`` for seeded and replay sources.  A grouped
        release pads each group's mechanism releases.
    **options
        The statistic's own options (for ``histogram``: ``bins`` or ``categories``,
        ``other``, ``out_of_range``).

    Returns
    -------
    Release or GroupedRelease

    Raises
    ------
    ParameterError
        On invalid arguments or data (never naming a record or value), before noise.
    BudgetExceededError
        If ``budget`` cannot cover ``epsilon``; nothing is drawn or spent.
    """
    # Every keyword is checked here, once, before any data is read or noise drawn.
    mode = check_timing(timing)
    stat = resolve_statistic(statistic)
    if (
        relation is None
        and by is not None
        and group_sizes is None
        and Neighbouring.ADD_REMOVE in stat.relations
    ):
        relation = Neighbouring.ADD_REMOVE  # group sizes stay private (docs/statistics.md)
    eps = check_real("epsilon", epsilon, positive=True)
    rel = resolve_relation(stat, relation)
    if gamma is not None and clamp_bounds is not None:
        raise ParameterError(
            f"give at most one of {keyword('gamma')} and {keyword('clamp_bounds')}",
            parameter="clamp_bounds",
        )
    given = given_clamp_bounds(clamp_bounds) if clamp_bounds is not None else None
    if given is None:
        gamma = check_gamma(DEFAULT_GAMMA if gamma is None else gamma)
    check_options(stat, options)
    if budget is not None and not _is_budget(budget):
        raise ParameterError(
            f"budget must be a snapcore.Budget, got {type_name(budget)}", parameter="budget"
        )
    policy = check_missing_policy(missing, impute, rel)
    grouped = by is not None or keys is not None or group_sizes is not None
    public_n = _check_public_n(n, grouped)
    # A partial state carries the data bounds it was computed with.
    bounds = (
        None if data_bounds is None and _is_partial(data) else check_data_bounds(data_bounds, stat)
    )
    key_set = check_grouping(by, keys) if grouped else None
    request = ReleaseRequest(
        statistic=stat,
        data=data,
        epsilon=eps,
        data_bounds=bounds,
        gamma=gamma,
        clamp_bounds=given,
        n=public_n,
        relation=rel,
        column=column,
        by=by,
        keys=key_set,
        group_sizes=group_sizes,
        missing=policy,
        backend=backend,
        source=source,
        budget=budget,
        precision=precision,
        timing=mode,
        options=options,
    )
    if request.grouped:
        return _release_grouped(request)
    return _release_single(request)


def _check_public_n(n: Any, grouped: bool) -> int | Mapping[Any, int | None] | None:
    """The public n, checked: with ``by=`` one n for every key or a mapping with one per
    key (a read-only copy; its keys are matched against the key set with the data)."""
    if grouped and isinstance(n, Mapping):
        return MappingProxyType({k: check_n(v) for k, v in n.items()})
    return check_n(n)


@padded_statistic
def _release_single(request: ReleaseRequest) -> Release:
    stat = request.statistic
    if isinstance(request.n, Mapping):
        raise SnapcoreError("a release without by= has one public n")
    prep, data_bounds = _prepare(request, request.data, request.column, request.n)
    plan = _plan(request, prep, data_bounds)
    _check_can_draw([plan])
    with _reserve(request.budget, plan.epsilon, stat.name):
        return _draw(plan)


def _release_grouped(request: ReleaseRequest) -> GroupedRelease:
    from snapcore.releases._partials import Partial

    stat = request.statistic
    data_bounds = request.data_bounds

    def plan_one(data: Any, n: int | None) -> _Plan:
        if split is not None:  # a group's merged state, computed on Spark's executors
            prep = stat.finalize(
                data, data_bounds=data_bounds, n=n, relation=request.relation, **request.options
            )
        elif isinstance(data, Partial):  # a group's records, read in chunks
            prep, _ = _prepare(request, data, None, n)
        else:
            prep = stat.prepare(
                data, data_bounds=data_bounds, n=n, relation=request.relation, **request.options
            )
        return _plan(request, prep, data_bounds)

    split = _spark_groups(request) if is_spark(request.data) else None
    grouped, plans = plan_groups(request, plan_one, split=split)
    spent = max((p.epsilon for p in plans), default=Fraction(0))
    _check_can_draw(plans)
    with _reserve(request.budget, spent, f"{stat.name} by {request.by}"):
        return grouped.with_releases(tuple(_draw(p) for p in plans), spent)


def _spark_groups(request: ReleaseRequest) -> Callable[[], list[Any]]:
    """The merged state of each key's records of the request's Spark data frame, computed
    on the executors when called (after the grouping's checks)."""
    stat = request.statistic
    _require_mergeable(stat, "a Spark DataFrame")
    key_set = request.keys
    if request.by is None or key_set is None:
        raise SnapcoreError("a grouped release needs by= and keys=, checked")
    by = request.by

    def split() -> list[Any]:
        from snapcore.releases._spark import spark_group_states

        return spark_group_states(
            stat,
            request.data,
            by=by,
            keys=key_set,
            data_bounds=request.data_bounds,
            column=request.column,
            options=request.options,
            policy=request.missing,
        )

    return split


def _require_mergeable(stat: Statistic, what: str) -> None:
    if not stat.mergeable:
        raise ParameterError(
            f"statistic {stat.name!r} does not implement partial() and finalize(), "
            f"so it cannot be released from {what}"
        )


def _prepare(
    request: ReleaseRequest, data: Any, column: Any, n: int | None
) -> tuple[Prepared, DataBounds | None]:
    """f(D) of ``data`` (the request's, or one group's) from memory, a Dask or Spark data
    frame or a merged :class:`~snapcore.Partial`, and the data bounds used."""
    stat, relation, policy = request.statistic, request.relation, request.missing
    data_bounds, options = request.data_bounds, request.options
    if is_spark(data):
        # The missing-value policy is applied record by record on the executors.
        from snapcore.releases._spark import spark_state

        _require_mergeable(stat, "a Spark DataFrame")
        state = spark_state(
            stat, data, data_bounds=data_bounds, column=column, options=options, policy=policy
        )
        prep = stat.finalize(state, data_bounds=data_bounds, n=n, relation=relation, **options)
        return prep, data_bounds
    if not _is_partial(data) and not is_dask(data):
        ds = read_dataset(data, column=column, columns=stat.columns).apply_missing(policy)
        prep = stat.prepare(ds, data_bounds=data_bounds, n=n, relation=relation, **options)
        return prep, data_bounds
    from snapcore.releases._partials import Partial, dask_state, freeze_options

    if policy.kind != "error" and (isinstance(data, Partial) or is_dask(data)):
        raise ParameterError(
            f"{keyword('missing', policy.kind)} applies to data held in memory; for a "
            "partial state or a Dask data frame, drop or impute missing values before the "
            "partial states",
            parameter="missing",
        )
    if isinstance(data, Partial):
        if data.statistic != stat.name:
            raise ParameterError(
                f"the partial state is of statistic {data.statistic!r}, not {stat.name!r}"
            )
        checked = data.data_bounds
        if data_bounds is not None and data_bounds != checked:
            raise ParameterError(
                f"{parameter_name('data_bounds')} must be those the partial state was "
                f"computed with ({checked!r}), or omitted",
                parameter="data_bounds",
            )
        if options and freeze_options(options) != data.options:
            raise ParameterError(
                "the statistic's options must be those the partial state was computed "
                "with, or omitted"
            )
        opts = dict(data.options)
        if stat.needs_data_bounds and checked is None:
            check_data_bounds(None, stat)  # the usual error
        state = data.state
    else:
        opts = dict(options)  # a Dask data frame
        checked = data_bounds
        _require_mergeable(stat, "a Dask data frame")
        state = dask_state(stat, data, data_bounds=checked, column=column, options=opts)
    return stat.finalize(state, data_bounds=checked, n=n, relation=relation, **opts), checked


def _is_budget(obj: Any) -> bool:
    from snapcore.releases._budget import Budget  # here: a release without a budget never needs it

    return isinstance(obj, Budget)


def _is_partial(data: Any) -> bool:
    """Whether ``data`` is a :class:`~snapcore.Partial` (a Partial exists only
    once its module is imported, so a release of data in memory never imports it)."""
    partials = sys.modules.get("snapcore.releases._partials")
    return partials is not None and isinstance(data, partials.Partial)


def _check_can_draw(plans: Sequence[_Plan]) -> None:
    """All or nothing: each source can supply the draws of every plan it serves (all the
    coordinates, of every group), checked together before anything is drawn and before
    the budget is charged."""
    need: dict[int, tuple[RandomSource, int, int]] = {}
    for p in plans:
        if p.mech is None:
            continue
        src = p.mech.source
        _, count, precision = need.get(id(src), (src, 0, 0))
        need[id(src)] = (src, count + len(p.prep.values), max(precision, p.mech.precision))
    for src, count, precision in need.values():
        require_draws(src, count, precision)


def _release_values(
    mech: SnappingMechanism, values: tuple[Any, ...], *, integral: bool
) -> tuple[float, ...] | tuple[int, ...]:
    """Release every coordinate: through the mechanism's array release when the values
    are integers or exact doubles (bit-identical to one scalar release per value, with
    the draws in the same order), one by one otherwise (exact Fractions).  With
    ``integral`` (every output lies on an integral grid), outputs that are all integers
    come back as ints."""
    outs: tuple[float, ...]
    if len(values) == 1:  # a scalar statistic: the scalar release, exact for any real
        outs = (float(mech.release(values[0])),)
    else:
        arr = _as_array(values) if values else None
        if arr is not None:
            out = mech.release(arr)
            whole = integral and bool(np.all(np.floor(out) == out))
            if whole and float(np.max(np.abs(out))) < 2.0**62:  # exact in int64
                return tuple(out.astype(np.int64).tolist())
            outs = tuple(out.tolist())
        else:
            # A list is read element by element, exactly (Fractions included).
            outs = tuple(float(o) for o in mech.release(list(values)))
    if integral and all(o.is_integer() for o in outs):
        return tuple(int(o) for o in outs)
    return outs


def _as_array(values: tuple[Any, ...]) -> np.ndarray | None:
    """The values as an int64 array (all Python ints in range) or a float64 array (all
    floats), exactly; None otherwise."""
    try:
        arr = np.array(values)
    except (OverflowError, ValueError, TypeError):
        return None
    types = set(map(type, values))
    if arr.dtype == np.int64 and types == {int}:
        return arr
    if arr.dtype == np.float64 and types == {float}:
        return arr
    ints = [int(v) if isinstance(v, Fraction) and v.denominator == 1 else None for v in values]
    if all(i is not None and -(1 << 62) < i < 1 << 62 for i in ints):
        return np.array(ints, dtype=np.int64)
    return None


def _reserve(budget: Budget | None, eps: Fraction, label: str) -> Any:
    # A release that spends nothing (an exact, noise-free value of sensitivity 0)
    # does not touch the budget, which refuses zero epsilon.
    if budget is None or eps == 0:
        return contextlib.nullcontext()
    return budget.reserve(eps, label=label)
