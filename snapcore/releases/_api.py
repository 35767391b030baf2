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
from snapcore.exact._ieee754 import round_up_double
from snapcore.exact._sums import DOT_SCALE, SUM_SCALE
from snapcore.mechanism._mechanism import SnappingMechanism
from snapcore.padding._pad import check_timing
from snapcore.pipeline._backend import Backend
from snapcore.pipeline._threads import check_threads
from snapcore.plugins._manager import resolve_statistic
from snapcore.plugins._statistic import (
    DataBounds,
    OutputDomain,
    Prepared,
    State,
    Statistic,
    check_data_bounds,
    check_n,
    resolve_relation,
)
from snapcore.randomness._sources import RandomSource, require_draws
from snapcore.releases._grouped import GroupedRelease, check_grouping, plan_groups
from snapcore.releases._padding import (
    grouped_total,
    padded_grouped,
    padded_statistic,
    ready_padding,
)
from snapcore.releases._record import RatioRelease, Release, VarianceRatioRelease
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
    #: Where released values are projected (post-processing), or None.
    domain: OutputDomain | None = None


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
        else choose_clamp_bounds(
            prep.value_range,
            prep.sensitivity,
            eps_each,
            request.gamma,
            integral=stat.integer_valued,
        )
    )
    mech = SnappingMechanism(
        epsilon=eps_each,
        sensitivity=prep.sensitivity,
        clamp_bounds=(choice.lower, choice.upper),
        backend=request.backend,
        source=_default_source(request.source, len(prep.values)),
        precision=request.precision,
        timing=request.timing,
        threads=request.threads,
    )
    domain = stat.output_domain(prep)
    if domain is not None and not isinstance(domain, OutputDomain):
        raise SnapcoreError(
            f"statistic {stat.name!r} returned {type(domain).__name__} from output_domain(); "
            "expected an OutputDomain or None"
        )
    return _Plan(
        request=request,
        prep=prep,
        data_bounds=data_bounds,
        epsilon=request.epsilon,
        mech=mech,
        choice=choice,
        domain=domain,
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
            snapped=exact if prep.is_vector else exact[0],
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
    domain = plan.domain
    final = outs if domain is None else tuple(domain.project(o) for o in outs)
    notes = list(prep.notes)
    if mech.source.name == "seeded":
        notes.append("seeded source: deterministic noise, NOT for production releases")
    return Release(
        value=final if prep.is_vector else final[0],
        snapped=outs if prep.is_vector else outs[0],
        post_processing=None if domain is None else domain.describe(),
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
    label: str | None = None,
    threads: int | None = None,
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
        release is padded as a whole, to a quantum that depends on the public key set
        and the groups' public n (caps or declared sizes).
    label : str, optional
        What ``budget``'s history (and a ledger's entry) calls this release; default
        the statistic's name (``"mean by region"`` with ``by=``).
    threads : int, optional
        Threads the release of many values at once (a histogram's bins, a grouped
        release's groups) may use, an int >= 1; the output is the same for every
        number.  Default: the CPUs this process may run on, for arrays of at least
        2**15 values (one thread below).
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
    threads = check_threads(threads)
    stat = resolve_statistic(statistic)
    rel, private = release_relation(stat, relation, by=by, group_sizes=group_sizes)
    eps = check_real("epsilon", epsilon, positive=True)
    if gamma is not None and clamp_bounds is not None:
        raise ParameterError(
            f"give at most one of {keyword('gamma')} and {keyword('clamp_bounds')}",
            parameter="clamp_bounds",
        )
    given = given_clamp_bounds(clamp_bounds) if clamp_bounds is not None else None
    if given is None:
        gamma = check_gamma(DEFAULT_GAMMA if gamma is None else gamma)
    check_options(stat, options)
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ParameterError(
            f"{parameter_name('label')} must be a non-empty str, got {type_name(label)} {label!r}"[
                :200
            ],
            parameter="label",
        )
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
        label=label,
        threads=threads,
    )
    if private == "mean":
        return _release_private_size_means(request)
    if private == "variance":
        return _release_private_size_variances(request)
    if request.grouped:
        return _release_grouped(request)
    return _release_single(request)


def release_relation(
    stat: Statistic, relation: Any, *, by: Any, group_sizes: Any
) -> tuple[Neighbouring, str | None]:
    """The neighbouring relation :func:`release` uses, and which built-in statistic
    (``"mean"`` or ``"variance"``) is released per group of private size, if any.

    With ``by=`` and no ``group_sizes=``, group sizes stay private: the built-in mean
    and variance are released from noisy sums under ``add-remove``, and any other
    statistic that has an ``add-remove`` form defaults to it (docs/statistics.md,
    "Group-by").  The command line calls this too, to check the missing-value policy
    against the same relation before it reads.
    """
    if by is not None and group_sizes is None:
        private = relation is None or Neighbouring.parse(relation) is Neighbouring.ADD_REMOVE
        if private and stat.name in ("mean", "variance") and _is_builtin(stat):
            return Neighbouring.ADD_REMOVE, stat.name
        if relation is None and Neighbouring.ADD_REMOVE in stat.relations:
            relation = Neighbouring.ADD_REMOVE
    return resolve_relation(stat, relation), None


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
    _ready_padding([plan])
    ready_padding(prep.n, data_bounds, plan.epsilon)
    with _reserve(request.budget, plan.epsilon, request.label or stat.name, _curve_kind(plan)):
        return _draw(plan)


@padded_grouped
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
    _ready_padding(plans)
    ready_padding(grouped_total(request), data_bounds, spent)
    with _reserve(request.budget, spent, request.label or f"{stat.name} by {request.by}"):
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


def _is_builtin(stat: Statistic) -> bool:
    """Whether ``stat`` is the built-in statistic of its name (the built-in mean and
    variance are released per group of private size from noisy sums)."""
    return type(stat) is type(resolve_statistic(stat.name))


def _require_group_cap(request: ReleaseRequest, what: str) -> None:
    """Refuse a private-size group-by of ``what`` ("a mean") without a public cap ``n``."""
    if request.n is None:
        raise ParameterError(
            f"{what} with {keyword('by')} and private group sizes needs {keyword('n')}, a "
            "public cap on each group's size (or declare the sizes with "
            f"{keyword('group_sizes')})",
            parameter="n",
        )


def _centred_bounds(
    request: ReleaseRequest,
) -> tuple[Fraction, Fraction, Fraction, tuple[Fraction, Fraction]]:
    """``(a, b, c, (a − c, b − c))`` for the request's data bounds ``[a, b]``: records are
    summed as ``x − c`` with ``c`` the middle of the bounds (Δ = (b − a)/2 instead of
    max(|a|, |b|)) when the shifted bounds are exact doubles, else with ``c = 0``."""
    if request.data_bounds is None:
        check_data_bounds(None, request.statistic)  # the usual error
    assert request.data_bounds is not None
    a, b = (Fraction(x) for x in request.data_bounds[0])
    centre = (a + b) / 2
    shifted = (a - centre, b - centre)
    if any(Fraction(float(x)) != x for x in shifted):
        centre, shifted = Fraction(0), (a, b)
    return a, b, centre, shifted


@padded_grouped
def _release_private_size_means(request: ReleaseRequest) -> GroupedRelease:
    """A mean per key of private group size (add-remove): per group, the sum of
    ``x − c`` (c the middle of the data bounds) and the count each released with ε/2
    (add-remove, the group's public cap n), and ``c + S̃/C̃`` clamped to the data
    bounds (docs/statistics.md, "Group-by")."""
    _require_group_cap(request, "a mean")
    half = request.epsilon / 2
    a, b, centre, shifted = _centred_bounds(request)
    sum_bounds = ((float(shifted[0]), float(shifted[1])),)
    subs = {
        name: attrs.evolve(
            request,
            statistic=resolve_statistic(name),
            epsilon=half,
            data_bounds=sum_bounds if name == "sum" else None,
            relation=Neighbouring.ADD_REMOVE,
            budget=None,
            options={},
        )
        for name in ("sum", "count")
    }

    def plan_one(data: Any, n: int | None) -> tuple[_Plan, _Plan]:
        # One exact mean state per group (its records in memory, the missing-value
        # policy applied, or its partial state): the sum of x − c and the count.
        from snapcore.data._columns import Dataset

        if _is_partial(data):  # a group's records, read in chunks
            _check_group_part(request, data)
            state = data.state
        elif isinstance(data, Dataset):
            state = request.statistic.partial(data, data_bounds=request.data_bounds)
        else:
            raise ParameterError(
                "a mean per group of private size is released from data in memory or "
                f"from partial states of the mean; give the table, or "
                f"{keyword('group_sizes')}",
                parameter="data",
            )
        plans = []
        for name, part in zip(("sum", "count"), _mean_sum_count(state, centre), strict=True):
            sub = subs[name]
            prep = sub.statistic.finalize(
                part, data_bounds=sub.data_bounds, n=n, relation=sub.relation
            )
            plans.append(_plan(sub, prep, sub.data_bounds))
        return plans[0], plans[1]

    grouped, both = plan_groups(request, plan_one)
    sum_plans = [p[0] for p in both]
    count_plans = [p[1] for p in both]
    _check_can_draw([*sum_plans, *count_plans])
    _ready_padding([*sum_plans, *count_plans])
    ready_padding(grouped_total(request), request.data_bounds, request.epsilon)
    label = request.label or f"mean by {request.by}"
    comp = (
        "a noisy sum (ε/2) over a noisy count (ε/2), sequential composition within each "
        f"group; parallel composition over the groups of {request.by!r} (add-remove: a "
        "record changes its own group only), so the grouped release spends ε"
    )
    with _reserve(request.budget, request.epsilon, label):
        sums = [_draw(p) for p in sum_plans]
        counts = [_draw(p) for p in count_plans]
    out = []
    for s_rel, c_rel in zip(sums, counts, strict=True):
        c = Fraction(c_rel.value)  # type: ignore[arg-type]
        if c > 0:
            q = centre + Fraction(s_rel.value) / c  # type: ignore[arg-type]
            value = float(min(max(q, a), b))
            snapped: float | None = float(q)
        else:
            value, snapped = float((a + b) / 2), None
        out.append(
            RatioRelease(
                statistic="mean",
                value=value,
                snapped=snapped,
                numerator=s_rel,
                denominator=c_rel,
                epsilon_spent=request.epsilon,
                relation=Neighbouring.ADD_REMOVE,
                value_range=(a, b),
                centre=centre,
                composition=comp,
                notes=(
                    "the released count is 0: the midpoint of the data bounds is released"
                    if snapped is None
                    else "the quotient is clamped to the data bounds (post-processing)",
                ),
            )
        )
    return attrs.evolve(
        grouped,
        statistic="mean",
        composition=comp,
        releases=tuple(out),
        epsilon_spent=request.epsilon,
    )


def _variance_state(request: ReleaseRequest, data: Any) -> tuple[int, Fraction, Fraction]:
    """``(records, Σ x, Σ x²)`` of one group's values clamped to the data bounds,
    exactly: from its records in memory, or from its merged variance
    :class:`~snapcore.Partial` (checked against the request)."""
    from snapcore.data._columns import Dataset
    from snapcore.releases._partials import Partial

    if isinstance(data, Partial):
        _check_group_part(request, data)
        state = data.state
    elif isinstance(data, Dataset):
        state = request.statistic.partial(data, data_bounds=request.data_bounds)
    else:
        raise SnapcoreError(f"a group's records arrived as {type(data).__name__}")
    records, s, q = state
    return int(records), Fraction(s) / (1 << SUM_SCALE), Fraction(q) / (1 << DOT_SCALE)


@padded_grouped
def _release_private_size_variances(request: ReleaseRequest) -> GroupedRelease:
    """A variance per key of private group size (add-remove): per group, the count, the
    sum of ``x − c`` and the sum of ``(x − c)²`` (c the middle of the data bounds), each
    released with ε/3 (add-remove, the group's public cap n), and
    ``Q̃/C̃ − (S̃/C̃)²`` projected onto ``[0, ((b − a)/2)²]`` (docs/statistics.md,
    "Group-by").  From records in memory or from ``{key: Partial}``."""
    _require_group_cap(request, "a variance")
    if request.clamp_bounds is not None:
        raise ParameterError(
            f"a variance with {keyword('by')} and private group sizes releases three noisy "
            f"values per group (count, sum, sum of squares); {keyword('clamp_bounds')} "
            f"names one interval, so give {keyword('gamma')} instead",
            parameter="clamp_bounds",
        )
    # Centred values: Δ of the sum is (b − a)/2 and of the squares ((b − a)/2)².
    a, b, centre, shifted = _centred_bounds(request)
    reach = max(abs(shifted[0]), abs(shifted[1]))  # B′ >= |x − c|
    square_cap = round_up_double(reach * reach)  # the bound must hold: round up
    if square_cap == np.inf:
        raise ParameterError(
            f"{parameter_name('data_bounds')} are too wide for a variance with "
            f"{keyword('by')} and private group sizes: the bound B′² on the squared "
            "centred values exceeds the largest double",
            parameter="data_bounds",
        )
    third = request.epsilon / 3
    sub = attrs.evolve(
        request, epsilon=third, relation=Neighbouring.ADD_REMOVE, budget=None, options={}
    )
    count_req = attrs.evolve(sub, statistic=resolve_statistic("count"), data_bounds=None)
    sum_bounds = ((float(shifted[0]), float(shifted[1])),)
    sum_req = attrs.evolve(sub, statistic=resolve_statistic("sum"), data_bounds=sum_bounds)
    squares_bounds = ((0.0, square_cap),)
    squares_req = attrs.evolve(sum_req, data_bounds=squares_bounds)

    def plan_one(data: Any, n: int | None) -> tuple[_Plan, _Plan, _Plan]:
        records, s, q = _variance_state(request, data)
        s_c = s - records * centre
        q_c = q - 2 * centre * s + records * centre * centre
        rel = Neighbouring.ADD_REMOVE
        counted = count_req.statistic.finalize((records,), data_bounds=None, n=n, relation=rel)
        summed = sum_req.statistic.finalize(
            (records, s_c * (1 << SUM_SCALE)), data_bounds=sum_bounds, n=n, relation=rel
        )
        squared = squares_req.statistic.finalize(
            (records, q_c * (1 << SUM_SCALE)), data_bounds=squares_bounds, n=n, relation=rel
        )
        squared = attrs.evolve(squared, statistic="sum of squares", labels=("sum of squares",))
        return (
            _plan(count_req, counted, None),
            _plan(sum_req, summed, sum_bounds),
            _plan(squares_req, squared, squares_bounds),
        )

    grouped, triples = plan_groups(request, plan_one)
    plans = [p for t in triples for p in t]
    _check_can_draw(plans)
    _ready_padding(plans)
    ready_padding(grouped_total(request), request.data_bounds, request.epsilon)
    label = request.label or f"variance by {request.by}"
    comp = (
        "a noisy count, sum and sum of squares (ε/3 each), sequential composition within "
        f"each group; parallel composition over the groups of {request.by!r} (add-remove: "
        "a record changes its own group only), so the grouped release spends ε"
    )
    with _reserve(request.budget, request.epsilon, label):
        # Drawn in this order: every group's count, then every sum, then every square sum.
        drawn = [[_draw(t[i]) for t in triples] for i in range(3)]
    top = ((b - a) / 2) ** 2
    out = []
    for c_rel, s_rel, q_rel in zip(*drawn, strict=True):
        c = Fraction(c_rel.value)
        if c > 0:
            m = Fraction(s_rel.value) / c
            v = Fraction(q_rel.value) / c - m * m
            value = float(min(max(v, Fraction(0)), top))
            snapped: float | None = float(v)
            note = "Q̃/C̃ − (S̃/C̃)² is projected onto [0, ((b − a)/2)²] (post-processing)"
        else:
            value, snapped = float(top / 2), None
            note = "the released count is 0: the middle of [0, ((b − a)/2)²] is released"
        out.append(
            VarianceRatioRelease(
                statistic="variance",
                value=value,
                snapped=snapped,
                noisy_count=c_rel,
                noisy_sum=s_rel,
                noisy_squares=q_rel,
                epsilon_spent=request.epsilon,
                relation=Neighbouring.ADD_REMOVE,
                data_range=(a, b),
                centre=centre,
                composition=comp,
                notes=(
                    note,
                    "the population variance (divided by the count, not count − 1)",
                ),
            )
        )
    return attrs.evolve(
        grouped, composition=comp, releases=tuple(out), epsilon_spent=request.epsilon
    )


def _check_group_part(request: ReleaseRequest, part: Any) -> None:
    """Refuse a group's partial state that is not the request's built-in statistic's
    (the mean's or the variance's) for the request (its data bounds, no options, no
    missing-value policy to apply)."""
    name = request.statistic.name
    if part.statistic != name:
        raise ParameterError(
            f"the partial state is of statistic {part.statistic!r}, not {name!r}",
            parameter="data",
        )
    if request.missing.kind != "error":
        raise ParameterError(
            f"{keyword('missing', request.missing.kind)} applies to data held in memory; for "
            "partial states, drop or impute missing values before the partial states",
            parameter="missing",
        )
    if part.data_bounds != request.data_bounds:
        raise ParameterError(
            f"{parameter_name('data_bounds')} must be those the partial state was computed "
            f"with ({part.data_bounds!r})",
            parameter="data_bounds",
        )
    if part.options:
        raise ParameterError(f"the {name}'s partial state must have no options", parameter="data")


def _mean_sum_count(state: State, centre: Fraction) -> tuple[State, State]:
    """The states of the sum of ``x − centre`` and of the count of a group's records,
    from the built-in mean's state ``(k, Σc·2**1074)``, c the values clamped to the
    mean's data bounds [a, b]: clamping ``x − centre`` to ``[a − centre, b − centre]``
    gives ``c − centre``, so the sum's state is ``(k, Σc·2**1074 − k·centre·2**1074)``
    (an integer: ``centre`` is 0 or a difference of doubles), and the count's ``(k,)``."""
    k, total = int(state[0]), state[1]
    shift = k * centre * (1 << SUM_SCALE)
    return (k, total - (int(shift) if shift.denominator == 1 else shift)), (k,)


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
    from snapcore.releases._partials import Partial, dask_state

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
        if options and not data.has_options(options):
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


def _ready_padding(plans: Sequence[_Plan]) -> None:
    """Look up (calibrate, or read from a quanta store) the quantum of every padded
    mechanism's release before the budget is charged: a store's problem is decided
    here, never after ε is spent.  The release's shape is the one
    :func:`_release_values` gives the mechanism (a type, or a container and length)."""
    for p in plans:
        padding = None if p.mech is None else p.mech.padding
        if padding is None:
            continue
        values = p.prep.values
        if len(values) == 1:
            padding.quantum_for(values[0])
        elif values:
            arr = _as_array(values)
            padding.quantum_for(list(values) if arr is None else arr)


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


def _curve_kind(plan: _Plan) -> str:
    """``"snapping"`` when the release is one snapping mechanism with its whole ε, else
    ``"pure"`` (docs/budgets.md)."""
    single = plan.mech is not None and len(plan.prep.values) == 1
    return "snapping" if single and plan.prep.epsilon_share == 1 else "pure"


def _reserve(budget: Budget | None, eps: Fraction, label: str, curve: str = "pure") -> Any:
    # A release that spends nothing (an exact, noise-free value of sensitivity 0)
    # does not touch the budget, which refuses zero epsilon.
    if budget is None or eps == 0:
        return contextlib.nullcontext()
    from snapcore.releases._budget import ApproxBudget, LedgerApproxBudget

    if isinstance(budget, (ApproxBudget, LedgerApproxBudget)):
        return budget.reserve(eps, label=label, curve=curve)
    return budget.reserve(eps, label=label)
